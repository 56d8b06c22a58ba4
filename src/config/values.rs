//! The values settings take, each parsed and reported the same way whatever its source: the
//! master key, the database URL (masked when shown), durations, counts, choices, addresses.

use std::collections::BTreeMap;
use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use ipnet::IpNet;

use super::FILE_KEYS;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    Text,
    Json,
}

/// A database URL. It may carry a password, so its `Debug` form masks that.
#[derive(Clone, PartialEq, Eq)]
pub struct DatabaseUrl(pub(super) String);

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
pub(super) struct Setting {
    pub(super) key: &'static str,
}

impl Setting {
    pub(super) fn env(&self) -> String {
        format!("GATEHOUSE_{}", self.key.to_ascii_uppercase())
    }

    pub(super) fn flag(&self) -> String {
        format!("--{}", self.key.replace('_', "-"))
    }

    pub(super) fn invalid(&self, value: &str, reason: &str) -> SettingsError {
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

pub(super) fn read_file(path: &Path) -> Result<BTreeMap<String, String>, SettingsError> {
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

pub(super) fn parse_addr(setting: &Setting, value: &str) -> Result<SocketAddr, SettingsError> {
    value
        .parse()
        .map_err(|_| setting.invalid(value, "is not an address such as 127.0.0.1:8080"))
}

/// Seconds (`86400`) or a number with a unit (`30s`, `5m`, `24h`, `30d`).
pub(super) fn parse_duration(setting: &Setting, value: &str) -> Result<Duration, SettingsError> {
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
pub(super) fn parse_count(setting: &Setting, value: &str) -> Result<usize, SettingsError> {
    match value.trim().parse::<usize>() {
        Ok(n) if (1..=1_000_000).contains(&n) => Ok(n),
        _ => Err(setting.invalid(value, "must be a whole number from 1 to 1000000")),
    }
}

pub(super) fn parse_choice(
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

pub(super) fn parse_cidrs(setting: &Setting, value: &str) -> Result<Vec<IpNet>, SettingsError> {
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
