// The mailed links, through the real SMTP server: forgotten password and reset, registration and
// address verification, and an invitation's first password.
import {
  BASE, alertText, assert, assertNoPageErrors, expectPath, expectText, mailedLink, newPage, required, run,
  signIn,
} from "./common.mjs";

const email = required("GATEHOUSE_EMAIL");
const password = required("GATEHOUSE_PASSWORD");
const invited = required("GATEHOUSE_INVITED_EMAIL");
const newPassword = "a brand new passphrase";

await run("mail", async (browser) => {
  const page = await newPage(browser);

  // Forgotten password: the page answers the same whatever the address ...
  await page.goto(`${BASE}/sign-in`);
  await page.getByRole("link", { name: "Forgotten your password?" }).click();
  await expectPath(page, "/forgot-password");
  await page.getByLabel("E-mail address").fill(email);
  await page.getByRole("button", { name: "Send the link" }).click();
  await expectText(page, `If an account has the address ${email}`);
  // ... and the mail's link opens the reset page (GATEHOUSE_PUBLIC_URL is this origin).
  const reset = await mailedLink(email, "/reset-password");
  assert(reset.startsWith(`${BASE}/reset-password?token=`), `reset link: ${reset}`);
  await page.goto(reset);
  await expectText(page, `For the account ${email}.`, "#link-account");
  await page.getByLabel("New password").fill("short");
  await page.getByRole("button", { name: "Set the new password" }).click();
  const weak = await alertText(page);
  assert(/password/i.test(weak), `a weak password is refused: ${weak}`);
  await page.getByLabel("New password").fill(newPassword);
  await page.getByRole("button", { name: "Set the new password" }).click();
  await expectText(page, "Your password was changed");
  // The link works once: opened again, it says so before any password is typed.
  await page.goto(reset);
  const used = await alertText(page);
  assert(/no longer valid/.test(used), `a used link is refused: ${used}`);
  assert(!(await page.getByLabel("New password").isVisible()), "no password asked on a dead link");
  // The old password is gone, the new one signs in.
  await signIn(page, email, password);
  assert(/wrong/.test(await alertText(page)), "the old password is refused");
  await signIn(page, email, newPassword);
  await expectPath(page, "/account");
  await page.getByRole("button", { name: "Sign out", exact: true }).first().click();
  await expectPath(page, "/sign-in");

  // Registration (open in this test), then the verification link.
  const newcomer = `new-${Date.now()}@example.com`;
  await page.getByRole("link", { name: "Create an account" }).click();
  await expectPath(page, "/register");
  await page.getByLabel("Full name").fill("New Comer");
  await page.getByLabel("E-mail address").fill(newcomer);
  await page.getByLabel("Password", { exact: true }).fill(newPassword);
  await page.getByRole("button", { name: "Create the account" }).click();
  await expectPath(page, "/account");
  await expectText(page, "(not verified yet)", "#profile-verified");
  const first = await mailedLink(newcomer, "/verify-email");
  // A new link from the account page voids the first.
  await page.getByRole("button", { name: "Mail me a new verification link" }).click();
  await expectText(page, `A new verification link is on its way to ${newcomer}.`, "#profile");
  const verify = await mailedLink(newcomer, "/verify-email", { skip: [first] });
  await page.goto(first);
  assert(/no longer valid/.test(await alertText(page)), "the voided link is refused");
  await page.goto(verify);
  await expectText(page, `Confirm that ${newcomer} is your address.`, "#verify");
  await page.getByRole("button", { name: "Verify my address" }).click();
  await expectText(page, "Your address is verified.");
  await page.goto(`${BASE}/account`);
  await expectText(page, "(verified)", "#profile-verified");
  await page.getByRole("button", { name: "Sign out", exact: true }).first().click();
  await expectPath(page, "/sign-in");

  // An invitation (made with the CLI by the test): the first password, then the account.
  const invitation = await mailedLink(invited, "/accept-invitation");
  await page.goto(invitation);
  await page.getByLabel("Password", { exact: true }).fill(newPassword);
  await page.getByRole("button", { name: "Accept and sign in" }).click();
  await expectPath(page, "/account");
  await expectText(page, invited.toLowerCase(), "#profile-email");
  assertNoPageErrors(page);
});
