// Swagger UI (/docs, GATEHOUSE_DOCS=on) under the CSP of its own: it renders this service's
// document and can expand a call, and the browser refuses nothing it needs (a refusal is a
// console error, which fails the page).
import { BASE, assertNoPageErrors, expectText, newPage, run } from "./common.mjs";

await run("docs", async (browser) => {
  const page = await newPage(browser);
  await page.goto(`${BASE}/docs/`);
  await expectText(page, "Gatehouse", ".swagger-ui .info");
  await page.getByText("/api/v1/auth/login", { exact: true }).first().click();
  await expectText(page, "Execute");
  assertNoPageErrors(page);
});
