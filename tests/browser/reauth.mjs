// The account page asks for the password once (re-authentication, docs/api.md §3): the first
// sensitive action opens a prompt (focus in it, Escape cancels and says so beside the action),
// and for the next minutes the others go on without one: here, the password changed and 2FA
// turned on after a single prompt.
import {
  assert, assertNoPageErrors, confirmPassword, expectPath, expectText, newPage, required, run, signIn, totp,
} from "./common.mjs";

const email = required("GATEHOUSE_EMAIL");
const password = required("GATEHOUSE_PASSWORD");
const newPassword = "a brand new passphrase";

await run("reauth", async (browser) => {
  const page = await newPage(browser);
  await signIn(page, email, password);
  await expectPath(page, "/account");
  await expectText(page, "Off.", "#twofa-state");
  const prompt = page.getByRole("dialog", { name: "Confirm it is you" });

  // The first sensitive action asks; Escape cancels, and the message is beside the action.
  const pw = page.locator("#password-form");
  await pw.getByLabel("New password").fill(newPassword);
  await pw.getByRole("button", { name: "Change the password" }).click();
  await prompt.waitFor({ state: "visible" });
  assert(
    (await page.evaluate(() => document.activeElement?.id)) === "reauth-password",
    "focus in the prompt's password field",
  );
  await page.keyboard.press("Escape");
  await prompt.waitFor({ state: "hidden" });
  await expectText(page, "Nothing was changed", "#password-form ~ .alert");
  assert(
    (await page.evaluate(() => document.activeElement?.closest("form")?.id)) === "password-form",
    "focus back in the form",
  );

  // Again: the password once, and the change is made.
  await pw.getByRole("button", { name: "Change the password" }).click();
  await confirmPassword(page, password);
  await expectText(page, "Your password was changed.", "#password-form + .status");

  // 2FA on without a second prompt.
  await page.getByRole("button", { name: "Set up an authenticator app" }).click();
  await page.getByLabel("Code shown by the app").waitFor({ state: "visible" });
  assert(!(await prompt.isVisible()), "no second prompt");
  const secret = (await page.locator("#secret").innerText()).replaceAll(" ", "");
  await page.getByLabel("Code shown by the app").fill(totp(secret, 0));
  await page.getByRole("button", { name: "Turn on two-factor authentication" }).click();
  await expectText(page, "Two-factor authentication is on.", "#twofa");
  await expectText(page, "On. Recovery codes left: 10.", "#twofa-state");
  assertNoPageErrors(page);
});
