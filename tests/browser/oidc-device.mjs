// panva's openid-client (v6) as a command-line tool signing a person in by the device
// authorization grant (RFC 8628, docs/api.md §11): discovery names the endpoint;
// `initiateDeviceAuthorization` gets the codes; the person answers through the device page's own
// call, `POST /api/v1/oauth2/device`, with their first-party token, a few seconds late so that the
// client's first poll is told `authorization_pending`; `pollDeviceAuthorizationGrant` then gets
// the tokens (the ID token validated as for any grant); userinfo and a refresh follow. A second
// request the person denies ends in openid-client's `access_denied`.
//
// Environment: GATEHOUSE_URL (the issuer), GATEHOUSE_EMAIL, GATEHOUSE_PASSWORD, GATEHOUSE_USER_ID,
// OIDC_CLIENT_ID (a public client registered with the device grant).
import * as oidc from "openid-client";
import { api as gatehouseApi, assert, env } from "./relying.mjs";

const ISSUER = env("GATEHOUSE_URL");
const USER_ID = env("GATEHOUSE_USER_ID");
const api = (method, path, token, body) => gatehouseApi(ISSUER, method, path, token, body);

const person = (
  await api("POST", "/api/v1/auth/login", null, { email: env("GATEHOUSE_EMAIL"), password: env("GATEHOUSE_PASSWORD") })
).accessToken;

const config = await oidc.discovery(new URL(ISSUER), env("OIDC_CLIENT_ID"), undefined, oidc.None(), {
  execute: [oidc.allowInsecureRequests],
});
const meta = config.serverMetadata();
assert(meta.device_authorization_endpoint === `${ISSUER}/oauth2/device_authorization`, "discovery names the endpoint");
assert(meta.grant_types_supported.includes("urn:ietf:params:oauth:grant-type:device_code"), "and the grant");

const scope = "openid profile offline_access";
const started = await oidc.initiateDeviceAuthorization(config, { scope });
assert(started.verification_uri === `${ISSUER}/device`, `verification_uri ${started.verification_uri}`);
assert(started.verification_uri_complete.endsWith(`?user_code=${started.user_code}`), "the complete URI");
assert(started.interval === 5 && started.expires_in === 600, `interval ${started.interval}, expires_in ${started.expires_in}`);
console.log("initiateDeviceAuthorization: ok");

// The person answers once the client has polled once (it waits `interval` before its first poll).
const asked = await api("POST", "/api/v1/oauth2/device", person, { userCode: started.user_code });
assert(asked.consentRequired && asked.client.name === "Acme CLI", `asked ${JSON.stringify(asked)}`);
assert(asked.scopes.join(" ") === scope, `scopes ${asked.scopes}`);
const answered = new Promise((resolve, reject) => {
  setTimeout(() => {
    api("POST", "/api/v1/oauth2/device", person, { userCode: started.user_code, consent: true })
      .then(resolve, reject);
  }, 6_500);
});
const tokens = await oidc.pollDeviceAuthorizationGrant(config, started);
assert((await answered).status === "approved", "approved");
const claims = tokens.claims();
assert(claims.sub === USER_ID && claims.aud === config.clientMetadata().client_id, `claims ${JSON.stringify(claims)}`);
assert(tokens.refresh_token && tokens.token_type.toLowerCase() === "bearer", "refresh token, bearer");
console.log("pollDeviceAuthorizationGrant: ok");

const info = await oidc.fetchUserInfo(config, tokens.access_token, claims.sub);
assert(info.sub === USER_ID && typeof info.name === "string", `userinfo ${JSON.stringify(info)}`);
const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token);
assert(refreshed.refresh_token && refreshed.refresh_token !== tokens.refresh_token, "rotated");
console.log("userinfo and refresh: ok");

// DPoP (RFC 9449): the same flow with a key of the tool's (ES256, made by openid-client); its
// tokens are bound to it, every call proves it, and without it they are worth nothing.
const DPoP = oidc.getDPoPHandle(config, await oidc.randomDPoPKeyPair("ES256"));
const third = await oidc.initiateDeviceAuthorization(config, { scope: `${scope} contacts:read` });
await api("POST", "/api/v1/oauth2/device", person, { userCode: third.user_code, consent: true });
const bound = await oidc.pollDeviceAuthorizationGrant(config, third, undefined, { DPoP });
assert(bound.token_type.toLowerCase() === "dpop", `token_type ${bound.token_type}`);
const boundInfo = await oidc.fetchUserInfo(config, bound.access_token, bound.claims().sub, { DPoP });
assert(boundInfo.sub === USER_ID, "userinfo with a proof");
const failed = (e) => e?.error ?? e?.cause?.error ?? e?.code ?? e?.message;
const asBearer = await oidc.fetchUserInfo(config, bound.access_token, bound.claims().sub).then(() => "accepted", failed);
assert(asBearer !== "accepted", "a bound token sent as a bearer token is refused");
const contacts = await oidc.fetchProtectedResource(
  config,
  bound.access_token,
  new URL(`${ISSUER}/api/v1/crm/contacts`),
  "GET",
  undefined,
  undefined,
  { DPoP },
);
assert(contacts.status === 200, `the business API with a proof: ${contacts.status}`);
const renewedBound = await oidc.refreshTokenGrant(config, bound.refresh_token, undefined, { DPoP });
assert(renewedBound.token_type.toLowerCase() === "dpop", "the refresh keeps the binding");
const keyless = await oidc.refreshTokenGrant(config, renewedBound.refresh_token).then(() => "accepted", failed);
assert(keyless === "invalid_grant", `a bound refresh token without the key: ${keyless}`);
const again = await oidc.refreshTokenGrant(config, renewedBound.refresh_token, undefined, { DPoP });
assert(again.access_token, "the refresh token was not used up by the keyless attempt");
console.log("DPoP: ok");

// Denied: openid-client's poll ends with access_denied.
const second = await oidc.initiateDeviceAuthorization(config, { scope });
await api("POST", "/api/v1/oauth2/device", person, { userCode: second.user_code, consent: false });
const refused = await oidc.pollDeviceAuthorizationGrant(config, second).then(
  () => null,
  (e) => e?.error ?? e?.cause?.error ?? e?.code ?? e?.message,
);
assert(refused === "access_denied", `a denied request: ${refused}`);
console.log("Acme CLI: ok");
