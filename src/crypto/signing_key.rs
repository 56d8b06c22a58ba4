//! The key pairs that sign tokens, one kind per JWS algorithm: making them, their stored form,
//! their public JWK (RFC 7517, RFC 7518 §6, RFC 8037) and its RFC 7638 thumbprint, which is the kid.
//!
//! Stored forms (the private one sealed under the master key, bound to the kid):
//! - EdDSA: the 32-byte seed; the raw 32-byte public key.
//! - ES256: the PKCS#8 DER private key; the uncompressed SEC1 point (65 bytes).
//! - RS256: the PKCS#1 DER private key; the PKCS#1 DER public key.
//!
//! RSA keys are made and used for signing with OpenSSL rather than the `rsa` crate that
//! jsonwebtoken's `rust_crypto` backend signs with. Measured on the 2-core build machine (release,
//! RSA-2048, SHA-256, PKCS#1 v1.5): signing 0.94 ms with OpenSSL against 2.8 ms with `rsa` 0.9 (and
//! jsonwebtoken also parses the DER key again on every signature); key generation ~0.3 s with
//! either in release, but with OpenSSL the same in a debug build, which is what every test's first
//! start pays. RS256 is what each OAuth code exchange signs (ID tokens). ES256 and EdDSA keep
//! jsonwebtoken's signers: both are deterministic (RFC 6979, RFC 8032), which `Tokens::refresh`
//! relies on; OpenSSL's ECDSA is not.

use openssl::bn::BigNumContext;
use openssl::ec::{EcGroup, EcKey, PointConversionForm};
use openssl::hash::MessageDigest;
use openssl::nid::Nid;
use openssl::pkey::{PKey, Private};
use openssl::rsa::Rsa;
use serde::Serialize;
use sha2::{Digest, Sha256, Sha512};

use super::{SigningAlg, b64url};

/// RSA modulus size: what RFC 7518 §3.3 asks at least, and what relying parties expect.
pub const RSA_BITS: u32 = 2048;

/// A key pair just made, in its stored form (the private part not yet sealed).
pub struct KeyPair {
    pub alg: SigningAlg,
    pub kid: String,
    pub private: Vec<u8>,
    pub public: Vec<u8>,
}

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct KeyError(String);

fn bad(what: impl std::fmt::Display) -> KeyError {
    KeyError(what.to_string())
}

impl From<openssl::error::ErrorStack> for KeyError {
    fn from(e: openssl::error::ErrorStack) -> Self {
        bad(e)
    }
}

/// Makes a new key pair of `alg`. An RSA key takes ~0.3 s of CPU (more, by luck, at times).
pub fn generate(alg: SigningAlg) -> Result<KeyPair, KeyError> {
    let (private, public) = match alg {
        SigningAlg::EdDsa => {
            let seed: [u8; 32] = rand::random();
            let public = ed25519_dalek::SigningKey::from_bytes(&seed)
                .verifying_key()
                .to_bytes();
            (seed.to_vec(), public.to_vec())
        }
        SigningAlg::Es256 => {
            let group = EcGroup::from_curve_name(Nid::X9_62_PRIME256V1)?;
            let key = EcKey::generate(&group)?;
            let mut ctx = BigNumContext::new()?;
            let public =
                key.public_key()
                    .to_bytes(&group, PointConversionForm::UNCOMPRESSED, &mut ctx)?;
            let private = PKey::from_ec_key(key)?.private_key_to_pkcs8()?;
            (private, public)
        }
        SigningAlg::Rs256 => {
            let key = Rsa::generate(RSA_BITS)?;
            (key.private_key_to_der()?, key.public_key_to_der_pkcs1()?)
        }
    };
    let kid = public_jwk(alg, &public)?.kid;
    Ok(KeyPair {
        alg,
        kid,
        private,
        public,
    })
}

/// A public key as a JWK Set publishes it: `kty`, `kid`, `alg`, `use` and the key's parameters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Jwk {
    pub kty: &'static str,
    /// RFC 7638 thumbprint of the key: the `kid` of the tokens it verifies.
    pub kid: String,
    pub alg: SigningAlg,
    pub r#use: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub crv: Option<&'static str>,
    /// RSA modulus, base64url.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub n: Option<String>,
    /// RSA public exponent, base64url.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub e: Option<String>,
    /// The Ed25519 public key, or the P-256 point's x coordinate, base64url.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub x: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub y: Option<String>,
}

/// The JWK of a stored public key, its kid computed from it.
pub fn public_jwk(alg: SigningAlg, public: &[u8]) -> Result<Jwk, KeyError> {
    let mut jwk = Jwk {
        kty: "",
        kid: String::new(),
        alg,
        r#use: "sig",
        crv: None,
        n: None,
        e: None,
        x: None,
        y: None,
    };
    match alg {
        SigningAlg::EdDsa => {
            if public.len() != 32 {
                return Err(bad("an Ed25519 public key is 32 bytes"));
            }
            jwk.kty = "OKP";
            jwk.crv = Some("Ed25519");
            jwk.x = Some(b64url(public));
        }
        SigningAlg::Es256 => {
            // The uncompressed SEC1 form: 0x04 ‖ x ‖ y, each coordinate 32 bytes.
            if public.len() != 65 || public[0] != 4 {
                return Err(bad("a P-256 public key is an uncompressed 65-byte point"));
            }
            jwk.kty = "EC";
            jwk.crv = Some("P-256");
            jwk.x = Some(b64url(&public[1..33]));
            jwk.y = Some(b64url(&public[33..]));
        }
        SigningAlg::Rs256 => {
            let key = Rsa::public_key_from_der_pkcs1(public)?;
            jwk.kty = "RSA";
            jwk.n = Some(b64url(&key.n().to_vec()));
            jwk.e = Some(b64url(&key.e().to_vec()));
        }
    }
    jwk.kid = thumbprint(&jwk);
    Ok(jwk)
}

/// RFC 7638: SHA-256 of the key's required members, in lexicographic order, without whitespace.
/// Base64url values need no JSON escaping, so the text is assembled as is.
pub fn thumbprint(jwk: &Jwk) -> String {
    let s = |v: &Option<String>| v.as_deref().unwrap_or_default().to_owned();
    let canonical = match jwk.kty {
        "RSA" => format!(r#"{{"e":"{}","kty":"RSA","n":"{}"}}"#, s(&jwk.e), s(&jwk.n)),
        "EC" => format!(
            r#"{{"crv":"{}","kty":"EC","x":"{}","y":"{}"}}"#,
            jwk.crv.unwrap_or_default(),
            s(&jwk.x),
            s(&jwk.y)
        ),
        _ => format!(
            r#"{{"crv":"{}","kty":"{}","x":"{}"}}"#,
            jwk.crv.unwrap_or_default(),
            jwk.kty,
            s(&jwk.x)
        ),
    };
    b64url(&Sha256::digest(canonical.as_bytes()))
}

/// An RSA private key ready to sign RS256 (RFC 7518 §3.3) with OpenSSL.
pub struct RsaSigner(PKey<Private>);

impl RsaSigner {
    pub fn from_der(der: &[u8]) -> Result<Self, KeyError> {
        let rsa = Rsa::private_key_from_der(der)?;
        if rsa.size() * 8 < RSA_BITS {
            return Err(bad("the RSA key is shorter than 2048 bits"));
        }
        Ok(RsaSigner(PKey::from_rsa(rsa)?))
    }

    /// The RSASSA-PKCS1-v1_5 SHA-256 signature of `message`.
    pub fn sign(&self, message: &[u8]) -> Result<Vec<u8>, KeyError> {
        let mut signer = openssl::sign::Signer::new(MessageDigest::sha256(), &self.0)?;
        signer.update(message)?;
        Ok(signer.sign_to_vec()?)
    }
}

/// OpenID Connect's `at_hash` (Core §3.1.3.6) and `c_hash` (§3.3.2.11): the left half of the hash
/// of `value` that `alg` signs with, base64url. EdDSA names no hash; Ed25519 hashes with SHA-512,
/// which is what providers use (docs/api.md §11).
pub fn half_hash(alg: SigningAlg, value: &str) -> String {
    match alg {
        SigningAlg::Rs256 | SigningAlg::Es256 => b64url(&Sha256::digest(value.as_bytes())[..16]),
        SigningAlg::EdDsa => b64url(&Sha512::digest(value.as_bytes())[..32]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 7638 §3.1: the example RSA key and its thumbprint.
    const RFC7638_N: &str = "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw";

    #[test]
    fn rsa_thumbprint_matches_rfc_7638() {
        let n = super::super::b64url_decode(RFC7638_N).unwrap();
        let rsa = Rsa::from_public_components(
            openssl::bn::BigNum::from_slice(&n).unwrap(),
            openssl::bn::BigNum::from_u32(65537).unwrap(),
        )
        .unwrap();
        let jwk = public_jwk(SigningAlg::Rs256, &rsa.public_key_to_der_pkcs1().unwrap()).unwrap();
        assert_eq!(jwk.n.as_deref(), Some(RFC7638_N));
        assert_eq!(jwk.e.as_deref(), Some("AQAB"));
        assert_eq!(jwk.kid, "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs");
    }

    #[test]
    fn each_kind_of_key_has_its_jwk_members_and_only_those() {
        let members = |alg| {
            let pair = generate(alg).unwrap();
            let jwk = public_jwk(alg, &pair.public).unwrap();
            assert_eq!(jwk.kid, pair.kid);
            assert_eq!(jwk.kid.len(), 43, "base64url of a SHA-256");
            let json = serde_json::to_value(&jwk).unwrap();
            assert_eq!(json["alg"], alg.as_str());
            assert_eq!(json["use"], "sig");
            let mut keys: Vec<String> = json.as_object().unwrap().keys().cloned().collect();
            keys.sort();
            (json, keys.join(","))
        };
        let (ed, keys) = members(SigningAlg::EdDsa);
        assert_eq!(keys, "alg,crv,kid,kty,use,x");
        assert_eq!(
            (ed["kty"].as_str(), ed["crv"].as_str()),
            (Some("OKP"), Some("Ed25519"))
        );
        let (ec, keys) = members(SigningAlg::Es256);
        assert_eq!(keys, "alg,crv,kid,kty,use,x,y");
        assert_eq!(
            (ec["kty"].as_str(), ec["crv"].as_str()),
            (Some("EC"), Some("P-256"))
        );
        assert_eq!(ec["x"].as_str().unwrap().len(), 43, "32 bytes");
        let (rsa, keys) = members(SigningAlg::Rs256);
        assert_eq!(keys, "alg,e,kid,kty,n,use");
        assert_eq!(rsa["e"], "AQAB");
        assert_eq!(rsa["n"].as_str().unwrap().len(), 342, "2048 bits");
    }

    #[test]
    fn ed25519_thumbprint_is_that_of_its_canonical_jwk() {
        // RFC 8037 §A.3: the example Ed25519 key's thumbprint.
        let x = super::super::b64url_decode("11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo").unwrap();
        let jwk = public_jwk(SigningAlg::EdDsa, &x).unwrap();
        assert_eq!(jwk.kid, "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k");
    }

    #[test]
    fn malformed_public_keys_are_refused() {
        assert!(public_jwk(SigningAlg::EdDsa, &[0; 31]).is_err());
        assert!(public_jwk(SigningAlg::Es256, &[0; 65]).is_err());
        assert!(public_jwk(SigningAlg::Rs256, b"not der").is_err());
    }

    #[test]
    fn at_hash_is_the_left_half_of_the_algorithms_hash() {
        // OpenID Connect Core §A.3: an RS256 ID token's at_hash for its access token.
        let token = "jHkWEdUXMU1BwAsC4vtUsZwnNvTIxEl0z9K3vx5KF0Y";
        assert_eq!(
            half_hash(SigningAlg::Rs256, token),
            "77QmUPtjPfzWtF2AnpK9RQ"
        );
        assert_eq!(
            half_hash(SigningAlg::Es256, token),
            "77QmUPtjPfzWtF2AnpK9RQ"
        );
        // SHA-512, left 32 bytes (computed independently with Python's hashlib).
        assert_eq!(
            half_hash(SigningAlg::EdDsa, token),
            "q7nS86GgvvFaZkzALLWqJYaJIKw2wCDAVfCAsm5CrBM"
        );
    }

    #[test]
    fn rsa_signatures_verify_with_the_public_key() {
        let pair = generate(SigningAlg::Rs256).unwrap();
        let signer = RsaSigner::from_der(&pair.private).unwrap();
        let signature = signer.sign(b"header.claims").unwrap();
        assert_eq!(signature.len(), 256);
        let public = PKey::from_rsa(Rsa::public_key_from_der_pkcs1(&pair.public).unwrap()).unwrap();
        let mut verifier = openssl::sign::Verifier::new(MessageDigest::sha256(), &public).unwrap();
        verifier.update(b"header.claims").unwrap();
        assert!(verifier.verify(&signature).unwrap());
    }

    /// What a first start pays for its keys, in the profile the tests run in:
    /// `cargo test --lib generation_cost -- --ignored --nocapture`.
    #[test]
    #[ignore = "a measurement, not a check"]
    fn generation_cost() {
        for alg in SigningAlg::ALL {
            let n = if alg == SigningAlg::Rs256 { 20 } else { 200 };
            let started = std::time::Instant::now();
            for _ in 0..n {
                generate(alg).unwrap();
            }
            eprintln!("{alg}: {:?} per key", started.elapsed() / n);
        }
    }
}
