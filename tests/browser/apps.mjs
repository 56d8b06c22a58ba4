// The account page's connected applications (docs/api.md §11): the consent given to a client is
// listed with its scopes, and removing it empties the list (the client's sessions end with it).
import { assertNoPageErrors, expectPath, expectText, newPage, required, run, signIn } from "./common.mjs";

const email = required("GATEHOUSE_EMAIL");
const password = required("GATEHOUSE_PASSWORD");

await run("apps", async (browser) => {
  const page = await newPage(browser);
  await signIn(page, email, password);
  await expectPath(page, "/account");
  await expectText(page, "Notes", "#app-list");
  await expectText(page, "Know who you are on this service; Read your contacts", "#app-list");
  await page.locator("#app-list li", { hasText: "Notes" }).getByRole("button", { name: "Remove" }).click();
  await expectText(page, "Notes was removed.", "#apps");
  await page.locator("#app-list li").waitFor({ state: "detached" });
  await expectText(page, "No application is connected.", "#apps");
  assertNoPageErrors(page);
});
