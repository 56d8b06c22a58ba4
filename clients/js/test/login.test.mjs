// Login, the second factor and typed errors, against a real Gatehouse (see
// ../test-support/server.mjs for the service these tests expect).

import assert from "node:assert/strict";
import { createServer } from "node:http";
import { after, before, describe, test } from "node:test";

import { Gatehouse, GatehouseError } from "../gatehouse.js";
import {
  MemoryStorage,
  authenticator,
  gatehouseUrl,
  hotp,
  newAccount,
  stopServer,
} from "../test-support/server.mjs";

let baseUrl;
before(async () => {
  baseUrl = await gatehouseUrl();
});
after(stopServer);

function client(options = {}) {
  const storage = new MemoryStorage();
  const gh = new Gatehouse({ baseUrl, storage, refreshMarginSeconds: 0, ...options });
  return { gh, storage };
}

/** An account with 2FA on, enrolled through the API as the account page does. */
async function accountWithTwoFactor() {
  const account = await newAccount(baseUrl, "Tess Factor");
  const { gh } = client();
  await gh.login(account.email, account.password);
  const setup = await gh.request("POST", "/auth/2fa/setup", { password: account.password });
  assert.match(setup.otpauthUri, /^otpauth:\/\/totp\//);
  const totp = authenticator(setup.secret);
  const { recoveryCodes } = await gh.request("POST", "/auth/2fa/enable", { code: totp.next() });
  assert.equal(recoveryCodes.length, 10);
  await gh.logout();
  return { ...account, totp, recoveryCodes };
}

test("the test authenticator is RFC 6238: Appendix B's SHA-1 vectors", () => {
  const key = Buffer.from("12345678901234567890");
  for (const [seconds, code] of [
    [59, "94287082"],
    [1111111109, "07081804"],
    [1234567890, "89005924"],
    [20000000000, "65353130"],
  ]) {
    assert.equal(hotp(key, Math.floor(seconds / 30), 8), code);
  }
});

describe("login without 2FA", () => {
  test("signs in, stores the tokens, fires onChange, and the bearer calls work", async () => {
    const account = await newAccount(baseUrl, "Ada Lovelace");
    const { gh, storage } = client();
    const changes = [];
    gh.onChange((change) => changes.push(change));
    assert.equal(gh.signedIn, false);
    assert.equal(gh.user, null);

    const result = await gh.login(account.email, account.password);

    assert.equal(result.twoFactorRequired, false);
    assert.deepEqual(result.user, { id: account.id, email: account.email, fullName: "Ada Lovelace" });
    assert.equal(gh.signedIn, true);
    assert.deepEqual(gh.user, result.user);
    const record = storage.record();
    assert.equal(typeof record.accessToken, "string");
    assert.equal(typeof record.refreshToken, "string");
    assert.ok(record.expiresAt > Date.now() - 60_000 && record.expiresAt < Date.now() + 86_400_000);
    assert.deepEqual(changes, [{ type: "signed-in", user: result.user, remote: false }]);

    const me = await gh.request("GET", "/auth/me");
    assert.equal(me.email, account.email);
    assert.equal(me.twoFactorEnabled, false);
  });

  test("a wrong password is INVALID_CREDENTIALS and leaves the client signed out", async () => {
    const account = await newAccount(baseUrl);
    const { gh, storage } = client();
    const error = await gh.login(account.email, "not the password at all").then(
      () => assert.fail("login succeeded"),
      (e) => e,
    );
    assert.ok(error instanceof GatehouseError);
    assert.ok(error instanceof Error);
    assert.equal(error.name, "GatehouseError");
    assert.equal(error.status, 401);
    assert.equal(error.code, "INVALID_CREDENTIALS");
    assert.equal(gh.signedIn, false);
    assert.equal(storage.getItem("gatehouse"), null);
  });
});

describe("login with 2FA", () => {
  test("password, then a TOTP code: the challenge is kept inside, not returned", async () => {
    const account = await accountWithTwoFactor();
    const { gh, storage } = client();
    const changes = [];
    gh.onChange((change) => changes.push(change.type));

    const first = await gh.login(account.email, account.password);

    assert.deepEqual(first, { twoFactorRequired: true });
    assert.equal(gh.twoFactorPending, true);
    assert.equal(gh.signedIn, false);
    assert.equal(storage.getItem("gatehouse"), null, "nothing stored before the second factor");
    assert.deepEqual(changes, []);

    const user = await gh.verifyTwoFactor(account.totp.next());

    assert.deepEqual(user, { id: account.id, email: account.email, fullName: "Tess Factor" });
    assert.equal(gh.signedIn, true);
    assert.equal(gh.twoFactorPending, false);
    assert.deepEqual(changes, ["signed-in"]);
    const me = await gh.request("GET", "/auth/me");
    assert.equal(me.twoFactorEnabled, true);
  });

  test("a wrong code is INVALID_2FA_CODE with attemptsRemaining; the right one then works", async () => {
    const account = await accountWithTwoFactor();
    const { gh } = client();
    await gh.login(account.email, account.password);

    const error = await gh.verifyTwoFactor(account.totp.wrong()).then(
      () => assert.fail("a wrong code was accepted"),
      (e) => e,
    );

    assert.ok(error instanceof GatehouseError);
    assert.equal(error.status, 401);
    assert.equal(error.code, "INVALID_2FA_CODE");
    assert.equal(error.details.attemptsRemaining, 4);
    assert.equal(gh.signedIn, false);
    assert.equal(gh.twoFactorPending, true, "the challenge survives a wrong code");

    await gh.verifyTwoFactor(account.totp.next());
    assert.equal(gh.signedIn, true);
  });

  test("a recovery code finishes the login and is used up", async () => {
    const account = await accountWithTwoFactor();
    const { gh } = client();
    await gh.login(account.email, account.password);
    await gh.verifyTwoFactor(account.recoveryCodes[0]);
    assert.equal(gh.signedIn, true);
    assert.equal((await gh.request("GET", "/auth/me")).recoveryCodesRemaining, 9);

    const again = client().gh;
    await again.login(account.email, account.password);
    const error = await again.verifyTwoFactor(account.recoveryCodes[0]).catch((e) => e);
    assert.equal(error.code, "INVALID_2FA_CODE");
  });

  test("verifyTwoFactor without a pending login is TEMP_TOKEN_INVALID, sent nowhere", async () => {
    let calls = 0;
    const { gh } = client({
      fetch: (...args) => {
        calls += 1;
        return fetch(...args);
      },
    });
    const error = await gh.verifyTwoFactor("123456").catch((e) => e);
    assert.ok(error instanceof GatehouseError);
    assert.equal(error.code, "TEMP_TOKEN_INVALID");
    assert.equal(calls, 0);
  });
});

describe("typed errors", () => {
  test("VALIDATION_ERROR from register carries status, code, message and details.fields", async () => {
    const { gh } = client();
    const body = { email: "not-an-address", password: "x", fullName: "" };
    const error = await gh.request("POST", "/auth/register", body, { auth: false }).catch((e) => e);
    assert.ok(error instanceof GatehouseError);
    assert.equal(error.status, 400);
    assert.equal(error.code, "VALIDATION_ERROR");
    assert.equal(typeof error.message, "string");
    assert.notEqual(error.message, "");
    assert.ok(error.details.fields.email, JSON.stringify(error.details));
    assert.ok(error.details.fields.fullName, JSON.stringify(error.details));
  });

  test("EMAIL_TAKEN is a 409", async () => {
    const account = await newAccount(baseUrl);
    const { gh } = client();
    const body = { email: account.email, password: account.password, fullName: "Twin" };
    const error = await gh.request("POST", "/auth/register", body, { auth: false }).catch((e) => e);
    assert.equal(error.status, 409);
    assert.equal(error.code, "EMAIL_TAKEN");
  });

  test("register with auth:false answers the envelope's data", async () => {
    const { gh } = client();
    const email = `js-data-${Date.now()}-${Math.random().toString(36).slice(2)}@example.com`;
    const data = await gh.request(
      "POST",
      "/auth/register",
      { email, password: "lantern orbit cobalt meadow", fullName: "Dee Ata" },
      { auth: false },
    );
    assert.equal(data.user.email, email);
    assert.equal(data.user.fullName, "Dee Ata");
  });

  test("an unknown route is NOT_FOUND; a bearer call without tokens is NOT_SIGNED_IN", async () => {
    const account = await newAccount(baseUrl);
    const { gh } = client();
    const unsigned = await gh.request("GET", "/auth/me").catch((e) => e);
    assert.equal(unsigned.code, "NOT_SIGNED_IN");
    assert.equal(unsigned.status, 0);

    await gh.login(account.email, account.password);
    const missing = await gh.request("GET", "/no/such/route").catch((e) => e);
    assert.equal(missing.status, 404);
    assert.equal(missing.code, "NOT_FOUND");
  });

  test("an answer that is not the envelope (a proxy's HTML 502) is BAD_RESPONSE", async () => {
    const proxy = createServer((req, res) => {
      res.writeHead(502, { "Content-Type": "text/html" });
      res.end("<html><body><h1>502 Bad Gateway</h1></body></html>");
    });
    await new Promise((resolve) => proxy.listen(0, "127.0.0.1", resolve));
    try {
      const { gh } = client({ baseUrl: `http://127.0.0.1:${proxy.address().port}` });
      const error = await gh.login("ada@example.com", "whatever it is").catch((e) => e);
      assert.ok(error instanceof GatehouseError);
      assert.equal(error.code, "BAD_RESPONSE");
      assert.equal(error.status, 502);
    } finally {
      await new Promise((resolve) => proxy.close(resolve));
    }
  });
});
