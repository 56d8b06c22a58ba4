// Keeping the tokens alive and letting them go: refresh before expiry, one refresh for many
// concurrent calls, one retry on TOKEN_EXPIRED, a refused refresh signing out, logout. Against a
// real Gatehouse with a short access-token lifetime (see ../test-support/server.mjs).

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { Gatehouse, GatehouseError } from "../gatehouse.js";
import {
  MemoryStorage,
  closedPort,
  gatehouseUrl,
  newAccount,
  recordingFetch,
  stopServer,
  untilExpiredOnServer,
} from "../test-support/server.mjs";

const REFRESH = "POST /api/v1/auth/refresh";

let baseUrl;
before(async () => {
  baseUrl = await gatehouseUrl();
});
after(stopServer);

/** A signed-in client over a fresh account, its fetch recording every call. */
async function signedIn(options = {}) {
  const account = await newAccount(baseUrl);
  const storage = new MemoryStorage();
  const fetch = recordingFetch();
  const gh = new Gatehouse({ baseUrl, storage, fetch, refreshMarginSeconds: 0, ...options });
  const { user } = await gh.login(account.email, account.password);
  return { account, storage, fetch, gh, user };
}

/** The refresh token is refused by the service (the session ended, or the token was used up). */
async function assertRefreshRefused(refreshToken) {
  const res = await fetch(`${baseUrl}/api/v1/auth/refresh`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ refreshToken }),
  });
  const body = await res.json();
  assert.equal(res.status, 401, JSON.stringify(body));
  assert.equal(body.error.code, "REFRESH_TOKEN_INVALID");
}

describe("refresh", () => {
  test("a token within the margin is refreshed before the call, which then succeeds", async () => {
    const { storage, fetch, gh, user } = await signedIn({ refreshMarginSeconds: 60 });
    // About to expire (the margin here is half the 2 s lifetime, see the next test).
    storage.patch({ expiresAt: Date.now() + 300 });
    const before = storage.record();
    const changes = [];
    gh.onChange((change) => changes.push(change));

    const me = await gh.request("GET", "/auth/me");

    assert.equal(me.id, user.id);
    assert.equal(fetch.count(REFRESH), 1);
    assert.deepEqual(fetch.calls.slice(-2), [REFRESH, "GET /api/v1/auth/me"]);
    const after = storage.record();
    assert.notEqual(after.accessToken, before.accessToken);
    assert.notEqual(after.refreshToken, before.refreshToken);
    assert.deepEqual(after.user, user);
    assert.deepEqual(changes, [{ type: "refreshed", user, remote: false }]);
  });

  test("the margin is at most half the token's lifetime: short tokens are not refreshed each call", async () => {
    // The default margin (60 s) is longer than these tokens live (2 s): without the cap, every
    // call would refresh first.
    const { storage, fetch, gh } = await signedIn({ refreshMarginSeconds: 60 });
    const lifetimeMs = storage.record().expiresIn * 1000;
    assert.ok(lifetimeMs <= 10_000);
    storage.patch({ expiresAt: Date.now() + lifetimeMs / 2 + 300 });
    await gh.request("GET", "/auth/me");
    assert.equal(fetch.count(REFRESH), 0);
    storage.patch({ expiresAt: Date.now() + lifetimeMs / 2 - 300 });
    await gh.request("GET", "/auth/me");
    assert.equal(fetch.count(REFRESH), 1);
  });

  test("a token outside the margin is used as it is", async () => {
    const { storage, fetch, gh } = await signedIn();
    storage.patch({ expiresAt: Date.now() + 60_000 });
    await gh.request("GET", "/auth/me");
    await gh.request("GET", "/auth/sessions");
    assert.equal(fetch.count(REFRESH), 0);
  });

  test("refresh() rotates now, resolves to the user, and keeps one session", async () => {
    const { storage, gh, user } = await signedIn({ refreshMarginSeconds: 0 });
    const first = storage.record().refreshToken;
    assert.deepEqual(await gh.refresh(), user);
    const second = storage.record().refreshToken;
    assert.notEqual(second, first);
    assert.deepEqual(await gh.refresh(), user);
    assert.notEqual(storage.record().refreshToken, second);
    // Rotation keeps the session: still exactly one, the current one. (That the presented token
    // is spent shows only after the service's grace window for racing tabs, 10 s by default.)
    const { items } = await gh.request("GET", "/auth/sessions");
    assert.equal(items.length, 1);
    assert.equal(items[0].current, true);
  });

  test("N concurrent calls with an expired token make exactly one refresh", async () => {
    const { storage, fetch, gh, user } = await signedIn();
    storage.patch({ expiresAt: Date.now() - 1_000 });
    const before = storage.record();
    const changes = [];
    gh.onChange((change) => changes.push(change.type));

    const answers = await Promise.all(Array.from({ length: 8 }, () => gh.request("GET", "/auth/me")));

    for (const me of answers) assert.equal(me.id, user.id);
    assert.equal(fetch.count(REFRESH), 1, fetch.calls.join("\n"));
    assert.equal(fetch.count("GET /api/v1/auth/me"), 8);
    assert.deepEqual(changes, ["refreshed"]);
    assert.notEqual(storage.record().refreshToken, before.refreshToken);
    // The new refresh token is the session's live one: it rotates once more.
    await gh.refresh();
  });

  test("concurrent refresh() calls share one request", async () => {
    const { fetch, gh, user } = await signedIn();
    const users = await Promise.all([gh.refresh(), gh.refresh(), gh.refresh()]);
    assert.deepEqual(users, [user, user, user]);
    assert.equal(fetch.count(REFRESH), 1);
  });
});

describe("the service says the token expired", { concurrency: true }, () => {
  test("401 TOKEN_EXPIRED: one refresh, the call retried once and answered", async () => {
    const { storage, fetch, gh, user } = await signedIn();
    await untilExpiredOnServer(baseUrl, storage);
    // This client's clock is behind: it believes the token still good.
    storage.patch({ expiresAt: Date.now() + 3_600_000 });
    const before = storage.record();

    const contact = await gh.request("POST", "/crm/contacts", { fullName: "Retried Once" });

    assert.equal(contact.fullName, "Retried Once");
    assert.deepEqual(fetch.calls.slice(-3), ["POST /api/v1/crm/contacts", REFRESH, "POST /api/v1/crm/contacts"]);
    assert.notEqual(storage.record().accessToken, before.accessToken);
    // Exactly one contact: the refused first attempt created nothing.
    const { items } = await gh.request("GET", "/crm/contacts");
    assert.deepEqual(
      items.map((c) => c.fullName),
      ["Retried Once"],
    );
    assert.deepEqual(gh.user, user);
  });

  test("N concurrent calls answered TOKEN_EXPIRED make exactly one refresh between them", async () => {
    const { storage, fetch, gh } = await signedIn();
    await untilExpiredOnServer(baseUrl, storage);
    storage.patch({ expiresAt: Date.now() + 3_600_000 });

    const answers = await Promise.all(Array.from({ length: 6 }, () => gh.request("GET", "/auth/sessions")));

    for (const { items } of answers) assert.equal(items.length, 1);
    assert.equal(fetch.count(REFRESH), 1, fetch.calls.join("\n"));
    assert.equal(fetch.count("GET /api/v1/auth/sessions"), 12, "each call sent twice: refused, then retried");
  });
});

describe("signing out", () => {
  test("a refresh answered REFRESH_TOKEN_INVALID signs out and fires onChange", async () => {
    const { account, storage, gh } = await signedIn();
    // Another device signs out everywhere: this session's refresh token dies with it.
    const other = new Gatehouse({ baseUrl, storage: new MemoryStorage() });
    await other.login(account.email, account.password);
    assert.equal((await other.logout("all")).revokedSessions, 2);
    const changes = [];
    gh.onChange((change) => changes.push(change));

    const error = await gh.refresh().catch((e) => e);

    assert.ok(error instanceof GatehouseError);
    assert.equal(error.status, 401);
    assert.equal(error.code, "REFRESH_TOKEN_INVALID");
    assert.equal(gh.signedIn, false);
    assert.equal(gh.user, null);
    assert.equal(storage.getItem("gatehouse"), null);
    assert.deepEqual(changes, [{ type: "signed-out", user: null, remote: false }]);
  });

  test("a bearer call on a session revoked elsewhere (TOKEN_INVALID) ends signed out", async () => {
    const { account, storage, fetch, gh } = await signedIn();
    storage.patch({ expiresAt: Date.now() + 3_600_000 });
    const other = new Gatehouse({ baseUrl, storage: new MemoryStorage() });
    await other.login(account.email, account.password);
    const { items } = await other.request("GET", "/auth/sessions");
    const mine = items.find((s) => !s.current);
    await other.request("DELETE", `/auth/sessions/${mine.id}`);
    const changes = [];
    gh.onChange((change) => changes.push(change.type));

    const error = await gh.request("GET", "/auth/me").catch((e) => e);

    assert.equal(error.code, "REFRESH_TOKEN_INVALID");
    assert.deepEqual(fetch.calls.slice(-2), ["GET /api/v1/auth/me", REFRESH]);
    assert.equal(gh.signedIn, false);
    assert.deepEqual(changes, ["signed-out"]);
    // The other device is unaffected.
    assert.equal((await other.request("GET", "/auth/me")).email, account.email);
  });

  test("logout ends the session on the service and forgets the tokens", async () => {
    const { storage, gh } = await signedIn();
    storage.patch({ expiresAt: Date.now() + 3_600_000 });
    const { refreshToken } = storage.record();
    const changes = [];
    gh.onChange((change) => changes.push(change.type));

    assert.deepEqual(await gh.logout(), { revokedSessions: 1 });

    assert.equal(gh.signedIn, false);
    assert.equal(storage.getItem("gatehouse"), null);
    assert.deepEqual(changes, ["signed-out"]);
    await assertRefreshRefused(refreshToken);
  });

  test("logout('others') keeps this session and ends the rest", async () => {
    const { account, storage, gh } = await signedIn();
    storage.patch({ expiresAt: Date.now() + 3_600_000 });
    const otherStorage = new MemoryStorage();
    await new Gatehouse({ baseUrl, storage: otherStorage }).login(account.email, account.password);
    const othersToken = otherStorage.record().refreshToken;

    assert.deepEqual(await gh.logout("others"), { revokedSessions: 1 });

    assert.equal(gh.signedIn, true);
    assert.equal((await gh.request("GET", "/auth/me")).email, account.email);
    await assertRefreshRefused(othersToken);
  });

  test("logout with an unknown scope is refused before anything is forgotten", async () => {
    const { fetch, gh } = await signedIn();
    const calls = fetch.calls.length;
    await assert.rejects(gh.logout("everywhere"), TypeError);
    assert.equal(gh.signedIn, true);
    assert.equal(fetch.calls.length, calls);
  });

  test("logout forgets the tokens even when the service cannot be reached", async () => {
    const { storage, gh: online } = await signedIn();
    storage.patch({ expiresAt: Date.now() + 3_600_000 });
    const offline = new Gatehouse({ baseUrl: `http://127.0.0.1:${await closedPort()}`, storage });
    assert.equal(offline.signedIn, true);
    const changes = [];
    offline.onChange((change) => changes.push(change.type));

    const error = await offline.logout().catch((e) => e);

    assert.ok(error instanceof GatehouseError);
    assert.equal(error.code, "NETWORK_ERROR");
    assert.equal(error.status, 0);
    assert.ok(error.cause, "the fetch failure is kept as the cause");
    assert.equal(offline.signedIn, false);
    assert.equal(online.signedIn, false, "the same storage: every client over it is signed out");
    assert.equal(storage.getItem("gatehouse"), null);
    assert.deepEqual(changes, ["signed-out"]);
  });

  test("a refresh that cannot reach the service keeps the tokens", async () => {
    const { storage } = await signedIn();
    const before = storage.getItem("gatehouse");
    const offline = new Gatehouse({ baseUrl: `http://127.0.0.1:${await closedPort()}`, storage });
    const error = await offline.refresh().catch((e) => e);
    assert.equal(error.code, "NETWORK_ERROR");
    assert.equal(storage.getItem("gatehouse"), before);
  });
});
