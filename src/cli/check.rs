//! `gatehouse check`: reads what `serve` would read (every setting, the access rules, the mail
//! templates and CA file, the database and its schema, the master key) and prints what it found,
//! one line each, without making or changing anything: no database, key, folder or migration.
//! It fails with the one-line error `serve` would fail with.

use std::sync::Arc;

use anyhow::Context as _;

use crate::auth::keys::Keyring;
use crate::config::{MailDelivery, Settings};
use crate::crypto::Secrets;
use crate::mail::templates::Templates;
use crate::metrics::Metrics;
use crate::services::{self, absolute, connect_store, key_file_path, read_key_file};
use crate::startup;
use crate::store::Store;

fn found(what: &str, line: impl std::fmt::Display) {
    println!("{what:<14} {line}");
}

pub(super) async fn check(settings: &Settings, config: Option<&str>) -> anyhow::Result<()> {
    found(
        "settings",
        match config {
            Some(file) => format!("valid (flags, environment, and the file {file})"),
            None => "valid (flags, environment and defaults; no --config file)".to_owned(),
        },
    );
    found(
        "listen",
        format!("{} (not tried: a server may hold it)", settings.listen),
    );
    found(
        "pages",
        startup::pages(settings).trim_start_matches("pages at "),
    );
    found(
        "issuer",
        format!(
            "{} (audience {}; access tokens signed {})",
            settings.issuer, settings.audience, settings.access_token_alg
        ),
    );
    services::relying_party(settings)?;
    found(
        "passkeys",
        startup::passkeys(settings).unwrap_or_else(|off| off),
    );
    found(
        "provider",
        startup::provider(settings).unwrap_or_else(|off| off),
    );
    found(
        "access rules",
        match settings.access_rules.len() {
            0 => "none (GATEHOUSE_ACCESS_RULES not set)".to_owned(),
            n => format!("{n} rule(s) (GATEHOUSE_ACCESS_RULES)"),
        },
    );
    identity_providers(settings);
    for r in &settings.resources {
        let scopes: Vec<&str> = r.scopes.iter().map(|s| s.name.as_str()).collect();
        found(
            "resource",
            format!(
                "{} ({:?}, {}): {}",
                r.id,
                r.name,
                r.audience.as_deref().unwrap_or("GATEHOUSE_AUDIENCE"),
                scopes.join(" ")
            ),
        );
    }
    mail(settings)?;
    let Some((store, fresh)) = database(settings).await? else {
        return Ok(());
    };
    master_key(settings, &store, fresh).await?;
    found(
        "accounts",
        if !fresh && store.has_accounts().await? {
            "at least one".to_owned()
        } else {
            startup::no_accounts(settings)
        },
    );
    store.close().await;
    println!("gatehouse: ready to serve");
    Ok(())
}

/// The providers of GATEHOUSE_IDENTITY_PROVIDERS, one line each; their discovery documents are
/// not fetched here (a provider out of reach does not stop `serve` either).
fn identity_providers(settings: &Settings) {
    let providers = &settings.identity_providers;
    if providers.is_empty() {
        found(
            "upstream",
            "none (GATEHOUSE_IDENTITY_PROVIDERS not set or empty)",
        );
        return;
    }
    for p in providers {
        let mut line = format!("{} ({:?}) at {}", p.id, p.name, p.issuer);
        if !p.domains.is_empty() {
            line.push_str(&format!(", required for {}", p.domains.join(", ")));
        }
        if let Some(org) = &p.org {
            line.push_str(&format!(", joins organisation {org}"));
        }
        if p.signup {
            line.push_str(", signup on");
        }
        found("upstream", line);
        // What the operator registers at the provider: the one thing they must copy from here.
        let base = settings.public_url.trim_end_matches('/');
        found(
            "",
            format!(
                "register at {} the redirect URI {base}/auth/providers/{}/callback",
                p.id, p.id
            ),
        );
    }
}

/// The mailer as the server builds it (sender, templates, SMTP URL and CA certificates).
fn mail(settings: &Settings) -> anyhow::Result<()> {
    let mail = &settings.mail;
    // Sealed mails are not opened here: a throw-away key does for building the mailer.
    let secrets = Arc::new(Secrets::new(&crate::config::MasterKey::generate()));
    let (_, transport) = services::mail(settings, secrets, Arc::new(Metrics::new()))?;
    let mut line = transport.describe();
    if let MailDelivery::Smtp(_) = mail.delivery
        && !mail.smtp_ca.is_empty()
    {
        line.push_str(&format!(
            ", trusting {} CA certificate(s) of GATEHOUSE_SMTP_CA_FILE",
            mail.smtp_ca.len()
        ));
    }
    found("mail", format!("{line}, from {}", mail.from));
    found(
        "mail templates",
        match &mail.templates {
            None => "the built-in ones".to_owned(),
            Some(dir) => match Templates::replaced(dir).as_slice() {
                [] => format!(
                    "the built-in ones ({} holds none of their names)",
                    dir.display()
                ),
                names => format!("{} replaced from {}", names.join(", "), dir.display()),
            },
        },
    );
    Ok(())
}

/// The database, reached, and its schema against this binary's migrations. `None`: a SQLite
/// database `serve` would create.
async fn database(settings: &Settings) -> anyhow::Result<Option<(Store, bool)>> {
    if let Some(path) = settings.sqlite_path()
        && !path.exists()
    {
        let folder = absolute(&path)
            .parent()
            .map(|p| p.to_owned())
            .unwrap_or_default();
        if !folder.is_dir() {
            anyhow::bail!(
                "cannot create the database file {}: the folder {} does not exist",
                absolute(&path).display(),
                folder.display()
            );
        }
        found(
            "database",
            format!(
                "none yet at {}: `gatehouse serve` (or `migrate`) makes it, and its master key file",
                absolute(&path).display()
            ),
        );
        if settings.master_key.is_some() {
            found("master key", "GATEHOUSE_MASTER_KEY");
        }
        println!("gatehouse: ready to serve (a new database)");
        return Ok(None);
    }
    let store = connect_store(settings).await?;
    store.ping().await.context("the database does not answer")?;
    let pending = store.pending_migrations().await?;
    let schema = match pending.len() {
        0 => "schema up to date".to_owned(),
        n => format!("{n} migration(s) to apply (`gatehouse serve` or `migrate` applies them)"),
    };
    found(
        "database",
        format!("{} reached; {schema}", settings.database_url),
    );
    // No migration applied: an empty database, whose tables `serve` makes.
    let fresh = pending.len() == crate::store::MIGRATIONS.len();
    Ok(Some((store, fresh)))
}

/// The master key, and that it opens the database's signing key, as `serve` needs it to.
async fn master_key(settings: &Settings, store: &Store, fresh: bool) -> anyhow::Result<()> {
    let (key, origin) = match &settings.master_key {
        Some(key) => (key.clone(), "GATEHOUSE_MASTER_KEY".to_owned()),
        None => {
            let db = settings
                .sqlite_path()
                .context("GATEHOUSE_MASTER_KEY is required unless the database is a SQLite file")?;
            let path = absolute(&key_file_path(&db));
            match read_key_file(&path)? {
                Some(key) => (key, format!("the file {}", path.display())),
                // As `serve` decides: beside sealed data, the restore error; else a new key.
                None if !fresh && store.holds_sealed_data().await? => {
                    services::master_key(settings, store, services::Opening::Existing).await?;
                    anyhow::bail!("no master key file at {}", path.display())
                }
                None => {
                    found(
                        "master key",
                        format!("none yet at {}: `gatehouse serve` makes it", path.display()),
                    );
                    return Ok(());
                }
            }
        }
    };
    let line = if fresh {
        format!("{origin}; no signing key yet (`serve` makes one)")
    } else {
        let kids = Keyring::active_kids(store, &Secrets::new(&key)).await?;
        if kids.is_empty() {
            format!("{origin}; no signing key yet (`serve` makes one)")
        } else {
            let named: Vec<String> = kids
                .iter()
                .map(|(alg, kid)| format!("{alg} {kid}"))
                .collect();
            let missing = if kids.len() < crate::crypto::SigningAlg::ALL.len() {
                " (`serve` makes the other algorithms' keys)"
            } else {
                ""
            };
            format!(
                "{origin}; it opens the active signing keys {}{missing}",
                named.join(", ")
            )
        }
    };
    found("master key", line);
    Ok(())
}
