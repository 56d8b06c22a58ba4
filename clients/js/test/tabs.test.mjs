// Several tabs over one session: what the library does when clients share one Storage (a
// browser's localStorage) and one Web Locks manager, against a real Gatehouse. Node has neither
// localStorage nor navigator.locks, so the test gives both as small in-memory implementations of
// their interfaces; the end-to-end browser tests run the same code on Chromium's own.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { Gatehouse } from "../gatehouse.js";
import {
  MemoryStorage,
  gatehouseUrl,
  newAccount,
  recordingFetch,
  sleep,
  stopServer,
} from "../test-support/server.mjs";

const REFRESH = "POST /api/v1/auth/refresh";

let baseUrl;
before(async () => {
  baseUrl = await gatehouseUrl();
});
after(stopServer);

/**
 * The Web Locks interface's exclusive mode: one holder per name, the others queued in order;
 * `ifAvailable` calls back with null at once when the lock is held.
 */
class LockManager {
  #held = new Set();
  #queues = new Map();
  requested = 0;
  request(name, options, callback) {
    this.requested += 1;
    const [opts, cb] = typeof options === "function" ? [{}, options] : [options, callback];
    if (opts.ifAvailable && this.#held.has(name)) return Promise.resolve().then(() => cb(null));
    return new Promise((resolve, reject) => {
      const grant = () => {
        this.#held.add(name);
        Promise.resolve()
          .then(() => cb({ name, mode: "exclusive" }))
          .then(resolve, reject)
          .finally(() => {
            this.#held.delete(name);
            const next = this.#queues.get(name)?.shift();
            if (next) next();
          });
      };
      if (this.#held.has(name)) {
        if (!this.#queues.has(name)) this.#queues.set(name, []);
        this.#queues.get(name).push(grant);
      } else {
        grant();
      }
    });
  }
}

/**
 * localStorage as Chromium gives it to tabs in different renderer processes: each tab sees its
 * own writes at once and the other tabs' writes `lagMs` later.
 */
class LaggingStorage {
  static shared(lagMs) {
    const backing = new Map();
    const views = [];
    return () => {
      const view = new LaggingStorage(backing, views, lagMs);
      views.push(view);
      return view;
    };
  }
  #cache;
  #views;
  #lagMs;
  constructor(backing, views, lagMs) {
    this.#cache = new Map(backing);
    this.#views = views;
    this.#lagMs = lagMs;
  }
  getItem(key) {
    return this.#cache.has(key) ? this.#cache.get(key) : null;
  }
  setItem(key, value) {
    this.#apply(key, String(value));
  }
  removeItem(key) {
    this.#apply(key, null);
  }
  #apply(key, value) {
    for (const view of this.#views) {
      const deliver = () => (value === null ? view.#cache.delete(key) : view.#cache.set(key, value));
      if (view === this) deliver();
      else setTimeout(deliver, this.#lagMs);
    }
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
  assert.ok(locks.requested >= 3, "each tab asked for the lock");
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

test("tabs that see each other's writes late still make one refresh between them", async () => {
  // The lag of Chromium's per-process localStorage: a tab granted the lock right after another
  // tab rotated still reads the old tokens for a moment. Longer here than the rotating tab's hold
  // on the lock, so that the waiting tabs' watch on their storage is what saves the rotation.
  const LAG_MS = 400;
  const locks = new LockManager();
  const account = await newAccount(baseUrl);
  const view = LaggingStorage.shared(LAG_MS);
  const fetch = recordingFetch();
  const [a, b, c] = [view(), view(), view()].map(
    (storage) => new Gatehouse({ baseUrl, storage, fetch, locks, refreshMarginSeconds: 0 }),
  );
  const { user } = await a.login(account.email, account.password);
  await sleep(LAG_MS + 100);
  assert.deepEqual(c.user, user);

  // All at once: one rotates, the others wait for the lock, then for the tokens to arrive.
  const answers = await Promise.all([a, b, c].map((tab) => tab.refresh()));
  assert.deepEqual(answers, [user, user, user]);
  assert.equal(fetch.count(REFRESH), 1, fetch.calls.join("\n"));

  // One after the other: b asks just after a rotated, before a's tokens reached b's storage.
  await sleep(LAG_MS + 100);
  await a.refresh();
  assert.equal(fetch.count(REFRESH), 2);
  await b.refresh();
  assert.equal(fetch.count(REFRESH), 2, "b used a's rotation");
  await sleep(LAG_MS + 100);
  assert.equal((await c.request("GET", "/auth/me")).id, user.id);
  assert.equal(fetch.count(REFRESH), 2);
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
