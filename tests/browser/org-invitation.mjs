// An organisation's invitations through /accept-invitation (docs/api.md §13), mailed through the
// real SMTP server: an existing account signs in and joins with one click, a new address chooses
// a password (and a name) and lands in its new account.
import {
  BASE, alertText, assert, assertNoPageErrors, expectPath, expectText, mailedLink, newPage, required, run,
  signIn,
} from "./common.mjs";

const email = required("GATEHOUSE_EMAIL");
const password = required("GATEHOUSE_PASSWORD");
const newcomer = required("GATEHOUSE_NEW_EMAIL");
const stranger = required("GATEHOUSE_STRANGER_EMAIL");

await run("org-invitation", async (browser) => {
  const page = await newPage(browser);

  // Signed out, the link offers a new account and says how to join with an existing one.
  const link = await mailedLink(email, "/accept-invitation");
  await page.goto(link);
  await expectText(page, "then open the link from the mail again");
  await page.getByLabel("Password", { exact: true }).fill("a brand new passphrase");
  await page.getByRole("button", { name: "Accept and sign in" }).click();
  assert(/exists already/.test(await alertText(page)), "an existing address cannot make an account");

  // Signed in as someone else: refused, and the invitation stays usable.
  await signIn(page, stranger, password);
  await expectPath(page, "/account");
  await page.goto(link);
  await page.getByRole("button", { name: "Accept the invitation" }).click();
  assert(/sent to another address/.test(await alertText(page)), "another address is refused");
  await page.getByRole("button", { name: "Use another account" }).click();
  // Signed out once the password form is back (before that the sign-in page would see a session).
  await page.getByRole("button", { name: "Accept and sign in" }).waitFor({ state: "visible" });

  // Signed in as the addressee: one click joins.
  await signIn(page, email, password);
  await expectPath(page, "/account");
  await page.goto(link);
  await expectText(page, email, "#join-email");
  await page.getByRole("button", { name: "Accept the invitation" }).click();
  await expectPath(page, "/account");

  // A new address: its name and password make the account, signed in.
  await page.getByRole("button", { name: "Sign out", exact: true }).first().click();
  await expectPath(page, "/sign-in");
  await page.goto(await mailedLink(newcomer, "/accept-invitation"));
  await page.getByLabel("Your name").fill("Nora Newcomer");
  await page.getByLabel("Password", { exact: true }).fill("a brand new passphrase");
  await page.getByRole("button", { name: "Accept and sign in" }).click();
  await expectPath(page, "/account");
  await expectText(page, newcomer, "#profile-email");
  assertNoPageErrors(page);
});
