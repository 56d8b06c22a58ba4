// Passkeys with Chromium's virtual authenticator (DevTools WebAuthn domain), for an account with
// 2FA: added on the account page, renamed, used as the second factor after the password, then to
// sign in without a password or an address, then to confirm a sensitive action in place of the
// password (re-authentication, docs/api.md §3), and removed.
import {
  assert, assertNoPageErrors, confirmPassword, expectPath, expectText, newPage, required, run, signIn, totp,
} from "./common.mjs";

const email = required("GATEHOUSE_EMAIL");
const password = required("GATEHOUSE_PASSWORD");
const secret = required("GATEHOUSE_TOTP_SECRET");

await run("passkeys", async (browser) => {
  const page = await newPage(browser);
  const cdp = await page.context().newCDPSession(page);
  await cdp.send("WebAuthn.enable");
  const { authenticatorId } = await cdp.send("WebAuthn.addVirtualAuthenticator", {
    options: {
      protocol: "ctap2",
      transport: "internal",
      hasResidentKey: true,
      hasUserVerification: true,
      isUserVerified: true,
    },
  });

  // WebAuthn refuses a page without focus.
  await page.bringToFront();
  await signIn(page, email, password);
  await page.getByLabel("Code from your authenticator app").fill(totp(secret, 0));
  await page.getByRole("button", { name: "Verify" }).click();
  await expectPath(page, "/account");
  await expectText(page, "No passkeys yet.");
  const form = page.locator("#passkey-form");
  await form.getByLabel("Name of the new passkey").fill("Laptop");
  await form.getByRole("button", { name: "Add a passkey" }).click();
  await confirmPassword(page, password);
  await expectText(page, "The passkey “Laptop” was added.");
  const { credentials } = await cdp.send("WebAuthn.getCredentials", { authenticatorId });
  assert(credentials.length === 1 && credentials[0].isResidentCredential, "one discoverable credential");

  // Renamed in place.
  await page.locator("#passkey-list").getByLabel("Name").fill("Work laptop");
  await page.locator("#passkey-list").getByRole("button", { name: "Rename" }).click();
  await expectText(page, "The passkey was renamed.");
  assert((await page.locator("#passkey-list input").inputValue()) === "Work laptop", "the new name");

  // Signed out, then in with the password and the passkey as the second factor.
  await page.getByRole("button", { name: "Sign out", exact: true }).first().click();
  await expectPath(page, "/sign-in");
  await signIn(page, email, password);
  await page.getByRole("button", { name: "Use a passkey instead" }).click();
  await expectPath(page, "/account");
  await expectText(page, email, "#profile-email");

  // Signed out, then in with the passkey alone: no address, no password.
  await page.getByRole("button", { name: "Sign out", exact: true }).first().click();
  await expectPath(page, "/sign-in");
  await page.getByRole("button", { name: "Sign in with a passkey" }).click();
  await expectPath(page, "/account");
  await expectText(page, email, "#profile-email");
  await expectText(page, "last used", "#passkey-list");
  const used = await page.locator("#passkey-list small").innerText();
  assert(!used.includes("last used never"), `the passkey's use is recorded: ${used}`);

  // A sensitive action in this passkey session: the prompt offers the passkey instead of the
  // password, and the action goes on.
  const pw = page.locator("#password-form");
  await pw.getByLabel("New password").fill("a brand new passphrase");
  await pw.getByRole("button", { name: "Change the password" }).click();
  const prompt = page.getByRole("dialog", { name: "Confirm it is you" });
  await prompt.waitFor({ state: "visible" });
  await prompt.getByRole("button", { name: "Use a passkey" }).click();
  await prompt.waitFor({ state: "hidden" });
  await expectText(page, "Your password was changed.", "#password-form + .status");

  // Removed: the list is empty again, and a passkey sign-in fails with a message.
  await page.locator("#passkey-list").getByRole("button", { name: "Remove" }).click();
  await expectText(page, "No passkeys yet.");
  await page.getByRole("button", { name: "Sign out", exact: true }).first().click();
  await expectPath(page, "/sign-in");
  await page.getByRole("button", { name: "Sign in with a passkey" }).click();
  await page.getByRole("alert").waitFor({ state: "visible" });
  assert(new URL(page.url()).pathname === "/sign-in", "still on the sign-in page");
  assertNoPageErrors(page);
});
