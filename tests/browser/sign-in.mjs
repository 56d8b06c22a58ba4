// Sign-in without and with 2FA: a wrong password, TOTP enrolment from the secret the account page
// shows, a wrong code, a right one, a recovery code, and return_to.
import {
  BASE, alertText, assert, assertNoPageErrors, confirmPassword, expectPath, expectText, newPage, required, run,
  signIn, totp,
} from "./common.mjs";

const email = required("GATEHOUSE_EMAIL");
const password = required("GATEHOUSE_PASSWORD");

await run("sign-in", async (browser) => {
  // The copy buttons write to the clipboard; the test reads it back.
  const context = await browser.newContext({
    viewport: { width: 1280, height: 900 },
    permissions: ["clipboard-read", "clipboard-write"],
  });
  const page = await newPage(browser, context);

  // A wrong password: an alert, the form stays, focus stays usable.
  await signIn(page, email, "not the password");
  const wrong = await alertText(page);
  assert(/wrong/i.test(wrong), `wrong password alert: ${wrong}`);
  assert(new URL(page.url()).pathname === "/sign-in", "still on the sign-in page");
  assert(
    (await page.evaluate(() => document.activeElement?.id)) === "password",
    "focus back on the emptied password field",
  );

  // The right one, with an allowed return_to (the service's own origin is allowed in this test).
  await signIn(page, email, password, `?return_to=${encodeURIComponent(`${BASE}/account?from=app`)}`);
  await page.waitForURL(`${BASE}/account?from=app`);
  await expectText(page, email, "#profile-email");
  await expectText(page, "Off.", "#twofa-state");

  // Enrol TOTP: the password (once, in the prompt), then the QR code (a data: image) and the
  // secret as text.
  await page.getByRole("button", { name: "Set up an authenticator app" }).click();
  await confirmPassword(page, password);
  await page.getByLabel("Code shown by the app").waitFor({ state: "visible" });
  const shown = (await page.locator("#secret").innerText()).trim();
  assert(/^[A-Z2-7]{4}( [A-Z2-7]{1,4})+$/.test(shown), `secret shown in groups of four: ${shown}`);
  const secret = shown.replaceAll(" ", "");
  const qr = await page.locator("#qr").getAttribute("src");
  assert(qr?.startsWith("data:image/svg+xml"), `QR code image: ${qr?.slice(0, 40)}`);
  const qrLoaded = await page.locator("#qr").evaluate((img) => img.complete && img.naturalWidth > 0);
  assert(qrLoaded, "the QR code image rendered (CSP allows data: images)");
  assert(
    (await page.evaluate(() => document.activeElement?.id)) === "enable-code",
    "focus moved to the code field",
  );
  // On a phone, the app that scans is on the same device: a link opens it.
  const otpauth = await page.getByRole("link", { name: "Add it to an authenticator app on this device" })
    .getAttribute("href");
  assert(otpauth.startsWith("otpauth://totp/") && otpauth.includes(`secret=${secret}`), `otpauth link: ${otpauth}`);
  await page.getByRole("button", { name: "Copy the key" }).click();
  await expectText(page, "The key was copied.", "#twofa");
  assert((await page.evaluate(() => navigator.clipboard.readText())) === secret, "the key, ungrouped, copied");
  // The previous step's code: the current and next stay free for the sign-in below.
  await page.getByLabel("Code shown by the app").fill(totp(secret, -1));
  await page.getByRole("button", { name: "Turn on two-factor authentication" }).click();
  await expectText(page, "Your recovery codes");
  const codes = await page.locator("#recovery-list li").allInnerTexts();
  assert(codes.length === 10, `ten recovery codes shown, got ${codes.length}`);
  await expectText(page, "On. Recovery codes left: 10.", "#twofa-state");
  // Kept by download (or copy), then put away.
  const [download] = await Promise.all([
    page.waitForEvent("download"),
    page.getByRole("link", { name: "Download the codes" }).click(),
  ]);
  assert(download.suggestedFilename() === "gatehouse-recovery-codes.txt", download.suggestedFilename());
  const { readFile } = await import("node:fs/promises");
  const saved = await readFile(await download.path(), "utf8");
  assert(codes.every((c) => saved.includes(c)), `the file holds every code:\n${saved}`);
  await page.getByRole("button", { name: "Copy the codes" }).click();
  assert((await page.evaluate(() => navigator.clipboard.readText())) === codes.join("\n"), "codes copied");
  await page.getByRole("button", { name: "I have saved them" }).click();
  assert(!(await page.getByText(codes[0]).isVisible()), "the codes leave the page once saved");
  assertNoPageErrors(page);

  // Sign out, then in again: now a code is asked for.
  await page.getByRole("button", { name: "Sign out", exact: true }).first().click();
  await expectPath(page, "/sign-in");
  await signIn(page, email, password);
  const code = page.getByLabel("Code from your authenticator app");
  await code.waitFor({ state: "visible" });
  assert((await code.getAttribute("inputmode")) === "numeric", "a phone shows its number pad for the code");
  assert(
    (await page.evaluate(() => document.activeElement?.id)) === "code",
    "focus moved to the code field",
  );
  const right = totp(secret, 0);
  await code.fill(right === "000000" ? "111111" : "000000");
  await page.getByRole("button", { name: "Verify" }).click();
  const bad = await alertText(page);
  assert(/wrong.*Attempts left: 4/i.test(bad), `wrong code alert: ${bad}`);
  await code.fill(right);
  await page.getByRole("button", { name: "Verify" }).click();
  await expectPath(page, "/account");
  await expectText(page, email, "#profile-email");

  // And with a recovery code instead, once.
  await page.getByRole("button", { name: "Sign out", exact: true }).first().click();
  await expectPath(page, "/sign-in");
  await signIn(page, email, password);
  await page.getByRole("button", { name: "Use a recovery code instead" }).click();
  const recoveryField = page.getByLabel("Recovery code");
  assert((await recoveryField.getAttribute("inputmode")) === "text", "letters for a recovery code");
  await recoveryField.fill(codes[0]);
  await page.getByRole("button", { name: "Verify" }).click();
  await expectPath(page, "/account");
  await expectText(page, "On. Recovery codes left: 9.", "#twofa-state");
  assertNoPageErrors(page);
});
