// panva's openid-client (v6, OpenID Certified relying party) signing a person in with Gatehouse,
// once per registered client (tests/api/relying_parties/openid_client.rs registers them). No
// browser: the person's consent is given through the authorization page's own call, `POST
// /api/v1/oauth2/authorize`, with the person's first-party token, and the URL Gatehouse answers
// with is handed to openid-client as a callback handler would hand it the request's URL.
//
// Environment: GATEHOUSE_URL (the issuer), GATEHOUSE_EMAIL, GATEHOUSE_PASSWORD, GATEHOUSE_USER_ID,
// OIDC_REDIRECT_URI, OIDC_CLIENTS (JSON: [{name, alg, auth: "basic" | "post" | "none", clientId,
// clientSecret?}]).
import * as oidc from "openid-client";
import { api as gatehouseApi, assert, env } from "./relying.mjs";

const ISSUER = env("GATEHOUSE_URL");
const EMAIL = env("GATEHOUSE_EMAIL");
const PASSWORD = env("GATEHOUSE_PASSWORD");
const USER_ID = env("GATEHOUSE_USER_ID");
const REDIRECT_URI = env("OIDC_REDIRECT_URI");
const CLIENTS = JSON.parse(env("OIDC_CLIENTS"));

/** The JOSE header of a JWT. */
function header(jwt) {
  return JSON.parse(Buffer.from(jwt.split(".")[0], "base64url").toString());
}

/** An enveloped Gatehouse API call; returns `data`, or throws with the error. */
const api = (method, path, token, body) => gatehouseApi(ISSUER, method, path, token, body);

/** The authorization URL's query as the page's call takes it. */
function authorizeBody(url) {
  const q = url.searchParams;
  const body = {
    clientId: q.get("client_id"),
    redirectUri: q.get("redirect_uri"),
    scope: q.get("scope"),
    state: q.get("state"),
    codeChallenge: q.get("code_challenge"),
    codeChallengeMethod: q.get("code_challenge_method"),
  };
  if (q.has("nonce")) body.nonce = q.get("nonce");
  return body;
}

/** Polls `check` (true when done) every 50 ms for at most `ms`. */
async function within(ms, what, check) {
  const deadline = Date.now() + ms;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`${what} not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** openid-client's thrown OAuth error code (`invalid_grant`, …), or the message. */
const oauthError = (e) => e?.error ?? e?.cause?.error ?? e?.code ?? e?.message;

const person = (await api("POST", "/api/v1/auth/login", null, { email: EMAIL, password: PASSWORD })).accessToken;

for (const c of CLIENTS) {
  const step = (what) => console.log(`${c.name}: ${what}`);
  const auth =
    c.auth === "none"
      ? oidc.None()
      : c.auth === "post"
        ? oidc.ClientSecretPost(c.clientSecret)
        : oidc.ClientSecretBasic(c.clientSecret);
  // The client's registered algorithm: openid-client then accepts ID tokens signed with it only.
  const config = await oidc.discovery(
    new URL(ISSUER),
    c.clientId,
    { id_token_signed_response_alg: c.alg },
    auth,
    { execute: [oidc.allowInsecureRequests] },
  );
  const meta = config.serverMetadata();
  assert(meta.issuer === ISSUER, `issuer ${meta.issuer}`);
  assert(meta.code_challenge_methods_supported?.join() === "S256", "S256 only");
  assert(meta.id_token_signing_alg_values_supported?.[0] === "RS256", "RS256 first");
  assert(meta.authorization_response_iss_parameter_supported === true, "RFC 9207 iss");
  step("discovery");

  /** One authorization with PKCE and nonce; `consent` says whether consent is expected. */
  const signIn = async (consentExpected) => {
    const codeVerifier = oidc.randomPKCECodeVerifier();
    const nonce = oidc.randomNonce();
    const state = oidc.randomState();
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: REDIRECT_URI,
      scope: "openid profile email offline_access",
      code_challenge: await oidc.calculatePKCECodeChallenge(codeVerifier),
      code_challenge_method: "S256",
      nonce,
      state,
    });
    assert(url.origin + url.pathname === `${ISSUER}/oauth2/authorize`, `authorization URL ${url}`);
    const body = authorizeBody(url);
    let answer = await api("POST", "/api/v1/oauth2/authorize", person, body);
    if (consentExpected) {
      assert(answer.consentRequired === true, `consent asked: ${JSON.stringify(answer)}`);
      assert(answer.client?.clientId === c.clientId && answer.client?.name === c.name, JSON.stringify(answer));
      assert(answer.client.firstParty === false, "a third-party client");
      for (const s of ["openid", "profile", "email", "offline_access"]) {
        assert(answer.scopes.includes(s), `${s} asked: ${answer.scopes}`);
      }
      answer = await api("POST", "/api/v1/oauth2/authorize", person, { ...body, consent: true });
    }
    assert(typeof answer.redirectTo === "string", `consent remembered: ${JSON.stringify(answer)}`);
    const callback = new URL(answer.redirectTo);
    assert(callback.origin + callback.pathname === REDIRECT_URI, `redirected to ${callback}`);
    // authorizationCodeGrant checks state and iss (RFC 9207), exchanges the code with the
    // verifier, and validates the ID token: signature by the key of its kid and the registered
    // algorithm, iss, aud, azp, exp, iat, nonce, at_hash.
    const tokens = await oidc.authorizationCodeGrant(config, callback, {
      pkceCodeVerifier: codeVerifier,
      expectedNonce: nonce,
      expectedState: state,
      idTokenExpected: true,
    });
    return { tokens, nonce };
  };

  const { tokens, nonce } = await signIn(true);
  assert(tokens.token_type.toLowerCase() === "bearer", `token_type ${tokens.token_type}`);
  assert(tokens.refresh_token, "a refresh token for offline_access");
  const idHeader = header(tokens.id_token);
  assert(idHeader.alg === c.alg && idHeader.kid, `ID token header ${JSON.stringify(idHeader)}`);
  const claims = tokens.claims();
  assert(claims.sub === USER_ID, `sub ${claims.sub}`);
  assert(claims.aud === c.clientId || claims.aud?.includes?.(c.clientId), `aud ${claims.aud}`);
  assert(claims.nonce === nonce, "nonce");
  assert(claims.email === EMAIL && claims.email_verified !== undefined, `email ${claims.email}`);
  assert(typeof claims.name === "string", `name ${claims.name}`);
  assert(claims.at_hash && claims.sid && claims.auth_time, `at_hash, sid, auth_time: ${JSON.stringify(claims)}`);
  assert(claims.exp - claims.iat <= 3600, "an ID token lives an hour at most");
  const access = JSON.parse(Buffer.from(tokens.access_token.split(".")[1], "base64url").toString());
  assert(access.client_id === c.clientId && access.sid === claims.sid, `access token ${JSON.stringify(access)}`);
  assert(access.scope?.split(" ").includes("email"), `access token scope ${access.scope}`);
  step(`authorizationCodeGrant (${idHeader.alg})`);

  // Userinfo: the claims of the granted scopes, for the ID token's subject.
  const info = await oidc.fetchUserInfo(config, tokens.access_token, claims.sub);
  assert(info.sub === USER_ID && info.email === EMAIL && info.name === claims.name, JSON.stringify(info));
  step("fetchUserInfo");

  // Refresh: a new access token and a rotated refresh token, same session.
  const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token);
  assert(refreshed.access_token && refreshed.access_token !== tokens.access_token, "a new access token");
  assert(refreshed.refresh_token && refreshed.refresh_token !== tokens.refresh_token, "a rotated refresh token");
  const again = JSON.parse(Buffer.from(refreshed.access_token.split(".")[1], "base64url").toString());
  assert(again.sid === claims.sid, "the same session");
  assert(again.client_id === c.clientId && again.scope === access.scope, `refreshed access token ${JSON.stringify(again)}`);
  if (refreshed.id_token) assert(refreshed.claims().sub === USER_ID, "a refreshed ID token's sub");
  step("refreshTokenGrant");

  let basic;
  if (c.auth !== "none") {
    // Client credentials: a token for the client itself, no ID token, no refresh token.
    const cc = await oidc.clientCredentialsGrant(config, { scope: "contacts:read" });
    assert(cc.access_token && !cc.refresh_token && !cc.id_token, JSON.stringify(cc));
    const own = JSON.parse(Buffer.from(cc.access_token.split(".")[1], "base64url").toString());
    assert(own.sub === c.clientId && own.client_id === c.clientId, `client token ${JSON.stringify(own)}`);
    step("clientCredentialsGrant");

    // Introspection (HTTP Basic, as docs/api.md §6 has it, whatever the client's token auth).
    basic = new oidc.Configuration(meta, c.clientId, {}, oidc.ClientSecretBasic(c.clientSecret));
    oidc.allowInsecureRequests(basic);
    // docs/api.md §6: a token issued to an OAuth client is introspected with its client_id.
    const live = await oidc.tokenIntrospection(basic, refreshed.access_token);
    assert(live.active === true && live.sub === USER_ID && live.client_id === c.clientId, JSON.stringify(live));
    // docs/api.md §12: the client's token for itself is the client's, and no person's.
    const itself = await oidc.tokenIntrospection(basic, cc.access_token);
    assert(
      itself.active === true && itself.sub === c.clientId && itself.client_id === c.clientId &&
        itself.scope === "contacts:read" && itself.username === undefined && itself.sid === undefined,
      `client token introspected: ${JSON.stringify(itself)}`,
    );
    step("tokenIntrospection");
  }

  // The consent is remembered: the next authorization of the same scopes asks nothing.
  const second = await signIn(false);
  assert(second.tokens.claims().sid !== claims.sid, "each authorization is a session of its own");

  if (c.auth !== "none") {
    // Revocation of the refresh token ends the session: the refresh token is refused, the access
    // token inactive and refused at userinfo within 2 s (docs/api.md §2).
    await oidc.tokenRevocation(config, refreshed.refresh_token);
    await oidc.tokenRevocation(config, "not-a-token-of-anyone"); // unknown: still 200
    let refused;
    try {
      await oidc.refreshTokenGrant(config, refreshed.refresh_token);
    } catch (e) {
      refused = oauthError(e);
    }
    assert(refused === "invalid_grant", `a revoked refresh token: ${refused}`);
    await within(2000, "the revoked session's access token inactive", async () => {
      return (await oidc.tokenIntrospection(basic, refreshed.access_token)).active === false;
    });
    let userinfoRefused = false;
    try {
      await oidc.fetchUserInfo(config, refreshed.access_token, USER_ID);
    } catch {
      userinfoRefused = true;
    }
    assert(userinfoRefused, "userinfo refuses the revoked session's access token");
    step("tokenRevocation");
  }
  console.log(`${c.name}: ok`);
}
