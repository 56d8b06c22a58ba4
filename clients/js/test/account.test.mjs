// The self-service calls through the library's methods, against a real Gatehouse: registration,
// the mailed links (forgotten password, verification, address change; read from the service's
// .eml outbox), password change, two-factor set-up and removal, sessions, account deletion.
// Each method resolves to what the call is about, and fails with the service's code.

import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, test } from "node:test";

import { Gatehouse, GatehouseError } from "../gatehouse.js";
import {
  MemoryStorage,
  NO_MAIL,
  PASSWORD,
  authenticator,
  gatehouseUrl,
  mailFolder,
  mailedToken,
  newAccount,
  stopServer,
} from "../test-support/server.mjs";

const NEW_PASSWORD = "quartz lantern harbour willow";

let baseUrl;
before(async () => {
  baseUrl = await gatehouseUrl();
});
after(stopServer);

const client = () => new Gatehouse({ baseUrl, storage: new MemoryStorage(), refreshMarginSeconds: 0 });

async function signedIn(account) {
  const gh = client();
  await gh.login(account.email, account.password ?? PASSWORD);
  return gh;
}

/** `promise`'s GatehouseError, asserting its status and code. */
async function refused(promise, status, code) {
  const error = await promise.then(
    () => assert.fail(`succeeded, expected ${code}`),
    (e) => e,
  );
  assert.ok(error instanceof GatehouseError, String(error));
  assert.equal(error.code, code, error.message);
  assert.equal(error.status, status);
  return error;
}

const fresh = () => `js-${randomUUID()}@example.com`;

describe("registration and the mailed links", () => {
  test("register resolves to the new user and signs nothing in; a taken address is EMAIL_TAKEN", async () => {
    const gh = client();
    const email = fresh();

    const user = await gh.register(email, PASSWORD, "Reggie Ster");

    assert.deepEqual(Object.keys(user).sort(), ["email", "fullName", "id"]);
    assert.equal(user.email, email);
    assert.equal(user.fullName, "Reggie Ster");
    assert.equal(gh.signedIn, false);
    await refused(gh.register(email, PASSWORD, "Twin"), 409, "EMAIL_TAKEN");
    const weak = await refused(gh.register(fresh(), "password", "Weak"), 400, "WEAK_PASSWORD");
    assert.ok(weak.message);
  });

  test("verifyEmail with the mailed token; a new link voids the first", async (t) => {
    if (!(await mailFolder())) return t.skip(NO_MAIL);
    const gh = client();
    const email = fresh();
    await gh.register(email, PASSWORD, "Vera Fied");
    const first = await mailedToken(email, "verify-email");
    await gh.login(email, PASSWORD);
    assert.equal((await gh.me()).emailVerified, false);

    assert.equal(await gh.resendVerificationEmail(), undefined);
    const second = await mailedToken(email, "verify-email", { skip: [first] });

    await refused(gh.verifyEmail(first), 400, "LINK_INVALID");
    assert.equal(await gh.verifyEmail(second), undefined);
    assert.equal((await gh.me()).emailVerified, true);
    await refused(gh.verifyEmail(second), 400, "LINK_INVALID");
  });

  test("forgotPassword answers alike for any address; resetPassword sets the password and ends the sessions", async (t) => {
    if (!(await mailFolder())) return t.skip(NO_MAIL);
    const account = await newAccount(baseUrl);
    const gh = await signedIn(account);
    const anonymous = client();

    assert.equal(await anonymous.forgotPassword(account.email), undefined);
    assert.equal(await anonymous.forgotPassword(fresh()), undefined);
    const token = await mailedToken(account.email, "reset-password");
    await refused(anonymous.resetPassword(token, "password"), 400, "WEAK_PASSWORD");

    assert.equal(await anonymous.resetPassword(token, NEW_PASSWORD), undefined);

    await refused(gh.me(), 401, "REFRESH_TOKEN_INVALID");
    assert.equal(gh.signedIn, false, "the session ended with the reset");
    await refused(client().login(account.email, PASSWORD), 401, "INVALID_CREDENTIALS");
    await signedIn({ ...account, password: NEW_PASSWORD });
    await refused(anonymous.resetPassword(token, NEW_PASSWORD), 400, "LINK_INVALID");
  });

  test("changeEmail re-checks the password; the link to the new address makes the change", async (t) => {
    if (!(await mailFolder())) return t.skip(NO_MAIL);
    const account = await newAccount(baseUrl);
    const gh = await signedIn(account);
    const newEmail = fresh();

    await refused(gh.changeEmail(newEmail, "not the password at all"), 403, "INVALID_CREDENTIALS");
    assert.equal(await gh.changeEmail(newEmail, PASSWORD), undefined);
    assert.equal((await gh.me()).email, account.email, "nothing changes before the link");
    await gh.verifyEmail(await mailedToken(newEmail, "verify-email"));

    const me = await gh.me();
    assert.equal(me.email, newEmail);
    assert.equal(me.emailVerified, true);
    await signedIn({ email: newEmail });
  });
});

describe("the signed-in account", () => {
  test("me resolves to the profile", async () => {
    const account = await newAccount(baseUrl, "Mia Profile");
    const gh = await signedIn(account);
    const me = await gh.me();
    assert.equal(me.id, account.id);
    assert.equal(me.email, account.email);
    assert.equal(me.fullName, "Mia Profile");
    assert.equal(me.twoFactorEnabled, false);
    assert.equal(me.recoveryCodesRemaining, 0);
    assert.deepEqual(me.roles, []);
    assert.equal(typeof me.createdAt, "string");
  });

  test("changePassword ends the other sessions and keeps this one", async () => {
    const account = await newAccount(baseUrl);
    const gh = await signedIn(account);
    const elsewhere = await signedIn(account);

    await refused(gh.changePassword("not the password at all", NEW_PASSWORD), 403, "INVALID_CREDENTIALS");
    await refused(gh.changePassword(PASSWORD, "password"), 400, "WEAK_PASSWORD");
    assert.equal(await gh.changePassword(PASSWORD, NEW_PASSWORD), undefined);

    assert.equal((await gh.me()).email, account.email);
    await refused(elsewhere.me(), 401, "REFRESH_TOKEN_INVALID");
    assert.equal(elsewhere.signedIn, false);
    await signedIn({ ...account, password: NEW_PASSWORD });
  });

  test("two-factor: set up, enabled, new recovery codes, disabled", async () => {
    const account = await newAccount(baseUrl);
    const gh = await signedIn(account);

    await refused(gh.setupTwoFactor("not the password at all"), 403, "INVALID_CREDENTIALS");
    const setup = await gh.setupTwoFactor(PASSWORD);
    assert.deepEqual(Object.keys(setup).sort(), ["otpauthUri", "qrCodeSvg", "secret"]);
    assert.ok(setup.qrCodeSvg.includes("<svg"), "an SVG document");
    const totp = authenticator(setup.secret);

    await refused(gh.enableTwoFactor(totp.wrong()), 403, "INVALID_2FA_CODE");
    const codes = await gh.enableTwoFactor(totp.next());
    assert.ok(Array.isArray(codes));
    assert.equal(codes.length, 10);
    await refused(gh.setupTwoFactor(PASSWORD), 409, "TWO_FACTOR_ALREADY_ENABLED");
    assert.equal((await gh.me()).recoveryCodesRemaining, 10);

    const renewed = await gh.regenerateRecoveryCodes(totp.next());
    assert.equal(renewed.length, 10);
    assert.equal(renewed.filter((c) => codes.includes(c)).length, 0);
    await refused(gh.disableTwoFactor(PASSWORD, codes[0]), 403, "INVALID_2FA_CODE");
    await refused(gh.disableTwoFactor("not the password at all", renewed[0]), 403, "INVALID_CREDENTIALS");

    assert.equal(await gh.disableTwoFactor(PASSWORD, renewed[0]), undefined);
    assert.equal((await gh.me()).twoFactorEnabled, false);
    await refused(gh.disableTwoFactor(PASSWORD, renewed[1]), 409, "TWO_FACTOR_NOT_ENABLED");
  });

  test("sessions: listed; another one ended; ending this one signs this client out", async () => {
    const account = await newAccount(baseUrl);
    const gh = await signedIn(account);
    const elsewhere = await signedIn(account);
    const changes = [];
    gh.onChange((change) => changes.push(change.type));

    const sessions = await gh.listSessions();
    assert.ok(Array.isArray(sessions));
    assert.equal(sessions.length, 2);
    const own = sessions.find((s) => s.current);
    const other = sessions.find((s) => !s.current);
    assert.ok(own && other);

    assert.equal(await gh.deleteSession(other.id), undefined);
    await refused(elsewhere.me(), 401, "REFRESH_TOKEN_INVALID");
    assert.deepEqual(
      (await gh.listSessions()).map((s) => s.id),
      [own.id],
    );
    await refused(gh.deleteSession(randomUUID()), 404, "NOT_FOUND");
    assert.equal(gh.signedIn, true);

    await gh.deleteSession(own.id);
    assert.equal(gh.signedIn, false);
    assert.deepEqual(changes, ["signed-out"]);
  });

  test("deleteAccount re-checks the password (and code with 2FA), then signs out", async () => {
    const account = await newAccount(baseUrl);
    const gh = await signedIn(account);
    const setup = await gh.setupTwoFactor(PASSWORD);
    const totp = authenticator(setup.secret);
    const [recovery] = await gh.enableTwoFactor(totp.next());

    await refused(gh.deleteAccount("not the password at all", recovery), 403, "INVALID_CREDENTIALS");
    const missing = await refused(gh.deleteAccount(PASSWORD), 400, "VALIDATION_ERROR");
    assert.ok(missing.details.fields.code);
    assert.equal(gh.signedIn, true);

    assert.equal(await gh.deleteAccount(PASSWORD, recovery), undefined);

    assert.equal(gh.signedIn, false);
    await refused(client().login(account.email, PASSWORD), 401, "INVALID_CREDENTIALS");
  });
});
