//! The keyring: per JWS algorithm (EdDSA, ES256, RS256) one active signing key and the retired
//! keys whose tokens may still be presented, all published in the JWK Set. Keys live in the
//! database, sealed under the master key; every instance reloads them every second, so
//! `gatehouse keys rotate` reaches running instances without a restart.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header};
use serde::Serialize;

use crate::clock::Clock;
use crate::crypto::signing_key::{self, Jwk, RsaSigner};
use crate::crypto::{Secrets, SigningAlg, b64url};
use crate::error::{Error, Result};
use crate::store::Store;
use crate::store::keys::KeyRow;

/// A JWK Set (RFC 7517) of the public keys, in its standard JSON form.
#[derive(Debug, Serialize)]
pub struct Jwks {
    pub keys: Vec<Jwk>,
}

/// jsonwebtoken's name of an algorithm.
pub fn jwt_algorithm(alg: SigningAlg) -> Algorithm {
    match alg {
        SigningAlg::EdDsa => Algorithm::EdDSA,
        SigningAlg::Es256 => Algorithm::ES256,
        SigningAlg::Rs256 => Algorithm::RS256,
    }
}

/// OpenID Connect's `at_hash` of an access token (Core §3.1.3.6) for an ID token signed with
/// `alg`: the left half of its SHA-256 (RS256, ES256) or SHA-512 (EdDSA), base64url. The same
/// computation gives `c_hash` of a code.
pub fn at_hash(alg: SigningAlg, access_token: &str) -> String {
    signing_key::half_hash(alg, access_token)
}

enum PrivateKey {
    /// ES256: jsonwebtoken's signer, deterministic.
    Jwt(EncodingKey),
    /// EdDSA, held ready: jsonwebtoken's signer parses its PKCS#8 bytes again on every signature,
    /// which derives the public key (a base-point multiplication, as costly as the signature), so
    /// every token cost two; on the refresh path that was ~15 % of the server's CPU (BENCHMARKS.md,
    /// 2026-11-24).
    Ed25519(Box<ed25519_dalek::SigningKey>),
    Rsa(RsaSigner),
}

struct Signer {
    kid: String,
    key: PrivateKey,
}

/// A key that verifies: its own algorithm, which a token's header must name.
pub(crate) struct Verifier {
    pub(crate) alg: SigningAlg,
    pub(crate) key: DecodingKey,
}

/// The keys as last loaded: one signer per algorithm, every key that verifies, the JWK Set.
pub(crate) struct KeySet {
    /// Each key's kid and state, as read: a reload that reads the same keeps this set.
    fingerprint: Vec<(String, String)>,
    signers: HashMap<SigningAlg, Signer>,
    pub(crate) verifiers: HashMap<String, Verifier>,
    jwks: Arc<Jwks>,
}

pub struct Keyring {
    store: Store,
    secrets: Arc<Secrets>,
    clock: Clock,
    /// Retired keys stay usable this long after retirement: the longest a token they signed lives.
    retain: Duration,
    /// The algorithms this instance signs with, whose keys it makes when the database has none.
    wanted: Vec<SigningAlg>,
    current: RwLock<Arc<KeySet>>,
    /// Moves each time `current` is replaced.
    pub(crate) generation: AtomicU64,
}

/// New keys of `algs` as they are stored: the private key sealed under the master key, bound to
/// its kid. RSA generation runs on a blocking thread (~0.3 s of CPU).
pub async fn new_keys(
    secrets: &Secrets,
    algs: &[SigningAlg],
    now_ms: i64,
) -> anyhow::Result<Vec<KeyRow>> {
    let algs = algs.to_vec();
    let pairs = tokio::task::spawn_blocking(move || {
        algs.into_iter()
            .map(signing_key::generate)
            .collect::<Result<Vec<_>, _>>()
    })
    .await??;
    Ok(pairs
        .into_iter()
        .map(|pair| KeyRow {
            private_key: secrets.seal(pair.kid.as_bytes(), &pair.private),
            public_key: pair.public,
            alg: pair.alg.as_str().to_owned(),
            kid: pair.kid,
            state: "active".into(),
            created_at: now_ms,
        })
        .collect())
}

fn fingerprint(rows: &[KeyRow]) -> Vec<(String, String)> {
    rows.iter()
        .map(|r| (r.kid.clone(), r.state.clone()))
        .collect()
}

fn alg_of(row: &KeyRow) -> anyhow::Result<SigningAlg> {
    row.alg.parse().map_err(|_| {
        anyhow::anyhow!(
            "signing key {} has an unknown algorithm {:?}",
            row.kid,
            row.alg
        )
    })
}

/// The algorithms of `wanted` without an active key among `rows`.
fn missing(rows: &[KeyRow], wanted: &[SigningAlg]) -> Vec<SigningAlg> {
    wanted
        .iter()
        .copied()
        .filter(|alg| {
            !rows
                .iter()
                .any(|r| r.state == "active" && r.alg == alg.as_str())
        })
        .collect()
}

impl Keyring {
    /// The algorithms an instance signs with: its access tokens' and, when the OpenID provider is
    /// on, every one a client may ask for its ID tokens. An RSA key costs ~0.3 s of CPU to make;
    /// an instance that never signs with RS256 does not make one (a rotation still makes all
    /// three, and every key in the database is published and verifies, whoever made it).
    pub fn wanted(access_alg: SigningAlg, provider_on: bool) -> Vec<SigningAlg> {
        if provider_on {
            SigningAlg::ALL.to_vec()
        } else {
            vec![access_alg]
        }
    }

    /// Loads the keys, first making those of any algorithm of `wanted` (see [`Keyring::wanted`])
    /// without an active key: on a new database, or on one from before that algorithm existed.
    pub async fn load(
        store: Store,
        secrets: Arc<Secrets>,
        clock: Clock,
        retain: Duration,
        wanted: Vec<SigningAlg>,
    ) -> anyhow::Result<Keyring> {
        let since = clock.now_ms() - retain.as_millis() as i64;
        let mut rows = store.signing_keys(since).await?;
        let missing = missing(&rows, &wanted);
        if !missing.is_empty() {
            let keys = new_keys(&secrets, &missing, clock.now_ms()).await?;
            store.insert_first_keys(&keys).await?;
            rows = store.signing_keys(since).await?;
        }
        let set = Self::build(&rows, &secrets, &wanted)?
            .ok_or_else(|| anyhow::anyhow!("no active signing keys after creating them"))?;
        Ok(Keyring {
            store,
            secrets,
            clock,
            retain,
            wanted,
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
        if let Some(set) = Self::build(&rows, &self.secrets, &self.wanted)? {
            *self.current.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(set);
            self.generation.fetch_add(1, Ordering::Release);
        }
        Ok(())
    }

    /// The active keys' algorithms and kids, once `secrets` opens every one of them (the error
    /// otherwise is the one `load` fails with); empty before a first start made them. Reads
    /// only (`gatehouse check`, `gatehouse backup`).
    pub async fn active_kids(
        store: &Store,
        secrets: &Secrets,
    ) -> anyhow::Result<Vec<(SigningAlg, String)>> {
        let rows = store.signing_keys(i64::MAX).await?;
        let mut kids = Vec::new();
        for row in rows.iter().filter(|r| r.state == "active") {
            let alg = alg_of(row)?;
            open_signer(row, alg, secrets)?;
            kids.push((alg, row.kid.clone()));
        }
        kids.sort_by_key(|(alg, _)| SigningAlg::ALL.iter().position(|a| a == alg));
        Ok(kids)
    }

    /// `None` unless every wanted algorithm has an active key (a set missing one would leave a
    /// caller unable to sign: the previous set is kept until the keys are whole again).
    fn build(
        rows: &[KeyRow],
        secrets: &Secrets,
        wanted: &[SigningAlg],
    ) -> anyhow::Result<Option<KeySet>> {
        if !missing(rows, wanted).is_empty() {
            return Ok(None);
        }
        let mut signers = HashMap::new();
        let mut verifiers = HashMap::new();
        let mut jwks = Vec::new();
        for row in rows {
            let alg = alg_of(row)?;
            if row.state == "active" {
                let signer = Signer {
                    kid: row.kid.clone(),
                    key: open_signer(row, alg, secrets)?,
                };
                signers.insert(alg, signer);
            }
            let jwk = signing_key::public_jwk(alg, &row.public_key)?;
            let key = match alg {
                SigningAlg::EdDsa => DecodingKey::from_ed_der(&row.public_key),
                SigningAlg::Rs256 => DecodingKey::from_rsa_der(&row.public_key),
                // jsonwebtoken's rust_crypto verifier takes the SEC1 point as is.
                SigningAlg::Es256 => DecodingKey::from_ec_der(&row.public_key),
            };
            verifiers.insert(row.kid.clone(), Verifier { alg, key });
            jwks.push(jwk);
        }
        Ok(Some(KeySet {
            fingerprint: fingerprint(rows),
            signers,
            verifiers,
            jwks: Arc::new(Jwks { keys: jwks }),
        }))
    }

    pub(crate) fn snapshot(&self) -> Arc<KeySet> {
        self.current
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    pub fn jwks(&self) -> Arc<Jwks> {
        self.snapshot().jwks.clone()
    }

    /// A JWS (compact) of `claims` signed with the active key of `alg`; header `alg`, `kid`, `typ`.
    pub fn sign(&self, alg: SigningAlg, typ: &str, claims: &impl Serialize) -> Result<String> {
        let keys = self.snapshot();
        let signer = keys
            .signers
            .get(&alg)
            .ok_or_else(|| Error::internal(anyhow::anyhow!("no active {alg} signing key")))?;
        let mut header = Header::new(jwt_algorithm(alg));
        header.typ = Some(typ.to_owned());
        header.kid = Some(signer.kid.clone());
        match &signer.key {
            PrivateKey::Jwt(key) => {
                jsonwebtoken::encode(&header, claims, key).map_err(Error::internal)
            }
            PrivateKey::Ed25519(key) => {
                use ed25519_dalek::Signer as _;
                let message = format!("{}.{}", part(&header)?, part(claims)?);
                let signature = key.sign(message.as_bytes());
                Ok(format!("{message}.{}", b64url(&signature.to_bytes())))
            }
            PrivateKey::Rsa(key) => {
                let message = format!("{}.{}", part(&header)?, part(claims)?);
                let signature = key.sign(message.as_bytes()).map_err(Error::internal)?;
                Ok(format!("{message}.{}", b64url(&signature)))
            }
        }
    }
}

/// Base64url of a value's JSON: a JWS part (RFC 7515 §7.1).
fn part<T: Serialize + ?Sized>(value: &T) -> Result<String> {
    serde_json::to_vec(value)
        .map(|json| b64url(&json))
        .map_err(Error::internal)
}

fn open_signer(row: &KeyRow, alg: SigningAlg, secrets: &Secrets) -> anyhow::Result<PrivateKey> {
    let private = secrets.open(row.kid.as_bytes(), &row.private_key).map_err(|_| {
        anyhow::anyhow!(
            "signing key {} cannot be decrypted: GATEHOUSE_MASTER_KEY is not the key this database was set up with",
            row.kid
        )
    })?;
    let unusable = |e: &dyn std::fmt::Display| {
        anyhow::anyhow!("signing key {} is not a usable {alg} key: {e}", row.kid)
    };
    Ok(match alg {
        SigningAlg::EdDsa => {
            let seed: [u8; 32] = private
                .try_into()
                .map_err(|_| unusable(&"not an Ed25519 seed"))?;
            PrivateKey::Ed25519(Box::new(ed25519_dalek::SigningKey::from_bytes(&seed)))
        }
        SigningAlg::Es256 => PrivateKey::Jwt(EncodingKey::from_ec_der(&private)),
        SigningAlg::Rs256 => {
            PrivateKey::Rsa(RsaSigner::from_der(&private).map_err(|e| unusable(&e))?)
        }
    })
}
