// Signing in with another identity provider (docs/api.md §14), in Chromium, against a real OpenID
// provider (panva's oidc-provider, tests/browser/upstream-idp.mjs) whose own login form the person
// fills in:
// - the provider's button on /sign-in makes the account (signup) and lands at return_to, signed in;
// - an address under the provider's domain typed on /sign-in goes to the provider, no password asked;
// - an upstream identity whose address has a local account is never linked by itself: back on
//   /sign-in with the reason;
// - a password account links the provider from /account (the password confirmed in the prompt),
//   and comes back to the account page with the provider listed;
// - an account the provider made (no password) confirms it is its owner through the provider.
import { BASE, assert, assertNoPageErrors, alertText, confirmPassword, expectPath, expectText, newPage, required, run, signIn } from "./common.mjs";

const email = required("GATEHOUSE_EMAIL");
const password = required("GATEHOUSE_PASSWORD");
const provider = required("PROVIDER_NAME");
// Accounts of the upstream provider, by the id typed in its login form.
const newcomer = required("UPSTREAM_NEWCOMER");
const newcomerName = required("UPSTREAM_NEWCOMER_NAME");
const newcomerEmail = required("UPSTREAM_NEWCOMER_EMAIL");
const clash = required("UPSTREAM_CLASH");
const linker = required("UPSTREAM_LINKER");
// Set: the book's pictures of the sign-in page with a provider and of the linked identity
// (docs/guide/providers.md) are taken on the way, into this folder.
const shots = process.env.SCREENSHOTS_DIR;

async function picture(page, name, selector) {
  if (!shots) return;
  await page.waitForLoadState("networkidle").catch(() => {});
  const target = selector ? page.locator(selector) : page;
  await target.screenshot({ path: `${shots}/${name}.png` });
}

/** The provider's own login form: its account id, any password. */
async function upstreamLogin(page, account) {
  const login = page.locator('input[name="login"]');
  await login.waitFor({ state: "visible" });
  assert(!page.url().startsWith(BASE), `the provider's form is the provider's page: ${page.url()}`);
  await login.fill(account);
  await page.locator('input[name="password"]').fill("whatever the provider checks");
  await page.locator('button[type="submit"], input[type="submit"]').first().click();
}

await run("federation", async (browser) => {
  // The button: a new account, signed in at return_to.
  const page = await newPage(browser);
  await page.goto(`${BASE}/sign-in?return_to=${encodeURIComponent(`${BASE}/account#sessions`)}`);
  await page.getByRole("link", { name: `Sign in with ${provider}` }).waitFor();
  await picture(page, "sign-in-providers-desktop");
  await page.getByRole("link", { name: `Sign in with ${provider}` }).click();
  await upstreamLogin(page, newcomer);
  await expectPath(page, "/account");
  assert(new URL(page.url()).hash === "#sessions", `back at return_to: ${page.url()}`);
  await expectText(page, newcomerName, "#who-name");
  await expectText(page, provider, "#identity-list");
  await expectText(page, newcomerEmail, "#identity-list");
  // An account the provider made has no password: the confirmation prompt says how to get one.
  await page.getByLabel("What it is for").fill("Nightly export");
  await page.getByRole("button", { name: "Make the key" }).click();
  const prompt = page.getByRole("dialog", { name: "Confirm it is you" });
  await expectText(page, "Your account has no password yet", "#reauth");
  // It confirms through the provider instead, and comes back with the window open.
  await prompt.getByRole("button", { name: `Use ${provider}` }).click();
  await upstreamLogin(page, newcomer);
  await expectPath(page, "/account");
  await expectText(page, `You confirmed it is you with ${provider}`);
  await page.getByLabel("What it is for").fill("Nightly export");
  await page.getByRole("button", { name: "Make the key" }).click();
  await page.locator("#key-made").waitFor({ state: "visible" });
  assert(!(await prompt.isVisible()), "no second prompt within the window");
  // The guarded applications' cookie came with the callback.
  const cookies = await page.context().cookies(BASE);
  assert(cookies.some((c) => c.name === "gatehouse_session" && c.httpOnly), "the session cookie is set");
  assert(!cookies.some((c) => c.name === "gatehouse_federation"), "the flow's cookie is gone");
  assertNoPageErrors(page);

  // The domain: typing the address sends it to the provider, no password field.
  const typed = await newPage(browser);
  await typed.goto(`${BASE}/sign-in`);
  await typed.getByLabel("E-mail address").fill(newcomerEmail);
  await expectText(typed, `sign in with ${provider}`, "#sso-notice");
  await picture(typed, "sign-in-domain-desktop");
  assert(!(await typed.getByLabel("Password", { exact: true }).isVisible()), "no password field for the domain");
  await typed.getByRole("button", { name: `Continue with ${provider}` }).click();
  await upstreamLogin(typed, newcomer);
  await expectPath(typed, "/account");
  await expectText(typed, newcomerName, "#who-name");
  assertNoPageErrors(typed);

  // Never a silent link: the upstream address is a local account's.
  const refused = await newPage(browser);
  await refused.goto(`${BASE}/sign-in`);
  await refused.getByRole("link", { name: `Sign in with ${provider}` }).click();
  await upstreamLogin(refused, clash);
  await expectPath(refused, "/sign-in");
  const why = await alertText(refused);
  assert(why.includes("An account with your address exists already"), `the reason is shown: ${why}`);
  assert(!(await refused.evaluate(() => localStorage.length)), "nothing signed in");
  assertNoPageErrors(refused);

  // Linking from the account page, after the password.
  const owner = await newPage(browser);
  await signIn(owner, email, password);
  await expectPath(owner, "/account");
  await expectText(owner, "No provider is linked to your account.", "#identities");
  await owner.locator("#identity-offers li").getByRole("button", { name: `Link ${provider}` }).click();
  await confirmPassword(owner, password);
  await upstreamLogin(owner, linker);
  await expectPath(owner, "/account");
  await expectText(owner, `${provider} is linked`, "#identities");
  await expectText(owner, provider, "#identity-list");
  await picture(owner, "account-providers-desktop", "#identities");
  assertNoPageErrors(owner);
});
