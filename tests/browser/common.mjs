// What every scenario shares: Chromium (Debian's, headless) through playwright-core, the
// service's address, TOTP codes (RFC 6238, as an authenticator app computes them), the mailbox of
// the real SMTP server, and failures that carry what the page showed.
//
// Environment (set by tests/api/browser.rs): GATEHOUSE_URL (http://localhost:PORT, the service's
// public URL), GATEHOUSE_MAILDIR (the SMTP server's maildir, for scenarios that read mail), and
// per scenario the accounts it may use (GATEHOUSE_EMAIL, GATEHOUSE_PASSWORD, ...).
import { createHmac } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { chromium } from "playwright-core";

export const BASE = required("GATEHOUSE_URL");

/**
 * How long a scenario waits for a page, a text or a navigation before it fails. The suite runs
 * Chromium beside PostgreSQL and a score of servers on two cores, where a heavy page (Swagger UI)
 * has taken over 10 s to render: the wait is generous because it is no measure of speed
 * (bench/ has those), only of whether the page gets there at all.
 */
export const PATIENCE_MS = 30_000;

export function required(name) {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set (tests/api/browser.rs sets it)`);
  return value;
}

/** Chromium, with `args` beside the usual ones. */
export async function launch(args = []) {
  return chromium.launch({
    executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
    headless: true,
    // Containers often give /dev/shm 64 MB, too little for Chromium's renderers.
    args: ["--disable-dev-shm-usage", "--no-sandbox", ...args],
  });
}

/**
 * Runs `scenario(browser)` and exits 0, or prints the failure with the URL and visible text of
 * every open page and exits 1.
 */
export async function run(name, scenario, args = []) {
  const browser = await launch(args);
  const started = Date.now();
  try {
    await scenario(browser);
    console.log(`${name}: ok in ${Date.now() - started} ms`);
  } catch (error) {
    console.error(`${name}: FAILED: ${error?.stack ?? error}`);
    for (const context of browser.contexts()) {
      for (const page of context.pages()) {
        const text = await page
          .evaluate(() => document.body?.innerText ?? "")
          .catch((e) => `(unreadable: ${e.message})`);
        console.error(`--- page ${page.url()} shows:\n${text}\n---`);
      }
    }
    process.exitCode = 1;
  } finally {
    await browser.close();
  }
}

/** A new page (own context unless `context` is given) that fails on script errors. */
export async function newPage(browser, context) {
  const ctx = context ?? (await browser.newContext({ viewport: { width: 1280, height: 900 } }));
  const page = await ctx.newPage();
  page.setDefaultTimeout(PATIENCE_MS);
  // A CSP refusal or a script error is a failure of the page, whatever the test looks at.
  page.on("pageerror", (error) => {
    page.errors = [...(page.errors ?? []), error.message];
  });
  page.on("console", (message) => {
    if (message.type() === "error" && !/the server responded with a status of 4\d\d/.test(message.text())) {
      page.errors = [...(page.errors ?? []), message.text()];
    }
  });
  return page;
}

export function assertNoPageErrors(page) {
  if (page.errors?.length) throw new Error(`the page reported errors: ${page.errors.join(" | ")}`);
}

export function assert(condition, message) {
  if (!condition) throw new Error(message);
}

/** Waits until `text` (a string or RegExp) is visible on the page, or within the `where` selector. */
export async function expectText(page, text, where = "body") {
  const locator =
    where === "body" ? page.getByText(text).first() : page.locator(where, { hasText: text }).first();
  try {
    await locator.waitFor({ state: "visible" });
  } catch {
    const shown = await page.locator(where).first().innerText().catch(() => "");
    throw new Error(`expected ${text} visible in ${where} of ${page.url()}, which shows:\n${shown}`);
  }
}

/** The alert of the page (role=alert), once visible. */
export async function alertText(page) {
  const alert = page.getByRole("alert");
  await alert.waitFor({ state: "visible" });
  return alert.innerText();
}

/**
 * Waits for the page's path to be `path`, however it got there (a script's navigation may replace
 * another, which waitForURL reports as an aborted navigation).
 */
export async function expectPath(page, path, timeoutMs = PATIENCE_MS) {
  const deadline = Date.now() + timeoutMs;
  while (new URL(page.url()).pathname !== path) {
    if (Date.now() > deadline) throw new Error(`expected to be at ${path}, still at ${page.url()}`);
    await new Promise((r) => setTimeout(r, 25));
  }
  await page.waitForLoadState("load").catch(() => {});
}

/** Signs in through the sign-in page with a password (no second factor expected). */
export async function signIn(page, email, password, query = "") {
  await page.goto(`${BASE}/sign-in${query}`);
  await page.getByLabel("E-mail address").fill(email);
  await page.getByLabel("Password", { exact: true }).fill(password);
  await page.getByRole("button", { name: "Sign in", exact: true }).click();
}

// ---- TOTP ----

export function base32Decode(text) {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
  let bits = "";
  for (const c of text.replace(/=+$/, "").toUpperCase()) {
    const v = alphabet.indexOf(c);
    if (v < 0) throw new Error(`not base32: ${text}`);
    bits += v.toString(2).padStart(5, "0");
  }
  const bytes = [];
  for (let i = 0; i + 8 <= bits.length; i += 8) bytes.push(parseInt(bits.slice(i, i + 8), 2));
  return Buffer.from(bytes);
}

/** The 6-digit code of `secret` (base32) for the 30 s step `offset` steps from now. */
export function totp(secret, offset = 0) {
  const step = Math.floor(Date.now() / 1000 / 30) + offset;
  const counter = Buffer.alloc(8);
  counter.writeBigUInt64BE(BigInt(step));
  const mac = createHmac("sha1", base32Decode(secret)).update(counter).digest();
  const at = mac[mac.length - 1] & 0x0f;
  const value = (mac.readUInt32BE(at) & 0x7fffffff) % 1_000_000;
  return String(value).padStart(6, "0");
}

// ---- mail ----

/**
 * Every message in the SMTP server's maildir, with quoted-printable undone enough to read links
 * where a part is so encoded (undone in an 8bit text, `=3D` would eat a token starting "3D").
 */
export function mails() {
  const dir = join(required("GATEHOUSE_MAILDIR"), "new");
  let files;
  try {
    files = readdirSync(dir);
  } catch {
    return [];
  }
  return files.map((f) => {
    const text = readFileSync(join(dir, f), "utf8");
    return /content-transfer-encoding: quoted-printable/i.test(text)
      ? text.replace(/=\r?\n/g, "").replace(/=3D/g, "=")
      : text;
  });
}

/** The link to `page` (e.g. "/reset-password") in the first mail to `to` that has one. */
export async function mailedLink(to, page, { timeoutMs = PATIENCE_MS, skip = [] } = {}) {
  const pattern = new RegExp(`https?://[^\\s"<>]+${page}\\?token=[A-Za-z0-9_-]+`);
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    for (const mail of mails()) {
      const header = mail.split(/\r?\n\r?\n/, 1)[0];
      if (!new RegExp(`^To: .*${to.replace(/[.+]/g, "\\$&")}`, "mi").test(header)) continue;
      const link = mail.match(pattern)?.[0];
      if (link && !skip.includes(link)) return link;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`no mail to ${to} with a link to ${page} within ${timeoutMs} ms`);
}

/**
 * The account page's one password prompt (re-authentication, docs/api.md §3): waits for the
 * dialog and confirms it with `password`.
 */
export async function confirmPassword(page, password) {
  const dialog = page.getByRole("dialog", { name: "Confirm it is you" });
  await dialog.waitFor({ state: "visible" });
  await dialog.getByLabel("Your password").fill(password);
  await dialog.getByRole("button", { name: "Confirm" }).click();
  await dialog.waitFor({ state: "hidden" });
}
