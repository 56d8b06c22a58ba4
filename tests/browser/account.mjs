// The account page's other forms: password change (other sessions end), address change through
// the mailed link, new recovery codes, 2FA turned off, and the account deleted; the password asked
// once, in the re-authentication prompt, for all of them.
import {
  BASE, alertText, assert, assertNoPageErrors, confirmPassword, expectPath, expectText, mailedLink, newPage,
  required, run, signIn, totp,
} from "./common.mjs";

const email = required("GATEHOUSE_EMAIL");
const password = required("GATEHOUSE_PASSWORD");
const secret = required("GATEHOUSE_TOTP_SECRET");
const recovery = required("GATEHOUSE_RECOVERY_CODES").split(",");
const newPassword = "a brand new passphrase";
const newEmail = "ann.new@example.com";

await run("account", async (browser) => {
  const page = await newPage(browser);
  await signIn(page, email, password);
  await page.getByLabel("Code from your authenticator app").fill(totp(secret, 0));
  await page.getByRole("button", { name: "Verify" }).click();
  await expectPath(page, "/account");
  await expectText(page, "(this browser)", "#session-list");
  const sessions = page.locator("#session-list li");
  assert((await sessions.count()) === 2, "the test's API session and this one");

  // Password: the prompt asks for the current one; a wrong one is refused in the prompt, the right
  // one changes it and ends the other session.
  const pw = page.locator("#password-form");
  assert((await pw.getByLabel("Current password").count()) === 0, "no password field in the form");
  await pw.getByLabel("New password").fill(newPassword);
  await pw.getByRole("button", { name: "Change the password" }).click();
  const prompt = page.getByRole("dialog", { name: "Confirm it is you" });
  await prompt.getByLabel("Your password").fill("not the password");
  await prompt.getByRole("button", { name: "Confirm" }).click();
  await expectText(page, "The password is wrong.", "#reauth .alert");
  await confirmPassword(page, password);
  await expectText(page, "Your password was changed.", "#password-form + .status");
  await sessions.nth(1).waitFor({ state: "detached" });

  // Address: a link to the new address; the change happens when it is opened and confirmed.
  const change = page.locator("#email-form");
  await change.getByLabel("New address").fill(newEmail);
  await change.getByRole("button", { name: "Send a confirmation link" }).click();
  // Within the five minutes: no prompt.
  await expectText(page, `We mailed a link to ${newEmail}.`, "#email-form + .status");
  assert(!(await prompt.isVisible()), "no second prompt");
  const link = await mailedLink(newEmail, "/verify-email");
  await page.goto(link);
  await page.getByRole("button", { name: "Verify my address" }).click();
  await expectText(page, "Your address is verified.");
  await page.goto(`${BASE}/account`);
  await expectText(page, newEmail, "#profile-email");

  // New recovery codes (with an old one), then 2FA off (with a new one).
  const regen = page.locator("#twofa-codes-form");
  await regen.getByLabel("Code from your app (or a recovery code)").fill(recovery[0]);
  await regen.getByRole("button", { name: "Make new recovery codes" }).click();
  await expectText(page, "New recovery codes: the old ones no longer work.", "#twofa");
  const fresh = await page.locator("#recovery-list li").allInnerTexts();
  assert(fresh.length === 10 && !fresh.includes(recovery[1]), "ten new codes");
  await expectText(page, "On. Recovery codes left: 10.", "#twofa-state");
  // Turning 2FA off and deleting: no password prompt (the page was reloaded: it asks the service).
  const off = page.locator("#twofa-disable-form");
  await off.getByLabel("Code from your app (or a recovery code)").fill(recovery[1]);
  await off.getByRole("button", { name: "Turn off two-factor authentication" }).click();
  assert(/wrong/i.test(await alertText(page)), "an old recovery code no longer works");
  await off.getByLabel("Code from your app (or a recovery code)").fill(fresh[0]);
  await off.getByRole("button", { name: "Turn off two-factor authentication" }).click();
  await expectText(page, "Two-factor authentication is off.");
  await expectText(page, "Off.", "#twofa-state");

  // Deleted: the page says so, and the account no longer signs in.
  const del = page.locator("#delete-form");
  await del.getByRole("button", { name: "Delete my account" }).click();
  await expectText(page, "Your account was deleted.");
  assert((await page.evaluate(() => localStorage.getItem("gatehouse"))) === null, "tokens forgotten");
  await signIn(page, newEmail, newPassword);
  assert(/wrong/.test(await alertText(page)), "the deleted account cannot sign in");
  assertNoPageErrors(page);
});
