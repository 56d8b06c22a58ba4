//! TLS and SMTP AUTH for the mail tests: a throwaway CA, a certificate of it for `127.0.0.1` and
//! `localhost`, and the test server (`smtp_server.rs`) set to require TLS (STARTTLS, or TLS from
//! the first byte) and one login before it takes any mail — as an operator's internal relay would.

use std::sync::{Arc, Mutex};

use openssl::asn1::Asn1Time;
use openssl::bn::BigNum;
use openssl::ec::{EcGroup, EcKey};
use openssl::hash::MessageDigest;
use openssl::nid::Nid;
use openssl::pkey::{PKey, Private};
use openssl::x509::extension::{
    BasicConstraints, ExtendedKeyUsage, KeyUsage, SubjectAlternativeName,
};
use openssl::x509::{X509, X509NameBuilder};
use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};

/// The one login the server accepts. The password has characters a URL must escape.
pub const SMTP_USER: &str = "gatehouse";
pub const SMTP_PASSWORD: &str = "relay p@ss/word:1";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tls {
    /// `smtp+starttls://`: plain text until STARTTLS, which the server requires.
    StartTls,
    /// `smtps://`: TLS from the first byte.
    Implicit,
}

/// What makes an `SmtpServer` a secure one: its certificate, its CA, its log of logins.
pub struct Secure {
    pub tls: Tls,
    files: tempfile::TempDir,
    acceptor: tokio_native_tls::TlsAcceptor,
    logins: Arc<Mutex<Vec<String>>>,
}

impl Secure {
    pub fn new(tls: Tls) -> Secure {
        let files = tempfile::tempdir().unwrap();
        let (ca_key, ca) = certificate("Gatehouse test CA", None);
        let (key, cert) = certificate("localhost", Some((&ca_key, &ca)));
        std::fs::write(files.path().join("ca.pem"), ca.to_pem().unwrap()).unwrap();
        let identity = tokio_native_tls::native_tls::Identity::from_pkcs8(
            &cert.to_pem().unwrap(),
            &key.private_key_to_pem_pkcs8().unwrap(),
        )
        .unwrap();
        let acceptor = tokio_native_tls::native_tls::TlsAcceptor::new(identity).unwrap();
        Secure {
            tls,
            files,
            acceptor: acceptor.into(),
            logins: Arc::default(),
        }
    }

    /// The PEM file of the CA, for `GATEHOUSE_SMTP_CA_FILE`.
    pub fn ca_file(&self) -> String {
        self.files.path().join("ca.pem").display().to_string()
    }

    /// The URL Gatehouse is given, logging in with `password`.
    pub fn url(&self, port: u16, password: &str) -> String {
        let scheme = match self.tls {
            Tls::StartTls => "smtp+starttls",
            Tls::Implicit => "smtps",
        };
        let password = utf8_percent_encode(password, NON_ALPHANUMERIC);
        format!("{scheme}://{SMTP_USER}:{password}@127.0.0.1:{port}")
    }

    /// What the server needs to require TLS and the login of `SMTP_USER`.
    pub fn security(&self) -> crate::smtp_server::Security {
        crate::smtp_server::Security {
            tls: self.tls,
            acceptor: self.acceptor.clone(),
            user: SMTP_USER,
            password: SMTP_PASSWORD,
            logins: self.logins.clone(),
        }
    }

    /// Every AUTH the server saw, oldest first: `<login> ok` or `<login> refused`.
    pub fn logins(&self) -> Vec<String> {
        self.logins.lock().unwrap().clone()
    }
}

/// A P-256 key and its certificate: a CA's (self-signed) without `issuer`, else a server's for
/// `127.0.0.1` and `localhost` signed by `issuer`. Valid from a day ago to a day ahead.
fn certificate(name: &str, issuer: Option<(&PKey<Private>, &X509)>) -> (PKey<Private>, X509) {
    let group = EcGroup::from_curve_name(Nid::X9_62_PRIME256V1).unwrap();
    let key = PKey::from_ec_key(EcKey::generate(&group).unwrap()).unwrap();
    let mut subject = X509NameBuilder::new().unwrap();
    subject.append_entry_by_text("CN", name).unwrap();
    let subject = subject.build();
    let mut cert = X509::builder().unwrap();
    cert.set_version(2).unwrap();
    let serial = BigNum::from_u32(rand_serial()).unwrap().to_asn1_integer();
    cert.set_serial_number(&serial.unwrap()).unwrap();
    cert.set_subject_name(&subject).unwrap();
    cert.set_pubkey(&key).unwrap();
    let yesterday = Asn1Time::from_unix(now() - 86400).unwrap();
    cert.set_not_before(&yesterday).unwrap();
    cert.set_not_after(&Asn1Time::days_from_now(1).unwrap())
        .unwrap();
    match issuer {
        None => {
            cert.set_issuer_name(&subject).unwrap();
            let ca = BasicConstraints::new().critical().ca().build().unwrap();
            cert.append_extension(ca).unwrap();
            let usage = KeyUsage::new()
                .critical()
                .key_cert_sign()
                .crl_sign()
                .build()
                .unwrap();
            cert.append_extension(usage).unwrap();
            cert.sign(&key, MessageDigest::sha256()).unwrap();
        }
        Some((ca_key, ca)) => {
            cert.set_issuer_name(ca.subject_name()).unwrap();
            let names = SubjectAlternativeName::new()
                .ip("127.0.0.1")
                .dns("localhost")
                .build(&cert.x509v3_context(Some(ca), None))
                .unwrap();
            cert.append_extension(names).unwrap();
            let server = ExtendedKeyUsage::new().server_auth().build().unwrap();
            cert.append_extension(server).unwrap();
            cert.sign(ca_key, MessageDigest::sha256()).unwrap();
        }
    }
    (key, cert.build())
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// Certificates of one issuer need distinct serial numbers.
fn rand_serial() -> u32 {
    let mut bytes = [0u8; 4];
    openssl::rand::rand_bytes(&mut bytes).unwrap();
    u32::from_be_bytes(bytes) >> 1
}
