// panva's openid-client (v6, OpenID Certified relying party) registering itself with Gatehouse
// (RFC 7591, docs/api.md §12) and signing a person in with the client it got: once as a
// confidential client (client_secret_basic) and once as a public one (none), each registration
// carrying the operator's single-use initial access token. The consent is given through the
// authorization page's own call, as tests/browser/oidc-rp.mjs does.
//
// Environment: GATEHOUSE_URL (the issuer), GATEHOUSE_EMAIL, GATEHOUSE_PASSWORD,
// OIDC_REDIRECT_URI, OIDC_REGISTRATION_TOKENS (JSON: two initial access tokens).
import * as oidc from "openid-client";
import { api as gatehouseApi, assert, env } from "./relying.mjs";

const ISSUER = env("GATEHOUSE_URL");
const EMAIL = env("GATEHOUSE_EMAIL");
const PASSWORD = env("GATEHOUSE_PASSWORD");
const REDIRECT_URI = env("OIDC_REDIRECT_URI");
const TOKENS = JSON.parse(env("OIDC_REGISTRATION_TOKENS"));

/** An enveloped Gatehouse API call; returns `data`, or throws with the error. */
const api = (method, path, token, body) => gatehouseApi(ISSUER, method, path, token, body);

/** openid-client's thrown OAuth error code: of the body, or of a WWW-Authenticate challenge. */
const oauthError = (e) =>
  e?.error ?? e?.cause?.error ?? e?.cause?.[0]?.parameters?.error ?? e?.code ?? e?.message;
const insecure = { execute: [oidc.allowInsecureRequests] };
const person = (await api("POST", "/api/v1/auth/login", null, { email: EMAIL, password: PASSWORD })).accessToken;

const kinds = [
  { name: "Self-registered web app", method: "client_secret_basic", auth: (secret) => oidc.ClientSecretBasic(secret) },
  { name: "Self-registered mobile app", method: "none", auth: () => oidc.None() },
];
for (const [i, kind] of kinds.entries()) {
  const step = (what) => console.log(`${kind.name}: ${what}`);
  const metadata = {
    client_name: kind.name,
    redirect_uris: [REDIRECT_URI],
    grant_types: ["authorization_code", "refresh_token"],
    response_types: ["code"],
    token_endpoint_auth_method: kind.method,
    scope: "openid profile email offline_access",
  };
  // Discovery names the registration endpoint; the registration carries the initial access token.
  let config = await oidc.dynamicClientRegistration(new URL(ISSUER), metadata, undefined, {
    ...insecure,
    initialAccessToken: TOKENS[i],
  });
  const registered = config.clientMetadata();
  assert(registered.client_id, `a client_id: ${JSON.stringify(registered)}`);
  assert(registered.client_name === kind.name, `client_name: ${JSON.stringify(registered)}`);
  assert(registered.token_endpoint_auth_method === kind.method, JSON.stringify(registered));
  assert(typeof registered.client_id_issued_at === "number", "client_id_issued_at");
  if (kind.method === "none") {
    assert(registered.client_secret === undefined, "a public client has no secret");
  } else {
    assert(registered.client_secret?.length >= 43, "a secret, once");
    // The client authenticates as its metadata says (openid-client's default would be _post).
    config = new oidc.Configuration(config.serverMetadata(), registered.client_id, registered,
      kind.auth(registered.client_secret));
  }
  oidc.allowInsecureRequests(config);
  step("registered");

  // The token was single use: registering again with it is refused.
  const again = await oidc
    .dynamicClientRegistration(new URL(ISSUER), metadata, undefined, { ...insecure, initialAccessToken: TOKENS[i] })
    .then(() => "registered", (e) => oauthError(e));
  assert(again === "invalid_token", `a spent initial access token: ${again}`);

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
  const q = url.searchParams;
  const body = {
    clientId: q.get("client_id"),
    redirectUri: q.get("redirect_uri"),
    scope: q.get("scope"),
    state: q.get("state"),
    codeChallenge: q.get("code_challenge"),
    codeChallengeMethod: q.get("code_challenge_method"),
    nonce: q.get("nonce"),
  };
  // A self-registered client is third-party: the person is asked, under the name it gave.
  let answer = await api("POST", "/api/v1/oauth2/authorize", person, body);
  assert(answer.consentRequired === true, `consent asked: ${JSON.stringify(answer)}`);
  assert(answer.client.name === kind.name && answer.client.firstParty === false, JSON.stringify(answer));
  answer = await api("POST", "/api/v1/oauth2/authorize", person, { ...body, consent: true });
  const tokens = await oidc.authorizationCodeGrant(config, new URL(answer.redirectTo), {
    pkceCodeVerifier: codeVerifier,
    expectedNonce: nonce,
    expectedState: state,
    idTokenExpected: true,
  });
  const claims = tokens.claims();
  assert(claims.aud === registered.client_id && claims.email === EMAIL, JSON.stringify(claims));
  step("signed in");
  const info = await oidc.fetchUserInfo(config, tokens.access_token, claims.sub);
  assert(info.email === EMAIL, `userinfo: ${JSON.stringify(info)}`);
  const renewed = await oidc.refreshTokenGrant(config, tokens.refresh_token);
  assert(renewed.access_token && renewed.refresh_token !== tokens.refresh_token, "refresh rotates");
  step("refreshed");
  // A client that registered itself gets no token for itself (no person behind it).
  if (kind.method !== "none") {
    const own = await oidc.clientCredentialsGrant(config).then(() => "granted", (e) => oauthError(e));
    assert(own === "unauthorized_client", `client_credentials for a self-registered client: ${own}`);
  }
  step("ok");
}
