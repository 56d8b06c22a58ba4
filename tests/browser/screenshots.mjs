// Screenshots of every page at desktop (1280 px) and phone (360 px) width, into
// docs/screenshots/, for the README. Run by hand (not by CI), against a running service:
//
//   GATEHOUSE_PUBLIC_URL=http://localhost:8080 GATEHOUSE_REGISTRATION=open cargo run -- serve &
//   echo 'correct horse battery staple' | cargo run -- user add --email ann@example.com \
//     --name "Ann Example" --password-stdin
//   GATEHOUSE_URL=http://localhost:8080 GATEHOUSE_EMAIL=ann@example.com \
//     GATEHOUSE_PASSWORD='correct horse battery staple' node tests/browser/screenshots.mjs
//
// The account (without 2FA) is left with a passkey (so the re-authentication prompt offers it)
// and 2FA set up but not enabled.
import { mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { BASE, confirmPassword, expectPath, launch, required, signIn } from "./common.mjs";

const email = required("GATEHOUSE_EMAIL");
const password = required("GATEHOUSE_PASSWORD");
const out = join(dirname(fileURLToPath(import.meta.url)), "../../docs/screenshots");
mkdirSync(out, { recursive: true });

const WIDTHS = { desktop: { width: 1280, height: 800 }, phone: { width: 360, height: 740 } };
const PUBLIC = [
  ["sign-in", "/sign-in"],
  ["forgot-password", "/forgot-password"],
  ["reset-password", "/reset-password?token=example"],
  ["verify-email", "/verify-email?token=example"],
  ["accept-invitation", "/accept-invitation?token=example"],
  ["register", "/register"],
];

const browser = await launch();
try {
  // A passkey first (Chromium's virtual authenticator), in a session of its own: each session
  // below then meets the re-authentication prompt with "Use a passkey" on offer.
  {
    const context = await browser.newContext({ viewport: WIDTHS.desktop });
    const page = await context.newPage();
    const cdp = await context.newCDPSession(page);
    await cdp.send("WebAuthn.enable");
    await cdp.send("WebAuthn.addVirtualAuthenticator", {
      options: { protocol: "ctap2", transport: "internal", hasResidentKey: true, hasUserVerification: true, isUserVerified: true },
    });
    await page.bringToFront();
    await signIn(page, email, password);
    await expectPath(page, "/account");
    const form = page.locator("#passkey-form");
    await form.getByLabel("Name of the new passkey").fill("Laptop");
    await form.getByRole("button", { name: "Add a passkey" }).click();
    await confirmPassword(page, password);
    await page.getByText("The passkey “Laptop” was added.").waitFor();
    await context.close();
  }
  for (const [kind, viewport] of Object.entries(WIDTHS)) {
    const context = await browser.newContext({ viewport, isMobile: kind === "phone" });
    const page = await context.newPage();
    const shot = (name) => page.screenshot({ path: join(out, `${name}-${kind}.png`), fullPage: true });
    for (const [name, path] of PUBLIC) {
      await page.goto(`${BASE}${path}`);
      await page.locator("button[type=submit]:not([disabled])").first().waitFor().catch(() => {});
      await shot(name);
    }
    // A wrong password: the alert.
    await signIn(page, email, "not the password");
    await page.getByRole("alert").waitFor();
    await shot("sign-in-error");
    await signIn(page, email, password);
    await expectPath(page, "/account");
    await page.locator("#session-list li").first().waitFor();
    await shot("account");
    // 2FA set-up: the QR code and the secret.
    await page.getByRole("button", { name: "Set up an authenticator app" }).click();
    // The prompt a sensitive action opens (once per 5 minutes), with the passkey on offer.
    const prompt = page.getByRole("dialog", { name: "Confirm it is you" });
    await prompt.getByRole("button", { name: "Use a passkey" }).waitFor();
    await page.screenshot({ path: join(out, `account-reauth-${kind}.png`) });
    await confirmPassword(page, password);
    await page.locator("#secret").filter({ hasText: /./ }).waitFor();
    await page.locator("#twofa-title").scrollIntoViewIfNeeded();
    await page.screenshot({ path: join(out, `account-2fa-${kind}.png`) });
    await page.getByRole("button", { name: "Sign out", exact: true }).first().click();
    await expectPath(page, "/sign-in");
    await context.close();
  }
  // Dark, as a system set to dark shows them.
  const dark = await browser.newContext({ viewport: WIDTHS.desktop, colorScheme: "dark" });
  const page = await dark.newPage();
  await page.goto(`${BASE}/sign-in`);
  await page.screenshot({ path: join(out, "sign-in-dark-desktop.png"), fullPage: true });
  await signIn(page, email, password);
  await expectPath(page, "/account");
  await page.locator("#session-list li").first().waitFor();
  await page.screenshot({ path: join(out, "account-dark-desktop.png"), fullPage: true });
  await dark.close();
  console.log(`screenshots in ${out}`);
} finally {
  await browser.close();
}
