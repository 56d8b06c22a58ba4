//! A software authenticator for the passkey tests: what a browser and a platform authenticator
//! together hand to the page, as `PublicKeyCredential.toJSON()` shapes it.
//!
//! Hand-written rather than webauthn-authenticator-rs's `SoftPasskey` (which one test uses, to
//! show the service works with an authenticator this project did not write): that one refuses
//! resident (discoverable) credentials, sends no user handle, and cannot set its counter back,
//! and the tests need all three. It is built on the crates webauthn-rs itself uses: openssl for the P-256
//! keys and ECDSA signatures, serde_cbor_2 for the CBOR of the attestation object and the key.

use std::collections::BTreeMap;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64URL;
use openssl::bn::BigNumContext;
use openssl::ec::{EcGroup, EcKey, PointConversionForm};
use openssl::hash::MessageDigest;
use openssl::nid::Nid;
use openssl::pkey::{PKey, Private};
use openssl::sign::Signer;
use serde_cbor_2::Value as Cbor;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// Flags of the authenticator data (WebAuthn §6.1).
const UP: u8 = 0x01;
const UV: u8 = 0x04;
const BE: u8 = 0x08;
const BS: u8 = 0x10;
const AT: u8 = 0x40;

pub struct Credential {
    pub id: Vec<u8>,
    pub rp_id: String,
    pub user_handle: Vec<u8>,
    /// The signature counter; the next assertion sends it plus one.
    pub counter: u32,
    key: PKey<Private>,
}

pub struct Authenticator {
    /// The origin the "browser" puts in the client data.
    pub origin: String,
    /// Whether the user is verified (PIN, biometrics).
    pub user_verified: bool,
    /// Backup eligibility and state (a synced passkey: both).
    pub backup_eligible: bool,
    pub backup_state: bool,
    /// Whether the "browser" says the ceremony runs in a frame of another origin.
    pub cross_origin: bool,
    pub credentials: Vec<Credential>,
}

pub fn b64(bytes: &[u8]) -> String {
    B64URL.encode(bytes)
}

pub fn unb64(text: &str) -> Vec<u8> {
    B64URL.decode(text).expect("base64url")
}

impl Authenticator {
    pub fn new(origin: &str) -> Authenticator {
        Authenticator {
            origin: origin.to_owned(),
            user_verified: true,
            backup_eligible: false,
            backup_state: false,
            cross_origin: false,
            credentials: Vec::new(),
        }
    }

    fn flags(&self) -> u8 {
        let mut flags = UP;
        if self.user_verified {
            flags |= UV;
        }
        if self.backup_eligible {
            flags |= BE;
        }
        if self.backup_state {
            flags |= BS;
        }
        flags
    }

    fn client_data(&self, kind: &str, challenge: &str) -> Vec<u8> {
        serde_json::to_vec(&json!({
            "type": kind, "challenge": challenge, "origin": self.origin,
            "crossOrigin": self.cross_origin
        }))
        .unwrap()
    }

    /// `navigator.credentials.create({publicKey: options})`: a new credential, kept here.
    pub fn create(&mut self, options: &Value) -> Value {
        let rp_id = options["rp"]["id"].as_str().expect("rp.id").to_owned();
        let user_handle = unb64(options["user"]["id"].as_str().expect("user.id"));
        let challenge = options["challenge"].as_str().expect("challenge");
        let group = EcGroup::from_curve_name(Nid::X9_62_PRIME256V1).unwrap();
        let ec = EcKey::generate(&group).unwrap();
        let mut ctx = BigNumContext::new().unwrap();
        let point = ec
            .public_key()
            .to_bytes(&group, PointConversionForm::UNCOMPRESSED, &mut ctx)
            .unwrap();
        let (x, y) = point[1..].split_at(32);
        let cose = Cbor::Map(BTreeMap::from([
            (Cbor::Integer(1), Cbor::Integer(2)),  // kty: EC2
            (Cbor::Integer(3), Cbor::Integer(-7)), // alg: ES256
            (Cbor::Integer(-1), Cbor::Integer(1)), // crv: P-256
            (Cbor::Integer(-2), Cbor::Bytes(x.to_vec())),
            (Cbor::Integer(-3), Cbor::Bytes(y.to_vec())),
        ]));
        let mut id = vec![0u8; 32];
        openssl::rand::rand_bytes(&mut id).unwrap();
        let mut auth_data = Sha256::digest(rp_id.as_bytes()).to_vec();
        auth_data.push(self.flags() | AT);
        auth_data.extend(0u32.to_be_bytes());
        auth_data.extend([0u8; 16]); // AAGUID: none
        auth_data.extend((id.len() as u16).to_be_bytes());
        auth_data.extend(&id);
        auth_data.extend(serde_cbor_2::to_vec(&cose).unwrap());
        let attestation = Cbor::Map(BTreeMap::from([
            (Cbor::Text("fmt".into()), Cbor::Text("none".into())),
            (Cbor::Text("attStmt".into()), Cbor::Map(BTreeMap::new())),
            (Cbor::Text("authData".into()), Cbor::Bytes(auth_data)),
        ]));
        let client_data = self.client_data("webauthn.create", challenge);
        self.credentials.push(Credential {
            id: id.clone(),
            rp_id,
            user_handle,
            counter: 0,
            key: PKey::from_ec_key(ec).unwrap(),
        });
        json!({
            "id": b64(&id),
            "rawId": b64(&id),
            "type": "public-key",
            "authenticatorAttachment": "platform",
            "clientExtensionResults": {},
            "response": {
                "clientDataJSON": b64(&client_data),
                "attestationObject": b64(&serde_cbor_2::to_vec(&attestation).unwrap()),
                "transports": ["internal"],
            },
        })
    }

    /// `navigator.credentials.get({publicKey: options})` with the first credential that
    /// `allowCredentials` lists, or, when it lists none, the first this authenticator holds for
    /// the relying party (a discoverable sign-in).
    pub fn get(&mut self, options: &Value) -> Value {
        let allowed: Vec<Vec<u8>> = options["allowCredentials"]
            .as_array()
            .map(|list| {
                list.iter()
                    .map(|c| unb64(c["id"].as_str().unwrap()))
                    .collect()
            })
            .unwrap_or_default();
        let rp_id = options["rpId"].as_str().expect("rpId");
        let index = self
            .credentials
            .iter()
            .position(|c| c.rp_id == rp_id && (allowed.is_empty() || allowed.contains(&c.id)))
            .expect("a credential for these options");
        self.get_with(options, index)
    }

    /// `get` with the credential at `index`, whatever the options allow.
    pub fn get_with(&mut self, options: &Value, index: usize) -> Value {
        let challenge = options["challenge"].as_str().expect("challenge").to_owned();
        let rp_id = options["rpId"].as_str().expect("rpId").to_owned();
        let flags = self.flags();
        let client_data = self.client_data("webauthn.get", &challenge);
        let credential = &mut self.credentials[index];
        credential.counter += 1;
        let mut auth_data = Sha256::digest(rp_id.as_bytes()).to_vec();
        auth_data.push(flags);
        auth_data.extend(credential.counter.to_be_bytes());
        let mut signer = Signer::new(MessageDigest::sha256(), &credential.key).unwrap();
        signer.update(&auth_data).unwrap();
        signer.update(&Sha256::digest(&client_data)).unwrap();
        let signature = signer.sign_to_vec().unwrap();
        json!({
            "id": b64(&credential.id),
            "rawId": b64(&credential.id),
            "type": "public-key",
            "authenticatorAttachment": "platform",
            "clientExtensionResults": {},
            "response": {
                "clientDataJSON": b64(&client_data),
                "authenticatorData": b64(&auth_data),
                "signature": b64(&signature),
                "userHandle": b64(&credential.user_handle),
            },
        })
    }
}
