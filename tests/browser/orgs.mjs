// The account page's organisations (docs/api.md §13): create one, work in it (the switcher: new
// tokens for the same session, no new login), invite and withdraw, the last owner kept, and back
// to no organisation.
import { alertText, assert, assertNoPageErrors, expectPath, expectText, newPage, required, run, signIn } from "./common.mjs";

const email = required("GATEHOUSE_EMAIL");
const password = required("GATEHOUSE_PASSWORD");

await run("orgs", async (browser) => {
  const page = await newPage(browser);
  await signIn(page, email, password);
  await expectPath(page, "/account");
  await expectText(page, "You belong to no organisation.", "#org-active");

  const create = page.locator("#org-create-form");
  await create.getByLabel("Name", { exact: true }).fill("Acme Corp");
  await create.getByLabel("Short name").fill("acme");
  await create.getByRole("button", { name: "Create" }).click();
  await expectText(page, "Acme Corp was created; you are its owner.", "#orgs");
  await expectText(page, "acme · owner", "#org-list");
  await create.getByLabel("Name", { exact: true }).fill("Another");
  await create.getByLabel("Short name").fill("acme");
  await create.getByRole("button", { name: "Create" }).click();
  assert(/slug is in use/.test(await alertText(page)), "a slug in use is refused");

  // The switcher: the session's tokens now name the organisation.
  const acme = page.locator("#org-list li", { hasText: "Acme Corp" });
  await acme.getByRole("button", { name: "Work in this one" }).click();
  await expectText(page, "You are working in Acme Corp.", "#org-active");
  await expectText(page, "Acme Corp (active)", "#org-list");
  const orgId = await page.evaluate(() => {
    const token = JSON.parse(localStorage.getItem("gatehouse")).accessToken;
    return JSON.parse(atob(token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/"))).org_id;
  });
  assert(typeof orgId === "string" && orgId.length === 36, `org_id in the token: ${orgId}`);

  // Members and invitations.
  await acme.getByRole("button", { name: "Members" }).click();
  await expectText(page, email, "#org-members");
  const invite = page.locator("#org-invite-form");
  await invite.getByLabel("Their e-mail address").fill("bob@example.com");
  await invite.getByLabel("Role").selectOption("admin");
  await invite.getByRole("button", { name: "Send the invitation" }).click();
  await expectText(page, "Invited: bob@example.com", "#org-invitations");
  await expectText(page, "admin", "#org-invitations");
  await page.locator("#org-invitations li").getByRole("button", { name: "Withdraw" }).click();
  await expectText(page, "The invitation to bob@example.com was withdrawn.", "#org-manage");
  await page.locator("#org-invitations li").waitFor({ state: "detached" });

  // The last owner cannot leave.
  await acme.getByRole("button", { name: "Leave" }).click();
  const beside = page.locator("#org-list").locator("xpath=..").getByRole("alert");
  await beside.waitFor({ state: "visible" });
  assert(/needs an owner/.test(await beside.innerText()), "the last owner stays");

  await page.getByRole("button", { name: "Work in no organisation" }).click();
  await expectText(page, "You are working in no organisation.", "#org-active");
  assertNoPageErrors(page);
});
