//! Settings: each is a flag, an environment variable and a key of an optional TOML file, resolved
//! in that order of precedence, then a default. A bad value stops the program with one line naming
//! the setting, before anything is opened or bound.

use std::collections::BTreeMap;
use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use ipnet::IpNet;
use secrecy::{ExposeSecret, SecretBox};

/// The settings as clap reads them from flags and the environment (clap gives a flag precedence
/// over its variable). They stay strings here so that every value, whatever its source, is parsed
/// and reported by the same code.
#[derive(Debug, Default, Clone, clap::Args)]
pub struct SettingsArgs {
    /// TOML file with settings (keys as in the table of the README)
    #[arg(long, env = "GATEHOUSE_CONFIG", global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Address to serve on [default: 127.0.0.1:8080]
    #[arg(long, env = "GATEHOUSE_LISTEN", global = true, value_name = "ADDR")]
    pub listen: Option<String>,
    /// sqlite://PATH or postgres://… [default: sqlite://gatehouse.db]
    #[arg(
        long,
        env = "GATEHOUSE_DATABASE_URL",
        global = true,
        value_name = "URL"
    )]
    pub database_url: Option<String>,
    /// Base64 of 32 bytes; encrypts TOTP secrets and signing keys
    #[arg(
        long,
        env = "GATEHOUSE_MASTER_KEY",
        global = true,
        value_name = "BASE64",
        hide_env_values = true
    )]
    pub master_key: Option<String>,
    /// Access token lifetime [default: 24h]
    #[arg(
        long,
        env = "GATEHOUSE_ACCESS_TOKEN_TTL",
        global = true,
        value_name = "DURATION"
    )]
    pub access_token_ttl: Option<String>,
    /// Refresh token lifetime [default: 30d]
    #[arg(
        long,
        env = "GATEHOUSE_REFRESH_TOKEN_TTL",
        global = true,
        value_name = "DURATION"
    )]
    pub refresh_token_ttl: Option<String>,
    /// Two-factor challenge lifetime [default: 5m]
    #[arg(
        long,
        env = "GATEHOUSE_TEMP_TOKEN_TTL",
        global = true,
        value_name = "DURATION"
    )]
    pub temp_token_ttl: Option<String>,
    /// How long a rotated refresh token may still be presented by a racing client [default: 10s]
    #[arg(
        long,
        env = "GATEHOUSE_REFRESH_REUSE_GRACE",
        global = true,
        value_name = "DURATION"
    )]
    pub refresh_reuse_grace: Option<String>,
    /// `open` enables POST /auth/register [default: closed]
    #[arg(
        long,
        env = "GATEHOUSE_REGISTRATION",
        global = true,
        value_name = "open|closed"
    )]
    pub registration: Option<String>,
    /// `off` disables login throttling [default: on]
    #[arg(
        long,
        env = "GATEHOUSE_RATE_LIMIT",
        global = true,
        value_name = "on|off"
    )]
    pub rate_limit: Option<String>,
    /// Comma-separated CIDRs whose X-Forwarded-For is believed [default: none]
    #[arg(
        long,
        env = "GATEHOUSE_TRUSTED_PROXIES",
        global = true,
        value_name = "CIDRS"
    )]
    pub trusted_proxies: Option<String>,
    /// `iss` of issued tokens [default: gatehouse]
    #[arg(long, env = "GATEHOUSE_ISSUER", global = true)]
    pub issuer: Option<String>,
    /// `aud` of access tokens [default: gatehouse-api]
    #[arg(long, env = "GATEHOUSE_AUDIENCE", global = true)]
    pub audience: Option<String>,
    /// A client must send a request's headers within this [default: 10s]
    #[arg(
        long,
        env = "GATEHOUSE_HEADER_TIMEOUT",
        global = true,
        value_name = "DURATION"
    )]
    pub header_timeout: Option<String>,
    /// A client must send a request's whole body within this [default: 10s]
    #[arg(
        long,
        env = "GATEHOUSE_BODY_TIMEOUT",
        global = true,
        value_name = "DURATION"
    )]
    pub body_timeout: Option<String>,
    /// Open client connections at most; more wait to be accepted [default: 1024]
    #[arg(
        long,
        env = "GATEHOUSE_MAX_CONNECTIONS",
        global = true,
        value_name = "N"
    )]
    pub max_connections: Option<String>,
    /// A write that makes no progress for this long ends the connection [default: 10s]
    #[arg(
        long,
        env = "GATEHOUSE_WRITE_TIMEOUT",
        global = true,
        value_name = "DURATION"
    )]
    pub write_timeout: Option<String>,
    /// A connection older than this is closed after its request in flight [default: 5m]
    #[arg(
        long,
        env = "GATEHOUSE_CONNECTION_LIFETIME",
        global = true,
        value_name = "DURATION"
    )]
    pub connection_lifetime: Option<String>,
    /// Open connections per client address (IPv6: per /64) at most [default: 64]
    #[arg(
        long,
        env = "GATEHOUSE_MAX_CONNECTIONS_PER_CLIENT",
        global = true,
        value_name = "N"
    )]
    pub max_connections_per_client: Option<String>,
    /// `on` serves Swagger UI at /docs [default: off]
    #[arg(long, env = "GATEHOUSE_DOCS", global = true, value_name = "on|off")]
    pub docs: Option<String>,
    /// On SIGTERM/SIGINT, how long requests in flight may take to finish [default: 30s]
    #[arg(
        long,
        env = "GATEHOUSE_SHUTDOWN_TIMEOUT",
        global = true,
        value_name = "DURATION"
    )]
    pub shutdown_timeout: Option<String>,
    /// How long audit events are kept [default: 90d]
    #[arg(
        long,
        env = "GATEHOUSE_AUDIT_RETENTION",
        global = true,
        value_name = "DURATION"
    )]
    pub audit_retention: Option<String>,
    /// Address of a separate listener for Prometheus /metrics [default: off]
    #[arg(
        long,
        env = "GATEHOUSE_METRICS_LISTEN",
        global = true,
        value_name = "ADDR"
    )]
    pub metrics_listen: Option<String>,
    /// Log filter, e.g. `info` or `gatehouse=debug` [default: info]
    #[arg(long, env = "GATEHOUSE_LOG", global = true, value_name = "FILTER")]
    pub log: Option<String>,
    /// `text` or `json` [default: text]
    #[arg(
        long,
        env = "GATEHOUSE_LOG_FORMAT",
        global = true,
        value_name = "text|json"
    )]
    pub log_format: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    Text,
    Json,
}

/// The 32-byte master key. It never appears in `Debug` output.
pub struct MasterKey(SecretBox<[u8; 32]>);

impl MasterKey {
    pub fn new(bytes: [u8; 32]) -> Self {
        MasterKey(SecretBox::new(Box::new(bytes)))
    }

    pub fn generate() -> Self {
        Self::new(rand::random())
    }

    pub fn parse(encoded: &str) -> Result<Self, String> {
        let bytes = BASE64
            .decode(encoded.trim())
            .map_err(|_| "is not base64".to_owned())?;
        let bytes: [u8; 32] = bytes
            .try_into()
            .map_err(|v: Vec<u8>| format!("is {} bytes long, not 32", v.len()))?;
        Ok(Self::new(bytes))
    }

    pub fn encode(&self) -> String {
        BASE64.encode(self.0.expose_secret())
    }

    pub fn expose(&self) -> &[u8; 32] {
        self.0.expose_secret()
    }
}

impl Clone for MasterKey {
    fn clone(&self) -> Self {
        Self::new(*self.expose())
    }
}

impl fmt::Debug for MasterKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("MasterKey([redacted])")
    }
}

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
    pub log: String,
    pub log_format: LogFormat,
}

/// A database URL. It may carry a password, so its `Debug` form masks that.
#[derive(Clone, PartialEq, Eq)]
pub struct DatabaseUrl(String);

impl DatabaseUrl {
    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn is_postgres(&self) -> bool {
        self.0.starts_with("postgres://") || self.0.starts_with("postgresql://")
    }
}

impl fmt::Debug for DatabaseUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&redact_url(&self.0))
    }
}

impl fmt::Display for DatabaseUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&redact_url(&self.0))
    }
}

/// `scheme://user:password@host/db?password=…` → `scheme://user:***@host/db?password=***`. The
/// credentials end at the *last* `@` (a password may hold `@`, `/` or `?`), and a `password`
/// parameter of the query is masked too. Errs on the side of masking.
pub fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let rest = match rest.rsplit_once('@') {
        Some((credentials, host)) => match credentials.split_once(':') {
            Some((user, _)) => format!("{user}:***@{host}"),
            None => format!("{credentials}@{host}"),
        },
        None => rest.to_owned(),
    };
    let Some((base, query)) = rest.split_once('?') else {
        return format!("{scheme}://{rest}");
    };
    let query: Vec<String> = query
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((key, _)) if key.eq_ignore_ascii_case("password") => format!("{key}=***"),
            _ => pair.to_owned(),
        })
        .collect();
    format!("{scheme}://{base}?{}", query.join("&"))
}

/// A setting that could not be used; its message is the one line the program prints.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct SettingsError(pub String);

/// Where one setting lives: its file key; the flag and variable follow from it.
struct Setting {
    key: &'static str,
}

impl Setting {
    fn env(&self) -> String {
        format!("GATEHOUSE_{}", self.key.to_ascii_uppercase())
    }

    fn flag(&self) -> String {
        format!("--{}", self.key.replace('_', "-"))
    }

    fn invalid(&self, value: &str, reason: &str) -> SettingsError {
        SettingsError(format!(
            "invalid setting {} ({} / {}): {:?} {}",
            self.env(),
            self.flag(),
            self.key,
            value,
            reason
        ))
    }
}

const FILE_KEYS: &[&str] = &[
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
    "log",
    "log_format",
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
        let (s, log) = get("log", &args.log, "info");
        if tracing_subscriber::EnvFilter::try_new(&log).is_err() {
            return Err(s.invalid(&log, "is not a log filter (e.g. info, or gatehouse=debug)"));
        }
        let (s, v) = get("log_format", &args.log_format, "text");
        let log_format = match v.as_str() {
            "text" => LogFormat::Text,
            "json" => LogFormat::Json,
            _ => return Err(s.invalid(&v, "must be text or json")),
        };

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
            log,
            log_format,
        })
    }

    /// The path of the SQLite database file, when the URL names one.
    pub fn sqlite_path(&self) -> Option<PathBuf> {
        sqlite_path(self.database_url.as_str())
    }
}

/// `sqlite://gatehouse.db`, `sqlite:gatehouse.db` or `sqlite:///abs/path.db?mode=rwc` → the path;
/// `None` for PostgreSQL and for in-memory databases.
pub fn sqlite_path(url: &str) -> Option<PathBuf> {
    let rest = url.strip_prefix("sqlite:")?;
    let rest = rest.strip_prefix("//").unwrap_or(rest);
    let path = rest.split('?').next().unwrap_or_default();
    if path.is_empty() || path == ":memory:" {
        None
    } else {
        Some(PathBuf::from(path))
    }
}

fn read_file(path: &Path) -> Result<BTreeMap<String, String>, SettingsError> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        SettingsError(format!(
            "cannot read the settings file {} (GATEHOUSE_CONFIG / --config): {e}",
            path.display()
        ))
    })?;
    let table: toml::Table = toml::from_str(&text).map_err(|e| {
        let reason = e.to_string().replace('\n', " ");
        SettingsError(format!(
            "the settings file {} is not valid TOML: {reason}",
            path.display()
        ))
    })?;
    let mut values = BTreeMap::new();
    for (key, value) in table {
        if !FILE_KEYS.contains(&key.as_str()) {
            return Err(SettingsError(format!(
                "unknown setting {key:?} in {}: the keys are {}",
                path.display(),
                FILE_KEYS.join(", ")
            )));
        }
        let value = match value {
            toml::Value::String(s) => s,
            toml::Value::Integer(i) => i.to_string(),
            toml::Value::Boolean(b) => b.to_string(),
            toml::Value::Array(items) => items
                .iter()
                .map(|item| {
                    item.as_str().map(str::to_owned).ok_or_else(|| {
                        SettingsError(format!(
                            "setting {key} in {} must list strings",
                            path.display()
                        ))
                    })
                })
                .collect::<Result<Vec<_>, _>>()?
                .join(","),
            other => {
                return Err(SettingsError(format!(
                    "setting {key} in {} must be a string or a number, not {}",
                    path.display(),
                    other.type_str()
                )));
            }
        };
        values.insert(key, value);
    }
    Ok(values)
}

fn parse_addr(setting: &Setting, value: &str) -> Result<SocketAddr, SettingsError> {
    value
        .parse()
        .map_err(|_| setting.invalid(value, "is not an address such as 127.0.0.1:8080"))
}

/// Seconds (`86400`) or a number with a unit (`30s`, `5m`, `24h`, `30d`).
fn parse_duration(setting: &Setting, value: &str) -> Result<Duration, SettingsError> {
    let parsed = match value.trim().parse::<u64>() {
        Ok(seconds) => Ok(Duration::from_secs(seconds)),
        Err(_) => humantime::parse_duration(value.trim()),
    };
    match parsed {
        Ok(d) if d.is_zero() => Err(setting.invalid(value, "must be longer than zero")),
        Ok(d) if d > Duration::from_secs(10 * 365 * 86400) => {
            Err(setting.invalid(value, "must be at most ten years"))
        }
        Ok(d) => Ok(d),
        Err(_) => Err(setting.invalid(
            value,
            "is not a duration (seconds, or e.g. 30s, 5m, 24h, 30d)",
        )),
    }
}

/// A number of connections: 1 to a million.
fn parse_count(setting: &Setting, value: &str) -> Result<usize, SettingsError> {
    match value.trim().parse::<usize>() {
        Ok(n) if (1..=1_000_000).contains(&n) => Ok(n),
        _ => Err(setting.invalid(value, "must be a whole number from 1 to 1000000")),
    }
}

fn parse_choice(
    setting: &Setting,
    value: &str,
    (yes, no): (&str, &str),
) -> Result<bool, SettingsError> {
    match value.trim().to_ascii_lowercase().as_str() {
        v if v == yes => Ok(true),
        v if v == no => Ok(false),
        _ => Err(setting.invalid(value, &format!("must be {yes} or {no}"))),
    }
}

fn parse_cidrs(setting: &Setting, value: &str) -> Result<Vec<IpNet>, SettingsError> {
    value
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse::<IpNet>()
                .or_else(|_| s.parse::<std::net::IpAddr>().map(IpNet::from))
                .map_err(|_| setting.invalid(s, "is not an IP address or CIDR such as 10.0.0.0/8"))
        })
        .collect()
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
