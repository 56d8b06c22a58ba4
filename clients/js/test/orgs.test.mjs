// Organisations through the library (docs/api.md §13), against a real Gatehouse: an owner makes
// one and invites by mail (read from the service's .eml outbox), an existing account joins signed
// in and a new one by choosing a password, the active organisation is switched without a new
// login, and members are managed.

import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, test } from "node:test";

import { Gatehouse, GatehouseError } from "../gatehouse.js";
import {
  MemoryStorage,
  NO_MAIL,
  PASSWORD,
  gatehouseUrl,
  mailFolder,
  mailedToken,
  newAccount,
  stopServer,
} from "../test-support/server.mjs";

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

async function refused(promise, status, code) {
  const error = await promise.then(
    () => assert.fail(`expected ${code}`),
    (e) => e,
  );
  assert.ok(error instanceof GatehouseError, String(error));
  assert.equal(error.status, status, error.message);
  assert.equal(error.code, code);
}

describe("organisations", () => {
  test("invite, join, switch without a new login, manage members", async (t) => {
    if (!(await mailFolder())) return t.skip(NO_MAIL);
    const owner = await signedIn(await newAccount(baseUrl, "Olga Owner"));
    const ann = await newAccount(baseUrl, "Ann Member");
    const slug = `js-${randomUUID().slice(0, 8)}`;
    const org = await owner.createOrg("JS Org", slug);
    assert.equal(org.slug, slug);
    assert.deepEqual((await owner.listOrgs()).map((o) => [o.org.id, o.roles]), [[org.id, ["owner"]]]);
    assert.equal(owner.currentOrg, null);

    // An existing account joins signed in.
    const invitation = await owner.inviteToOrg(org.id, ann.email, ["member"]);
    assert.deepEqual((await owner.listOrgInvitations(org.id)).map((i) => i.id), [invitation.id]);
    const token = await mailedToken(ann.email, "accept-invitation");
    const gh = await signedIn(ann);
    assert.equal((await gh.acceptOrgInvitation(token)).id, org.id);

    // Switching: new tokens for the same session, with the organisation in them.
    const changes = [];
    gh.onChange((c) => changes.push(c.type));
    assert.deepEqual(await gh.switchOrg(org.id), { id: org.id, roles: ["member"] });
    assert.deepEqual(gh.currentOrg, { id: org.id, roles: ["member"] });
    // (With the tests' 2 s tokens, a loaded machine may also refresh before the call: each
    // change is a refresh, never a sign-out.)
    assert.ok(changes.length >= 1 && changes.every((c) => c === "refreshed"), changes.join());
    await gh.refresh();
    assert.equal(gh.currentOrg?.id, org.id, "refresh keeps it");
    assert.equal(await gh.switchOrg(null), null);

    // Members, a page at a time; roles changed; the last owner kept.
    const page = await owner.listOrgMembers(org.id, { limit: 1 });
    assert.equal(page.items.length, 1);
    const rest = await owner.listOrgMembers(org.id, { cursor: page.nextCursor });
    const everyone = [...page.items, ...rest.items].map((m) => m.email).sort();
    assert.deepEqual(everyone, [ann.email, owner.user.email].sort());
    assert.deepEqual(await owner.setOrgMemberRoles(org.id, ann.id, ["member", "sales"]), ["member", "sales"]);
    await refused(gh.setOrgMemberRoles(org.id, ann.id, ["owner"]), 403, "FORBIDDEN");
    await refused(owner.removeOrgMember(org.id, owner.user.id), 409, "CONFLICT");
    await gh.removeOrgMember(org.id, ann.id);
    await refused(gh.switchOrg(org.id), 404, "NOT_FOUND");

    // A new address: the invitation makes the account.
    const email = `js-${randomUUID()}@example.com`;
    await owner.inviteToOrg(org.id, email, ["admin"]);
    const newcomer = client();
    const user = await newcomer.acceptInvitation(await mailedToken(email, "accept-invitation"), PASSWORD, "New Comer");
    assert.equal(user.fullName, "New Comer");
    assert.deepEqual((await newcomer.getOrg(org.id)).roles, ["admin"]);

    // A withdrawn invitation's link is void.
    const gone = await owner.inviteToOrg(org.id, `js-${randomUUID()}@example.com`, ["member"]);
    await owner.deleteOrgInvitation(org.id, gone.id);
    assert.deepEqual(await owner.listOrgInvitations(org.id), []);

    assert.equal((await owner.updateOrg(org.id, { name: "Renamed" })).name, "Renamed");
    await owner.deleteOrg(org.id);
    await refused(owner.getOrg(org.id), 404, "NOT_FOUND");
  });
});
