// Browsed web applications behind a proxy (docs/api.md §6b; tests/api/browser/web_apps.rs starts
// Gatehouse, two applications and nginx or Caddy with their recipe): app A sends the browser to
// sign in and it comes back signed in; app B needs no second sign-in; a two_factor rule on B's
// /secure sends the password-only session to sign in again with its second factor; signing out
// on the account page ends the session for both applications (its cookie, replayed, is refused);
// a foreign return_to lands on /account.
//
// Environment: GATEHOUSE_URL (http://login.example.test:PORT), GATEHOUSE_EMAIL,
// GATEHOUSE_PASSWORD, GATEHOUSE_USER_ID, APP_A and APP_B (http://…example.test:PORT).
import { BASE, assert, assertNoPageErrors, expectPath, expectText, newPage, required, run, totp } from "./common.mjs";

const email = required("GATEHOUSE_EMAIL");
const password = required("GATEHOUSE_PASSWORD");
const userId = required("GATEHOUSE_USER_ID");
const appA = required("APP_A");
const appB = required("APP_B");
const COOKIE = "gatehouse_session";

/** Waits until the page is `app`'s `path`, showing `name` and the signed-in user. */
async function atApp(page, app, path, name) {
  await expectPath(page, path);
  assert(new URL(page.url()).origin === app, `at ${app}, not ${page.url()}`);
  await expectText(page, name, "h1");
  const user = await page.locator("#user").innerText();
  assert(user === userId, `${name} was told the user is ${user}, not ${userId}`);
}

/** At Gatehouse's sign-in page (its own host), by whatever redirect. */
async function atSignIn(page) {
  await expectPath(page, "/sign-in");
  assert(new URL(page.url()).origin === BASE, `at Gatehouse's sign-in, not ${page.url()}`);
}

async function password_step(page) {
  await page.getByLabel("E-mail address").fill(email);
  await page.getByLabel("Password", { exact: true }).fill(password);
  await page.getByRole("button", { name: "Sign in", exact: true }).click();
}

async function code_step(page, code) {
  await page.getByLabel("Code from your authenticator app").fill(code);
  await page.getByRole("button", { name: "Verify" }).click();
}

await run(
  "web-apps",
  async (browser) => {
    const page = await newPage(browser);
    // An application's own cookie for the site, which must reach the applications unharmed.
    await page.context().addCookies([{ name: "theme", value: "dark", domain: ".example.test", path: "/" }]);

    // App A: sent to sign in, and back where it was going, signed in.
    await page.goto(`${appA}/reports?week=7&sort=date`);
    await atSignIn(page);
    await password_step(page);
    await atApp(page, appA, "/reports", "App A");
    assert(new URL(page.url()).search === "?week=7&sort=date", `the query came back: ${page.url()}`);

    // The cookie: for the whole site, HttpOnly, SameSite=Lax.
    const cookies = await page.context().cookies();
    const cookie = cookies.find((c) => c.name === COOKIE);
    assert(cookie, `a ${COOKIE} cookie: ${JSON.stringify(cookies)}`);
    assert(cookie.domain.replace(/^\./, "") === "example.test", `its domain: ${cookie.domain}`);
    assert(cookie.httpOnly && cookie.sameSite === "Lax" && cookie.path === "/", JSON.stringify(cookie));

    // A hostile application plants a cookie of Gatehouse's name on a deeper path: the browser
    // sends it first there, the real one after it. Still signed in, and the application is handed
    // neither (tests/api/browser/web_apps.rs checks what it received).
    await page.goto(`${appA}/deep/plant`);
    await atApp(page, appA, "/deep/plant", "App A");
    await page.goto(`${appA}/deep/look`);
    await atApp(page, appA, "/deep/look", "App A");
    await page.context().clearCookies({ name: COOKIE, path: "/deep" });

    // A page an access rule keeps from this person: Gatehouse's page says so (not the proxy's
    // bare 403), on Gatehouse's origin.
    await page.goto(`${appA}/admin/settings`);
    await expectPath(page, "/forbidden");
    assert(new URL(page.url()).origin === BASE, `at Gatehouse's page, not ${page.url()}`);
    await expectText(page, "not open to you", "#forbidden");

    // App B: no second sign-in.
    await page.goto(`${appB}/`);
    await atApp(page, appB, "/", "App B");

    // The account turns on 2FA (through the pages' own client); the session stays password-only.
    await page.goto(`${BASE}/account`);
    await expectText(page, email, "#profile-email");
    const secret = await page.evaluate(async (password) => {
      const { Gatehouse } = await import("/assets/gatehouse.js");
      return (await new Gatehouse().setupTwoFactor(password)).secret;
    }, password);
    const codes = await page.evaluate(async (code) => {
      const { Gatehouse } = await import("/assets/gatehouse.js");
      return new Gatehouse().enableTwoFactor(code);
    }, totp(secret));
    // B's /secure asks for a second factor: sign in again with it, and back.
    await page.goto(`${appB}/secure`);
    await atSignIn(page);
    await expectText(page, "asks for a second factor");
    await password_step(page);
    await code_step(page, codes[0]);
    await atApp(page, appB, "/secure", "App B");
    await page.goto(`${appA}/`);
    await atApp(page, appA, "/", "App A");

    // Signing out on the account page ends the session for both applications: the cookie is
    // cleared, and replayed it is refused.
    const current = (await page.context().cookies()).find((c) => c.name === COOKIE);
    await page.goto(`${BASE}/account`);
    await expectText(page, email, "#profile-email");
    await page.locator("#sign-out").click();
    await atSignIn(page);
    const signedOut = Date.now();
    assert(
      !(await page.context().cookies()).some((c) => c.name === COOKIE),
      "the sign-out cleared the cookie",
    );
    await page.context().addCookies([current]);
    for (const app of [appA, appB]) {
      await page.goto(`${app}/`);
      await atSignIn(page);
    }
    console.log(`both applications refused the signed-out session's cookie ${Date.now() - signedOut} ms after the sign-out`);

    // A return_to to another site lands on the account page.
    await page.context().clearCookies({ name: COOKIE });
    await page.goto(`${BASE}/sign-in?return_to=${encodeURIComponent("https://evil.example/")}`);
    await password_step(page);
    await code_step(page, codes[1]);
    await expectPath(page, "/account");
    assert(new URL(page.url()).origin === BASE, `at Gatehouse's account page, not ${page.url()}`);
    // Chromium ignores the pages' Cross-Origin-Opener-Policy on plain http other than localhost,
    // and says so on the console: no error of the pages.
    page.errors = (page.errors ?? []).filter((e) => !e.includes("Cross-Origin-Opener-Policy"));
    assertNoPageErrors(page);
  },
  ["--host-resolver-rules=MAP *.example.test 127.0.0.1"],
);
