// The device page (docs/api.md §11, RFC 8628) in a browser at phone width, where people open a
// command-line tool's link: the tool (this script, as its client) starts a device authorization;
// the link with the code filled in sends the browser to sign in and back; a mistyped code is
// said to be wrong; the right one names the application and what it asks; "Allow" ends on "you
// can close this window", and the tool's next poll gets its tokens.
import { BASE, PATIENCE_MS, assert, assertNoPageErrors, expectPath, expectText, newPage, required, run } from "./common.mjs";

const email = required("GATEHOUSE_EMAIL");
const password = required("GATEHOUSE_PASSWORD");
const client = required("GATEHOUSE_DEVICE_CLIENT");
const GRANT = "urn:ietf:params:oauth:grant-type:device_code";

async function form(path, fields) {
  const answer = await fetch(new URL(path, BASE), {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams(fields),
  });
  return { status: answer.status, body: await answer.json() };
}

await run("device", async (browser) => {
  const started = await form("/oauth2/device_authorization", { client_id: client, scope: "openid offline_access" });
  assert(started.status === 200, `started: ${JSON.stringify(started.body)}`);
  const { device_code: deviceCode, user_code: userCode, verification_uri_complete: link } = started.body;
  assert(/^[B-DF-HJ-NP-TV-XZ]{4}-[B-DF-HJ-NP-TV-XZ]{4}$/.test(userCode), `user code ${userCode}`);

  const context = await browser.newContext({ viewport: { width: 390, height: 844 } });
  const page = await newPage(browser, context);
  await page.goto(link);
  await expectPath(page, "/sign-in");
  await page.getByLabel("E-mail address").fill(email);
  await page.getByLabel("Password", { exact: true }).fill(password);
  await page.getByRole("button", { name: "Sign in", exact: true }).click();
  await expectPath(page, "/device");
  const code = page.getByLabel("Code");
  await code.waitFor({ state: "visible" });
  assert((await code.inputValue()) === userCode, `the link filled the code in: ${await code.inputValue()}`);

  // A typo: said, and nothing is asked.
  await code.fill("BCDF-BCDF");
  await page.getByRole("button", { name: "Continue" }).click();
  const alert = page.locator("#error");
  await alert.waitFor({ state: "visible", timeout: PATIENCE_MS });
  assert(/not a code waiting here/.test(await alert.innerText()), `a wrong code: ${await alert.innerText()}`);
  assert(await page.locator("#consent").isHidden(), "nothing asked for a wrong code");

  // The right one, typed as people type: lower case, no dash.
  await code.fill(userCode.replace("-", "").toLowerCase());
  await page.getByRole("button", { name: "Continue" }).click();
  await page.locator("#consent").waitFor({ state: "visible" });
  await expectText(page, "Acme CLI asks to", "#consent-title");
  await expectText(page, userCode, "#shown-code");
  await expectText(page, email, "#who");
  const scopes = await page.locator("#scopes li").allInnerTexts();
  assert(scopes.length === 2, `scopes in words: ${scopes}`);
  const fits = await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth);
  assert(fits, "the consent fits a phone");
  await page.getByRole("button", { name: "Allow" }).click();
  await expectText(page, "Device connected", "#done-title");
  await expectText(page, "You can close this window", "#done-text");
  assertNoPageErrors(page);
  await context.close();

  const tokens = await form("/oauth2/token", { grant_type: GRANT, device_code: deviceCode, client_id: client });
  assert(tokens.status === 200, `the tool's poll: ${JSON.stringify(tokens.body)}`);
  assert(tokens.body.refresh_token && tokens.body.id_token, "refresh and ID tokens");
  console.log("device: ok");
});
