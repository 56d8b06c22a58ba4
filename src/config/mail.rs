//! The mail settings (docs/api.md §7): where mail goes, what it says, how long its links live,
//! and the public URL those links point to.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::SettingsArgs;
use super::source::Source;
use super::values::{Setting, SettingsError, parse_choice, parse_duration};

/// Where mail goes.
#[derive(Clone, PartialEq, Eq)]
pub enum MailDelivery {
    /// An SMTP server, by a URL that `lettre` reads (the contract's `smtp+starttls://` is
    /// translated to lettre's `smtp://…?tls=required`). Never shown: it may hold a password.
    Smtp(String),
    /// `.eml` files in a folder (the default, for development and tests).
    Files(PathBuf),
}

/// The SMTP URL's password is masked.
impl std::fmt::Debug for MailDelivery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MailDelivery::Smtp(url) => f
                .debug_tuple("Smtp")
                .field(&super::values::redact_url(url))
                .finish(),
            MailDelivery::Files(dir) => f.debug_tuple("Files").field(dir).finish(),
        }
    }
}

#[derive(Clone, Debug)]
pub struct MailSettings {
    pub delivery: MailDelivery,
    /// The From mailbox, as given (checked when the service starts).
    pub from: String,
    pub templates: Option<PathBuf>,
    pub product_name: String,
    pub retry_max: Duration,
    pub smtp_timeout: Duration,
    pub reset_token_ttl: Duration,
    pub verify_token_ttl: Duration,
    pub invite_token_ttl: Duration,
    pub require_verified_email: bool,
    /// Certificates (DER) trusted for the SMTP server's beside the system's roots: an internal
    /// CA's, from `smtp_ca_file`. Empty unless the URL asks for TLS.
    pub smtp_ca: Vec<Vec<u8>>,
}

/// The public URL and the mail settings.
pub(super) fn resolve(
    src: &Source,
    args: &SettingsArgs,
    sqlite: Option<&Path>,
) -> Result<MailSettings, SettingsError> {
    let pick = |key: &'static str, given: &Option<String>| src.pick(key, given);
    let get =
        |key: &'static str, given: &Option<String>, default: &str| src.get(key, given, default);
    let delivery = match pick("smtp_url", &args.smtp_url).filter(|v| !v.is_empty()) {
        Some(url) => MailDelivery::Smtp(smtp_url(&Setting { key: "smtp_url" }, &url)?),
        None => MailDelivery::Files(match pick("mail_dir", &args.mail_dir) {
            Some(dir) if !dir.is_empty() => PathBuf::from(dir),
            // Beside a SQLite database, like its key file; with PostgreSQL there is no such
            // place, so the working folder (named in the start-up log).
            _ => sqlite
                .and_then(Path::parent)
                .unwrap_or(Path::new(""))
                .join("mail"),
        }),
    };
    let smtp_ca = match pick("smtp_ca_file", &args.smtp_ca_file).filter(|v| !v.is_empty()) {
        None => Vec::new(),
        Some(path) => {
            let s = Setting {
                key: "smtp_ca_file",
            };
            // A trusted CA with a plain-text URL would look like protection and be none.
            let encrypted = matches!(&delivery, MailDelivery::Smtp(url)
                if url.starts_with("smtps://") || url.ends_with("?tls=required"));
            if !encrypted {
                return Err(s.invalid(
                    &path,
                    "needs GATEHOUSE_SMTP_URL with smtp+starttls:// or smtps://",
                ));
            }
            ca_certificates(&s, Path::new(&path))?
        }
    };
    let (s, from) = get(
        "mail_from",
        &args.mail_from,
        "Gatehouse <gatehouse@localhost>",
    );
    if from.trim().is_empty() || from.contains(['\r', '\n']) {
        return Err(s.invalid(
            &from,
            "must be one mailbox, e.g. Gatehouse <no-reply@example.com>",
        ));
    }
    let templates = pick("mail_templates", &args.mail_templates)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from);
    let (s, product_name) = get("product_name", &args.product_name, "Gatehouse");
    if product_name.trim().is_empty() || product_name.chars().any(char::is_control) {
        return Err(s.invalid(&product_name, "must be a name without control characters"));
    }
    let (s, v) = get("mail_retry_max", &args.mail_retry_max, "30s");
    let retry_max = parse_duration(&s, &v)?;
    let (s, v) = get("smtp_timeout", &args.smtp_timeout, "10s");
    let smtp_timeout = parse_duration(&s, &v)?;
    let (s, v) = get("reset_token_ttl", &args.reset_token_ttl, "1h");
    let reset_token_ttl = parse_duration(&s, &v)?;
    let (s, v) = get("verify_token_ttl", &args.verify_token_ttl, "24h");
    let verify_token_ttl = parse_duration(&s, &v)?;
    let (s, v) = get("invite_token_ttl", &args.invite_token_ttl, "7d");
    let invite_token_ttl = parse_duration(&s, &v)?;
    let required = &args.require_verified_email;
    let (s, v) = get("require_verified_email", required, "off");
    let require_verified_email = parse_choice(&s, &v, ("on", "off"))?;
    Ok(MailSettings {
        delivery,
        from: from.trim().to_owned(),
        templates,
        product_name: product_name.trim().to_owned(),
        retry_max,
        smtp_timeout,
        reset_token_ttl,
        verify_token_ttl,
        invite_token_ttl,
        require_verified_email,
        smtp_ca,
    })
}

/// The certificates of a PEM file, each checked as lettre's TLS backend will read it, so that a
/// file the transport cannot use stops the start here, naming the setting.
fn ca_certificates(setting: &Setting, path: &Path) -> Result<Vec<Vec<u8>>, SettingsError> {
    let shown = path.display().to_string();
    let pem = std::fs::read(path)
        .map_err(|e| setting.invalid(&shown, &format!("cannot be read: {e}")))?;
    let mut certificates = Vec::new();
    for block in x509_parser::pem::Pem::iter_from_buffer(&pem) {
        let block =
            block.map_err(|e| setting.invalid(&shown, &format!("is not a valid PEM file: {e}")))?;
        // Anything else (a private key, most likely) says the wrong file was named.
        if block.label != "CERTIFICATE" {
            return Err(setting.invalid(
                &shown,
                &format!("must hold only certificates, not a {}", block.label),
            ));
        }
        let readable = block.parse_x509().is_ok()
            && lettre::transport::smtp::client::Certificate::from_der(block.contents.clone())
                .is_ok();
        if !readable {
            return Err(setting.invalid(&shown, "holds a certificate that cannot be read"));
        }
        certificates.push(block.contents);
    }
    if certificates.is_empty() {
        return Err(setting.invalid(&shown, "holds no certificate (-----BEGIN CERTIFICATE-----)"));
    }
    Ok(certificates)
}

/// The contract's schemes in lettre's terms.
fn smtp_url(setting: &Setting, value: &str) -> Result<String, SettingsError> {
    // The value may hold a password: the error shows only the scheme.
    let refuse = || {
        setting.invalid(
            "[redacted]",
            "must be smtp://host:port, smtp+starttls://host:port or smtps://user:pass@host:port",
        )
    };
    let (scheme, rest) = value.trim().split_once("://").ok_or_else(refuse)?;
    if rest.is_empty() || rest.contains('?') {
        return Err(refuse());
    }
    let url = match scheme {
        "smtp" | "smtps" => format!("{scheme}://{rest}"),
        "smtp+starttls" => format!("smtp://{rest}?tls=required"),
        _ => return Err(refuse()),
    };
    lettre::AsyncSmtpTransport::<lettre::Tokio1Executor>::from_url(&url).map_err(|_| refuse())?;
    Ok(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smtp_schemes_map_to_lettre() {
        let s = Setting { key: "smtp_url" };
        assert_eq!(smtp_url(&s, "smtp://h:25").unwrap(), "smtp://h:25");
        assert_eq!(
            smtp_url(&s, "smtp+starttls://u:p@h:587").unwrap(),
            "smtp://u:p@h:587?tls=required"
        );
        assert_eq!(smtp_url(&s, "smtps://u:p@h").unwrap(), "smtps://u:p@h");
        let err = smtp_url(&s, "imap://u:hunter2@h").unwrap_err().to_string();
        assert!(!err.contains("hunter2"), "{err}");
    }

    /// A self-signed certificate and its key, as PEM.
    fn certificate(name: &str) -> (String, String) {
        use openssl::{asn1, ec, hash, nid, pkey, x509};
        let group = ec::EcGroup::from_curve_name(nid::Nid::X9_62_PRIME256V1).unwrap();
        let key = pkey::PKey::from_ec_key(ec::EcKey::generate(&group).unwrap()).unwrap();
        let mut subject = x509::X509NameBuilder::new().unwrap();
        subject.append_entry_by_text("CN", name).unwrap();
        let subject = subject.build();
        let mut cert = x509::X509Builder::new().unwrap();
        cert.set_version(2).unwrap();
        cert.set_subject_name(&subject).unwrap();
        cert.set_issuer_name(&subject).unwrap();
        cert.set_pubkey(&key).unwrap();
        cert.set_not_before(&asn1::Asn1Time::days_from_now(0).unwrap())
            .unwrap();
        cert.set_not_after(&asn1::Asn1Time::days_from_now(1).unwrap())
            .unwrap();
        cert.sign(&key, hash::MessageDigest::sha256()).unwrap();
        let pem = |bytes: Vec<u8>| String::from_utf8(bytes).unwrap();
        (
            pem(cert.build().to_pem().unwrap()),
            pem(key.private_key_to_pem_pkcs8().unwrap()),
        )
    }

    /// The CA certificates read from a file holding `text`, with `url` as the SMTP URL.
    fn ca_file(url: &str, text: Option<&str>) -> Result<Vec<Vec<u8>>, String> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ca.pem");
        if let Some(text) = text {
            std::fs::write(&path, text).unwrap();
        }
        let args = SettingsArgs {
            smtp_url: Some(url.to_owned()),
            smtp_ca_file: Some(path.display().to_string()),
            ..Default::default()
        };
        match crate::config::Settings::resolve(&args) {
            Ok(settings) => Ok(settings.mail.smtp_ca),
            Err(e) => Err(e.to_string()),
        }
    }

    #[test]
    fn the_smtp_ca_file_holds_certificates_for_a_tls_url() {
        let (one, key) = certificate("one");
        let (two, _) = certificate("two");
        let bundle = format!("# an internal CA\n{one}\n{two}");
        for url in ["smtp+starttls://u:p@h:587", "smtps://u:p@h"] {
            let read = ca_file(url, Some(&bundle)).unwrap();
            assert_eq!(read.len(), 2, "{url}: every certificate of a bundle");
        }
        let refusals = [
            (
                "smtp://h:25",
                Some(one.as_str()),
                "needs GATEHOUSE_SMTP_URL with",
            ),
            ("smtps://h", None, "cannot be read"),
            ("smtps://h", Some(""), "holds no certificate"),
            (
                "smtps://h",
                Some("not PEM at all\n"),
                "holds no certificate",
            ),
            (
                "smtps://h",
                Some(&key),
                "must hold only certificates, not a PRIVATE KEY",
            ),
            (
                "smtps://h",
                Some(&format!("{one}{key}")),
                "must hold only certificates",
            ),
            (
                "smtps://h",
                Some("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"),
                "holds a certificate that cannot be read",
            ),
        ];
        for (url, text, reason) in refusals {
            let err = ca_file(url, text).unwrap_err();
            assert!(err.contains("GATEHOUSE_SMTP_CA_FILE"), "{err}");
            assert!(err.contains(reason), "{url} {text:?}: {err}");
            assert!(!err.contains('\n'), "one line: {err}");
        }
        // Without the setting, nothing beside the system's roots.
        let args = SettingsArgs {
            smtp_url: Some("smtps://h".into()),
            ..Default::default()
        };
        let settings = crate::config::Settings::resolve(&args).unwrap();
        assert!(settings.mail.smtp_ca.is_empty());
    }
}
