// Every page at a phone's width (360 px): nothing wider than the screen, every input labelled,
// no Content-Security-Policy refusal, no script error; and signing in with the keyboard alone.
import {
  BASE, assert, assertNoPageErrors, expectPath, expectText, newPage, required, run,
} from "./common.mjs";

const email = required("GATEHOUSE_EMAIL");
const password = required("GATEHOUSE_PASSWORD");

const PAGES = [
  "/sign-in",
  "/forgot-password",
  "/reset-password?token=x",
  "/verify-email?token=x",
  "/accept-invitation?token=x",
  "/register",
];

async function check(page, path) {
  const found = await page.evaluate(() => ({
    overflow: document.documentElement.scrollWidth - window.innerWidth,
    unlabelled: [...document.querySelectorAll("input")]
      .filter((i) => i.labels.length === 0 && !i.getAttribute("aria-label"))
      .map((i) => i.id || i.name),
    refused: window.__cspRefusals ?? [],
  }));
  assert(found.overflow <= 0, `${path} is ${found.overflow} px wider than a 360 px screen`);
  assert(found.unlabelled.length === 0, `${path}: inputs without a label: ${found.unlabelled}`);
  assert(found.refused.length === 0, `${path}: CSP refused ${found.refused}`);
  assertNoPageErrors(page);
}

await run("layout", async (browser) => {
  const context = await browser.newContext({ viewport: { width: 360, height: 740 }, isMobile: true });
  await context.addInitScript(() => {
    document.addEventListener("securitypolicyviolation", (e) => {
      window.__cspRefusals = [...(window.__cspRefusals ?? []), `${e.violatedDirective} ${e.blockedURI}`];
    });
  });
  const page = await newPage(browser, context);
  for (const path of PAGES) {
    await page.goto(`${BASE}${path}`);
    await page.locator("h1").waitFor();
    await check(page, path);
  }

  // The keyboard alone: the address field has the focus on arrival, Tab reaches the password,
  // Enter submits.
  await page.goto(`${BASE}/sign-in`);
  await page.locator("#password-step button[type=submit]:not([disabled])").waitFor();
  assert((await page.evaluate(() => document.activeElement?.id)) === "email", "focus starts on the address");
  await page.keyboard.type(email);
  await page.keyboard.press("Tab");
  assert((await page.evaluate(() => document.activeElement?.id)) === "password", "Tab reaches the password");
  await page.keyboard.type(password);
  await page.keyboard.press("Enter");
  await expectPath(page, "/account");
  await expectText(page, email, "#profile-email");
  await check(page, "/account");
  // Tab order reaches the sign-out button; Enter on it signs out.
  let reached = false;
  for (let i = 0; i < 12 && !reached; i++) {
    await page.keyboard.press("Tab");
    reached = (await page.evaluate(() => document.activeElement?.id)) === "sign-out";
  }
  assert(reached, "Tab reaches the sign-out button");
  await page.keyboard.press("Enter");
  await expectPath(page, "/sign-in");
});
