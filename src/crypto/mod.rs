//! Keys derived from the master key, and the small primitives built on them: sealing secrets at
//! rest, keyed hashes of recovery codes and cursors, random tokens.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64URL;
use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

mod alg;
mod master_key;
pub mod signing_key;

pub use alg::{SigningAlg, UnknownAlg};
pub use master_key::MasterKey;

/// Sub-keys of the master key, one per purpose (HKDF-SHA256), so no key is used for two things.
pub struct Secrets {
    seal: XChaCha20Poly1305,
    recovery_mac: [u8; 32],
    cursor_mac: [u8; 32],
    client_mac: [u8; 32],
    passkey_decoy_mac: [u8; 32],
    sign_in_decoy_mac: [u8; 32],
    api_key_mac: [u8; 32],
    dpop_nonce_mac: [u8; 32],
}

#[derive(Debug, thiserror::Error)]
#[error("a sealed secret could not be opened: wrong master key, or the data was altered")]
pub struct UnsealError;

const NONCE_LEN: usize = 24;

impl Secrets {
    #[expect(clippy::expect_used, reason = "HKDF-SHA256 expands to 32 bytes always")]
    pub fn new(master: &MasterKey) -> Self {
        let hk = hkdf::Hkdf::<Sha256>::new(Some(b"gatehouse"), master.expose());
        let derive = |info: &[u8]| {
            let mut out = [0u8; 32];
            hk.expand(info, &mut out)
                .expect("32 bytes is a valid HKDF-SHA256 length");
            out
        };
        Secrets {
            seal: XChaCha20Poly1305::new(&derive(b"seal/v1").into()),
            recovery_mac: derive(b"recovery-code/v1"),
            cursor_mac: derive(b"cursor/v1"),
            client_mac: derive(b"api-client-secret/v1"),
            passkey_decoy_mac: derive(b"passkey-decoy/v1"),
            sign_in_decoy_mac: derive(b"sign-in-decoy/v1"),
            api_key_mac: derive(b"api-key/v1"),
            dpop_nonce_mac: derive(b"dpop-nonce/v1"),
        }
    }

    /// Encrypts `plaintext`, bound to `context` (e.g. the owning row's id) so a sealed value
    /// copied to another row does not open. Output: nonce ‖ ciphertext ‖ tag.
    #[expect(
        clippy::expect_used,
        reason = "XChaCha20-Poly1305 does not fail on in-memory buffers"
    )]
    pub fn seal(&self, context: &[u8], plaintext: &[u8]) -> Vec<u8> {
        let nonce: [u8; NONCE_LEN] = rand::random();
        let ciphertext = self
            .seal
            .encrypt(
                XNonce::from_slice(&nonce),
                Payload {
                    msg: plaintext,
                    aad: context,
                },
            )
            .expect("XChaCha20-Poly1305 encryption does not fail for in-memory buffers");
        [&nonce[..], &ciphertext].concat()
    }

    pub fn open(&self, context: &[u8], sealed: &[u8]) -> Result<Vec<u8>, UnsealError> {
        if sealed.len() < NONCE_LEN {
            return Err(UnsealError);
        }
        let (nonce, ciphertext) = sealed.split_at(NONCE_LEN);
        self.seal
            .decrypt(
                XNonce::from_slice(nonce),
                Payload {
                    msg: ciphertext,
                    aad: context,
                },
            )
            .map_err(|_| UnsealError)
    }

    /// The DPoP nonce (RFC 9449 §8) of the time window `window`: the window's number and a MAC
    /// of it, so that every instance makes and checks the same nonces without sharing a row.
    pub fn dpop_nonce(&self, window: i64) -> String {
        let mac = hmac(&self.dpop_nonce_mac, &[&window.to_be_bytes()]);
        format!("{window}.{}", b64url(&mac[..16]))
    }

    /// Whether `nonce` is the nonce of `window` (compared in constant time).
    pub fn dpop_nonce_is(&self, nonce: &str, window: i64) -> bool {
        let expected = self.dpop_nonce(window);
        subtle::ConstantTimeEq::ct_eq(expected.as_bytes(), nonce.as_bytes()).into()
    }

    /// Keyed hash of a normalised recovery code.
    pub fn recovery_code_hash(&self, user: &[u8], code: &str) -> [u8; 32] {
        hmac(&self.recovery_mac, &[user, code.as_bytes()])
    }

    /// Keyed hash of an API client's secret, bound to the client's id.
    pub fn client_secret_hash(&self, client: &[u8], secret: &str) -> [u8; 32] {
        hmac(&self.client_mac, &[client, secret.as_bytes()])
    }

    /// Keyed hash of a personal API key (docs/api.md §12), the whole key as presented: all that
    /// is stored of it, and what it is looked up by.
    pub fn api_key_hash(&self, key: &str) -> [u8; 32] {
        hmac(&self.api_key_mac, &[key.as_bytes()])
    }

    /// The stable, made-up credential id offered for an e-mail without passkeys, so that its
    /// sign-in options look like an account's (`auth::passkeys::login`).
    /// A number an unknown address always draws, the same on every instance and never shown: which
    /// hash a sign-in for it is verified against (`auth::password::Decoys`).
    pub fn sign_in_draw(&self, email_normalized: &str) -> u64 {
        let mac = hmac(&self.sign_in_decoy_mac, &[email_normalized.as_bytes()]);
        mac.first_chunk::<8>()
            .map_or(0, |first| u64::from_be_bytes(*first))
    }

    pub fn passkey_decoy(&self, email_normalized: &str) -> [u8; 32] {
        hmac(&self.passkey_decoy_mac, &[email_normalized.as_bytes()])
    }

    /// A list cursor: `key` (the last row's sort key) and a 16-byte keyed tag over it and
    /// `scope` (whose list it is: an owner, a list's name), unpadded base64url. Opaque to clients,
    /// and unforgeable: a cursor the service did not issue for this scope does not open.
    pub fn cursor(&self, scope: &[&[u8]], key: &[u8]) -> String {
        b64url(&[key, &self.cursor_tag(scope, key)[..CURSOR_TAG]].concat())
    }

    /// The key of a cursor issued by `cursor` for `scope`; `Err` names why in words a
    /// `VALIDATION_ERROR` can carry.
    pub fn open_cursor(&self, scope: &[&[u8]], cursor: &str) -> Result<Vec<u8>, String> {
        let invalid = || "is not a cursor this service issued".to_owned();
        let bytes = b64url_decode(cursor)
            .filter(|b| b.len() > CURSOR_TAG)
            .ok_or_else(invalid)?;
        let (key, given) = bytes.split_at(bytes.len() - CURSOR_TAG);
        let tag = self.cursor_tag(scope, key);
        if bool::from(subtle::ConstantTimeEq::ct_eq(&tag[..CURSOR_TAG], given)) {
            Ok(key.to_vec())
        } else {
            Err(invalid())
        }
    }

    fn cursor_tag(&self, scope: &[&[u8]], key: &[u8]) -> [u8; 32] {
        let parts: Vec<&[u8]> = scope.iter().copied().chain([key]).collect();
        hmac(&self.cursor_mac, &parts)
    }
}

/// Bytes of a cursor's tag: 2^-128 to forge one blind.
const CURSOR_TAG: usize = 16;

#[expect(clippy::expect_used, reason = "HMAC takes keys of any length")]
fn hmac(key: &[u8; 32], parts: &[&[u8]]) -> [u8; 32] {
    let mut mac =
        <Hmac<Sha256> as Mac>::new_from_slice(key).expect("HMAC takes keys of any length");
    for part in parts {
        // length-prefixed, so ("ab", "c") and ("a", "bc") differ
        mac.update(&(part.len() as u64).to_be_bytes());
        mac.update(part);
    }
    mac.finalize().into_bytes().into()
}

impl Secrets {
    /// A bearer value for `scope`: 256 random bits and a 128-bit tag only this service (its master
    /// key) can make, base64url (64 characters). Anyone may present one; `checks_token` tells a
    /// made-up value from one of ours without a lookup, so a flood of made-up values costs no
    /// database work.
    pub fn tagged_token(&self, scope: &[u8]) -> String {
        self.cursor(&[scope], &rand::random::<[u8; 32]>())
    }

    /// Whether `value` is a `tagged_token` of `scope` (compared in constant time).
    pub fn checks_token(&self, scope: &[u8], value: &str) -> bool {
        self.open_cursor(&[scope], value)
            .is_ok_and(|random| random.len() == 32)
    }
}

/// A 256-bit random token, base64url without padding.
pub fn random_token() -> String {
    B64URL.encode(rand::random::<[u8; 32]>())
}

pub fn sha256(data: &[u8]) -> [u8; 32] {
    Sha256::digest(data).into()
}

pub fn b64url(data: &[u8]) -> String {
    B64URL.encode(data)
}

pub fn b64url_decode(text: &str) -> Option<Vec<u8>> {
    B64URL.decode(text).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tagged_tokens_check_only_for_their_scope_and_key() {
        let secrets = Secrets::new(&MasterKey::generate());
        let token = secrets.tagged_token(b"cookie");
        assert_eq!(token.len(), 64);
        assert!(secrets.checks_token(b"cookie", &token));
        assert_ne!(secrets.tagged_token(b"cookie"), token, "random each time");
        assert!(!secrets.checks_token(b"cursor", &token), "another scope");
        let other = Secrets::new(&MasterKey::generate());
        assert!(!other.checks_token(b"cookie", &token), "another master key");
        let mut forged = token.clone().into_bytes();
        forged[3] = if forged[3] == b'A' { b'B' } else { b'A' };
        let forged = String::from_utf8(forged).unwrap();
        for made_up in [forged.as_str(), &random_token(), "", "x", &"A".repeat(64)] {
            assert!(!secrets.checks_token(b"cookie", made_up), "{made_up}");
        }
    }

    #[test]
    fn sealed_secrets_open_only_with_the_same_key_and_context() {
        let key = MasterKey::generate();
        let secrets = Secrets::new(&key);
        let sealed = secrets.seal(b"user-1", b"JBSWY3DPEHPK3PXP");
        assert_eq!(
            secrets.open(b"user-1", &sealed).unwrap(),
            b"JBSWY3DPEHPK3PXP"
        );
        assert!(secrets.open(b"user-2", &sealed).is_err());
        assert!(
            Secrets::new(&MasterKey::generate())
                .open(b"user-1", &sealed)
                .is_err()
        );
        assert!(secrets.open(b"user-1", &sealed[..10]).is_err());
    }

    #[test]
    fn keyed_hashes_depend_on_key_and_parts() {
        let a = Secrets::new(&MasterKey::generate());
        let b = Secrets::new(&MasterKey::generate());
        assert_ne!(
            a.recovery_code_hash(b"u", "abc"),
            b.recovery_code_hash(b"u", "abc")
        );
        assert_ne!(a.cursor_tag(&[b"ab"], b"c"), a.cursor_tag(&[b"a"], b"bc"));
    }

    #[test]
    fn a_cursor_opens_only_in_its_scope_and_whole() {
        let a = Secrets::new(&MasterKey::generate());
        let cursor = a.cursor(&[b"owner-1"], b"last-key");
        assert_eq!(a.open_cursor(&[b"owner-1"], &cursor).unwrap(), b"last-key");
        assert!(a.open_cursor(&[b"owner-2"], &cursor).is_err());
        let other = Secrets::new(&MasterKey::generate());
        assert!(other.open_cursor(&[b"owner-1"], &cursor).is_err());
        let mut bytes = b64url_decode(&cursor).unwrap();
        bytes[0] ^= 1;
        assert!(a.open_cursor(&[b"owner-1"], &b64url(&bytes)).is_err());
        for garbage in ["", "!!", "AAAA"] {
            assert!(a.open_cursor(&[b"owner-1"], garbage).is_err());
        }
    }
}
