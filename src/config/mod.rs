//! Settings: each is a flag, an environment variable and a key of an optional TOML file, resolved
//! in that order of precedence, then a default. A bad value stops the program with one line naming
//! the setting, before anything is opened or bound.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use ipnet::IpNet;

mod args;
mod browser;
mod mail;
mod return_urls;
mod values;
mod webauthn;

pub use crate::crypto::MasterKey;
pub use args::{COMMON_SETTINGS, SettingsArgs};
pub use browser::{BrowserSettings, host_under};
pub use mail::{MailDelivery, MailSettings};
pub use return_urls::ReturnUrls;
pub use values::{DatabaseUrl, LogFormat, SettingsError, redact_url, sqlite_path};
use values::{
    Setting, parse_addr, parse_choice, parse_cidrs, parse_count, parse_duration, read_file,
};
pub use webauthn::RelyingParty;

use crate::authz::rules::AccessRules;

/// Every setting, parsed and checked.
#[derive(Clone, Debug)]
pub struct Settings {
    pub listen: SocketAddr,
    pub database_url: DatabaseUrl,
    /// `None` means: use (or create) the key file beside the SQLite database.
    pub master_key: Option<MasterKey>,
    pub access_token_ttl: Duration,
    pub refresh_token_ttl: Duration,
    pub temp_token_ttl: Duration,
    pub refresh_reuse_grace: Duration,
    pub registration_open: bool,
    pub rate_limit: bool,
    pub trusted_proxies: Vec<IpNet>,
    pub issuer: String,
    pub audience: String,
    pub header_timeout: Duration,
    pub body_timeout: Duration,
    pub max_connections: usize,
    pub write_timeout: Duration,
    pub connection_lifetime: Duration,
    pub max_connections_per_client: usize,
    pub docs: bool,
    pub shutdown_timeout: Duration,
    pub audit_retention: Duration,
    pub metrics_listen: Option<SocketAddr>,
    /// Forward-auth's access rules (empty without `GATEHOUSE_ACCESS_RULES`).
    pub access_rules: AccessRules,
    /// Whether, with access rules, forward-auth judges a request from an untrusted peer by its
    /// token alone (`GATEHOUSE_UNTRUSTED_FORWARD_AUTH=token-only`) rather than refusing it.
    pub untrusted_token_only: bool,
    pub log: String,
    pub log_format: LogFormat,
    /// Where users reach the service, without a trailing slash (`GATEHOUSE_PUBLIC_URL`).
    pub public_url: String,
    /// Passkeys' relying party; `None`: passkeys are off (no domain to bind them to).
    pub webauthn: Option<RelyingParty>,
    /// Where the sign-in page may send a user afterwards (`GATEHOUSE_ALLOWED_RETURN_URLS`).
    pub allowed_return_urls: ReturnUrls,
    pub mail: MailSettings,
    /// The session cookie and CORS (docs/api.md §6b).
    pub browser: BrowserSettings,
}

pub(crate) const FILE_KEYS: &[&str] = &[
    "listen",
    "database_url",
    "master_key",
    "access_token_ttl",
    "refresh_token_ttl",
    "temp_token_ttl",
    "refresh_reuse_grace",
    "registration",
    "rate_limit",
    "trusted_proxies",
    "issuer",
    "audience",
    "header_timeout",
    "body_timeout",
    "max_connections",
    "write_timeout",
    "connection_lifetime",
    "max_connections_per_client",
    "docs",
    "shutdown_timeout",
    "audit_retention",
    "metrics_listen",
    "access_rules",
    "untrusted_forward_auth",
    "log",
    "log_format",
    "public_url",
    "webauthn_rp_id",
    "webauthn_origins",
    "allowed_return_urls",
    "cookie_name",
    "cookie_domain",
    "cors_origins",
    "smtp_url",
    "mail_from",
    "mail_dir",
    "mail_templates",
    "product_name",
    "mail_retry_max",
    "smtp_timeout",
    "reset_token_ttl",
    "verify_token_ttl",
    "invite_token_ttl",
    "require_verified_email",
    "smtp_ca_file",
];

impl Settings {
    /// Resolves flags and environment (already merged by clap), then the file, then defaults.
    pub fn resolve(args: &SettingsArgs) -> Result<Settings, SettingsError> {
        let file = match &args.config {
            Some(path) => read_file(path)?,
            None => BTreeMap::new(),
        };
        let pick = |key: &'static str, given: &Option<String>| -> Option<String> {
            given.clone().or_else(|| file.get(key).cloned())
        };
        let get = |key: &'static str, given: &Option<String>, default: &str| {
            (
                Setting { key },
                pick(key, given).unwrap_or_else(|| default.to_owned()),
            )
        };

        let (s, v) = get("listen", &args.listen, "127.0.0.1:8080");
        let listen = parse_addr(&s, &v)?;
        let (_, database_url) = get("database_url", &args.database_url, "sqlite://gatehouse.db");
        let setting = Setting {
            key: "database_url",
        };
        let database_url = DatabaseUrl(database_url);
        if !(database_url.as_str().starts_with("sqlite:") || database_url.is_postgres()) {
            return Err(setting.invalid(
                &database_url.to_string(),
                "is not a sqlite://PATH or postgres:// URL",
            ));
        }
        // Each pooled connection to an in-memory SQLite database would be a database of its own.
        let in_memory = database_url.as_str().contains("mode=memory")
            || sqlite_path(database_url.as_str()).is_none();
        if !database_url.is_postgres() && in_memory {
            return Err(setting.invalid(
                &database_url.to_string(),
                "must name a file (in-memory SQLite is not supported)",
            ));
        }
        let master_key =
            match pick("master_key", &args.master_key) {
                Some(value) => Some(MasterKey::parse(&value).map_err(|reason| {
                    Setting { key: "master_key" }.invalid("[redacted]", &reason)
                })?),
                None if database_url.is_postgres() => {
                    return Err(SettingsError(
                    "GATEHOUSE_MASTER_KEY (--master-key / master_key) is required with PostgreSQL: \
                     every instance must share it (make one with: openssl rand -base64 32)"
                        .to_owned(),
                ));
                }
                None => None,
            };
        let (s, v) = get("access_token_ttl", &args.access_token_ttl, "24h");
        let access_token_ttl = parse_duration(&s, &v)?;
        let (s, v) = get("refresh_token_ttl", &args.refresh_token_ttl, "30d");
        let refresh_token_ttl = parse_duration(&s, &v)?;
        // A session ends when its refresh token lapses; an access token outliving it would keep a
        // lapsed session usable.
        if access_token_ttl > refresh_token_ttl {
            return Err(SettingsError(format!(
                "GATEHOUSE_ACCESS_TOKEN_TTL ({}s) must not be longer than GATEHOUSE_REFRESH_TOKEN_TTL ({}s)",
                access_token_ttl.as_secs(),
                refresh_token_ttl.as_secs()
            )));
        }
        let (s, v) = get("temp_token_ttl", &args.temp_token_ttl, "5m");
        let temp_token_ttl = parse_duration(&s, &v)?;
        let (s, v) = get("refresh_reuse_grace", &args.refresh_reuse_grace, "10s");
        let refresh_reuse_grace = parse_duration(&s, &v)?;
        let (s, v) = get("registration", &args.registration, "closed");
        let registration_open = parse_choice(&s, &v, ("open", "closed"))?;
        let (s, v) = get("rate_limit", &args.rate_limit, "on");
        let rate_limit = parse_choice(&s, &v, ("on", "off"))?;
        let (s, v) = get("trusted_proxies", &args.trusted_proxies, "");
        let trusted_proxies = parse_cidrs(&s, &v)?;
        let (s, issuer) = get("issuer", &args.issuer, "gatehouse");
        if issuer.trim().is_empty() {
            return Err(s.invalid(&issuer, "must not be empty"));
        }
        let (s, audience) = get("audience", &args.audience, "gatehouse-api");
        if audience.trim().is_empty() {
            return Err(s.invalid(&audience, "must not be empty"));
        }
        let (s, v) = get("header_timeout", &args.header_timeout, "10s");
        let header_timeout = parse_duration(&s, &v)?;
        let (s, v) = get("body_timeout", &args.body_timeout, "10s");
        let body_timeout = parse_duration(&s, &v)?;
        let (s, v) = get("max_connections", &args.max_connections, "1024");
        let max_connections = parse_count(&s, &v)?;
        let (s, v) = get("write_timeout", &args.write_timeout, "10s");
        let write_timeout = parse_duration(&s, &v)?;
        let (s, v) = get("connection_lifetime", &args.connection_lifetime, "5m");
        let connection_lifetime = parse_duration(&s, &v)?;
        let per_client = &args.max_connections_per_client;
        let (s, v) = get("max_connections_per_client", per_client, "64");
        let max_connections_per_client = parse_count(&s, &v)?;
        let (s, v) = get("docs", &args.docs, "off");
        let docs = parse_choice(&s, &v, ("on", "off"))?;
        let (s, v) = get("shutdown_timeout", &args.shutdown_timeout, "30s");
        let shutdown_timeout = parse_duration(&s, &v)?;
        let (s, v) = get("audit_retention", &args.audit_retention, "90d");
        let audit_retention = parse_duration(&s, &v)?;
        let metrics_listen = match pick("metrics_listen", &args.metrics_listen) {
            Some(v) if !v.is_empty() && v != "off" => Some(parse_addr(
                &Setting {
                    key: "metrics_listen",
                },
                &v,
            )?),
            _ => None,
        };
        let access_rules = match pick("access_rules", &args.access_rules) {
            Some(path) if !path.is_empty() => AccessRules::load(std::path::Path::new(&path))
                .map_err(|reason| {
                    Setting {
                        key: "access_rules",
                    }
                    .invalid(&path, &reason)
                })?,
            _ => AccessRules::default(),
        };
        let untrusted = &args.untrusted_forward_auth;
        let (s, v) = get("untrusted_forward_auth", untrusted, "refuse");
        let untrusted_token_only = parse_choice(&s, &v, ("token-only", "refuse"))?;
        let (s, log) = get("log", &args.log, "info");
        if tracing_subscriber::EnvFilter::try_new(&log).is_err() {
            return Err(s.invalid(&log, "is not a log filter (e.g. info, or gatehouse=debug)"));
        }
        let sqlite = sqlite_path(database_url.as_str());
        let mail = mail::resolve(&pick, args, sqlite.as_deref())?;
        let (s, v) = get("log_format", &args.log_format, "text");
        let log_format = match v.as_str() {
            "text" => LogFormat::Text,
            "json" => LogFormat::Json,
            _ => return Err(s.invalid(&v, "must be text or json")),
        };
        let default_public_url = format!("http://{listen}");
        let (s, v) = get("public_url", &args.public_url, &default_public_url);
        let public_url = webauthn::parse_public_url(&s, &v)?;
        let webauthn = webauthn::relying_party(
            &public_url,
            pick("webauthn_rp_id", &args.webauthn_rp_id),
            pick("webauthn_origins", &args.webauthn_origins),
        )?;
        let (s, v) = get("allowed_return_urls", &args.allowed_return_urls, "");
        let allowed_return_urls = ReturnUrls::parse(&s, &v)?;
        let browser = browser::resolve(&pick, args, &public_url)?;

        Ok(Settings {
            listen,
            database_url,
            master_key,
            access_token_ttl,
            refresh_token_ttl,
            temp_token_ttl,
            refresh_reuse_grace,
            registration_open,
            rate_limit,
            trusted_proxies,
            issuer,
            audience,
            header_timeout,
            body_timeout,
            max_connections,
            write_timeout,
            connection_lifetime,
            max_connections_per_client,
            docs,
            shutdown_timeout,
            audit_retention,
            metrics_listen,
            access_rules,
            untrusted_token_only,
            log,
            log_format,
            public_url,
            webauthn,
            allowed_return_urls,
            mail,
            browser,
        })
    }

    /// The path of the SQLite database file, when the URL names one.
    pub fn sqlite_path(&self) -> Option<PathBuf> {
        sqlite_path(self.database_url.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve(args: SettingsArgs) -> Result<Settings, SettingsError> {
        Settings::resolve(&args)
    }

    #[test]
    fn defaults_follow_the_contract() {
        let s = resolve(SettingsArgs::default()).unwrap();
        assert_eq!(s.listen.to_string(), "127.0.0.1:8080");
        assert_eq!(s.database_url.as_str(), "sqlite://gatehouse.db");
        assert_eq!(s.access_token_ttl, Duration::from_secs(86400));
        assert_eq!(s.refresh_token_ttl, Duration::from_secs(30 * 86400));
        assert_eq!(s.temp_token_ttl, Duration::from_secs(300));
        assert_eq!(s.refresh_reuse_grace, Duration::from_secs(10));
        assert!(!s.registration_open);
        assert!(s.rate_limit);
        assert_eq!(s.issuer, "gatehouse");
        assert_eq!(s.audience, "gatehouse-api");
        assert_eq!(s.log_format, LogFormat::Text);
        assert_eq!(s.write_timeout, Duration::from_secs(10));
        assert_eq!(s.connection_lifetime, Duration::from_secs(300));
        assert_eq!(s.max_connections_per_client, 64);
        assert!(!s.docs);
    }

    /// Settings may be logged or printed while debugging: no secret they hold shows.
    #[test]
    fn debug_output_masks_every_secret() {
        let key = MasterKey::generate().encode();
        let s = resolve(SettingsArgs {
            database_url: Some("postgres://gate:db-s3cret@db.internal/gatehouse".into()),
            master_key: Some(key.clone()),
            smtp_url: Some("smtps://relay:smtp-s3cret@mail.internal:465".into()),
            ..SettingsArgs::default()
        })
        .unwrap();
        let shown = format!("{s:?} {:#?}", s.mail);
        for secret in ["db-s3cret", "smtp-s3cret", key.as_str()] {
            assert!(!shown.contains(secret), "{secret} in {shown}");
        }
        assert!(shown.contains("gate:***@db.internal"), "{shown}");
        assert!(shown.contains("relay:***@mail.internal"), "{shown}");
    }

    #[test]
    fn durations_take_seconds_or_units() {
        let d = |v: &str| parse_duration(&Setting { key: "x" }, v);
        assert_eq!(d("90").unwrap(), Duration::from_secs(90));
        assert_eq!(d("30s").unwrap(), Duration::from_secs(30));
        assert_eq!(d("5m").unwrap(), Duration::from_secs(300));
        assert_eq!(d("24h").unwrap(), Duration::from_secs(86400));
        assert_eq!(d("30d").unwrap(), Duration::from_secs(30 * 86400));
        assert!(d("0").is_err());
        assert!(d("soon").is_err());
        assert!(d("-5s").is_err());
    }

    #[test]
    fn a_bad_value_names_its_setting_in_one_line() {
        let err = resolve(SettingsArgs {
            access_token_ttl: Some("5x".into()),
            ..Default::default()
        })
        .err()
        .unwrap()
        .to_string();
        assert!(err.contains("GATEHOUSE_ACCESS_TOKEN_TTL"), "{err}");
        assert!(err.contains("--access-token-ttl"), "{err}");
        assert!(!err.contains('\n'));
    }

    #[test]
    fn in_memory_sqlite_is_refused() {
        let err = resolve(SettingsArgs {
            database_url: Some("sqlite::memory:".into()),
            ..Default::default()
        });
        assert!(err.err().unwrap().to_string().contains("in-memory"));
    }

    #[test]
    fn postgres_needs_a_master_key() {
        let err = resolve(SettingsArgs {
            database_url: Some("postgres://u:hunter2@db/gh".into()),
            ..Default::default()
        })
        .err()
        .unwrap()
        .to_string();
        assert!(err.contains("GATEHOUSE_MASTER_KEY"), "{err}");
    }

    #[test]
    fn master_key_must_be_32_bytes_and_never_printed() {
        assert!(MasterKey::parse("c2hvcnQ=").is_err());
        let key = MasterKey::generate();
        let again = MasterKey::parse(&key.encode()).unwrap();
        assert_eq!(key.expose(), again.expose());
        assert_eq!(format!("{key:?}"), "MasterKey([redacted])");
    }

    #[test]
    fn urls_are_redacted_in_debug_output() {
        assert_eq!(
            redact_url("postgres://app:s3cret@db:5432/gh"),
            "postgres://app:***@db:5432/gh"
        );
        assert_eq!(redact_url("sqlite://gatehouse.db"), "sqlite://gatehouse.db");
        assert_eq!(
            redact_url("postgres://app:p@ss/w?rd@db:5432/gh"),
            "postgres://app:***@db:5432/gh"
        );
        assert_eq!(
            redact_url("postgres://db/gh?user=app&Password=hunter2&sslmode=require"),
            "postgres://db/gh?user=app&Password=***&sslmode=require"
        );
        for url in [
            "postgres://app:p@ss/w?rd@db:5432/gh",
            "postgres://db/gh?password=hunter2",
        ] {
            let shown = redact_url(url);
            assert!(
                !shown.contains("rd@") && !shown.contains("hunter2"),
                "{shown}"
            );
        }
    }

    #[test]
    fn sqlite_paths() {
        assert_eq!(
            sqlite_path("sqlite://gatehouse.db"),
            Some(PathBuf::from("gatehouse.db"))
        );
        assert_eq!(
            sqlite_path("sqlite:///var/lib/g.db?mode=rwc"),
            Some(PathBuf::from("/var/lib/g.db"))
        );
        assert_eq!(sqlite_path("sqlite::memory:"), None);
        assert_eq!(sqlite_path("postgres://x/y"), None);
    }

    #[test]
    fn trusted_proxies_take_cidrs_and_addresses() {
        let s = Setting {
            key: "trusted_proxies",
        };
        let nets = parse_cidrs(&s, "10.0.0.0/8, 127.0.0.1").unwrap();
        assert_eq!(nets.len(), 2);
        assert!(parse_cidrs(&s, "10.0.0.0/99").is_err());
    }
}
