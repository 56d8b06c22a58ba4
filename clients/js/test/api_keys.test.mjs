// Personal API keys through the library (docs/api.md §12), against a real Gatehouse: made with
// the password re-checked, shown once, listed without the key, used as a bearer token by a
// script, deleted.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { Gatehouse, GatehouseError } from "../gatehouse.js";
import { MemoryStorage, gatehouseUrl, newAccount, stopServer } from "../test-support/server.mjs";

let baseUrl;
before(async () => {
  baseUrl = await gatehouseUrl();
});
after(stopServer);

const client = () => new Gatehouse({ baseUrl, storage: new MemoryStorage(), refreshMarginSeconds: 0 });

/** A script's call with the key alone: the status. */
async function contactsWith(key) {
  const response = await fetch(`${baseUrl}/api/v1/crm/contacts`, { headers: { authorization: `Bearer ${key}` } });
  return response.status;
}

describe("API keys", () => {
  test("createApiKey, listApiKeys, deleteApiKey", async () => {
    const account = await newAccount(baseUrl);
    const gh = client();
    await gh.login(account.email, account.password);

    const wrong = await gh.createApiKey("CI", "not the password at all").catch((e) => e);
    assert.ok(wrong instanceof GatehouseError);
    assert.equal(wrong.status, 403);
    assert.equal(wrong.code, "INVALID_CREDENTIALS");

    const expiresAt = new Date(Date.now() + 86_400_000);
    const made = await gh.createApiKey("CI", account.password, { scopes: ["contacts:read"], expiresAt });
    assert.match(made.key, /^ghk_[0-9A-Za-z]{32}$/);
    assert.deepEqual(made.scopes, ["contacts:read"]);
    assert.equal(made.orgId, null);
    assert.equal(Date.parse(made.expiresAt), Math.floor(expiresAt.getTime()));

    const listed = await gh.listApiKeys();
    assert.equal(listed.length, 1);
    assert.equal(listed[0].id, made.id);
    assert.equal(listed[0].prefix, made.key.slice(4, 12));
    assert.ok(!JSON.stringify(listed).includes(made.key.slice(4)), "never the key again");

    assert.equal(await contactsWith(made.key), 200);
    await gh.deleteApiKey(made.id);
    assert.equal(await contactsWith(made.key), 401);
    assert.deepEqual(await gh.listApiKeys(), []);
  });
});
