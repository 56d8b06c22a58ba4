// Apache with mod_auth_openidc (docs/recipes/apache-mod-auth-openidc.conf) as the relying party,
// in front of an application (tests/api/relying_parties/apache.rs starts Gatehouse, Apache and
// the application): an unauthenticated visit is sent to Gatehouse's authorization page, signs in,
// consents, and comes back to the page it asked for, showing the person mod_auth_openidc passed
// on. Then Gatehouse ends the session twice, and each time the Apache session ends within 5 s by
// back-channel logout: the consent withdrawn (the next visit asks consent again, no sign-in), and
// a sign-out everywhere (the next visit asks to sign in).
//
// Environment: GATEHOUSE_URL (the issuer, http://localhost:PORT), APP (Apache,
// http://127.0.0.1:PORT), GATEHOUSE_EMAIL, GATEHOUSE_PASSWORD, GATEHOUSE_USER_ID,
// GATEHOUSE_CLIENT_ID.
import http from "node:http";
import { BASE, PATIENCE_MS, assert, assertNoPageErrors, expectText, newPage, required, run } from "./common.mjs";

const app = required("APP");
const email = required("GATEHOUSE_EMAIL");
const password = required("GATEHOUSE_PASSWORD");
const userId = required("GATEHOUSE_USER_ID");
const clientId = required("GATEHOUSE_CLIENT_ID");

/** Waits for the browser to be at Gatehouse's authorization page (any step of it). */
async function atGatehouse(page) {
  const deadline = Date.now() + PATIENCE_MS;
  while (new URL(page.url()).origin !== BASE) {
    if (Date.now() > deadline) throw new Error(`not sent to Gatehouse: at ${page.url()}`);
    await new Promise((r) => setTimeout(r, 25));
  }
  await page.waitForLoadState("load").catch(() => {});
}

async function signInStep(page) {
  await page.getByLabel("E-mail address").fill(email);
  await page.getByLabel("Password", { exact: true }).fill(password);
  await page.getByRole("button", { name: "Sign in", exact: true }).click();
}

/** The consent screen names the client and what it asks; the person allows it. */
async function consentStep(page) {
  await expectText(page, "Team wiki");
  await page.getByRole("button", { name: /^(allow|accept|approve|authori[sz]e|continue|consent)/i }).click();
}

/** At the application's `path`, showing the person Apache passed on. */
async function atApp(page, path) {
  await page.waitForURL((url) => url.origin === app && url.pathname === path, { timeout: PATIENCE_MS });
  await expectText(page, "Team wiki", "h1");
  const sub = await page.locator("#sub").innerText();
  assert(sub === userId, `the application was told the user is ${sub}, not ${userId}`);
  assert((await page.locator("#email").innerText()) === email, "the e-mail passed on");
}

/**
 * A visit to the application with the browser's Apache cookies, as a browser's navigation
 * (Accept: text/html), redirects not followed: 200 while the Apache session lives, a redirect to
 * Gatehouse's authorization endpoint once it ended. node:http, not fetch: fetch says
 * `Sec-Fetch-Mode: cors`, which mod_auth_openidc answers with 401 instead of a redirect.
 */
async function visit(context) {
  const cookie = (await context.cookies(app)).map((c) => `${c.name}=${c.value}`).join("; ");
  return new Promise((resolve, reject) => {
    http
      .get(`${app}/reports`, { headers: { cookie, accept: "text/html" } }, (response) => {
        response.resume();
        resolve({ status: response.statusCode, location: response.headers.location ?? "" });
      })
      .on("error", reject);
  });
}

async function apacheSessionEnds(context, cause) {
  const started = Date.now();
  for (;;) {
    const { status, location } = await visit(context);
    if (status === 302 && location.startsWith(`${BASE}/oauth2/authorize?`)) {
      console.log(`${cause}: the Apache session ended after ${Date.now() - started} ms`);
      return;
    }
    assert(status === 200, `a visit answered ${status} ${location}`);
    if (Date.now() - started > PATIENCE_MS) {
      throw new Error(`${cause}: the Apache session still lives after ${PATIENCE_MS} ms`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The person's own first-party call to Gatehouse's API (another device of theirs). */
async function gatehouse(method, path, token, body) {
  const response = await fetch(`${BASE}${path}`, {
    method,
    headers: {
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(body ? { "content-type": "application/json" } : {}),
    },
    body: body ? JSON.stringify(body) : undefined,
  });
  const answer = await response.json();
  assert(answer.success, `${method} ${path}: ${JSON.stringify(answer)}`);
  return answer.data;
}

await run("apache-oidc", async (browser) => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  // A header that claims to be mod_auth_openidc's, sent by the visitor on every request: the
  // application must never see it (apache.rs checks what it received).
  await context.setExtraHTTPHeaders({ OIDC_CLAIM_email: "boss@example.com" });
  const page = await newPage(browser, context);

  // An unauthenticated visit: to Gatehouse, sign in, consent, back where it was going.
  await page.goto(`${app}/reports?week=7`);
  await atGatehouse(page);
  assert(new URL(page.url()).pathname.startsWith("/oauth2/authorize") || new URL(page.url()).pathname === "/sign-in",
    `at Gatehouse's authorization page: ${page.url()}`);
  await signInStep(page);
  await consentStep(page);
  await atApp(page, "/reports");
  assert(new URL(page.url()).search === "?week=7", `the query came back: ${page.url()}`);
  assertNoPageErrors(page);
  const live = await visit(context);
  assert(live.status === 200, `the Apache session is live: ${JSON.stringify(live)}`);

  // 1. The consent withdrawn at Gatehouse (from another device: the API).
  const token = (await gatehouse("POST", "/api/v1/auth/login", null, { email, password })).accessToken;
  const consents = await gatehouse("GET", "/api/v1/auth/consents", token);
  assert(consents.items.some((c) => c.clientId === clientId), `the consent listed: ${JSON.stringify(consents)}`);
  await gatehouse("DELETE", `/api/v1/auth/consents/${clientId}`, token);
  await apacheSessionEnds(context, "consent withdrawn");
  // The person's Gatehouse session lives on: consent is asked again, no sign-in.
  await page.goto(`${app}/`);
  await atGatehouse(page);
  await consentStep(page);
  await atApp(page, "/");

  // 2. Signed out everywhere at Gatehouse: the Apache session ends, the next visit signs in.
  await gatehouse("POST", "/api/v1/auth/logout", token, { scope: "all" });
  await apacheSessionEnds(context, "signed out everywhere");
  await page.goto(`${app}/reports`);
  await atGatehouse(page);
  await page.getByLabel("Password", { exact: true }).waitFor({ state: "visible" });
  await signInStep(page);
  // The consent was given again above: no consent screen this time.
  await atApp(page, "/reports");
  assertNoPageErrors(page);
});
