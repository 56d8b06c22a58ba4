// An upstream identity provider for the federation tests (docs/api.md §14): panva's oidc-provider
// (npm, OpenID Certified), so Gatehouse's relying party meets a provider no one here wrote.
//
//   PORT=18400 CLIENTS='[{"client_id":"gh","client_secret":"…","redirect_uris":["http://…/callback"]}]' \
//     node tests/browser/upstream-idp.mjs
//
// prints one JSON line {issuer} once it listens on 127.0.0.1:PORT. Optional: ID_TOKEN_CLAIMS=1
// puts email and name in the ID token itself (by default, as the standard says for the code flow,
// they come from userinfo only: both paths of Gatehouse are tested).
//
// Accounts are set at runtime: PUT /control/accounts/{id} with {claims: {email, email_verified,
// name, …}, amr: ["pwd", "otp"]}. The interaction is a plain HTML form at /interaction/{uid}
// (`login` = an account id, any password) that POSTs to /interaction/{uid}/login and finishes
// login and consent at once; its Cancel button POSTs to /interaction/{uid}/abort (access_denied).
// Chromium fills the form; the Rust tests (tests/api/federation_idp.rs) POST it.
import http from "node:http";
import { generateKeyPairSync, randomBytes } from "node:crypto";

const port = Number(process.env.PORT);
if (!port) throw new Error("PORT is not set (tests/api/federation_idp.rs sets it)");
const clients = JSON.parse(process.env.CLIENTS ?? "[]").map((c) => ({
  grant_types: ["authorization_code"],
  response_types: ["code"],
  token_endpoint_auth_method: "client_secret_basic",
  ...c,
}));
const issuer = `http://127.0.0.1:${port}`;
const { default: Provider } = await import(
  new URL("./node_modules/oidc-provider/lib/index.js", import.meta.url)
);

/** The accounts by id: {claims, amr}. */
const accounts = new Map();

// oidc-provider's own development adapter keeps the last 1 000 objects in memory: plenty here.
const signing = generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey.export({ format: "jwk" });
const provider = new Provider(issuer, {
  clients,
  jwks: { keys: [{ ...signing, kid: "upstream-rs256", alg: "RS256", use: "sig" }] },
  cookies: { keys: [randomBytes(32).toString("base64url")] },
  // oidc-provider puts in an ID token only the claims of its scopes: `amr` rides with `openid`.
  claims: {
    openid: ["sub", "amr"],
    email: ["email", "email_verified"],
    profile: ["name", "given_name", "family_name"],
  },
  scopes: ["openid", "email", "profile"],
  conformIdTokenClaims: process.env.ID_TOKEN_CLAIMS !== "1",
  features: {
    devInteractions: { enabled: false },
    userinfo: { enabled: true },
  },
  pkce: { required: () => true },
  findAccount: async (_ctx, sub) => {
    const account = accounts.get(sub);
    if (!account) return undefined;
    return { accountId: sub, claims: async () => ({ ...account.claims, sub }) };
  },
});
provider.on("server_error", (_ctx, error) => console.error("oidc-provider:", error));

function escape(text) {
  return String(text).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

async function readForm(req) {
  let body = "";
  for await (const chunk of req) body += chunk;
  return new URLSearchParams(body);
}

/** The login form: what a person at the provider sees. */
async function showLogin(req, res, uid) {
  const details = await provider.interactionDetails(req, res);
  res.setHeader("content-type", "text/html; charset=utf-8");
  res.end(`<!doctype html>
<html><head><title>Upstream sign-in</title></head><body>
<h1>Sign in to the upstream provider</h1>
<p>Client: ${escape(details.params.client_id)}${details.params.login_hint ? `, hint: <span id="hint">${escape(details.params.login_hint)}</span>` : ""}</p>
<form method="post" action="/interaction/${escape(uid)}/login">
  <label>Account <input name="login" autocomplete="username" value="${escape(details.params.login_hint ?? "")}"></label>
  <label>Password <input name="password" type="password" autocomplete="current-password"></label>
  <button type="submit">Sign in</button>
</form>
<form method="post" action="/interaction/${escape(uid)}/abort"><button type="submit">Cancel</button></form>
</body></html>`);
}

/** Login and consent at once: the account signs in with its amr and grants what was asked. */
async function login(req, res) {
  const details = await provider.interactionDetails(req, res);
  const form = await readForm(req);
  const accountId = form.get("login") ?? "";
  const account = accounts.get(accountId);
  if (!account) {
    res.statusCode = 403;
    res.end("unknown account");
    return;
  }
  const grant = new provider.Grant({ accountId, clientId: details.params.client_id });
  grant.addOIDCScope(String(details.params.scope ?? "openid"));
  const result = {
    login: { accountId, ...(account.amr?.length ? { amr: account.amr } : {}) },
    consent: { grantId: await grant.save() },
  };
  await provider.interactionFinished(req, res, result, { mergeWithLastSubmission: false });
}

async function abort(req, res) {
  await provider.interactionFinished(
    req,
    res,
    { error: "access_denied", error_description: "the person cancelled" },
    { mergeWithLastSubmission: false },
  );
}

async function control(req, res, id) {
  let body = "";
  for await (const chunk of req) body += chunk;
  const { claims = {}, amr = [] } = JSON.parse(body || "{}");
  accounts.set(decodeURIComponent(id), { claims, amr });
  res.statusCode = 204;
  res.end();
}

const handle = provider.callback();
http
  .createServer((req, res) => {
    const path = new URL(req.url, issuer).pathname;
    const route = (pattern) => path.match(pattern);
    let step;
    let m;
    if (req.method === "PUT" && (m = route(/^\/control\/accounts\/([^/]+)$/))) step = control(req, res, m[1]);
    else if (req.method === "GET" && (m = route(/^\/interaction\/([^/]+)$/))) step = showLogin(req, res, m[1]);
    else if (req.method === "POST" && route(/^\/interaction\/[^/]+\/login$/)) step = login(req, res);
    else if (req.method === "POST" && route(/^\/interaction\/[^/]+\/abort$/)) step = abort(req, res);
    else return handle(req, res);
    step.catch((error) => {
      console.error("upstream-idp:", error);
      res.statusCode = 500;
      res.end(String(error.message ?? error));
    });
  })
  .listen(port, "127.0.0.1", () => console.log(JSON.stringify({ issuer })));
