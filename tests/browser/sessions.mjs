// Sessions: one browser signs another out from the account page; then two tabs of one browser
// refresh at once and the session is rotated exactly once (Web Locks across tabs; the rotations
// are also counted by tests/api/browser.rs in the database).
import {
  BASE, assert, expectPath, expectText, newPage, required, run, signIn,
} from "./common.mjs";

const email = required("GATEHOUSE_EMAIL");
const password = required("GATEHOUSE_PASSWORD");

await run("sessions", async (browser) => {
  // Two browsers (contexts share nothing), both signed in.
  const laptop = await newPage(browser);
  const phone = await newPage(browser);
  await signIn(phone, email, password);
  await expectPath(phone, "/account");
  await signIn(laptop, email, password);
  await expectPath(laptop, "/account");
  const rows = laptop.locator("#session-list li");
  await expectText(laptop, "(this browser)", "#session-list");
  assert((await rows.count()) === 2, `two sessions listed, got ${await rows.count()}`);

  // The laptop signs the phone out: the row that is not this browser.
  const other = rows.filter({ hasNotText: "(this browser)" });
  await other.getByRole("button", { name: "Sign out" }).click();
  await expectText(laptop, "That session was signed out.");
  await rows.nth(1).waitFor({ state: "detached" });
  // The phone's next call is refused, its refresh too: it lands on the sign-in page.
  await phone.reload();
  await expectPath(phone, "/sign-in");
  assert(
    (await phone.evaluate(() => localStorage.getItem("gatehouse"))) === null,
    "the phone forgot its tokens",
  );

  // Two tabs of the laptop, both holding an access token their client thinks expired.
  const tab1 = laptop;
  const tab2 = await newPage(browser, laptop.context());
  await tab2.goto(`${BASE}/account`);
  await expectText(tab2, email, "#profile-email");
  const before = JSON.parse(await tab1.evaluate(() => localStorage.getItem("gatehouse")));
  await tab1.evaluate(() => {
    const s = JSON.parse(localStorage.getItem("gatehouse"));
    s.expiresAt = Date.now() - 1000;
    localStorage.setItem("gatehouse", JSON.stringify(s));
  });
  // Count refreshes across the whole browser, and hold the first one a moment after the second
  // tab has started its call, so that the two really overlap (the hold widens the race; it decides
  // nothing).
  let refreshes = 0;
  let release;
  const held = new Promise((r) => (release = r));
  await laptop.context().route("**/api/v1/auth/refresh", async (route) => {
    refreshes += 1;
    await held;
    await route.continue();
  });
  const call = (tab) =>
    tab.evaluate(async () => {
      const { Gatehouse } = await import("/assets/gatehouse.js");
      const me = await new Gatehouse().request("GET", "/auth/me");
      return me.email;
    });
  const first = call(tab1);
  while (refreshes === 0) await new Promise((r) => setTimeout(r, 20));
  const second = call(tab2);
  await new Promise((r) => setTimeout(r, 300));
  release();
  const [a, b] = await Promise.all([first, second]);
  assert(a === email && b === email, `both tabs made their call: ${a}, ${b}`);
  // Chromium hands one tab's localStorage writes to another's process late; the library holds the
  // lock a moment after rotating and a waiting tab watches storage, so the second tab uses the
  // first's tokens (tests/api/browser.rs also counts the rotations in the database).
  assert(refreshes === 1, `exactly one refresh for two tabs, got ${refreshes}`);
  const after1 = JSON.parse(await tab1.evaluate(() => localStorage.getItem("gatehouse")));
  const after2 = JSON.parse(await tab2.evaluate(() => localStorage.getItem("gatehouse")));
  assert(after1.refreshToken !== before.refreshToken, "the session was rotated");
  assert(after1.refreshToken === after2.refreshToken, "both tabs hold the one new token");

  // Sign out everywhere from one tab: the other tab follows (storage event), and the session is gone.
  await tab2.reload();
  await expectText(tab2, email, "#profile-email");
  await tab1.getByRole("button", { name: "Sign out everywhere" }).click();
  await expectPath(tab1, "/sign-in");
  await expectPath(tab2, "/sign-in");
});
