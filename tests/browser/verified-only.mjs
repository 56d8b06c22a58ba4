// With GATEHOUSE_REQUIRE_VERIFIED_EMAIL=on: registration does not sign in; the page says to open
// the mailed link; the sign-in page refuses until the address is verified, then lets in.
import {
  BASE, alertText, assert, assertNoPageErrors, expectPath, expectText, mailedLink, newPage, run, signIn,
} from "./common.mjs";

const email = "newcomer@example.com";
const password = "a brand new passphrase";

await run("verified-only", async (browser) => {
  const page = await newPage(browser);
  await page.goto(`${BASE}/register`);
  await page.getByLabel("Full name").fill("New Comer");
  await page.getByLabel("E-mail address").fill(email);
  await page.getByLabel("Password", { exact: true }).fill(password);
  await page.getByRole("button", { name: "Create the account" }).click();
  await expectText(page, `Your account is made. Open the link we mailed to ${email}, then sign in.`, "#status");
  assert((await page.evaluate(() => localStorage.getItem("gatehouse"))) === null, "not signed in");

  await signIn(page, email, password);
  const refused = await alertText(page);
  assert(
    refused === "Confirm your e-mail address first: open the link we mailed to it.",
    `an unverified address is refused: ${refused}`,
  );

  await page.goto(await mailedLink(email, "/verify-email"));
  await page.getByRole("button", { name: "Verify my address" }).click();
  await expectText(page, "Your address is verified.");
  await signIn(page, email, password);
  await expectPath(page, "/account");
  await expectText(page, "(verified)", "#profile-verified");
  assertNoPageErrors(page);
});
