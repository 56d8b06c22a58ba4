//! Settings: each is a flag, an environment variable and a key of an optional TOML file, resolved
//! in that order of precedence, then a default. A bad value stops the program with one line naming
//! the setting, before anything is opened or bound.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use ipnet::IpNet;

mod args;
mod browser;
mod mail;
mod oauth;
mod providers;
pub mod resources;
mod return_urls;
mod source;
mod tokens;
mod values;
mod webauthn;

pub use crate::crypto::MasterKey;
pub use args::{COMMON_SETTINGS, SettingsArgs};
pub use browser::{BrowserSettings, host_under};
pub use mail::{MailDelivery, MailSettings};
pub use oauth::{ClientRegistration, RegistrationMode};
pub use return_urls::ReturnUrls;
use source::Source;
pub use values::{DatabaseUrl, LogFormat, SettingsError, redact_url, sqlite_path};
use values::{Setting, parse_addr, parse_cidrs};
pub use webauthn::RelyingParty;

use crate::authz::rules::AccessRules;
use crate::crypto::SigningAlg;
use crate::model::Resource;
use crate::upstream::ProviderConfig;

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
    /// An issuer refresh tokens of before an upgrade may name (`tokens::former_issuer`): they
    /// still refresh, so the change of the default issuer (5251118) ends no session.
    pub former_issuer: Option<String>,
    pub audience: String,
    /// The RFC 8707 resources beside `audience` that the provider issues tokens for
    /// (`GATEHOUSE_OAUTH_RESOURCES`), each exactly as written.
    pub oauth_resources: Vec<String>,
    /// What access and refresh tokens are signed with (`GATEHOUSE_ACCESS_TOKEN_ALG`).
    pub access_token_alg: SigningAlg,
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
    /// The upstream OpenID providers of `GATEHOUSE_IDENTITY_PROVIDERS` (empty without it).
    pub identity_providers: Vec<ProviderConfig>,
    /// The business APIs of the settings: the contacts example (unless `GATEHOUSE_CONTACTS_API`
    /// is off) and those of `GATEHOUSE_RESOURCES`. The operator's others are in the database.
    pub resources: Vec<Resource>,
    pub log: String,
    pub log_format: LogFormat,
    /// A log line per request: method, route, status, time, client (`GATEHOUSE_ACCESS_LOG`).
    pub access_log: bool,
    /// Where users reach the service, without a trailing slash (`GATEHOUSE_PUBLIC_URL`).
    pub public_url: String,
    /// Passkeys' relying party; `None`: passkeys are off (no domain to bind them to).
    pub webauthn: Option<RelyingParty>,
    /// Where the sign-in page may send a user afterwards (`GATEHOUSE_ALLOWED_RETURN_URLS`).
    pub allowed_return_urls: ReturnUrls,
    pub mail: MailSettings,
    /// The session cookie and CORS (docs/api.md §6b).
    pub browser: BrowserSettings,
    /// Clients that register themselves (docs/api.md §12).
    pub client_registration: ClientRegistration,
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
    "oauth_resources",
    "access_token_alg",
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
    "identity_providers",
    "resources",
    "contacts_api",
    "access_log",
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
    "oauth_registration",
    "oauth_client_metadata_documents",
    "oauth_dpop_nonce",
    // Retired; read only to refuse "on" (config/oauth.rs).
    "oauth_client_metadata_insecure_loopback",
];

impl Settings {
    /// Resolves flags and environment (already merged by clap), then the file, then defaults.
    pub fn resolve(args: &SettingsArgs) -> Result<Settings, SettingsError> {
        let src = Source::read(args.config.as_deref())?;
        let listen = src.addr("listen", &args.listen, "127.0.0.1:8080")?;
        let database_url = database_url(&src, args)?;
        let master_key = master_key(&src, args, &database_url)?;
        let (access_token_ttl, refresh_token_ttl) = tokens::token_lifetimes(&src, args)?;
        let sqlite = sqlite_path(database_url.as_str());
        let mail = mail::resolve(&src, args, sqlite.as_deref())?;
        let default_public_url = format!("http://{listen}");
        let (s, v) = src.get("public_url", &args.public_url, &default_public_url);
        let public_url = webauthn::parse_public_url(&s, &v)?;
        let webauthn = webauthn::relying_party(
            &public_url,
            src.pick("webauthn_rp_id", &args.webauthn_rp_id),
            src.pick("webauthn_origins", &args.webauthn_origins),
        )?;
        let (s, v) = src.get("allowed_return_urls", &args.allowed_return_urls, "");
        let allowed_return_urls = ReturnUrls::parse(&s, &v)?;
        let browser = browser::resolve(&src, args, &public_url)?;
        let (s, v) = src.get("trusted_proxies", &args.trusted_proxies, "");
        let trusted_proxies = parse_cidrs(&s, &v)?;
        let untrusted = &args.untrusted_forward_auth;
        let per_client = &args.max_connections_per_client;
        let issuer = tokens::issuer(&src, args, &public_url)?;
        let former_issuer = tokens::former_issuer(&src, args, &issuer);
        let audience = src.text("audience", &args.audience, "gatehouse-api")?;
        let oauth_resources = tokens::oauth_resources(&src, args, &issuer, &audience)?;
        // The audiences of the service's own, which no declared API may take.
        let mut reserved = vec![audience.as_str(), issuer.as_str()];
        reserved.extend(oauth_resources.iter().map(String::as_str));
        let resources = declared_resources(&src, args, &reserved)?;

        Ok(Settings {
            listen,
            database_url,
            master_key,
            access_token_ttl,
            refresh_token_ttl,
            temp_token_ttl: src.duration("temp_token_ttl", &args.temp_token_ttl, "5m")?,
            refresh_reuse_grace: src.duration(
                "refresh_reuse_grace",
                &args.refresh_reuse_grace,
                "10s",
            )?,
            registration_open: src.choice(
                "registration",
                &args.registration,
                "closed",
                ("open", "closed"),
            )?,
            rate_limit: src.choice("rate_limit", &args.rate_limit, "on", ("on", "off"))?,
            trusted_proxies,
            issuer,
            former_issuer,
            audience,
            oauth_resources,
            access_token_alg: tokens::access_token_alg(&src, args)?,
            header_timeout: src.duration("header_timeout", &args.header_timeout, "10s")?,
            body_timeout: src.duration("body_timeout", &args.body_timeout, "10s")?,
            max_connections: src.count("max_connections", &args.max_connections, "1024")?,
            write_timeout: src.duration("write_timeout", &args.write_timeout, "10s")?,
            connection_lifetime: src.duration(
                "connection_lifetime",
                &args.connection_lifetime,
                "5m",
            )?,
            max_connections_per_client: src.count(
                "max_connections_per_client",
                per_client,
                "64",
            )?,
            docs: src.choice("docs", &args.docs, "off", ("on", "off"))?,
            shutdown_timeout: src.duration("shutdown_timeout", &args.shutdown_timeout, "30s")?,
            audit_retention: src.duration("audit_retention", &args.audit_retention, "90d")?,
            metrics_listen: metrics_listen(&src, args)?,
            access_rules: access_rules(&src, args)?,
            untrusted_token_only: src.choice(
                "untrusted_forward_auth",
                untrusted,
                "refuse",
                ("token-only", "refuse"),
            )?,
            identity_providers: identity_providers(&src, args)?,
            resources,
            log: log_filter(&src, args)?,
            log_format: log_format(&src, args)?,
            access_log: src.choice("access_log", &args.access_log, "off", ("on", "off"))?,
            public_url,
            webauthn,
            allowed_return_urls,
            mail,
            browser,
            client_registration: oauth::resolve(&src, args)?,
        })
    }

    /// The path of the SQLite database file, when the URL names one.
    pub fn sqlite_path(&self) -> Option<PathBuf> {
        sqlite_path(self.database_url.as_str())
    }

    /// The issuer when it is an absolute http(s) URL, and so the OpenID provider is on (docs/api.md
    /// §11): relying parties compare the ID token's `iss` with the URL they discovered it at, and
    /// an issuer such as the default `gatehouse` cannot be one.
    pub fn provider_issuer(&self) -> Option<&str> {
        crate::addresses::is_service_url(&self.issuer).then_some(self.issuer.as_str())
    }
}

/// A `sqlite://PATH` naming a file, or a `postgres://` URL.
fn database_url(src: &Source, args: &SettingsArgs) -> Result<DatabaseUrl, SettingsError> {
    let (setting, url) = src.get("database_url", &args.database_url, "sqlite://gatehouse.db");
    let url = DatabaseUrl(url);
    if !(url.as_str().starts_with("sqlite:") || url.is_postgres()) {
        return Err(setting.invalid(
            &url.to_string(),
            "is not a sqlite://PATH or postgres:// URL",
        ));
    }
    // Each pooled connection to an in-memory SQLite database would be a database of its own.
    let in_memory = url.as_str().contains("mode=memory") || sqlite_path(url.as_str()).is_none();
    if !url.is_postgres() && in_memory {
        return Err(setting.invalid(
            &url.to_string(),
            "must name a file (in-memory SQLite is not supported)",
        ));
    }
    Ok(url)
}

/// The key given, if any; PostgreSQL needs one (every instance must share it), SQLite may keep
/// its key in a file beside the database.
fn master_key(
    src: &Source,
    args: &SettingsArgs,
    database_url: &DatabaseUrl,
) -> Result<Option<MasterKey>, SettingsError> {
    match src.pick("master_key", &args.master_key) {
        Some(value) => MasterKey::parse(&value)
            .map(Some)
            .map_err(|reason| Setting { key: "master_key" }.invalid("[redacted]", &reason)),
        None if database_url.is_postgres() => Err(SettingsError(
            "GATEHOUSE_MASTER_KEY (--master-key / master_key) is required with PostgreSQL: \
             every instance must share it (make one with: openssl rand -base64 32)"
                .to_owned(),
        )),
        None => Ok(None),
    }
}

fn metrics_listen(src: &Source, args: &SettingsArgs) -> Result<Option<SocketAddr>, SettingsError> {
    match src.pick("metrics_listen", &args.metrics_listen) {
        Some(v) if !v.is_empty() && v != "off" => {
            let setting = Setting {
                key: "metrics_listen",
            };
            Ok(Some(parse_addr(&setting, &v)?))
        }
        _ => Ok(None),
    }
}

fn access_rules(src: &Source, args: &SettingsArgs) -> Result<AccessRules, SettingsError> {
    match src.pick("access_rules", &args.access_rules) {
        Some(path) if !path.is_empty() => {
            AccessRules::load(std::path::Path::new(&path)).map_err(|reason| {
                Setting {
                    key: "access_rules",
                }
                .invalid(&path, &reason)
            })
        }
        _ => Ok(AccessRules::default()),
    }
}

fn identity_providers(
    src: &Source,
    args: &SettingsArgs,
) -> Result<Vec<ProviderConfig>, SettingsError> {
    match src.pick("identity_providers", &args.identity_providers) {
        Some(path) if !path.is_empty() => {
            providers::load(std::path::Path::new(&path)).map_err(|reason| {
                Setting {
                    key: "identity_providers",
                }
                .invalid(&path, &reason)
            })
        }
        _ => Ok(Vec::new()),
    }
}

/// The contacts example (`GATEHOUSE_CONTACTS_API`) and the APIs of `GATEHOUSE_RESOURCES`; none of
/// which may take an audience of `reserved` (the service's own).
fn declared_resources(
    src: &Source,
    args: &SettingsArgs,
    reserved: &[&str],
) -> Result<Vec<Resource>, SettingsError> {
    let contacts = src.choice("contacts_api", &args.contacts_api, "on", ("on", "off"))?;
    let built_in: Vec<Resource> = if contacts {
        vec![Resource::contacts_example()]
    } else {
        Vec::new()
    };
    let from_file = match src.pick("resources", &args.resources) {
        Some(path) if !path.is_empty() => {
            let setting = Setting { key: "resources" };
            resources::load(std::path::Path::new(&path), &built_in, reserved)
                .map_err(|reason| setting.invalid(&path, &reason))?
        }
        _ => Vec::new(),
    };
    Ok(built_in.into_iter().chain(from_file).collect())
}

fn log_filter(src: &Source, args: &SettingsArgs) -> Result<String, SettingsError> {
    let (setting, log) = src.get("log", &args.log, "info");
    if tracing_subscriber::EnvFilter::try_new(&log).is_err() {
        return Err(setting.invalid(&log, "is not a log filter (e.g. info, or gatehouse=debug)"));
    }
    Ok(log)
}

fn log_format(src: &Source, args: &SettingsArgs) -> Result<LogFormat, SettingsError> {
    let (setting, v) = src.get("log_format", &args.log_format, "text");
    match v.as_str() {
        "text" => Ok(LogFormat::Text),
        "json" => Ok(LogFormat::Json),
        _ => Err(setting.invalid(&v, "must be text or json")),
    }
}

#[cfg(test)]
mod tests;
