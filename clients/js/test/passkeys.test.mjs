// Passkeys through the library against a real Gatehouse, with a software authenticator standing in
// for the browser's WebAuthn (see ../test-support/webauthn.mjs), and invitations.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { Gatehouse, GatehouseError } from "../gatehouse.js";
import {
  MemoryStorage,
  NO_OWN_SERVER,
  PASSKEY_ORIGIN,
  PASSWORD,
  authenticator,
  cli,
  gatehouseUrl,
  mailedToken,
  newAccount,
  ownServer,
  stopServer,
} from "../test-support/server.mjs";
import { SoftwareAuthenticator } from "../test-support/webauthn.mjs";

let baseUrl;
let device;
let uninstall;
before(async () => {
  baseUrl = await gatehouseUrl();
  device = new SoftwareAuthenticator(PASSKEY_ORIGIN);
  uninstall = device.install();
});
after(async () => {
  uninstall?.();
  await stopServer();
});

const client = () => new Gatehouse({ baseUrl, storage: new MemoryStorage(), refreshMarginSeconds: 0 });

async function accountWithPasskey(name = "Laptop") {
  const account = await newAccount(baseUrl, "Pat Key");
  const gh = client();
  await gh.login(account.email, account.password);
  const passkey = await gh.registerPasskey(account.password, name);
  await gh.logout();
  return { ...account, passkey };
}

describe("passkeys", () => {
  test("registerPasskey: the password re-checked, the passkey created and listed", async () => {
    const account = await newAccount(baseUrl);
    const gh = client();
    await gh.login(account.email, account.password);

    const wrong = await gh.registerPasskey("not the password at all", "Phone").catch((e) => e);
    assert.ok(wrong instanceof GatehouseError);
    assert.equal(wrong.status, 403);
    assert.equal(wrong.code, "INVALID_CREDENTIALS");
    assert.equal(gh.signedIn, true, "a failed re-check leaves the session alone");

    const passkey = await gh.registerPasskey(account.password, "Phone");

    assert.equal(passkey.name, "Phone");
    assert.match(passkey.id, /^[0-9a-f-]{36}$/);
    const { items } = await gh.request("GET", "/auth/passkeys");
    assert.deepEqual(
      items.map((p) => [p.id, p.name]),
      [[passkey.id, "Phone"]],
    );

    // The same device again: the browser refuses, seeing the account's passkey among the excluded.
    const twice = await gh.registerPasskey(account.password, "Phone again").catch((e) => e);
    assert.equal(twice.code, "PASSKEY_ALREADY_REGISTERED");
    assert.equal((await gh.request("GET", "/auth/passkeys")).items.length, 1);
  });

  test("passkeyLogin with the e-mail signs in", async () => {
    const account = await accountWithPasskey();
    const gh = client();
    const changes = [];
    gh.onChange((change) => changes.push(change.type));

    const user = await gh.passkeyLogin(account.email);

    assert.deepEqual(user, { id: account.id, email: account.email, fullName: "Pat Key" });
    assert.equal(gh.signedIn, true);
    assert.deepEqual(changes, ["signed-in"]);
    const [passkey] = (await gh.request("GET", "/auth/passkeys")).items;
    assert.notEqual(passkey.lastUsedAt, null);
  });

  test("passkeyLogin without an e-mail (discoverable) signs in", async () => {
    const only = new SoftwareAuthenticator(PASSKEY_ORIGIN);
    const account = await newAccount(baseUrl, "Dee Scover");
    const setup = client();
    await setup.login(account.email, account.password);
    // Only this account's passkey on the device, as with a discoverable credential picked by the user.
    const saved = device.credentials;
    device.credentials = only.credentials;
    try {
      await setup.registerPasskey(account.password, "Key");
      const gh = client();
      const user = await gh.passkeyLogin();
      assert.equal(user.id, account.id);
      assert.equal((await gh.request("GET", "/auth/me")).email, account.email);
    } finally {
      device.credentials = saved;
    }
  });

  test("listPasskeys, renamePasskey and deletePasskey", async () => {
    const account = await accountWithPasskey("Laptop");
    const gh = client();
    await gh.passkeyLogin(account.email);

    const listed = await gh.listPasskeys();
    assert.deepEqual(
      listed.map((p) => [p.id, p.name]),
      [[account.passkey.id, "Laptop"]],
    );
    assert.notEqual(listed[0].lastUsedAt, null);

    const renamed = await gh.renamePasskey(account.passkey.id, "Work laptop");
    assert.equal(renamed.id, account.passkey.id);
    assert.equal(renamed.name, "Work laptop");
    assert.equal((await gh.listPasskeys())[0].name, "Work laptop");

    assert.equal(await gh.deletePasskey(account.passkey.id), undefined);
    assert.deepEqual(await gh.listPasskeys(), []);
    const again = await gh.deletePasskey(account.passkey.id).catch((e) => e);
    assert.equal(again.status, 404);
    assert.equal(again.code, "NOT_FOUND");
    // The device still holds the key, but the service no longer offers it for the account.
    const after = client();
    const refused = await after.passkeyLogin(account.email).catch((e) => e);
    assert.equal(refused.code, "PASSKEY_CANCELLED");
    assert.equal(after.signedIn, false);
  });

  test("a 2FA login finished with a passkey instead of a code", async () => {
    const account = await accountWithPasskey();
    const gh = client();
    await gh.login(account.email, account.password);
    const setup = await gh.request("POST", "/auth/2fa/setup", { password: account.password });
    await gh.request("POST", "/auth/2fa/enable", { code: authenticator(setup.secret).next() });
    await gh.logout();

    const first = await gh.login(account.email, account.password);
    assert.deepEqual(first, { twoFactorRequired: true });
    const user = await gh.verifyTwoFactorWithPasskey();

    assert.equal(user.id, account.id);
    assert.equal(gh.signedIn, true);
    assert.equal(gh.twoFactorPending, false);
  });

  test("a prompt the user dismisses is PASSKEY_CANCELLED; without WebAuthn PASSKEY_UNSUPPORTED", async () => {
    const account = await newAccount(baseUrl);
    const gh = client();
    // The account has no passkey on this device: the browser's prompt ends with NotAllowedError.
    const cancelled = await gh.passkeyLogin(account.email).catch((e) => e);
    assert.ok(cancelled instanceof GatehouseError);
    assert.equal(cancelled.code, "PASSKEY_CANCELLED");
    assert.equal(cancelled.cause.name, "NotAllowedError");
    assert.equal(gh.signedIn, false);

    uninstall();
    try {
      const unsupported = await gh.passkeyLogin(account.email).catch((e) => e);
      assert.equal(unsupported.code, "PASSKEY_UNSUPPORTED");
    } finally {
      uninstall = device.install();
    }
  });
});

describe("token sets from elsewhere", () => {
  test("acceptInvitation: the mailed link's token and a first password sign in", async (t) => {
    if (!(await ownServer())) return t.skip(NO_OWN_SERVER);
    const email = `js-invited-${Date.now()}@example.com`;
    await cli(["user", "invite", "--email", email, "--name", "Ivy Invite"]);
    const token = await mailedToken(email, "accept-invitation");
    const gh = client();
    const changes = [];
    gh.onChange((change) => changes.push(change.type));

    const user = await gh.acceptInvitation(token, PASSWORD);

    assert.equal(user.email, email);
    assert.equal(user.fullName, "Ivy Invite");
    assert.deepEqual(changes, ["signed-in"]);
    assert.equal((await gh.request("GET", "/auth/me")).email, email);
    const reused = await client().acceptInvitation(token, PASSWORD).catch((e) => e);
    assert.equal(reused.code, "LINK_INVALID");
  });

  test("useTokenSet signs in with a token set another call answered", async () => {
    const account = await newAccount(baseUrl);
    const res = await fetch(`${baseUrl}/api/v1/auth/login`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ email: account.email, password: account.password }),
    });
    const { data } = await res.json();
    const gh = client();

    const user = gh.useTokenSet(data);

    assert.deepEqual(user, data.user);
    assert.equal((await gh.request("GET", "/auth/me")).id, account.id);
  });
});
