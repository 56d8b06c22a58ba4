// The peer of bench/agents.sh: panva's oidc-provider (npm, OpenID Certified) with the device
// authorization grant (RFC 8628, `features.deviceFlow`), set up as Gatehouse is measured there:
// one public client with the device_code grant (no secret: token_endpoint_auth_method none), and
// the confidential client of bench/oidc-provider.mjs for the client_credentials baseline; an
// in-memory adapter (nothing evicted, no database). Token exchange (RFC 8693) is not built into
// oidc-provider, so the peer has no such row.
//
// What a poll costs differs: oidc-provider reads the device code (a Map lookup here) and answers
// authorization_pending, with no pacing (it never says slow_down), whereas Gatehouse records
// every poll (one UPDATE) to pace polls on every instance.
//
//   node bench/oidc-provider-device.mjs PORT
//
// prints one JSON line {issuer, clientId, clientSecret, deviceClientId} once it listens. Uses the
// package installed by `npm ci --prefix tests/browser`. (bench/oidc-provider.mjs is left as it
// is: its figures in BENCHMARKS.md were measured with it.)
import http from "node:http";
import { generateKeyPairSync, randomBytes } from "node:crypto";

const port = Number(process.argv[2] ?? 18301);
const issuer = `http://127.0.0.1:${port}`;
const { default: Provider } = await import(
  new URL("../tests/browser/node_modules/oidc-provider/lib/index.js", import.meta.url)
);

/**
 * oidc-provider's adapter interface over Maps (as in bench/oidc-provider.mjs): every object
 * until it expires, found by id, by session uid, by user code, and revoked by grant.
 */
const store = new Map();
const byGrant = new Map();
const byUid = new Map();
const byUserCode = new Map();
class MapAdapter {
  constructor(model) {
    this.model = model;
  }
  key(id) {
    return `${this.model}:${id}`;
  }
  async upsert(id, payload, expiresIn) {
    const key = this.key(id);
    store.set(key, { payload, expiresAt: expiresIn ? Date.now() + expiresIn * 1000 : Infinity });
    if (payload.grantId) {
      if (!byGrant.has(payload.grantId)) byGrant.set(payload.grantId, new Set());
      byGrant.get(payload.grantId).add(key);
    }
    if (this.model === "Session") byUid.set(payload.uid, id);
    if (payload.userCode) byUserCode.set(payload.userCode, id);
  }
  async find(id) {
    const entry = store.get(this.key(id));
    if (!entry) return undefined;
    if (entry.expiresAt <= Date.now()) {
      store.delete(this.key(id));
      return undefined;
    }
    return entry.payload;
  }
  async findByUid(uid) {
    return byUid.has(uid) ? this.find(byUid.get(uid)) : undefined;
  }
  async findByUserCode(userCode) {
    return byUserCode.has(userCode) ? this.find(byUserCode.get(userCode)) : undefined;
  }
  async consume(id) {
    const payload = await this.find(id);
    if (payload) payload.consumed = Math.floor(Date.now() / 1000);
  }
  async destroy(id) {
    store.delete(this.key(id));
  }
  async revokeByGrantId(grantId) {
    for (const key of byGrant.get(grantId) ?? []) store.delete(key);
    byGrant.delete(grantId);
  }
}

const confidential = {
  client_id: "bench",
  client_secret: randomBytes(24).toString("base64url"),
  redirect_uris: ["http://127.0.0.1:9/callback"],
  grant_types: ["authorization_code", "refresh_token", "client_credentials"],
  response_types: ["code"],
  token_endpoint_auth_method: "client_secret_basic",
  scope: "openid profile email offline_access",
};
const device = {
  client_id: "bench-device",
  grant_types: ["urn:ietf:params:oauth:grant-type:device_code"],
  response_types: [],
  redirect_uris: [],
  token_endpoint_auth_method: "none",
  scope: "openid profile offline_access",
};
const signing = generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey.export({ format: "jwk" });

const provider = new Provider(issuer, {
  adapter: MapAdapter,
  clients: [confidential, device],
  jwks: { keys: [{ ...signing, kid: "bench-rs256", alg: "RS256", use: "sig" }] },
  cookies: { keys: [randomBytes(32).toString("base64url")] },
  claims: { openid: ["sub"], profile: ["name", "updated_at"] },
  scopes: ["openid", "offline_access", "profile", "email"],
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    deviceFlow: { enabled: true },
  },
  findAccount: async (_ctx, sub) => ({ accountId: sub, claims: async () => ({ sub }) }),
});
provider.on("server_error", (_ctx, error) => console.error("oidc-provider:", error));

http.createServer(provider.callback()).listen(port, "127.0.0.1", () => {
  console.log(
    JSON.stringify({
      issuer,
      clientId: confidential.client_id,
      clientSecret: confidential.client_secret,
      deviceClientId: device.client_id,
    }),
  );
});
