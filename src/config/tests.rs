//! How settings are read: sources, defaults and the errors of each.

use std::collections::BTreeMap;

use super::values::parse_duration;
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
    let with_url = |issuer: Option<&str>| SettingsArgs {
        public_url: Some("https://login.example.com/".into()),
        issuer: issuer.map(str::to_owned),
        ..SettingsArgs::default()
    };
    assert_eq!(
        resolve(with_url(None)).unwrap().issuer,
        "https://login.example.com"
    );
    assert_eq!(resolve(with_url(Some("urn:x"))).unwrap().issuer, "urn:x");
    assert!(resolve(with_url(Some(" "))).is_err());
    // Refresh tokens of before the public URL became the default issuer still refresh; nothing
    // else is accepted when the issuer is set, or is that old default still.
    assert_eq!(s.former_issuer, None);
    assert_eq!(
        resolve(with_url(None)).unwrap().former_issuer.as_deref(),
        Some("gatehouse")
    );
    assert_eq!(
        resolve(with_url(Some("urn:x"))).unwrap().former_issuer,
        None
    );
    // The OpenID provider is on only with an absolute http(s) issuer.
    assert_eq!(s.provider_issuer(), None);
    assert_eq!(
        resolve(with_url(None)).unwrap().provider_issuer(),
        Some("https://login.example.com")
    );
    for off in [
        "urn:x",
        "login.example.com",
        "ftp://x.example",
        "https://x.example/#f",
    ] {
        assert_eq!(
            resolve(with_url(Some(off))).unwrap().provider_issuer(),
            None,
            "{off}"
        );
    }
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

/// Every setting as `--help` shows it (flag, variable, `[default: …]`), as a settings file names it
/// (`FILE_KEYS`), and as the book's two tables list it (docs/guide/settings.md, docs/api.md §4):
/// the same set, the same names, and the same default wherever a table gives one plain value.
#[test]
fn the_books_tables_are_the_settings() {
    use clap::Args as _;
    let command = SettingsArgs::augment_args(clap::Command::new("settings"));
    let guide = include_str!("../../docs/guide/settings.md");
    let reference = include_str!("../../docs/api.md");
    // | `GATEHOUSE_X` | `--x` / `x` | default | meaning |  and  | `GATEHOUSE_X` | default | meaning |
    let rows = |text: &'static str| -> BTreeMap<String, Vec<String>> {
        text.lines()
            .filter(|l| l.starts_with("| `GATEHOUSE_"))
            .map(|l| {
                let cells: Vec<String> = l.split(" | ").map(|c| c.trim().to_owned()).collect();
                (cells[0].trim_matches(['|', ' ', '`']).to_owned(), cells)
            })
            .collect()
    };
    let (guide, reference) = (rows(guide), rows(reference));
    // A default cell that is one plain value (`24h`), not a sentence.
    let plain = |cell: &str| {
        let inner = cell.strip_prefix('`')?.strip_suffix('`')?;
        (!inner.contains('`')).then(|| inner.to_owned())
    };
    let mut named = Vec::new();
    let mut wrong = Vec::new();
    for arg in command.get_arguments() {
        let (Some(long), Some(env)) = (arg.get_long(), arg.get_env()) else {
            continue;
        };
        let env = env.to_string_lossy().into_owned();
        let key = long.replace('-', "_");
        if key == "config" {
            continue;
        }
        named.push(key.clone());
        if !FILE_KEYS.contains(&key.as_str()) {
            wrong.push(format!("{key} is not a file key"));
        }
        let help = arg.get_help().map(|h| h.to_string()).unwrap_or_default();
        let default = help
            .split("[default: ")
            .nth(1)
            .and_then(|rest| rest.split(']').next())
            .map(str::to_owned);
        let mut cells = Vec::new();
        match guide.get(&env) {
            None => wrong.push(format!("{env} is not in docs/guide/settings.md")),
            Some(row) if row[1] != format!("`--{long}` / `{key}`") => {
                wrong.push(format!("settings.md names {env} {}", row[1]));
            }
            Some(row) => cells.push(("settings.md", &row[2])),
        }
        match reference.get(&env) {
            None => wrong.push(format!("{env} is not in docs/api.md")),
            Some(row) => cells.push(("api.md", &row[1])),
        }
        for (book, cell) in cells {
            if let (Some(shown), Some(written)) = (&default, plain(cell)) {
                if shown != &written {
                    wrong.push(format!("{env}: --help says {shown}, {book} says {written}"));
                }
            }
        }
    }
    for (book, table) in [("settings.md", &guide), ("api.md", &reference)] {
        for env in table.keys() {
            let key = env.trim_start_matches("GATEHOUSE_").to_ascii_lowercase();
            if !(named.contains(&key) || key == "config") {
                wrong.push(format!("{book} lists {env}, which is not a setting"));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
