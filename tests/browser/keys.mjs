// The account page's API keys (docs/api.md §12): making a read-only key (the password confirmed
// in the page's prompt) shows it once with a copy button; the list names it by its prefix, never
// the key; the key works for a script; deleting it empties the list and the key stops.
import {
  BASE,
  assert,
  assertNoPageErrors,
  confirmPassword,
  expectPath,
  expectText,
  newPage,
  required,
  run,
  signIn,
} from "./common.mjs";

const email = required("GATEHOUSE_EMAIL");
const password = required("GATEHOUSE_PASSWORD");

const contactsWith = async (key) =>
  (await fetch(`${BASE}/api/v1/crm/contacts`, { headers: { authorization: `Bearer ${key}` } })).status;

await run("keys", async (browser) => {
  const page = await newPage(browser);
  await signIn(page, email, password);
  await expectPath(page, "/account");
  await expectText(page, "You have no API key.", "#keys");
  await page.getByLabel("What it is for").fill("Nightly export");
  await page.getByLabel("Access").selectOption({ label: "Read your contacts (Contacts)" });
  await page.getByRole("button", { name: "Make the key" }).click();
  await confirmPassword(page, password);
  await page.locator("#key-made").waitFor({ state: "visible" });
  const key = (await page.locator("#key-value").textContent()).trim();
  assert(/^ghk_[0-9A-Za-z]{32}$/.test(key), `a key is shown: ${key}`);
  await expectText(page, "shown only this once", "#key-made");
  await expectText(page, `ghk_${key.slice(4, 12)}…`, "#key-list");
  await expectText(page, "contacts:read · expires", "#key-list");
  assert(!(await page.locator("#key-list").textContent()).includes(key.slice(4)), "the list never shows the key");
  assert((await contactsWith(key)) === 200, "the key works");
  await page.getByRole("button", { name: "I have saved it" }).click();
  await page.locator("#key-made").waitFor({ state: "hidden" });
  assert(!(await page.content()).includes(key), "the key left the page");

  await page.locator("#key-list li", { hasText: "Nightly export" }).getByRole("button", { name: "Delete" }).click();
  await expectText(page, "“Nightly export” was deleted", "#keys");
  await expectText(page, "You have no API key.", "#keys");
  assert((await contactsWith(key)) === 401, "the deleted key is refused");
  assertNoPageErrors(page);
});
