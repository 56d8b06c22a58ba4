//! Password hashes made by other systems (`gatehouse import`, docs/api.md §15): kept as they were
//! imported and verified in their own algorithm, until the first sign-in replaces them with
//! Argon2id (`Verdict::Match { needs_rehash: true }`).
//!
//! | stored form | made by |
//! |---|---|
//! | `$2a$…`, `$2b$…`, `$2y$…` | bcrypt: Auth0, Supabase, PHP, Authelia, Django's `bcrypt$` |
//! | `bcrypt_sha256$$2b$…` | Django: bcrypt of the hex SHA-256 of the password |
//! | `pbkdf2_sha256$I$SALT$HASH`, `pbkdf2_sha1$…` | Django |
//! | `$pbkdf2-sha256$i=I,l=L$SALT$HASH` (PHC), `-sha512`, `$pbkdf2$` | RustCrypto; Keycloak's, converted on import |
//! | `$pbkdf2-sha256$I$SALT$HASH`, `-sha512`, `$pbkdf2$` | passlib, Authelia |
//! | `$5$…`, `$6$…` | SHA-crypt: glibc, passlib, Authelia |
//! | `$scrypt$ln=N,r=R,p=P$SALT$HASH` | passlib, Authelia |
//! | `scrypt$N$SALT$R$P$HASH` | Django |
//! | `$firebase-scrypt$n=N,r=R,ks=SEALED,s=SEP$SALT$HASH` | Firebase's modified scrypt, converted on import (the project's key sealed) |
//!
//! Argon2 PHC strings (Authelia, Keycloak's and Django's, converted on import) take the Argon2 path
//! of `super`. PBKDF2, scrypt and Firebase's AES step run on OpenSSL (already linked; faster than
//! the pure-Rust crates in a debug build, and as fast in a release one).

use openssl::hash::MessageDigest;
use sha2::{Digest as _, Sha256};
use subtle::ConstantTimeEq as _;

use crate::crypto::Secrets;

mod forms;

use forms::{
    bcrypt_mcf, django_pbkdf2, django_scrypt, firebase, modular_pbkdf2, passlib_scrypt, sha_crypt,
};
pub use forms::{firebase_form, pbkdf2_form, seal_signer_key};

/// Costs past which an imported hash is refused rather than verified: a hash that takes seconds or
/// gigabytes would hold a hashing thread at each attempt (no real system's default comes near).
const MAX_PBKDF2_ITERATIONS: u32 = 10_000_000;
const MAX_SCRYPT_MEMORY: u64 = 1 << 30;
const MAX_SHA_CRYPT_ROUNDS: u32 = 10_000_000;
/// bcrypt's cost is a power of two: 16 is about 5 s a verification (10–12 are usual).
const MAX_BCRYPT_COST: u32 = 16;

/// A parsed foreign hash, ready to verify.
#[derive(Debug)]
pub enum Foreign<'a> {
    /// A modular-crypt bcrypt string; `prehash`: Django's `bcrypt_sha256`.
    Bcrypt {
        mcf: &'a str,
        prehash: bool,
    },
    Pbkdf2 {
        digest: Digest,
        iterations: u32,
        salt: Vec<u8>,
        hash: Vec<u8>,
        label: &'static str,
    },
    ShaCrypt {
        mcf: &'a str,
        sha512: bool,
    },
    Scrypt {
        log_n: u8,
        r: u32,
        p: u32,
        salt: Vec<u8>,
        hash: Vec<u8>,
        label: &'static str,
    },
    /// Firebase: scrypt of the password over salt ‖ separator (p = 1, 32 bytes) is the AES-256-CTR
    /// key (zero counter) that encrypts the project's signer key; the result is the hash.
    Firebase {
        log_n: u8,
        r: u32,
        signer_key: SignerKey,
        /// The person's salt with the project's separator appended.
        salt: Vec<u8>,
        hash: Vec<u8>,
    },
}

/// Firebase's signer key: a secret of the project's, the pepper of every hash. An import seals it
/// under the master key (`ks=`), so that a copy of the database alone cannot test passwords
/// against these hashes; `k=` (in the clear) is read too, as a hash given whole in a CSV has it.
#[derive(Debug)]
pub enum SignerKey {
    Plain(Vec<u8>),
    Sealed(Vec<u8>),
}

/// The sealing context of Firebase signer keys.
const SIGNER_KEY_CONTEXT: &[u8] = b"firebase-signer-key/v1";

#[derive(Debug, Clone, Copy)]
pub enum Digest {
    Sha1,
    Sha256,
    Sha512,
}

impl Digest {
    fn openssl(self) -> MessageDigest {
        match self {
            Digest::Sha1 => MessageDigest::sha1(),
            Digest::Sha256 => MessageDigest::sha256(),
            Digest::Sha512 => MessageDigest::sha512(),
        }
    }
}

impl<'a> Foreign<'a> {
    /// The form of `stored`, or `None` when it is none of the table's (or its costs are past the
    /// bounds).
    pub fn parse(stored: &'a str) -> Option<Self> {
        let parsed = if let Some(mcf) = stored.strip_prefix("bcrypt_sha256$") {
            bcrypt_mcf(mcf).then_some(Foreign::Bcrypt { mcf, prehash: true })
        } else if let Some(mcf) = stored.strip_prefix("bcrypt$") {
            bcrypt_mcf(mcf).then_some(Foreign::Bcrypt {
                mcf,
                prehash: false,
            })
        } else if bcrypt_mcf(stored) {
            Some(Foreign::Bcrypt {
                mcf: stored,
                prehash: false,
            })
        } else if stored.starts_with("$5$") || stored.starts_with("$6$") {
            sha_crypt(stored)
        } else if let Some(rest) = stored.strip_prefix("pbkdf2_sha256$") {
            django_pbkdf2(rest, Digest::Sha256, "pbkdf2_sha256 (Django)")
        } else if let Some(rest) = stored.strip_prefix("pbkdf2_sha1$") {
            django_pbkdf2(rest, Digest::Sha1, "pbkdf2_sha1 (Django)")
        } else if let Some(rest) = stored.strip_prefix("$pbkdf2-sha256$") {
            modular_pbkdf2(rest, Digest::Sha256, "pbkdf2-sha256")
        } else if let Some(rest) = stored.strip_prefix("$pbkdf2-sha512$") {
            modular_pbkdf2(rest, Digest::Sha512, "pbkdf2-sha512")
        } else if let Some(rest) = stored.strip_prefix("$pbkdf2$") {
            modular_pbkdf2(rest, Digest::Sha1, "pbkdf2-sha1")
        } else if let Some(rest) = stored.strip_prefix("$scrypt$") {
            passlib_scrypt(rest)
        } else if let Some(rest) = stored.strip_prefix("scrypt$") {
            django_scrypt(rest)
        } else if let Some(rest) = stored.strip_prefix("$firebase-scrypt$") {
            firebase(rest)
        } else {
            None
        };
        parsed.filter(Foreign::within_bounds)
    }

    /// What the import's summary and dry run call it.
    pub fn label(&self) -> &'static str {
        match self {
            Foreign::Bcrypt { prehash: true, .. } => "bcrypt_sha256 (Django)",
            Foreign::Bcrypt { .. } => "bcrypt",
            Foreign::Pbkdf2 { label, .. } | Foreign::Scrypt { label, .. } => label,
            Foreign::ShaCrypt { sha512: true, .. } => "sha512-crypt",
            Foreign::ShaCrypt { .. } => "sha256-crypt",
            Foreign::Firebase { .. } => "scrypt (Firebase)",
        }
    }

    fn within_bounds(&self) -> bool {
        match self {
            Foreign::Pbkdf2 { iterations, .. } => (1..=MAX_PBKDF2_ITERATIONS).contains(iterations),
            Foreign::Scrypt { log_n, r, p, .. } => scrypt_memory(*log_n, *r, *p).is_some(),
            Foreign::Firebase { log_n, r, .. } => scrypt_memory(*log_n, *r, 1).is_some(),
            Foreign::ShaCrypt { mcf, .. } => {
                let rounds = mcf
                    .split('$')
                    .nth(2)
                    .and_then(|field| field.strip_prefix("rounds="))
                    .map_or(Some(5000), |n| n.parse::<u32>().ok());
                rounds.is_some_and(|n| n <= MAX_SHA_CRYPT_ROUNDS)
            }
            Foreign::Bcrypt { .. } => true,
        }
    }

    /// Whether `password` is the one this hash was made of; the final comparison in constant time.
    /// `secrets` open a sealed Firebase signer key (without them, such a hash matches nothing).
    pub fn verify(&self, password: &str, secrets: Option<&Secrets>) -> bool {
        match self {
            Foreign::Bcrypt { mcf, prehash } => {
                let result = if *prehash {
                    let hex = hex_lower(&Sha256::digest(password.as_bytes()));
                    bcrypt::verify(hex, mcf)
                } else {
                    bcrypt::verify(password, mcf)
                };
                result.unwrap_or(false)
            }
            Foreign::ShaCrypt { mcf, sha512: true } => {
                sha_crypt::sha512_check(password, mcf).is_ok()
            }
            Foreign::ShaCrypt { mcf, .. } => sha_crypt::sha256_check(password, mcf).is_ok(),
            Foreign::Pbkdf2 {
                digest,
                iterations,
                salt,
                hash,
                ..
            } => {
                let mut out = vec![0u8; hash.len()];
                let usize_iterations = usize::try_from(*iterations).unwrap_or(usize::MAX);
                openssl::pkcs5::pbkdf2_hmac(
                    password.as_bytes(),
                    salt,
                    usize_iterations,
                    digest.openssl(),
                    &mut out,
                )
                .is_ok()
                    && bool::from(out.ct_eq(hash))
            }
            Foreign::Scrypt {
                log_n,
                r,
                p,
                salt,
                hash,
                ..
            } => scrypt(password.as_bytes(), salt, *log_n, *r, *p, hash.len())
                .is_some_and(|out| bool::from(out.ct_eq(hash))),
            Foreign::Firebase {
                log_n,
                r,
                signer_key,
                salt,
                hash,
            } => {
                let signer_key = match signer_key {
                    SignerKey::Plain(key) => key.clone(),
                    SignerKey::Sealed(sealed) => {
                        match secrets.map(|s| s.open(SIGNER_KEY_CONTEXT, sealed)) {
                            Some(Ok(key)) => key,
                            _ => return false,
                        }
                    }
                };
                let Some(key) = scrypt(password.as_bytes(), salt, *log_n, *r, 1, 32) else {
                    return false;
                };
                let cipher = openssl::symm::Cipher::aes_256_ctr();
                openssl::symm::encrypt(cipher, &key, Some(&[0u8; 16]), &signer_key)
                    .is_ok_and(|out| bool::from(out.ct_eq(hash)))
            }
        }
    }
}

/// scrypt's work memory (128·r·N, plus 128·r·p), when within the bound.
fn scrypt_memory(log_n: u8, r: u32, p: u32) -> Option<u64> {
    if !(1..=40).contains(&log_n) || r == 0 || p == 0 {
        return None;
    }
    let n = 1u64 << log_n;
    let bytes = 128u64
        .checked_mul(u64::from(r))?
        .checked_mul(n.checked_add(u64::from(p))?)?;
    (bytes <= MAX_SCRYPT_MEMORY).then_some(bytes)
}

fn scrypt(password: &[u8], salt: &[u8], log_n: u8, r: u32, p: u32, len: usize) -> Option<Vec<u8>> {
    let memory = scrypt_memory(log_n, r, p)?;
    let mut out = vec![0u8; len];
    openssl::pkcs5::scrypt(
        password,
        salt,
        1u64 << log_n,
        u64::from(r),
        u64::from(p),
        // OpenSSL's own bound, with room for its bookkeeping.
        memory + (1 << 20),
        &mut out,
    )
    .ok()?;
    Some(out)
}

fn hex_lower(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

#[cfg(test)]
mod tests {
    use base64::Engine as _;
    use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD};

    use super::*;

    /// Firebase's own test vector (the README of github.com/firebase/scrypt).
    #[test]
    fn firebase_s_reference_vector_verifies() {
        let decode = |s: &str| STANDARD.decode(s).unwrap();
        let stored = firebase_form(
            14,
            8,
            &decode(
                "jxspr8Ki0RYycVU8zykbdLGjFQ3McFUH0uiiTvC8pVMXAn210wjLNmdZJzxUECKbm0QsEmYUSDzZvpjeJ9WmXA==",
            ),
            &decode("Bw=="),
            &decode("42xEC+ixf3L2lw=="),
            &decode(
                "lSrfV15cpx95/sZS2W9c9Kp6i/LVgQNDNC/qzrCnh1SAyZvqmZqAjTdn3aoItz+VHjoZilo78198JAdRuid5lQ==",
            ),
        );
        let parsed = Foreign::parse(&stored).unwrap();
        assert!(parsed.verify("user1password", None));
        assert!(!parsed.verify("user1password ", None));
        // As an import keeps it: the signer key sealed, opened only with the same master key.
        let secrets = Secrets::new(&crate::crypto::MasterKey::generate());
        let sealed = seal_signer_key(&stored, &secrets);
        assert!(
            sealed.contains(",ks=") && !sealed.contains(",k="),
            "{sealed}"
        );
        let parsed = Foreign::parse(&sealed).unwrap();
        assert!(parsed.verify("user1password", Some(&secrets)));
        assert!(!parsed.verify("user1password", None));
        let other = Secrets::new(&crate::crypto::MasterKey::generate());
        assert!(!parsed.verify("user1password", Some(&other)));
    }

    #[test]
    fn costs_past_the_bounds_and_malformed_forms_are_not_recognised() {
        let salt = STANDARD_NO_PAD.encode(b"salt");
        let hash = STANDARD_NO_PAD.encode([7u8; 32]);
        let pbkdf2 = |i: u32| format!("$pbkdf2-sha256$i={i},l=32${salt}${hash}");
        assert!(Foreign::parse(&pbkdf2(600_000)).is_some());
        assert!(Foreign::parse(&pbkdf2(MAX_PBKDF2_ITERATIONS + 1)).is_none());
        assert!(Foreign::parse(&format!("$pbkdf2-sha256$i=1000,l=31${salt}${hash}")).is_none());
        // 2^20 · 8 · 128 bytes = 1 GiB, past the bound with p's share.
        assert!(Foreign::parse(&format!("$scrypt$ln=20,r=8,p=1${salt}${hash}")).is_none());
        assert!(Foreign::parse(&format!("$scrypt$ln=16,r=8,p=1${salt}${hash}")).is_some());
        assert!(Foreign::parse("$6$rounds=999999999$salt$hash").is_none());
        for junk in [
            "",
            "$2b$",
            "$2b$99$x",
            "{SSHA}abc",
            "plain text",
            "md5$salt$abc",
        ] {
            assert!(Foreign::parse(junk).is_none(), "{junk}");
        }
    }

    #[test]
    fn django_s_bcrypt_sha256_hashes_the_hex_digest() {
        // bcrypt of hex(sha256("correct horse")), made here, then wrapped as Django wraps it.
        let hex = hex_lower(&Sha256::digest(b"correct horse"));
        let inner = bcrypt::hash(hex, 4).unwrap();
        let stored = format!("bcrypt_sha256${inner}");
        let parsed = Foreign::parse(&stored).unwrap();
        assert!(parsed.verify("correct horse", None));
        assert!(!parsed.verify("correct horsE", None));
        assert!(
            !Foreign::parse(&inner)
                .unwrap()
                .verify("correct horse", None)
        );
    }
}
