//! The service's JWTs: claims, signing with the keyring's keys (`auth::keys`), verification.
//! Access and refresh tokens differ in `typ` and `aud`, and each verifier demands its own, so
//! neither is ever taken for the other. A token is verified with the published key its `kid`
//! names, and only if its header names that key's own algorithm.
//!
//! One file rather than claims and verification apart: each claim set is read by the verifier
//! beside it, and the cache of verified tokens is the verifier's.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use jsonwebtoken::Validation;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::auth::keys::{Keyring, jwt_algorithm};
use crate::clock::Clock;
use crate::crypto::{SigningAlg, sha256};
use crate::error::{Error, Result};
use crate::model::ApiScopes;
use crate::model::is_multi_factor;
use crate::model::orgs::Membership;

pub const ACCESS_TYP: &str = "at+jwt";
pub const REFRESH_TYP: &str = "refresh+jwt";
/// Clock leeway on `exp` (docs/api.md §2: at most 5 s), compared in milliseconds: a token is
/// expired once the clock is more than this past its `exp`.
pub const LEEWAY: Duration = Duration::from_secs(5);
const LEEWAY_MS: i64 = LEEWAY.as_millis() as i64;

/// Whether a token with this `exp` (seconds) is expired at `now_ms`, leeway included.
fn expired(exp: i64, now_ms: i64) -> bool {
    exp.saturating_mul(1000).saturating_add(LEEWAY_MS) < now_ms
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AccessClaims {
    pub iss: String,
    pub aud: String,
    pub sub: Uuid,
    pub sid: Uuid,
    pub jti: Uuid,
    pub iat: i64,
    pub exp: i64,
    pub amr: Vec<String>,
    /// The account's roles when the token was issued (RFC 9068 §2.2.3.1). A service that verifies
    /// tokens offline sees a role change only with the next token; forward-auth and introspection
    /// answer with the current roles. Tokens issued before roles existed have none.
    #[serde(default)]
    pub roles: Vec<String>,
    /// The session's active organisation (docs/api.md §13); absent without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub org_id: Option<Uuid>,
    /// The holder's roles in `org_id` when the token was issued; absent without one. Forward-auth,
    /// introspection and the rules read the roles of now.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub org_roles: Vec<String>,
    /// The client the token was issued to (docs/api.md §11, RFC 9068 §2.2); absent for the
    /// person's own sign-in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// The scopes granted to that client, space-separated; absent with `client_id`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// Who acts for `sub` (RFC 8693 §4.1): the client that exchanged a token of theirs for this
    /// one, nested when that token named an actor already; absent for a token not exchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub act: Option<Act>,
    /// The key the token is bound to (RFC 9449 §6: DPoP): only a request with a proof signed by
    /// that key may use it. Absent for a bearer token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cnf: Option<Cnf>,
}

/// RFC 7800's confirmation: here, the SHA-256 thumbprint of a DPoP key (RFC 9449 §6.1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cnf {
    pub jkt: String,
}

/// RFC 8693 §4.1's `act`: the actor, and the actor before it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Act {
    pub sub: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub act: Option<Box<Act>>,
}

/// What an `id_token_hint` names: the person, the client session and the client.
#[derive(Debug, Clone)]
pub struct IdTokenHint {
    pub sub: Uuid,
    pub sid: Option<Uuid>,
    /// The client id (`aud`).
    pub client: String,
}

#[derive(Deserialize)]
struct IdHintClaims {
    sub: Uuid,
    #[serde(default)]
    sid: Option<Uuid>,
    aud: serde_json::Value,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RefreshClaims {
    pub iss: String,
    pub aud: String,
    pub sub: Uuid,
    pub sid: Uuid,
    pub jti: Uuid,
    pub iat: i64,
    pub exp: i64,
    /// The client whose session it renews (docs/api.md §11): such a token is refused at
    /// `/auth/refresh` and by every other client at the token endpoint. Absent for the person's
    /// own sign-in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<Uuid>,
    /// A public client's refresh token bound to its DPoP key (RFC 9449 §5): only a proof by that
    /// key renews it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cnf: Option<Cnf>,
}

/// Issues and verifies the service's tokens.
/// An access token already verified: what a bearer call needs of it.
#[derive(Debug, Clone)]
pub struct Verified {
    pub sub: Uuid,
    pub sid: Uuid,
    pub exp: i64,
    /// Its `amr` holds a second factor.
    pub multi_factor: bool,
    /// The active organisation it names, if any: its membership is checked on every use.
    pub org: Option<Uuid>,
    /// A client's token for itself (`client_credentials`: `sub` is the client, not a person).
    pub client_only: bool,
    /// The client the token was issued to, its `client_id` as the token names it (a UUID, or the
    /// URL of a client ID metadata document); `None` for the person's own sign-in.
    pub client: Option<Arc<str>>,
    /// Its `scope` claim's business-API scopes; `None` without the claim (not limited).
    pub scopes: Option<ApiScopes>,
    /// Its `aud` is one of `GATEHOUSE_OAUTH_RESOURCES` rather than `GATEHOUSE_AUDIENCE`: a token
    /// for another resource server (RFC 8707), which forward-auth does not pass.
    pub for_resource: bool,
    /// The client acting for the person (its `act`'s `sub`, RFC 8693); `None` for a token not
    /// exchanged.
    pub actor: Option<Arc<str>>,
    /// The DPoP key the token is bound to (its `cnf.jkt`); `None` for a bearer token.
    pub jkt: Option<Arc<str>>,
    /// The key set it was verified with: once the set changes (a key retired for good, or
    /// revoked), the token is verified again.
    generation: u64,
}

/// Verified access tokens remembered at most. An entry is ~110 bytes (the token's SHA-256, the
/// claims, the table's overhead; a client's id beside it), so the cache stays under ~12 MiB.
const VERIFIED_CAPACITY: usize = 100_000;

pub struct Tokens {
    keyring: Arc<Keyring>,
    clock: Clock,
    /// SHA-256 of an access token → its claims, for tokens whose signature was checked once. A
    /// hit costs a hash of the token (~1 µs) instead of an Ed25519 verification (~60 µs). Keyed by
    /// a collision-resistant digest, so no other string can be taken for a cached token. Validity
    /// in time is checked on every hit; revocation is checked by the caller on every call.
    verified: RwLock<HashMap<[u8; 32], Verified>>,
    issuer: String,
    audience: String,
    /// The RFC 8707 resources beside `audience` (`GATEHOUSE_OAUTH_RESOURCES`).
    resources: Vec<String>,
    /// The business APIs declared (docs/guide/resources.md): those with an audience of their own
    /// are audiences of access tokens too, and may change while the service runs.
    catalog: Option<Arc<super::catalog::CatalogCell>>,
    access_ttl: i64,
    /// What access and refresh tokens are signed with (`GATEHOUSE_ACCESS_TOKEN_ALG`).
    access_alg: SigningAlg,
    /// Per algorithm (`SigningAlg::ALL`'s order), what an access and a refresh token must meet.
    access_validation: [Validation; 3],
    refresh_validation: [Validation; 3],
}

fn index(alg: SigningAlg) -> usize {
    match alg {
        SigningAlg::Rs256 => 0,
        SigningAlg::Es256 => 1,
        SigningAlg::EdDsa => 2,
    }
}

impl Tokens {
    pub fn new(
        keyring: Arc<Keyring>,
        clock: Clock,
        issuer: &str,
        audience: &str,
        access_ttl: Duration,
        access_alg: SigningAlg,
    ) -> Self {
        let validation = |aud: &str, alg: SigningAlg| {
            let mut v = Validation::new(jwt_algorithm(alg));
            // `exp` is judged against our clock, in milliseconds (`expired`): jsonwebtoken reads
            // the system clock and compares whole seconds, which allowed up to 5.999 s of leeway.
            v.validate_exp = false;
            v.leeway = 0;
            v.set_issuer(&[issuer]);
            v.set_audience(&[aud]);
            v.set_required_spec_claims(&["exp", "iat", "iss", "aud", "sub"]);
            v
        };
        Tokens {
            verified: RwLock::new(HashMap::new()),
            access_validation: SigningAlg::ALL.map(|alg| validation(audience, alg)),
            // A refresh token is addressed to the issuer itself, never to the API.
            refresh_validation: SigningAlg::ALL.map(|alg| validation(issuer, alg)),
            access_alg,
            keyring,
            clock,
            issuer: issuer.to_owned(),
            audience: audience.to_owned(),
            resources: Vec::new(),
            catalog: None,
            access_ttl: access_ttl.as_secs() as i64,
        }
    }

    /// These tokens also go to the resource servers `resources` (RFC 8707) and to the declared
    /// APIs of `catalog` with audiences of their own: access tokens whose `aud` names one of them
    /// verify too (checked by `issues_for`, since the catalog changes while the service runs).
    pub fn with_resources(
        mut self,
        resources: &[String],
        catalog: Arc<super::catalog::CatalogCell>,
    ) -> Self {
        for v in &mut self.access_validation {
            v.validate_aud = false;
        }
        self.resources = resources.to_vec();
        self.catalog = Some(catalog);
        self
    }

    /// Refresh tokens naming `former` as their issuer (and audience) still verify: those issued
    /// before an upgrade changed the default issuer (`config::tokens::former_issuer`). They are
    /// this service's own all the same: signed by its keys and found in its database; the tokens
    /// that replace them name the issuer of now. Access tokens are not given this: they last a
    /// day, and a refresh replaces them.
    pub fn with_former_issuer(mut self, former: Option<&str>) -> Self {
        if let Some(former) = former {
            for v in &mut self.refresh_validation {
                v.set_issuer(&[self.issuer.as_str(), former]);
                v.set_audience(&[self.issuer.as_str(), former]);
            }
        }
        self
    }

    /// Whether a client may ask for a token with `aud` = `resource` (RFC 8707), and an access
    /// token with that `aud` verifies: the one audience of Gatehouse's tokens, a resource server
    /// of `GATEHOUSE_OAUTH_RESOURCES`, or a declared API's audience. Compared exactly, as
    /// resource indicators are.
    pub fn issues_for(&self, resource: &str) -> bool {
        resource == self.audience
            || self.resources.iter().any(|r| r == resource)
            || self
                .catalog
                .as_ref()
                .is_some_and(|c| c.current().by_audience(resource).is_some())
    }

    /// `GATEHOUSE_OAUTH_RESOURCES`: the resource servers of the settings.
    pub fn settings_resources(&self) -> impl Iterator<Item = &str> {
        self.resources.iter().map(String::as_str)
    }

    pub fn access_ttl_seconds(&self) -> i64 {
        self.access_ttl
    }

    /// The `iss` of every token (and of the OpenID provider when it is a URL).
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// The `aud` of access tokens (`GATEHOUSE_AUDIENCE`).
    pub fn audience(&self) -> &str {
        &self.audience
    }

    /// An access token with these claims (docs/api.md §11: a client's, with `client_id` and
    /// `scope`), signed as every access token is.
    pub fn access_with(&self, claims: &AccessClaims) -> Result<String> {
        self.sign(ACCESS_TYP, claims)
    }

    /// A JWT of `claims` signed with the active key of `alg`, header `alg`, `kid` and `typ`
    /// (e.g. an ID token: `typ` "JWT", the client's `id_token_alg`).
    pub fn sign_with(&self, alg: SigningAlg, typ: &str, claims: &impl Serialize) -> Result<String> {
        self.keyring.sign(alg, typ, claims)
    }

    fn sign(&self, typ: &str, claims: &impl Serialize) -> Result<String> {
        self.keyring.sign(self.access_alg, typ, claims)
    }

    /// An access token for a session, valid from `iat` (seconds) for the access TTL.
    pub fn access(
        &self,
        user: Uuid,
        session: Uuid,
        amr: &[String],
        roles: &[String],
        org: Option<&Membership>,
        iat: i64,
    ) -> Result<String> {
        self.sign(
            ACCESS_TYP,
            &AccessClaims {
                iss: self.issuer.clone(),
                aud: self.audience.clone(),
                sub: user,
                sid: session,
                jti: Uuid::now_v7(),
                iat,
                exp: iat + self.access_ttl,
                amr: amr.to_vec(),
                roles: roles.to_vec(),
                org_id: org.map(|m| m.org_id),
                org_roles: org.map(|m| m.roles.clone()).unwrap_or_default(),
                client_id: None,
                scope: None,
                act: None,
                cnf: None,
            },
        )
    }

    /// The refresh token of `record` (its session, `jti`, issue and expiry), of `client`'s
    /// session if any, bound to the DPoP key `jkt` if any. Signing is deterministic, so the same
    /// record always yields the same token.
    pub fn refresh(
        &self,
        user: Uuid,
        record: &crate::model::RefreshRecord,
        client: Option<Uuid>,
        jkt: Option<&str>,
    ) -> Result<String> {
        self.sign(
            REFRESH_TYP,
            &RefreshClaims {
                iss: self.issuer.clone(),
                aud: self.issuer.clone(),
                sub: user,
                sid: record.session_id,
                jti: record.jti,
                iat: record.issued_at / 1000,
                exp: record.expires_at / 1000,
                client_id: client,
                cnf: jkt.map(|jkt| Cnf {
                    jkt: jkt.to_owned(),
                }),
            },
        )
    }

    /// `verify_access`, once per token: later calls with the same token only check its time.
    pub fn verify_access_cached(&self, token: &str) -> Result<Verified> {
        let key = sha256(token.as_bytes());
        let now = self.clock.now_ms();
        let generation = self.keyring.generation.load(Ordering::Acquire);
        let cached = self
            .verified
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
            .cloned()
            .filter(|v| v.generation == generation);
        if let Some(verified) = cached {
            return if expired(verified.exp, now) {
                Err(Error::TokenExpired)
            } else {
                Ok(verified)
            };
        }
        let claims = self.verify_access(token)?;
        let verified = Verified {
            sub: claims.sub,
            sid: claims.sid,
            exp: claims.exp,
            multi_factor: is_multi_factor(&claims.amr),
            org: claims.org_id,
            client_only: claims.client_id.as_deref() == Some(claims.sub.to_string().as_str()),
            client: claims.client_id.as_deref().map(Arc::from),
            scopes: claims.scope.as_deref().map(ApiScopes::parse),
            for_resource: claims.aud != self.audience,
            actor: claims.act.as_ref().map(|a| Arc::from(a.sub.as_str())),
            jkt: claims.cnf.as_ref().map(|c| Arc::from(c.jkt.as_str())),
            generation,
        };
        let mut cache = self.verified.write().unwrap_or_else(|e| e.into_inner());
        if cache.len() >= VERIFIED_CAPACITY {
            cache.retain(|_, v| !expired(v.exp, now));
            if cache.len() >= VERIFIED_CAPACITY {
                // Rare (100 000 live tokens in use on one instance): verifying again is the cost.
                cache.clear();
            }
        }
        cache.insert(key, verified.clone());
        Ok(verified)
    }

    /// An access token's whole claims (introspection), with the signature checked once per token:
    /// a token already in the verified cache is only decoded. Safe because the cache is keyed by
    /// the token's SHA-256: no other string can be taken for a token that was verified.
    pub fn access_claims_cached(&self, token: &str) -> Result<AccessClaims> {
        self.verify_access_cached(token)?;
        jsonwebtoken::dangerous::insecure_decode::<AccessClaims>(token)
            .map(|data| data.claims)
            .map_err(|_| Error::TokenInvalid)
    }

    /// Checks signature, `typ`, `alg`, `kid`, `iss`, `aud` and `exp` of an access token.
    pub fn verify_access(&self, token: &str) -> Result<AccessClaims> {
        let claims: AccessClaims = self
            .verify(token, ACCESS_TYP, &self.access_validation)
            .map_err(|_| Error::TokenInvalid)?;
        if !self.issues_for(&claims.aud) {
            return Err(Error::TokenInvalid);
        }
        if expired(claims.exp, self.clock.now_ms()) {
            return Err(Error::TokenExpired);
        }
        Ok(claims)
    }

    pub fn verify_refresh(&self, token: &str) -> Result<RefreshClaims> {
        let claims: RefreshClaims = self
            .verify(token, REFRESH_TYP, &self.refresh_validation)
            .map_err(|_| Error::RefreshTokenInvalid)?;
        if expired(claims.exp, self.clock.now_ms()) {
            return Err(Error::RefreshTokenInvalid);
        }
        Ok(claims)
    }

    /// A client's token for itself (`client_credentials`) signed here and not expired: the
    /// client, the token's `sid` (its own: it names no session row) and its `exp` (ms, leeway
    /// included). `None` for anything else.
    pub fn client_token(&self, token: &str) -> Option<(Uuid, Uuid, i64)> {
        let claims = self.verify_access(token).ok()?;
        let client_only = claims.client_id.as_deref() == Some(claims.sub.to_string().as_str());
        client_only.then(|| {
            let until = claims.exp.saturating_mul(1000).saturating_add(LEEWAY_MS);
            (claims.sub, claims.sid, until)
        })
    }

    /// The session (and its holder) of an access or refresh token signed here, whether or not
    /// it has expired: RFC 7009 revocation of a token that lapsed a moment ago still ends its
    /// session. `None` for anything else.
    pub fn session_of(&self, token: &str) -> Option<(Uuid, Uuid)> {
        self.verify::<AccessClaims>(token, ACCESS_TYP, &self.access_validation)
            .and_then(|c| {
                if self.issues_for(&c.aud) {
                    Ok((c.sub, c.sid))
                } else {
                    Err(())
                }
            })
            .or_else(|()| {
                self.verify::<RefreshClaims>(token, REFRESH_TYP, &self.refresh_validation)
                    .map(|c| (c.sub, c.sid))
            })
            .ok()
    }

    /// An ID token this issuer signed, as an `id_token_hint` (OpenID Connect RP-Initiated Logout
    /// §2): signature, `typ`, `kid`'s own `alg` and `iss` checked, expiry not (an expired ID
    /// token is still a valid hint).
    pub fn id_token_hint(&self, token: &str) -> Option<IdTokenHint> {
        let validation = SigningAlg::ALL.map(|alg| {
            let mut v = Validation::new(jwt_algorithm(alg));
            v.validate_exp = false;
            v.validate_aud = false;
            v.set_issuer(&[&self.issuer]);
            v.set_required_spec_claims(&["iss", "sub", "aud"]);
            v
        });
        let claims: IdHintClaims = self.verify(token, "JWT", &validation).ok()?;
        let client = match claims.aud {
            serde_json::Value::String(aud) => aud,
            serde_json::Value::Array(auds) => auds.first()?.as_str()?.to_owned(),
            _ => return None,
        };
        Some(IdTokenHint {
            sub: claims.sub,
            sid: claims.sid,
            client,
        })
    }

    /// Signature, `alg`, `typ`, `kid`, `iss`, `aud` and the presence of the required claims;
    /// the caller judges `exp`. The key is the one `kid` names, and the header's `alg` must be
    /// that key's own: a header's word alone never picks the algorithm (no alg confusion).
    fn verify<T: serde::de::DeserializeOwned>(
        &self,
        token: &str,
        typ: &str,
        validations: &[Validation; 3],
    ) -> Result<T, ()> {
        let header = jsonwebtoken::decode_header(token).map_err(|_| ())?;
        // jsonwebtoken's Validation does not look at `typ`: without this check a refresh token
        // would pass as an access token wherever the audiences happen to agree.
        if header.typ.as_deref() != Some(typ) {
            return Err(());
        }
        let keys = self.keyring.snapshot();
        let key = header
            .kid
            .as_deref()
            .and_then(|kid| keys.verifiers.get(kid))
            .ok_or(())?;
        if header.alg != jwt_algorithm(key.alg) {
            return Err(());
        }
        // The validation allows the key's algorithm only, so jsonwebtoken checks it again.
        jsonwebtoken::decode::<T>(token, &key.key, &validations[index(key.alg)])
            .map(|data| data.claims)
            .map_err(|_| ())
    }
}
