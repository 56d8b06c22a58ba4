// The browser client on a page of the team's application, served with Gatehouse on one origin by
// nginx (docs/recipes/nginx-one-origin.conf). The page is the client README's "five lines": it
// sends the browser to /sign-in, comes back signed in and calls the application's API
// (/api/orders, guarded by Gatehouse through nginx's auth_request) with the library's fetch.
// Then two tabs call that API at once, twice: when the access token (2 s) has expired for the
// clients too (refreshed before the call), and when only the service says so (nginx answers 401:
// refreshed and sent again). Each time exactly one refresh is made between the tabs. Finally the
// token goes to no other origin: not when asked to, not through a redirect.
//
// Environment (tests/api/browser.rs): GATEHOUSE_URL (nginx's origin, Gatehouse's public URL),
// GATEHOUSE_EMAIL, GATEHOUSE_PASSWORD, GATEHOUSE_APP_DIRECT (the application's own address: another
// origin). It prints "refresh POSTs: N", every refresh the browser made, for the test to compare
// with the service's count.
import { BASE, PATIENCE_MS, assert, assertNoPageErrors, expectPath, expectText, newPage, required, run } from "./common.mjs";

const email = required("GATEHOUSE_EMAIL");
const password = required("GATEHOUSE_PASSWORD");
const direct = required("GATEHOUSE_APP_DIRECT");

/** Polls `check` (sync or async) until it is true, failing after `timeoutMs`. */
async function until(check, what, timeoutMs = PATIENCE_MS) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const stored = (tab) => tab.evaluate(() => JSON.parse(localStorage.getItem("gatehouse")));

/** Until the service (through nginx) refuses `accessToken`: its lifetime and leeway are over. */
async function untilServiceRefuses(accessToken) {
  await until(async () => {
    const res = await fetch(`${BASE}/api/v1/auth/me`, { headers: { Authorization: `Bearer ${accessToken}` } });
    return res.status === 401;
  }, "the service refuses the access token");
}

/** The application's API through the library in `tab`: its status and JSON, or the error's code. */
const orders = (tab, url = "/api/orders") =>
  tab.evaluate(async (url) => {
    const { Gatehouse } = await import("/assets/gatehouse.js");
    try {
      const response = await new Gatehouse().fetch(url);
      return { status: response.status, body: await response.json() };
    } catch (error) {
      return { code: error.code ?? error.name };
    }
  }, url);

await run("one-origin", async (browser) => {
  const tab1 = await newPage(browser);
  const context = tab1.context();
  // What the browser asked for: the API's and refresh's answers in order, and any other origin.
  const answers = [];
  const elsewhere = [];
  let refreshPosts = 0;
  context.on("response", (response) => {
    const url = new URL(response.url());
    if (url.pathname === "/api/v1/auth/refresh") refreshPosts += 1;
    if (url.pathname === "/api/orders" || url.pathname === "/api/v1/auth/refresh") {
      answers.push(`${url.pathname} ${response.status()}`);
    }
  });
  context.on("request", (request) => {
    if (new URL(request.url()).origin !== BASE) elsewhere.push(`${request.method()} ${request.url()}`);
  });

  // The README's page sends the browser to sign in, which comes back to it signed in.
  await tab1.goto(`${BASE}/`);
  await expectPath(tab1, "/sign-in");
  await tab1.getByLabel("E-mail address").fill(email);
  await tab1.getByLabel("Password", { exact: true }).fill(password);
  await tab1.getByRole("button", { name: "Sign in", exact: true }).click();
  await expectPath(tab1, "/");
  // The API's answer names the account nginx heard of from Gatehouse (Remote-Email).
  await expectText(tab1, `"owner":"${email}"`);
  const tab2 = await newPage(browser, context);
  await tab2.goto(`${BASE}/`);
  await expectText(tab2, `"owner":"${email}"`);

  /**
   * Both tabs call the API at once. The first refresh is held until the second tab waits for the
   * cross-tab lock (so the two calls really overlap). → the `expected` number of answers (of the
   * API and of refresh) the browser saw meanwhile, sorted.
   */
  async function bothTabsAtOnce(expected) {
    let release;
    const held = new Promise((resolve) => (release = resolve));
    let refreshes = 0;
    const pattern = "**/api/v1/auth/refresh";
    await context.route(pattern, async (route) => {
      refreshes += 1;
      await held;
      await route.continue();
    });
    const from = answers.length;
    const first = orders(tab1);
    await until(() => refreshes === 1, "the first tab refreshes");
    const second = orders(tab2);
    await until(
      async () => (await tab1.evaluate(() => navigator.locks.query())).pending.length > 0,
      "the second tab waits for the first one's refresh",
    );
    release();
    const results = await Promise.all([first, second]);
    await context.unroute(pattern);
    for (const result of results) {
      assert(result.status === 200, `the call was answered: ${JSON.stringify(result)}`);
      assert(result.body[0]?.owner === email, `the API's own JSON: ${JSON.stringify(result.body)}`);
    }
    assert(refreshes === 1, `exactly one refresh between the two tabs, got ${refreshes}`);
    await until(() => answers.length - from >= expected, `${expected} answers seen`);
    return answers.slice(from).sort();
  }

  // 1. Expired for the clients too (they count its 2 s on their own clock): refreshed first.
  await untilServiceRefuses((await stored(tab1)).accessToken);
  const before = await bothTabsAtOnce(3);
  assert(
    JSON.stringify(before) === JSON.stringify(["/api/orders 200", "/api/orders 200", "/api/v1/auth/refresh 200"]),
    `refreshed before the calls, no 401: ${before}`,
  );

  // 2. Expired for the service only (the clients' clocks behind): nginx answers 401, each tab's
  // library refreshes once between them and sends its call again.
  await tab1.evaluate(() => {
    const s = JSON.parse(localStorage.getItem("gatehouse"));
    s.expiresAt = Date.now() + 3_600_000;
    localStorage.setItem("gatehouse", JSON.stringify(s));
  });
  await until(async () => (await stored(tab2)).expiresAt > Date.now() + 60_000, "the second tab sees it");
  await untilServiceRefuses((await stored(tab1)).accessToken);
  const after = await bothTabsAtOnce(5);
  assert(
    JSON.stringify(after) ===
      JSON.stringify([
        "/api/orders 200",
        "/api/orders 200",
        "/api/orders 401",
        "/api/orders 401",
        "/api/v1/auth/refresh 200",
      ]),
    `a 401 each, one refresh, each call sent again: ${after}`,
  );
  await until(
    async () => (await stored(tab1)).refreshToken === (await stored(tab2)).refreshToken,
    "both tabs hold the one new refresh token",
  );
  assertNoPageErrors(tab1);
  assertNoPageErrors(tab2);

  // 3. The token goes to no other origin: the application's own address is one.
  const refused = await orders(tab1, `${direct}/api/orders`);
  assert(refused.code === "ORIGIN_NOT_ALLOWED", `refused before sending: ${JSON.stringify(refused)}`);
  assert(elsewhere.length === 0, `nothing sent elsewhere: ${elsewhere}`);
  // The API redirects to that other origin: Chromium follows without the Authorization header
  // (tests/api/browser.rs checks what arrived), and the answer, without CORS headers, stays
  // unreadable.
  const redirected = await orders(tab1, "/api/away");
  assert(redirected.code === "NETWORK_ERROR", `the redirect's answer: ${JSON.stringify(redirected)}`);
  assert(elsewhere.some((r) => r.includes("/landing")), `the redirect was followed: ${elsewhere}`);

  console.log(`refresh POSTs: ${refreshPosts}`);
});
