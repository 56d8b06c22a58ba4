// The application's own API through the library: getAccessToken() and fetch(), against a real
// Gatehouse and a small API of the test's (node:http) that checks each bearer token with
// Gatehouse (GET /auth/me) and answers plain JSON, as a team's API would: no envelope. A second
// server stands for any origin the token must never reach.

import assert from "node:assert/strict";
import { createServer } from "node:http";
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
let api;
let elsewhere;
before(async () => {
  baseUrl = await gatehouseUrl();
  api = await serve(appApi);
  elsewhere = await serve((req, res, body) => res.writeHead(200).end(`elsewhere saw ${body}`));
});
after(async () => {
  await api?.close();
  await elsewhere?.close();
  await stopServer();
});

/** A server on a port of its own; `seen` lists every request it got. */
async function serve(handler) {
  const seen = [];
  const server = createServer(async (req, res) => {
    let body = "";
    for await (const chunk of req) body += chunk;
    seen.push({ method: req.method, path: req.url, headers: req.headers, body });
    await handler(req, res, body);
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const origin = `http://127.0.0.1:${server.address().port}`;
  const close = () => new Promise((resolve) => server.close(resolve));
  return { origin, seen, close, paths: () => seen.map((r) => `${r.method} ${r.path}`) };
}

/** The team's API: who the bearer is, as Gatehouse says, or its 401 (plain text, no envelope). */
async function appApi(req, res, body) {
  if (req.url === "/redirect") {
    res.writeHead(307, { Location: `${elsewhere.origin}/landing` }).end();
    return;
  }
  const me = await fetch(`${baseUrl}/api/v1/auth/me`, {
    headers: { Authorization: req.headers.authorization ?? "" },
  });
  if (me.status !== 200 || req.url === "/always-401") {
    res.writeHead(401, { "WWW-Authenticate": 'Bearer error="invalid_token"' }).end("no");
    return;
  }
  const { data } = await me.json();
  res.writeHead(200, { "Content-Type": "application/json" });
  if (req.url === "/echo") {
    res.end(JSON.stringify({ method: req.method, thing: req.headers["x-thing"] ?? null, body }));
  } else {
    res.end(JSON.stringify([{ id: 1, owner: data.email }]));
  }
}

async function signedIn(options = {}) {
  const account = await newAccount(baseUrl);
  const storage = new MemoryStorage();
  const fetch = recordingFetch();
  const gh = new Gatehouse({
    baseUrl,
    storage,
    fetch,
    refreshMarginSeconds: 0,
    apiOrigins: [api.origin],
    ...options,
  });
  await gh.login(account.email, account.password);
  return { account, storage, fetch, gh };
}

describe("fetch", () => {
  test("hands back the API's own answer, the bearer sent along", async () => {
    const { account, storage, gh } = await signedIn();
    const before = api.seen.length;

    const response = await gh.fetch(`${api.origin}/orders`);

    assert.ok(response instanceof Response);
    assert.equal(response.status, 200);
    assert.deepEqual(await response.json(), [{ id: 1, owner: account.email }]);
    const [seen] = api.seen.slice(before);
    assert.equal(seen.headers.authorization, `Bearer ${storage.record().accessToken}`);
  });

  test("Gatehouse's own origin is allowed too, relative URLs resolving against it in Node", async () => {
    const { account, gh } = await signedIn({ apiOrigins: [] });
    const response = await gh.fetch("/api/v1/auth/me");
    assert.equal(response.status, 200);
    assert.equal((await response.json()).data.email, account.email);
  });

  test("an origin not allowed gets nothing: ORIGIN_NOT_ALLOWED before anything is sent", async () => {
    const { fetch, gh } = await signedIn();
    const calls = fetch.calls.length;
    const port = new URL(api.origin).port;
    for (const url of [
      `${elsewhere.origin}/orders`,
      `http://localhost:${port}/orders`, // the API's port under another name
      `https://127.0.0.1:${port}/orders`, // another scheme
      `http://127.0.0.1.evil.example:${port}/orders`,
      new URL(`${elsewhere.origin}/as-url`),
      new Request(`${elsewhere.origin}/as-request`),
      "data:text/plain,hi",
    ]) {
      const error = await gh.fetch(url).catch((e) => e);
      assert.ok(error instanceof GatehouseError, `${url}: ${error}`);
      assert.equal(error.code, "ORIGIN_NOT_ALLOWED");
      assert.equal(error.status, 0);
    }
    assert.equal(fetch.calls.length, calls, "nothing sent, not even a refresh");
    assert.deepEqual(elsewhere.seen, []);
  });

  test("a redirect to another origin does not carry the token along", async () => {
    const { gh } = await signedIn();
    const response = await gh.fetch(`${api.origin}/redirect`);
    assert.equal(await response.text(), "elsewhere saw ");
    const landed = elsewhere.seen.find((r) => r.path === "/landing");
    assert.ok(landed, "the redirect was followed");
    assert.equal(landed.headers.authorization, undefined);
  });

  test("method, headers and body are kept; a caller's own Authorization is replaced", async () => {
    const { storage, gh } = await signedIn();
    const before = api.seen.length;
    const response = await gh.fetch(`${api.origin}/echo`, {
      method: "PUT",
      headers: { Authorization: "Bearer forged", "X-Thing": "kept" },
      body: "the body",
    });
    assert.deepEqual(await response.json(), { method: "PUT", thing: "kept", body: "the body" });
    assert.equal(api.seen[before].headers.authorization, `Bearer ${storage.record().accessToken}`);
  });

  test("a token past its expiry on this clock: one refresh for concurrent calls", async () => {
    const { storage, fetch, gh } = await signedIn();
    storage.patch({ expiresAt: Date.now() - 1_000 });
    const before = storage.record();

    const responses = await Promise.all(Array.from({ length: 5 }, () => gh.fetch(`${api.origin}/orders`)));

    assert.deepEqual(
      responses.map((r) => r.status),
      [200, 200, 200, 200, 200],
    );
    assert.equal(fetch.count(REFRESH), 1, fetch.calls.join("\n"));
    assert.notEqual(storage.record().accessToken, before.accessToken);
  });

  test("a 401 that a refresh does not cure is handed back after one more try", async () => {
    const { fetch, gh } = await signedIn();
    const before = api.seen.length;

    const response = await gh.fetch(`${api.origin}/always-401`);

    assert.equal(response.status, 401);
    assert.equal(await response.text(), "no");
    assert.equal(api.seen.length - before, 2, "sent twice");
    assert.equal(fetch.count(REFRESH), 1);
    assert.equal(gh.signedIn, true, "the session lives on");
  });

  test("a body given as a stream cannot be sent twice: its 401 is handed back", async () => {
    const { fetch, gh } = await signedIn();
    const before = api.seen.length;
    const body = new ReadableStream({
      start(controller) {
        controller.enqueue(new TextEncoder().encode("streamed"));
        controller.close();
      },
    });
    const response = await gh.fetch(`${api.origin}/always-401`, {
      method: "POST",
      body,
      duplex: "half",
    });
    assert.equal(response.status, 401);
    assert.equal(api.seen.length - before, 1);
    assert.equal(fetch.count(REFRESH), 0);
  });

  test("not signed in: NOT_SIGNED_IN, nothing sent", async () => {
    const fetch = recordingFetch();
    const gh = new Gatehouse({
      baseUrl,
      storage: new MemoryStorage(),
      fetch,
      apiOrigins: [api.origin],
    });
    const error = await gh.fetch(`${api.origin}/orders`).catch((e) => e);
    assert.equal(error.code, "NOT_SIGNED_IN");
    assert.deepEqual(fetch.calls, []);
  });

  test("an abort rejects as fetch's does; an API that cannot be reached is NETWORK_ERROR", async () => {
    const closed = `http://127.0.0.1:${await closedPort()}`;
    const { gh } = await signedIn({ apiOrigins: [api.origin, closed] });
    const controller = new AbortController();
    controller.abort();
    const aborted = await gh.fetch(`${api.origin}/orders`, { signal: controller.signal }).catch((e) => e);
    assert.equal(aborted.name, "AbortError");

    const unreachable = await gh.fetch(`${closed}/orders`).catch((e) => e);
    assert.ok(unreachable instanceof GatehouseError);
    assert.equal(unreachable.code, "NETWORK_ERROR");
    assert.ok(unreachable.cause);
  });

  test("apiOrigins takes origins only", () => {
    for (const bad of [
      "https://api.example.com/v1",
      "ftp://api.example.com",
      "api.example.com",
      "https://u:p@api.example.com",
    ]) {
      assert.throws(() => new Gatehouse({ storage: new MemoryStorage(), apiOrigins: [bad] }), TypeError, bad);
    }
    // An origin may be written with its trailing slash.
    new Gatehouse({ storage: new MemoryStorage(), apiOrigins: ["https://api.example.com/"] });
  });
});

describe("the service says the token expired", { concurrency: true }, () => {
  test("fetch: one refresh, the request sent once more, its answer handed back", async () => {
    const { account, storage, fetch, gh } = await signedIn();
    await untilExpiredOnServer(baseUrl, storage);
    // This client's clock is behind: it believes the token still good.
    storage.patch({ expiresAt: Date.now() + 3_600_000 });
    const stale = storage.record().accessToken;
    const before = api.seen.length;

    const responses = await Promise.all([1, 2, 3].map(() => gh.fetch(`${api.origin}/orders`)));

    for (const response of responses) {
      assert.deepEqual(await response.json(), [{ id: 1, owner: account.email }]);
    }
    assert.equal(fetch.count(REFRESH), 1, fetch.calls.join("\n"));
    // (The other test of this group runs meanwhile, against /echo.)
    const sent = api.seen.slice(before).filter((r) => r.path === "/orders");
    const bearing = (token) => sent.filter((r) => r.headers.authorization === `Bearer ${token}`);
    assert.equal(sent.length, 6, "each sent twice");
    assert.equal(bearing(stale).length, 3, "first with the expired token");
    assert.equal(bearing(storage.record().accessToken).length, 3, "then with the new one");
  });

  test("a Request with a body is sent again whole", async () => {
    const { storage, fetch, gh } = await signedIn();
    await untilExpiredOnServer(baseUrl, storage);
    storage.patch({ expiresAt: Date.now() + 3_600_000 });
    const request = new Request(`${api.origin}/echo`, {
      method: "POST",
      headers: { "X-Thing": "from the request" },
      body: JSON.stringify({ order: 7 }),
    });

    const response = await gh.fetch(request);

    assert.equal(response.status, 200);
    assert.deepEqual(await response.json(), {
      method: "POST",
      thing: "from the request",
      body: JSON.stringify({ order: 7 }),
    });
    assert.deepEqual(fetch.calls.slice(-3), ["POST /echo", REFRESH, "POST /echo"]);
  });
});

describe("getAccessToken", () => {
  test("the stored token while fresh; a new one within the margin, one for concurrent callers", async () => {
    const { storage, fetch, gh } = await signedIn();
    storage.patch({ expiresAt: Date.now() + 60_000 });
    assert.equal(await gh.getAccessToken(), storage.record().accessToken);
    assert.equal(fetch.count(REFRESH), 0);

    storage.patch({ expiresAt: Date.now() - 1 });
    const old = storage.record().accessToken;
    const tokens = await Promise.all([gh.getAccessToken(), gh.getAccessToken(), gh.getAccessToken()]);

    assert.equal(fetch.count(REFRESH), 1);
    assert.equal(new Set(tokens).size, 1);
    assert.notEqual(tokens[0], old);
    assert.equal(tokens[0], storage.record().accessToken);
    const me = await fetch(`${baseUrl}/api/v1/auth/me`, {
      headers: { Authorization: `Bearer ${tokens[0]}` },
    });
    assert.equal(me.status, 200, "the service takes it");
  });

  test("not signed in: NOT_SIGNED_IN", async () => {
    const gh = new Gatehouse({ baseUrl, storage: new MemoryStorage() });
    const error = await gh.getAccessToken().catch((e) => e);
    assert.ok(error instanceof GatehouseError);
    assert.equal(error.code, "NOT_SIGNED_IN");
  });
});
