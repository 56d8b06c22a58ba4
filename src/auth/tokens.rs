//! JWTs (Ed25519, RFC 8037) and the keys that sign them. Access and refresh tokens differ in
//! `typ` and `aud`, and each verifier demands its own, so neither is ever taken for the other.
//! Keys live in the database, sealed under the master key; every instance reloads them
//! periodically, so `gatehouse keys rotate` reaches running instances without a restart.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use ed25519_dalek::pkcs8::EncodePrivateKey as _;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::clock::Clock;
use crate::crypto::{Secrets, b64url, sha256};
use crate::error::{Error, Result};
use crate::model::is_multi_factor;
use crate::model::orgs::Membership;
use crate::store::Store;
use crate::store::keys::KeyRow;

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
}

struct Signer {
    kid: String,
    key: EncodingKey,
}

/// The keys as last loaded: the one that signs, every one that verifies, and the JWK Set.
struct KeySet {
    /// Each key's kid and state, as read: a reload that reads the same keeps this set.
    fingerprint: Vec<(String, String)>,
    signer: Signer,
    verifiers: HashMap<String, DecodingKey>,
    jwks: Arc<Jwks>,
}

/// A JWK Set (RFC 7517) of Ed25519 public keys (RFC 8037), in its standard JSON form.
#[derive(Debug, Serialize)]
pub struct Jwks {
    pub keys: Vec<Jwk>,
}

#[derive(Debug, Serialize)]
pub struct Jwk {
    pub kty: &'static str,
    pub crv: &'static str,
    /// The public key, base64url.
    pub x: String,
    /// RFC 7638 thumbprint of the key; the `kid` of the tokens it verifies.
    pub kid: String,
    pub r#use: &'static str,
    pub alg: &'static str,
}

pub struct Keyring {
    store: Store,
    secrets: Arc<Secrets>,
    clock: Clock,
    /// Retired keys stay usable this long after retirement: the longest a token they signed lives.
    retain: Duration,
    current: RwLock<Arc<KeySet>>,
    /// Moves each time `current` is replaced.
    generation: AtomicU64,
}

/// A new key as it is stored: the seed sealed under the master key, bound to its kid.
pub fn new_key(secrets: &Secrets, now_ms: i64) -> KeyRow {
    let seed: [u8; 32] = rand::random();
    let signing = ed25519_dalek::SigningKey::from_bytes(&seed);
    let public = signing.verifying_key().to_bytes();
    let kid = thumbprint(&public);
    KeyRow {
        private_key: secrets.seal(kid.as_bytes(), &seed),
        public_key: public.to_vec(),
        kid,
        state: "active".into(),
        created_at: now_ms,
    }
}

fn fingerprint(rows: &[KeyRow]) -> Vec<(String, String)> {
    rows.iter()
        .map(|r| (r.kid.clone(), r.state.clone()))
        .collect()
}

/// RFC 7638 JWK thumbprint of an Ed25519 public key: a kid that names the key itself.
fn thumbprint(public: &[u8]) -> String {
    let canonical = format!(
        r#"{{"crv":"Ed25519","kty":"OKP","x":"{}"}}"#,
        b64url(public)
    );
    b64url(&sha256(canonical.as_bytes()))
}

impl Keyring {
    /// Loads the keys, creating the first one if the database has none.
    pub async fn load(
        store: Store,
        secrets: Arc<Secrets>,
        clock: Clock,
        retain: Duration,
    ) -> anyhow::Result<Keyring> {
        let since = clock.now_ms() - retain.as_millis() as i64;
        let set = Self::read(&store, &secrets, since).await?;
        let set = match set {
            Some(set) => set,
            None => {
                store
                    .insert_first_key(&new_key(&secrets, clock.now_ms()))
                    .await?;
                Self::read(&store, &secrets, since)
                    .await?
                    .ok_or_else(|| anyhow::anyhow!("no active signing key after creating one"))?
            }
        };
        Ok(Keyring {
            store,
            secrets,
            clock,
            retain,
            current: RwLock::new(Arc::new(set)),
            generation: AtomicU64::new(0),
        })
    }

    /// Reads the keys again (after a rotation by another process); cheap when nothing changed,
    /// so it runs every second.
    pub async fn reload(&self) -> anyhow::Result<()> {
        let since = self.clock.now_ms() - self.retain.as_millis() as i64;
        let rows = self.store.signing_keys(since).await?;
        if fingerprint(&rows) == self.snapshot().fingerprint {
            return Ok(());
        }
        if let Some(set) = Self::build(&rows, &self.secrets)? {
            *self.current.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(set);
            self.generation.fetch_add(1, Ordering::Release);
        }
        Ok(())
    }

    /// The active signing key's kid, once `secrets` opens it (the error otherwise is the one
    /// `load` fails with); `None` before a first start made one. Reads only (`gatehouse check`).
    pub async fn active_kid(store: &Store, secrets: &Secrets) -> anyhow::Result<Option<String>> {
        Ok(Self::read(store, secrets, 0)
            .await?
            .map(|set| set.signer.kid))
    }

    /// The active key and those retired after `since` (ms).
    async fn read(store: &Store, secrets: &Secrets, since: i64) -> anyhow::Result<Option<KeySet>> {
        Self::build(&store.signing_keys(since).await?, secrets)
    }

    fn build(rows: &[KeyRow], secrets: &Secrets) -> anyhow::Result<Option<KeySet>> {
        let Some(active) = rows.iter().find(|r| r.state == "active") else {
            return Ok(None);
        };
        let seed = secrets.open(active.kid.as_bytes(), &active.private_key).map_err(|_| {
            anyhow::anyhow!(
                "signing key {} cannot be decrypted: GATEHOUSE_MASTER_KEY is not the key this database was set up with",
                active.kid
            )
        })?;
        let seed: [u8; 32] = seed
            .try_into()
            .map_err(|_| anyhow::anyhow!("signing key {} is not an Ed25519 seed", active.kid))?;
        let der = ed25519_dalek::SigningKey::from_bytes(&seed).to_pkcs8_der()?;
        let signer = Signer {
            kid: active.kid.clone(),
            key: EncodingKey::from_ed_der(der.as_bytes()),
        };

        let mut verifiers = HashMap::new();
        let mut jwks = Vec::new();
        for row in rows {
            let x = b64url(&row.public_key);
            verifiers.insert(row.kid.clone(), DecodingKey::from_ed_components(&x)?);
            jwks.push(Jwk {
                kty: "OKP",
                crv: "Ed25519",
                x,
                kid: row.kid.clone(),
                r#use: "sig",
                alg: "EdDSA",
            });
        }
        let jwks = Arc::new(Jwks { keys: jwks });
        Ok(Some(KeySet {
            fingerprint: fingerprint(rows),
            signer,
            verifiers,
            jwks,
        }))
    }

    fn snapshot(&self) -> Arc<KeySet> {
        self.current
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    pub fn jwks(&self) -> Arc<Jwks> {
        self.snapshot().jwks.clone()
    }
}

/// Issues and verifies the service's tokens.
/// An access token already verified: what a bearer call needs of it.
#[derive(Debug, Clone, Copy)]
pub struct Verified {
    pub sub: Uuid,
    pub sid: Uuid,
    pub exp: i64,
    /// Its `amr` holds a second factor.
    pub multi_factor: bool,
    /// The active organisation it names, if any: its membership is checked on every use.
    pub org: Option<Uuid>,
    /// The key set it was verified with: once the set changes (a key retired for good, or
    /// revoked), the token is verified again.
    generation: u64,
}

/// Verified access tokens remembered at most. An entry is ~90 bytes (the token's SHA-256, the
/// claims, the table's overhead), so the cache stays under ~10 MiB.
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
    access_ttl: i64,
    access_validation: Validation,
    refresh_validation: Validation,
}

impl Tokens {
    pub fn new(
        keyring: Arc<Keyring>,
        clock: Clock,
        issuer: &str,
        audience: &str,
        access_ttl: Duration,
    ) -> Self {
        let validation = |aud: &str| {
            let mut v = Validation::new(Algorithm::EdDSA);
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
            access_validation: validation(audience),
            // A refresh token is addressed to the issuer itself, never to the API.
            refresh_validation: validation(issuer),
            keyring,
            clock,
            issuer: issuer.to_owned(),
            audience: audience.to_owned(),
            access_ttl: access_ttl.as_secs() as i64,
        }
    }

    pub fn access_ttl_seconds(&self) -> i64 {
        self.access_ttl
    }

    fn sign(&self, typ: &str, claims: &impl Serialize) -> Result<String> {
        let keys = self.keyring.snapshot();
        let mut header = Header::new(Algorithm::EdDSA);
        header.typ = Some(typ.to_owned());
        header.kid = Some(keys.signer.kid.clone());
        jsonwebtoken::encode(&header, claims, &keys.signer.key).map_err(Error::internal)
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
            },
        )
    }

    /// The refresh token recorded as `jti`, issued and expiring at the given milliseconds.
    /// Signing is deterministic, so the same record always yields the same token.
    pub fn refresh(
        &self,
        user: Uuid,
        session: Uuid,
        jti: Uuid,
        issued_at_ms: i64,
        expires_at_ms: i64,
    ) -> Result<String> {
        self.sign(
            REFRESH_TYP,
            &RefreshClaims {
                iss: self.issuer.clone(),
                aud: self.issuer.clone(),
                sub: user,
                sid: session,
                jti,
                iat: issued_at_ms / 1000,
                exp: expires_at_ms / 1000,
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
            .copied()
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
        cache.insert(key, verified);
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

    /// Signature, `alg`, `typ`, `kid`, `iss`, `aud` and the presence of the required claims;
    /// the caller judges `exp`.
    fn verify<T: serde::de::DeserializeOwned>(
        &self,
        token: &str,
        typ: &str,
        validation: &Validation,
    ) -> Result<T, ()> {
        let header = jsonwebtoken::decode_header(token).map_err(|_| ())?;
        // jsonwebtoken's Validation does not look at `typ`: without this check a refresh token
        // would pass as an access token wherever the audiences happen to agree.
        if header.alg != Algorithm::EdDSA || header.typ.as_deref() != Some(typ) {
            return Err(());
        }
        let keys = self.keyring.snapshot();
        let key = header
            .kid
            .as_deref()
            .and_then(|kid| keys.verifiers.get(kid))
            .ok_or(())?;
        jsonwebtoken::decode::<T>(token, key, validation)
            .map(|data| data.claims)
            .map_err(|_| ())
    }
}
