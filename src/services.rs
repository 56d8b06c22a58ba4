//! The services over one database, built once from the settings: what `serve` runs and what the
//! CLI commands act through. Start-up is this one path: the database and its migrations, the
//! master key, the signing keys, the revocations, then the flows.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;

use crate::auth::catalog::CatalogCell;
use crate::auth::directory::Directory;
use crate::auth::keys::Keyring;
use crate::auth::live::LiveSessions;
use crate::auth::password::PasswordHasher;
use crate::auth::tokens::{LEEWAY, Tokens};
use crate::auth::{AuthParts, AuthSettings, LinkSettings};
use crate::clock::Clock;
use crate::config::{MasterKey, Settings};
use crate::crm::Contacts;
use crate::crypto::Secrets;
use crate::flows::AuthService;
use crate::mail::templates::Templates;
use crate::mail::transport::Transport;
use crate::mail::{LinkLifetimes, Mailer, MailerParts};
use crate::metrics::Metrics;
use crate::private_files;
use crate::store::Store;

/// Kept in memory past the longest an access token can live: a token minted by a refresh that
/// raced its session's revocation is a few milliseconds younger than the revocation.
const REVOCATION_MARGIN: Duration = Duration::from_secs(60);

pub struct Services {
    pub store: Store,
    pub clock: Clock,
    pub keyring: Arc<Keyring>,
    pub live: Arc<LiveSessions>,
    pub directory: Arc<Directory>,
    pub metrics: Arc<Metrics>,
    pub auth: AuthService,
    pub contacts: Contacts,
    pub mailer: Arc<Mailer>,
    pub transport: Arc<Transport>,
    mail_retry_max: Duration,
    mail_lease: Duration,
    /// The `iss` of logout tokens.
    issuer: String,
}

/// What opening the services may make. The server and `migrate` make a missing database and
/// master key; every other command works on what is there, so that one run from the wrong
/// folder, or before a restore is complete, cannot leave a fresh database or a wrong key behind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Opening {
    Create,
    Existing,
}

impl Services {
    pub async fn open(
        settings: &Settings,
        clock: Clock,
        opening: Opening,
    ) -> anyhow::Result<Services> {
        let store = open_store(settings, opening).await?;
        let secrets = Arc::new(Secrets::new(&master_key(settings, &store, opening).await?));
        // A retired key verifies (and is published) as long as anything it signed can be valid.
        let retain = settings.access_token_ttl.max(settings.refresh_token_ttl) + LEEWAY;
        let wanted = Keyring::wanted(
            settings.access_token_alg,
            settings.provider_issuer().is_some(),
        );
        let keyring = Arc::new(
            Keyring::load(
                store.clone(),
                secrets.clone(),
                clock.clone(),
                retain,
                wanted,
            )
            .await?,
        );
        let catalog = Arc::new(
            CatalogCell::load(&store, settings.resources.clone())
                .await
                .context("cannot read the declared resources")?,
        );
        let tokens = Tokens::new(
            keyring.clone(),
            clock.clone(),
            &settings.issuer,
            &settings.audience,
            settings.access_token_ttl,
            settings.access_token_alg,
        )
        .with_resources(&settings.oauth_resources, catalog.clone())
        .with_former_issuer(settings.former_issuer.as_deref());
        let horizon = settings.access_token_ttl + LEEWAY + REVOCATION_MARGIN;
        let live = Arc::new(
            LiveSessions::load(&store, clock.clone(), horizon)
                .await
                .context("cannot read the revoked sessions")?,
        );
        let directory = Arc::new(Directory::new(store.clone(), clock.clone()));
        let metrics = Arc::new(Metrics::new());
        let (mailer, transport) = mail(settings, secrets.clone(), metrics.clone())?;
        let providers = identity_providers(settings.identity_providers.clone(), &store).await?;
        let auth = AuthService::new(
            AuthParts {
                store: store.clone(),
                clock: clock.clone(),
                tokens,
                secrets: secrets.clone(),
                live: live.clone(),
                directory: directory.clone(),
                hasher: PasswordHasher::new(metrics.clone()).with_secrets(secrets.clone()),
                metrics: metrics.clone(),
                webauthn: relying_party(settings)?.map(Arc::new),
                mailer: mailer.clone(),
                providers,
                catalog,
            },
            AuthSettings {
                rate_limit: settings.rate_limit,
                registration_open: settings.registration_open,
                audit_retention: settings.audit_retention,
                refresh_ttl: settings.refresh_token_ttl,
                temp_ttl: settings.temp_token_ttl,
                reuse_grace: settings.refresh_reuse_grace,
                links: LinkSettings {
                    reset_ttl: settings.mail.reset_token_ttl,
                    verify_ttl: settings.mail.verify_token_ttl,
                    invite_ttl: settings.mail.invite_token_ttl,
                    require_verified_email: settings.mail.require_verified_email,
                },
                client_registration: settings.client_registration,
                public_url: settings.public_url.clone(),
            },
        );
        let contacts = Contacts::new(store.clone(), secrets, clock.clone());
        Ok(Services {
            store,
            clock,
            keyring,
            live,
            directory,
            metrics,
            auth,
            contacts,
            mailer,
            transport,
            mail_retry_max: settings.mail.retry_max,
            mail_lease: crate::mail::delivery::lease(settings.mail.smtp_timeout),
            issuer: settings.issuer.clone(),
        })
    }
}

/// The identity providers of the providers file (docs/api.md §14), each `org` checked against the
/// database: a provider naming an organisation that does not exist stops the start, in one line
/// naming the provider (its people would otherwise sign in and join nothing, silently).
async fn identity_providers(
    configs: Vec<crate::upstream::ProviderConfig>,
    store: &Store,
) -> anyhow::Result<crate::upstream::Providers> {
    for config in &configs {
        if let Some(slug) = &config.org
            && store.org_id_by_slug(slug).await?.is_none()
        {
            anyhow::bail!(
                "identity provider {:?}: its org {slug:?} is no organisation's slug (create it first, or remove `org`)",
                config.id
            );
        }
    }
    Ok(crate::upstream::Providers::new(configs))
}

/// The WebAuthn relying party of the settings (checked there already: `config::webauthn`), or
/// `None` when passkeys are off.
pub(crate) fn relying_party(settings: &Settings) -> anyhow::Result<Option<webauthn_rs::Webauthn>> {
    use webauthn_rs::prelude::{Url, WebauthnBuilder};
    // Why not is said at start (`startup::passkeys`).
    let Some(rp) = &settings.webauthn else {
        return Ok(None);
    };
    let origins = rp
        .origins
        .iter()
        .map(|o| Url::parse(o))
        .collect::<Result<Vec<_>, _>>()
        .context("GATEHOUSE_WEBAUTHN_ORIGINS")?;
    let (first, rest) = origins
        .split_first()
        .context("GATEHOUSE_WEBAUTHN_ORIGINS is empty")?;
    let mut builder = WebauthnBuilder::new(&rp.id, first)
        .context("GATEHOUSE_WEBAUTHN_RP_ID does not suit GATEHOUSE_WEBAUTHN_ORIGINS")?
        .rp_name("Gatehouse")
        .timeout(crate::auth::passkeys::CEREMONY_TTL);
    for origin in rest {
        builder = builder.append_allowed_origin(origin);
    }
    Ok(Some(builder.build().context("the WebAuthn relying party")?))
}

/// The mailer (templates, sender, links) and the transport its mail goes out by.
pub(crate) fn mail(
    settings: &Settings,
    secrets: Arc<Secrets>,
    metrics: Arc<Metrics>,
) -> anyhow::Result<(Arc<Mailer>, Arc<Transport>)> {
    let mail = &settings.mail;
    let from = mail.from.parse().map_err(|_| {
        anyhow::anyhow!(
            "GATEHOUSE_MAIL_FROM ({}) is not a mailbox, e.g. Gatehouse <no-reply@example.com>",
            mail.from
        )
    })?;
    let templates = Templates::load(mail.templates.as_deref())?;
    let transport = Transport::new(mail)?;
    let mailer = Mailer::new(MailerParts {
        templates,
        from,
        public_url: settings.public_url.clone(),
        product_name: mail.product_name.clone(),
        lifetimes: LinkLifetimes {
            reset: mail.reset_token_ttl,
            verify: mail.verify_token_ttl,
            invite: mail.invite_token_ttl,
        },
        secrets,
        metrics,
    });
    Ok((Arc::new(mailer), Arc::new(transport)))
}

/// Connects and brings the schema up to date.
pub async fn open_store(settings: &Settings, opening: Opening) -> anyhow::Result<Store> {
    if let Some(path) = settings.sqlite_path() {
        match opening {
            Opening::Create => private_files::create_owner_only(&path)
                .with_context(|| format!("cannot create the database file {}", path.display()))?,
            Opening::Existing if !path.exists() => anyhow::bail!(
                "there is no database at {}: run this where the service keeps its data, or set \
                 GATEHOUSE_DATABASE_URL (`gatehouse serve` or `gatehouse migrate` creates one)",
                absolute(&path).display()
            ),
            Opening::Existing => {}
        }
    }
    let store = connect_store(settings).await?;
    store
        .migrate()
        .await
        .context("cannot apply the database migrations")?;
    Ok(store)
}

/// Connects, and nothing more (`gatehouse check`: no schema change).
pub async fn connect_store(settings: &Settings) -> anyhow::Result<Store> {
    Store::connect(settings.database_url.as_str())
        .await
        .with_context(|| format!("cannot open the database {}", settings.database_url))
}

/// The master key from the settings, or from `gatehouse.master.key` beside the SQLite database.
/// A key is made (mode 0600) only when it may be (`Opening::Create`) and only for a database that
/// holds nothing sealed yet: beside one that does, a new key could open none of it, and would sit
/// where the right one must be restored.
pub async fn master_key(
    settings: &Settings,
    store: &Store,
    opening: Opening,
) -> anyhow::Result<MasterKey> {
    if let Some(key) = &settings.master_key {
        return Ok(key.clone());
    }
    let db = settings
        .sqlite_path()
        .context("GATEHOUSE_MASTER_KEY is required unless the database is a SQLite file")?;
    let path = key_file_path(&db);
    if let Some(key) = read_key_file(&path)? {
        return Ok(key);
    }
    let shown = absolute(&path);
    if store.holds_sealed_data().await? {
        anyhow::bail!(
            "no master key file at {}: restore it from your backup (the database's secrets are \
             sealed under the key it was made with), or set GATEHOUSE_MASTER_KEY",
            shown.display()
        );
    }
    if opening == Opening::Existing {
        anyhow::bail!(
            "no master key file at {}: `gatehouse serve` or `gatehouse migrate` makes one for a new \
             database",
            shown.display()
        );
    }
    let key = MasterKey::generate();
    match create_key_file(&path, &key) {
        Ok(()) => {
            tracing::warn!(
                path = %shown.display(),
                "generated a new master key: back it up with the database, which cannot be read without it"
            );
            Ok(key)
        }
        // Another process created it first: use theirs.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            read_key_file(&path)?.context("the master key file vanished")
        }
        Err(e) => {
            Err(e).with_context(|| format!("cannot create the master key file {}", shown.display()))
        }
    }
}

/// A path as an operator can find it, whatever folder the command ran in.
pub fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_owned())
}

pub fn key_file_path(db: &Path) -> PathBuf {
    db.parent()
        .unwrap_or(Path::new(""))
        .join("gatehouse.master.key")
}

pub fn read_key_file(path: &Path) -> anyhow::Result<Option<MasterKey>> {
    match std::fs::read_to_string(path) {
        Ok(text) => MasterKey::parse(&text)
            .map(Some)
            .map_err(|reason| anyhow::anyhow!("the master key file {} {reason}", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => {
            Err(e).with_context(|| format!("cannot read the master key file {}", path.display()))
        }
    }
}

fn create_key_file(path: &Path, key: &MasterKey) -> std::io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path)?;
    writeln!(file, "{}", key.encode())?;
    file.sync_all()
}

impl Services {
    /// The outbox's delivery worker over these services.
    pub fn delivery(&self) -> crate::mail::delivery::Delivery {
        crate::mail::delivery::Delivery {
            store: self.store.clone(),
            clock: self.clock.clone(),
            mailer: self.mailer.clone(),
            transport: self.transport.clone(),
            metrics: self.metrics.clone(),
            retry_max: self.mail_retry_max,
            lease: self.mail_lease,
        }
    }

    /// The back-channel logout worker over these services.
    pub fn backchannel(&self) -> crate::backchannel::Backchannel {
        crate::backchannel::Backchannel::new(
            self.store.clone(),
            self.clock.clone(),
            self.keyring.clone(),
            self.metrics.clone(),
            self.issuer.clone(),
        )
    }
}
