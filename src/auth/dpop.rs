//! DPoP proofs (RFC 9449, docs/api.md §11): a client proves, request by request, that it holds
//! the private key its tokens are bound to (`cnf.jkt`, the key's RFC 7638 thumbprint), so that a
//! token copied from an agent's logs is of no use without the key. A proof is a JWT the client
//! signs for one request: `typ: dpop+jwt`, its public key in the header, the method (`htm`) and
//! URL (`htu`) of the request, when (`iat`), a unique `jti`, and with a token the token's hash
//! (`ath`). Each `jti` is accepted once, by every instance (the database keeps the proofs seen
//! within their window). The signature is checked by `jsonwebtoken` with the proof's own key;
//! what the specification adds is checked here.

use base64::Engine as _;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;
use url::Url;

use super::core::Core;
use crate::crypto::{b64url, sha256};
use crate::error::Result;

/// The algorithms a proof may be signed with (`dpop_signing_alg_values_supported`): asymmetric
/// only (a shared secret proves nothing about a key the client alone holds), never `none`.
pub const PROOF_ALGS: [&str; 5] = ["ES256", "ES384", "RS256", "PS256", "EdDSA"];
/// How old a proof's `iat` may be, and how far ahead of this clock (a client's clock drifts).
const IAT_PAST_S: i64 = 60;
const IAT_AHEAD_S: i64 = 5;
/// Longest `jti` kept.
const JTI_MAX: usize = 256;
/// Members of a private or symmetric key: a proof's header carries a public key only.
const PRIVATE_MEMBERS: [&str; 7] = ["d", "p", "q", "dp", "dq", "qi", "k"];

/// A proof that passed: the thumbprint of the key that signed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proof {
    pub jkt: String,
    /// The nonce it carries (RFC 9449 §8), if any: checked by whoever asks for one.
    pub nonce: Option<String>,
}

/// Why a proof was refused (`invalid_dpop_proof`, RFC 9449 §7.1), for developers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadProof(pub &'static str);

#[derive(Deserialize)]
struct ProofClaims {
    jti: String,
    htm: String,
    htu: String,
    iat: i64,
    #[serde(default)]
    ath: Option<String>,
    #[serde(default)]
    nonce: Option<String>,
}

/// The request a proof must be for.
pub struct Request<'a> {
    pub method: &'a str,
    /// Whether a proof's `htu` names this request's URL: `same_target` for a URL of this
    /// service's own; for a request a proxy describes, its host and normalised path.
    pub htu: &'a (dyn Fn(&str) -> bool + Sync),
    /// The access token presented with it, for `ath`; `None` at the token endpoint.
    pub access_token: Option<&'a str>,
}

/// The thumbprint (RFC 7638, SHA-256, base64url) of a public JWK: the digest of its required
/// members, in lexicographic order, as JSON without whitespace; `None` for a key type without a
/// thumbprint here or a member that is not a string. Hand-written: `jsonwebtoken`'s
/// `Jwk::thumbprint` (10.3) leaves `crv` unquoted for OKP keys (a thumbprint no client computes)
/// and panics on an OKP or EC key of the other family's curve, which a proof's header can carry.
pub fn thumbprint(jwk: &serde_json::Map<String, serde_json::Value>) -> Option<String> {
    let members: &[&str] = match jwk.get("kty")?.as_str()? {
        "EC" => &["crv", "kty", "x", "y"],
        "RSA" => &["e", "kty", "n"],
        "OKP" => &["crv", "kty", "x"],
        _ => return None,
    };
    let mut canonical = serde_json::Map::new();
    for member in members {
        let value = jwk.get(*member)?.as_str()?;
        canonical.insert((*member).to_owned(), serde_json::Value::from(value));
    }
    let text = serde_json::Value::Object(canonical).to_string();
    Some(b64url(&sha256(text.as_bytes())))
}

/// The proof's header as JSON, for what `jsonwebtoken`'s typed header cannot say: whether its
/// key holds private members.
fn raw_header(proof: &str) -> Option<serde_json::Value> {
    let head = proof.split('.').next()?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(head)
        .ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// Same scheme, host, port and path (RFC 9449 §4.3: without query and fragment); the scheme and
/// host compare without case, as `Url` keeps them.
pub fn same_target(htu: &str, url: &str) -> bool {
    match (Url::parse(htu), Url::parse(url)) {
        (Ok(a), Ok(b)) => {
            a.scheme() == b.scheme()
                && a.host_str() == b.host_str()
                && a.port_or_known_default() == b.port_or_known_default()
                && a.path() == b.path()
        }
        _ => false,
    }
}

/// Everything of a proof but its `jti`'s single use, at `now_s`.
pub fn check(
    proof: &str,
    request: &Request<'_>,
    now_s: i64,
) -> std::result::Result<(Proof, String, i64), BadProof> {
    if proof.len() > 8 * 1024 {
        return Err(BadProof("the proof is too long"));
    }
    let raw = raw_header(proof).ok_or(BadProof("the proof is not a JWT"))?;
    if raw.get("typ").and_then(|t| t.as_str()) != Some("dpop+jwt") {
        return Err(BadProof("the proof's typ must be dpop+jwt"));
    }
    let alg = raw.get("alg").and_then(|a| a.as_str()).unwrap_or_default();
    if !PROOF_ALGS.contains(&alg) {
        return Err(BadProof(
            "the proof's alg must be ES256, ES384, RS256, PS256 or EdDSA",
        ));
    }
    let key = raw.get("jwk").and_then(|k| k.as_object()).ok_or(BadProof(
        "the proof's header must carry its public key as jwk",
    ))?;
    if PRIVATE_MEMBERS.iter().any(|m| key.contains_key(*m)) {
        return Err(BadProof("the proof's jwk must be a public key"));
    }
    let jkt = thumbprint(key).ok_or(BadProof(
        "the proof's jwk is not an EC, RSA or OKP public key",
    ))?;
    let header = jsonwebtoken::decode_header(proof)
        .map_err(|_| BadProof("the proof's header is malformed"))?;
    let jwk = header.jwk.ok_or(BadProof("the proof's jwk is not a key"))?;
    let decoding =
        DecodingKey::from_jwk(&jwk).map_err(|_| BadProof("the proof's jwk is not a usable key"))?;
    let alg: Algorithm = header.alg;
    let mut validation = Validation::new(alg);
    validation.algorithms = vec![alg];
    validation.required_spec_claims.clear();
    validation.validate_exp = false;
    validation.validate_nbf = false;
    validation.validate_aud = false;
    let claims = jsonwebtoken::decode::<ProofClaims>(proof, &decoding, &validation)
        .map_err(|_| BadProof("the proof's signature or claims are not valid for its key"))?
        .claims;
    if claims.jti.is_empty() || claims.jti.len() > JTI_MAX {
        return Err(BadProof("the proof's jti is missing or too long"));
    }
    if claims.htm != request.method {
        return Err(BadProof("the proof's htm is not this request's method"));
    }
    if !(request.htu)(&claims.htu) {
        return Err(BadProof("the proof's htu is not this request's URL"));
    }
    if claims.iat < now_s - IAT_PAST_S || claims.iat > now_s + IAT_AHEAD_S {
        return Err(BadProof("the proof's iat is too far from now"));
    }
    match (request.access_token, claims.ath.as_deref()) {
        (Some(token), Some(ath)) => {
            let expected = b64url(&sha256(token.as_bytes()));
            if !bool::from(subtle::ConstantTimeEq::ct_eq(
                expected.as_bytes(),
                ath.as_bytes(),
            )) {
                return Err(BadProof("the proof's ath is not this access token's hash"));
            }
        }
        (Some(_), None) => return Err(BadProof("the proof must carry ath with an access token")),
        (None, _) => {}
    }
    // Its jti counts once per key, within the window its iat allows.
    let seen = b64url(&sha256(format!("{jkt}.{}", claims.jti).as_bytes()));
    let until_ms = (claims.iat + IAT_PAST_S + IAT_AHEAD_S) * 1000;
    let nonce = claims.nonce;
    Ok((Proof { jkt, nonce }, seen, until_ms))
}

/// How long a nonce this server gives stays good: its window, and the one after.
const NONCE_WINDOW_MS: i64 = 5 * 60_000;

impl Core {
    /// The DPoP nonce to give now (RFC 9449 §8: `DPoP-Nonce`): the same on every instance.
    pub(crate) fn dpop_nonce(&self) -> String {
        self.secrets
            .dpop_nonce(self.clock.now_ms() / NONCE_WINDOW_MS)
    }

    /// Whether a proof's nonce is one this server gave, in this window or the one before.
    pub(crate) fn dpop_nonce_ok(&self, nonce: &str) -> bool {
        let window = self.clock.now_ms() / NONCE_WINDOW_MS;
        self.secrets.dpop_nonce_is(nonce, window) || self.secrets.dpop_nonce_is(nonce, window - 1)
    }

    /// `check`, and the proof's `jti` taken for good on every instance: a replay is refused.
    /// `Ok(Err(_))`: the proof is bad; `Err(_)`: the store failed.
    pub(crate) async fn dpop_proof(
        &self,
        proof: &str,
        request: &Request<'_>,
    ) -> Result<std::result::Result<Proof, BadProof>> {
        let now_ms = self.clock.now_ms();
        let (proof, seen, until_ms) = match check(proof, request, now_ms / 1000) {
            Ok(checked) => checked,
            Err(bad) => return Ok(Err(bad)),
        };
        if !self.store.take_dpop_jti(seen.as_bytes(), until_ms).await? {
            return Ok(Err(BadProof("the proof was used before (its jti)")));
        }
        Ok(Ok(proof))
    }
}
