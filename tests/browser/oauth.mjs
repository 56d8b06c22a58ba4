// The OpenID provider's authorization page (docs/api.md §11) in a browser, at desktop and phone
// width: a relying party sends the browser to /oauth2/authorize, the person signs in ("Sign in to
// continue to <client>"), allows the client the scopes shown in words, and lands on the redirect
// URI with a code; a first-party client then gets its code without a question. A person with an
// organisation finds it chosen on the consent screen ("On behalf of", docs/api.md §13), and the
// client's token names it; one without sees no such choice.
import { createHash, randomBytes } from "node:crypto";

import { BASE, PATIENCE_MS, assert, assertNoPageErrors, expectText, newPage, required, run } from "./common.mjs";

const password = required("GATEHOUSE_PASSWORD");
const third = required("GATEHOUSE_CLIENT_THIRD");
const first = required("GATEHOUSE_CLIENT_FIRST");
const thirdSecret = required("GATEHOUSE_CLIENT_THIRD_SECRET");
const orgId = required("GATEHOUSE_ORG_ID");
const REDIRECT = "https://app.example.test/callback";

const b64url = (bytes) => Buffer.from(bytes).toString("base64url");

let verifier;

function authorizeUrl(client, scope, state, loginHint) {
  verifier = b64url(randomBytes(32));
  const challenge = b64url(createHash("sha256").update(verifier).digest());
  const url = new URL("/oauth2/authorize", BASE);
  for (const [k, v] of Object.entries({
    response_type: "code",
    client_id: client,
    redirect_uri: REDIRECT,
    scope,
    state,
    code_challenge: challenge,
    code_challenge_method: "S256",
    nonce: "n-1",
    ...(loginHint ? { login_hint: loginHint } : {}),
  })) {
    url.searchParams.set(k, v);
  }
  return url.href;
}

/** Waits for the browser to land on the redirect URI; returns its query. */
async function landed(page) {
  await page.waitForURL((url) => url.href.startsWith(REDIRECT), { timeout: PATIENCE_MS });
  return new URL(page.url()).searchParams;
}

async function noSideways(page, label) {
  const fits = await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth);
  assert(fits, `${label}: the page fits its width`);
}

/** The code exchanged as the third-party client does: the access token's claims. */
async function exchanged(code) {
  const answer = await fetch(new URL("/oauth2/token", BASE), {
    method: "POST",
    headers: {
      "content-type": "application/x-www-form-urlencoded",
      authorization: `Basic ${Buffer.from(`${third}:${thirdSecret}`).toString("base64")}`,
    },
    body: new URLSearchParams({
      grant_type: "authorization_code",
      code,
      redirect_uri: REDIRECT,
      code_verifier: verifier,
    }),
  });
  const tokens = await answer.json();
  assert(answer.ok, `the code exchanged: ${JSON.stringify(tokens)}`);
  return JSON.parse(Buffer.from(tokens.access_token.split(".")[1], "base64url").toString());
}

async function scenario(browser, viewport, email, member) {
  const context = await browser.newContext({ viewport });
  // The relying party's callback, answered here: only where the browser lands matters.
  await context.route(`${REDIRECT}**`, (route) =>
    route.fulfill({ status: 200, contentType: "text/html", body: "<p>callback</p>" }),
  );
  const page = await newPage(browser, context);

  await page.goto(authorizeUrl(third, "openid profile email", "s-third", email));
  await page.waitForURL((url) => url.pathname === "/sign-in");
  await expectText(page, "Sign in to continue to Acme Reports", "#title");
  await noSideways(page, `sign-in at ${viewport.width}`);
  const hinted = await page.getByLabel("E-mail address").inputValue();
  assert(hinted === email, `login_hint typed in the address: ${hinted}`);
  await page.getByLabel("Password", { exact: true }).fill(password);
  await page.getByRole("button", { name: "Sign in", exact: true }).click();

  // The consent screen: the client's name and the scopes in words.
  await page.locator("#consent").waitFor({ state: "visible" });
  await expectText(page, "Acme Reports asks to", "#consent-title");
  const scopes = await page.locator("#scopes li").allInnerTexts();
  assert(
    JSON.stringify(scopes) ===
      JSON.stringify(["Know who you are on this service", "See your name", "See your e-mail address"]),
    `scopes in words: ${scopes}`,
  );
  await expectText(page, email, "#who");
  if (!member) {
    // "Not you?": signed out here, and back to signing in for the same request.
    await page.getByRole("button", { name: "not you?" }).click();
    await page.waitForURL((url) => url.pathname === "/sign-in");
    await expectText(page, "Sign in to continue to Acme Reports", "#title");
    await page.getByLabel("E-mail address").fill(email);
    await page.getByLabel("Password", { exact: true }).fill(password);
    await page.getByRole("button", { name: "Sign in", exact: true }).click();
    await page.locator("#consent").waitFor({ state: "visible" });
    await expectText(page, email, "#who");
  }
  // The organisation the client acts in: the person's only one, chosen already; none is offered.
  const choice = page.getByLabel("On behalf of");
  if (member) {
    const offered = await choice.locator("option").allInnerTexts();
    assert(
      JSON.stringify(offered) === JSON.stringify(["Only me: my own data", "Org acme (acme)"]),
      `organisations offered: ${offered}`,
    );
    assert((await choice.inputValue()) === orgId, "the only organisation is chosen");
  } else {
    assert(await page.locator("#org-choice").isHidden(), "no organisation to choose");
  }
  await noSideways(page, `consent at ${viewport.width}`);
  await page.getByRole("button", { name: "Allow" }).click();
  const query = await landed(page);
  assert(query.get("code")?.length >= 22, `a code: ${query}`);
  assert(query.get("state") === "s-third", `state: ${query}`);
  assert(query.get("iss"), `iss: ${query}`);
  const claims = await exchanged(query.get("code"));
  assert(claims.org_id === (member ? orgId : undefined), `org_id: ${claims.org_id}`);

  // Signed in now: a first-party client asks nothing.
  await page.goto(authorizeUrl(first, "openid", "s-first"));
  const direct = await landed(page);
  assert(direct.get("code") && direct.get("state") === "s-first", `first party: ${direct}`);
  assertNoPageErrors(page);
  await context.close();
}

await run("oauth", async (browser) => {
  await scenario(browser, { width: 1280, height: 900 }, required("GATEHOUSE_EMAIL"), true);
  await scenario(browser, { width: 390, height: 844 }, required("GATEHOUSE_EMAIL_PHONE"), false);
});
