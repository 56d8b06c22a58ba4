// The peer of bench/oauth.sh: panva's oidc-provider (npm, OpenID Certified), set up as Gatehouse
// is measured: one confidential client (client_secret_basic) with the authorization_code,
// refresh_token and client_credentials grants, PKCE S256, RS256 ID tokens, refresh tokens rotated
// on every use (as Gatehouse does, docs/api.md §2), one account found in memory, and an in-memory
// adapter (below: no database, nothing evicted; the package's own development adapter keeps only
// the last 1 000 objects, and loses the tokens a run still uses).
//
// Interactions are finished by this server for the one account, as a person who is signed in
// and consents would finish them, so the code flow runs without a browser: the first
// authorization of a cookie jar goes through /interaction/… (login, then consent); after that the
// session cookie and its grant make GET /auth answer with the code at once, which is what
// bench/oauth.sh measures (Gatehouse's equivalent: POST /api/v1/oauth2/authorize with the
// person's token).
//
//   node bench/oidc-provider.mjs PORT
//
// prints one JSON line {issuer, clientId, clientSecret, redirectUri} once it listens. Uses the
// package installed by `npm ci --prefix tests/browser`.
import http from "node:http";
import { generateKeyPairSync, randomBytes } from "node:crypto";

const port = Number(process.argv[2] ?? 18300);
const issuer = `http://127.0.0.1:${port}`;
const { default: Provider } = await import(
  new URL("../tests/browser/node_modules/oidc-provider/lib/index.js", import.meta.url)
);

/**
 * oidc-provider's adapter interface over Maps: every object until it expires, found by id, by
 * session uid, by user code, and revoked by grant.
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

const ACCOUNT = "bench-account";
const client = {
  client_id: "bench",
  client_secret: randomBytes(24).toString("base64url"),
  redirect_uris: ["http://127.0.0.1:9/callback"],
  grant_types: ["authorization_code", "refresh_token", "client_credentials"],
  response_types: ["code"],
  token_endpoint_auth_method: "client_secret_basic",
  scope: "openid profile email offline_access",
};
const signing = generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey.export({ format: "jwk" });

const provider = new Provider(issuer, {
  adapter: MapAdapter,
  clients: [client],
  jwks: { keys: [{ ...signing, kid: "bench-rs256", alg: "RS256", use: "sig" }] },
  cookies: { keys: [randomBytes(32).toString("base64url")] },
  claims: { openid: ["sub"], email: ["email", "email_verified"], profile: ["name", "updated_at"] },
  scopes: ["openid", "offline_access", "profile", "email"],
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    revocation: { enabled: true },
    introspection: { enabled: true },
    userinfo: { enabled: true },
  },
  pkce: { required: () => true },
  rotateRefreshToken: () => true,
  findAccount: async (_ctx, sub) => ({
    accountId: sub,
    claims: async () => ({
      sub,
      email: "bench@example.com",
      email_verified: true,
      name: "Bench",
      updated_at: 1_700_000_000,
    }),
  }),
});
provider.on("server_error", (_ctx, error) => console.error("oidc-provider:", error));

/** The person's answers: signed in as ACCOUNT, consenting to whatever is asked. */
async function interaction(req, res) {
  const details = await provider.interactionDetails(req, res);
  let result;
  if (details.prompt.name === "login") {
    result = { login: { accountId: ACCOUNT } };
  } else {
    const grant = details.grantId
      ? await provider.Grant.find(details.grantId)
      : new provider.Grant({ accountId: details.session.accountId, clientId: details.params.client_id });
    const missing = details.prompt.details;
    if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(" "));
    if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims);
    for (const [indicator, scopes] of Object.entries(missing.missingResourceScopes ?? {})) {
      grant.addResourceScope(indicator, scopes.join(" "));
    }
    result = { consent: { grantId: await grant.save() } };
  }
  await provider.interactionFinished(req, res, result, { mergeWithLastSubmission: true });
}

const handle = provider.callback();
http
  .createServer((req, res) => {
    if (req.url.startsWith("/interaction/")) {
      interaction(req, res).catch((error) => {
        console.error("interaction:", error);
        res.statusCode = 500;
        res.end();
      });
      return;
    }
    handle(req, res);
  })
  .listen(port, "127.0.0.1", () => {
    console.log(
      JSON.stringify({
        issuer,
        clientId: client.client_id,
        clientSecret: client.client_secret,
        redirectUri: client.redirect_uris[0],
      }),
    );
  });
