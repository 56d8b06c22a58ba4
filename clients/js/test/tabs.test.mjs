// Several tabs over one session: what the library does when clients share one Storage (a
// browser's localStorage) and one Web Locks manager, against a real Gatehouse. Node has neither
// localStorage nor navigator.locks, so the test gives both as small in-memory implementations of
// their interfaces; the end-to-end browser tests run the same code on Chromium's own.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { Gatehouse } from "../gatehouse.js";
import { MemoryStorage, gatehouseUrl, newAccount, recordingFetch, stopServer } from "../test-support/server.mjs";

const REFRESH = "POST /api/v1/auth/refresh";

let baseUrl;
before(async () => {
  baseUrl = await gatehouseUrl();
});
after(stopServer);

/** The Web Locks interface's exclusive mode: one holder per name, the others queued in order. */
class LockManager {
  #tails = new Map();
  requested = 0;
  request(name, options, callback) {
    this.requested += 1;
    const cb = typeof options === "function" ? options : callback;
    const previous = this.#tails.get(name) ?? Promise.resolve();
    const held = previous.then(() => cb({ name, mode: "exclusive" }));
    const tail = held.catch(() => {});
    this.#tails.set(name, tail);
    tail.then(() => {
      if (this.#tails.get(name) === tail) this.#tails.delete(name);
    });
    return held;
  }
}

async function tabs(n, { locks } = {}) {
  const account = await newAccount(baseUrl);
  const storage = new MemoryStorage();
  const fetch = recordingFetch();
  const open = Array.from(
    { length: n },
    () => new Gatehouse({ baseUrl, storage, fetch, locks, refreshMarginSeconds: 0 }),
  );
  const { user } = await open[0].login(account.email, account.password);
  return { account, storage, fetch, tabs: open, user };
}

test("tabs sharing storage and Web Locks: one refresh between them all", async () => {
  const locks = new LockManager();
  const { storage, fetch, tabs: [a, b, c], user } = await tabs(3, { locks });
  assert.deepEqual(b.user, user, "a sign-in in one tab is seen by the others");
  storage.patch({ expiresAt: Date.now() - 1_000 });
  const before = storage.record();

  const answers = await Promise.all(
    [a, b, c, a, b, c].map((tab) => tab.request("GET", "/auth/me")),
  );

  for (const me of answers) assert.equal(me.id, user.id);
  assert.equal(fetch.count(REFRESH), 1, fetch.calls.join("\n"));
  assert.equal(locks.requested, 3, "each tab asked for the lock once");
  assert.notEqual(storage.record().refreshToken, before.refreshToken);
  // The stored refresh token is the live one: the session rotates on.
  await c.refresh();
  assert.equal(fetch.count(REFRESH), 2);
});

test("a tab that waited for the lock uses the tokens another tab rotated", async () => {
  const locks = new LockManager();
  const { storage, fetch, tabs: [a, b] } = await tabs(2, { locks });
  const seen = storage.record().refreshToken;

  const [first, second] = await Promise.all([a.refresh(), b.refresh()]);

  assert.deepEqual(first, second);
  assert.equal(fetch.count(REFRESH), 1);
  assert.notEqual(storage.record().refreshToken, seen);
});

test("a sign-out in one tab signs every tab out", async () => {
  const { storage, tabs: [a, b] } = await tabs(2);
  storage.patch({ expiresAt: Date.now() + 3_600_000 });
  await a.logout();
  assert.equal(b.signedIn, false);
  const error = await b.request("GET", "/auth/me").catch((e) => e);
  assert.equal(error.code, "NOT_SIGNED_IN");
});

test("onChange reports another tab's changes from the storage event", async (t) => {
  // What a browser dispatches on the other tabs' windows when one tab writes localStorage.
  const window = new EventTarget();
  globalThis.addEventListener = window.addEventListener.bind(window);
  globalThis.removeEventListener = window.removeEventListener.bind(window);
  t.after(() => {
    delete globalThis.addEventListener;
    delete globalThis.removeEventListener;
  });
  const storageEvent = (key, oldValue, storageArea) =>
    Object.assign(new Event("storage"), { key, oldValue, storageArea });

  const { storage, tabs: [a, b], user } = await tabs(2);
  const changes = [];
  const unsubscribe = b.onChange((change) => changes.push(change));

  window.dispatchEvent(storageEvent("gatehouse", null, storage));
  const signedInRaw = storage.getItem("gatehouse");
  await a.refresh();
  window.dispatchEvent(storageEvent("gatehouse", signedInRaw, storage));
  window.dispatchEvent(storageEvent("another-key", null, storage));
  const refreshedRaw = storage.getItem("gatehouse");
  await a.logout();
  window.dispatchEvent(storageEvent("gatehouse", refreshedRaw, storage));

  assert.deepEqual(changes, [
    { type: "signed-in", user, remote: true },
    { type: "refreshed", user, remote: true },
    { type: "signed-out", user: null, remote: true },
  ]);
  unsubscribe();
  window.dispatchEvent(storageEvent("gatehouse", null, storage));
  assert.equal(changes.length, 3, "no call after unsubscribing");
});
