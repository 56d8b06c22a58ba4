//! Start-up: open the database, apply migrations, load the master key and the signing keys, build
//! the services, bind the listener. Tests build the same `Application` on port 0.

use std::future::Future;
use std::io::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use tokio::net::TcpListener;

use crate::auth::crypto::Secrets;
use crate::auth::live::{self, LiveSessions};
use crate::auth::service::{AuthService, AuthSettings};
use crate::auth::tokens::{Keyring, LEEWAY_SECONDS, Tokens};
use crate::config::{MasterKey, Settings};
use crate::crm::Contacts;
use crate::http::{self, AppState, Inner};
use crate::metrics::Metrics;
use crate::private_files;
use crate::server;
use crate::store::Store;

/// How often each instance re-reads the signing keys, so a rotation done elsewhere (the CLI,
/// another instance) is signed with and published here within this time.
pub const KEY_RELOAD_INTERVAL: Duration = Duration::from_secs(5);

/// How often lapsed sessions, consumed refresh-token records and expired challenges are deleted.
pub const HOUSEKEEPING_INTERVAL: Duration = Duration::from_secs(600);

/// Kept in memory past the longest an access token can live: a token minted by a refresh that
/// raced its session's revocation is a few milliseconds younger than the revocation.
const REVOCATION_MARGIN: Duration = Duration::from_secs(60);

/// The services over one database, for the server and for the CLI commands.
pub struct Services {
    pub store: Store,
    pub secrets: Arc<Secrets>,
    pub keyring: Arc<Keyring>,
    pub live: Arc<LiveSessions>,
    pub metrics: Arc<Metrics>,
    pub auth: AuthService,
    pub contacts: Contacts,
}

impl Services {
    pub async fn open(settings: &Settings) -> anyhow::Result<Services> {
        let store = open_store(settings).await?;
        let master_key = master_key(settings)?;
        let secrets = Arc::new(Secrets::new(&master_key));
        // A retired key verifies (and is published) as long as anything it signed can be valid.
        let retain = settings.access_token_ttl.max(settings.refresh_token_ttl)
            + Duration::from_secs(LEEWAY_SECONDS);
        let keyring = Arc::new(Keyring::load(store.clone(), secrets.clone(), retain).await?);
        let tokens = Tokens::new(
            keyring.clone(),
            &settings.issuer,
            &settings.audience,
            settings.access_token_ttl,
        );
        let horizon =
            settings.access_token_ttl + Duration::from_secs(LEEWAY_SECONDS) + REVOCATION_MARGIN;
        let live = Arc::new(
            LiveSessions::load(&store, horizon)
                .await
                .context("cannot read the revoked sessions")?,
        );
        let metrics = Arc::new(Metrics::new());
        let auth = AuthService::new(
            store.clone(),
            tokens,
            secrets.clone(),
            live.clone(),
            metrics.clone(),
            AuthSettings {
                rate_limit: settings.rate_limit,
                audit_retention: settings.audit_retention,
                refresh_ttl: settings.refresh_token_ttl,
                temp_ttl: settings.temp_token_ttl,
                reuse_grace: settings.refresh_reuse_grace,
            },
        );
        let contacts = Contacts::new(store.clone(), secrets.clone());
        Ok(Services {
            store,
            secrets,
            keyring,
            live,
            metrics,
            auth,
            contacts,
        })
    }
}

/// Connects and brings the schema up to date.
pub async fn open_store(settings: &Settings) -> anyhow::Result<Store> {
    if let Some(path) = settings.sqlite_path() {
        private_files::create_owner_only(&path)
            .with_context(|| format!("cannot create the database file {}", path.display()))?;
    }
    let store = Store::connect(settings.database_url.as_str())
        .await
        .with_context(|| format!("cannot open the database {}", settings.database_url))?;
    store
        .migrate()
        .await
        .context("cannot apply the database migrations")?;
    Ok(store)
}

/// The master key from the settings, or from `gatehouse.master.key` beside the SQLite database,
/// created there (mode 0600) on first start.
fn master_key(settings: &Settings) -> anyhow::Result<MasterKey> {
    if let Some(key) = &settings.master_key {
        return Ok(key.clone());
    }
    let db = settings
        .sqlite_path()
        .context("GATEHOUSE_MASTER_KEY is required unless the database is a SQLite file")?;
    let path = key_file_path(&db);
    match read_key_file(&path)? {
        Some(key) => Ok(key),
        None => {
            let key = MasterKey::generate();
            match create_key_file(&path, &key) {
                Ok(()) => {
                    tracing::warn!(
                        path = %path.display(),
                        "generated a new master key: back it up with the database, which cannot be read without it"
                    );
                    Ok(key)
                }
                // Another process created it first: use theirs.
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    read_key_file(&path)?.context("the master key file vanished")
                }
                Err(e) => Err(e).with_context(|| {
                    format!("cannot create the master key file {}", path.display())
                }),
            }
        }
    }
}

fn key_file_path(db: &Path) -> PathBuf {
    db.parent()
        .unwrap_or(Path::new(""))
        .join("gatehouse.master.key")
}

fn read_key_file(path: &Path) -> anyhow::Result<Option<MasterKey>> {
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

/// The service, bound and ready to run.
pub struct Application {
    listener: TcpListener,
    metrics_listener: Option<TcpListener>,
    state: AppState,
    keyring: Arc<Keyring>,
    live: Arc<LiveSessions>,
    limits: server::Limits,
}

impl Application {
    pub async fn build(settings: &Settings) -> anyhow::Result<Application> {
        let services = Services::open(settings).await?;
        if let Some(db) = settings.sqlite_path() {
            private_files::warn_if_shared(&db, "database file");
            if settings.master_key.is_none() {
                private_files::warn_if_shared(&key_file_path(&db), "master key file");
            }
        }
        let listener = TcpListener::bind(settings.listen)
            .await
            .with_context(|| format!("cannot listen on {}", settings.listen))?;
        let metrics_listener = match settings.metrics_listen {
            Some(addr) => Some(
                TcpListener::bind(addr)
                    .await
                    .with_context(|| format!("cannot listen for metrics on {addr}"))?,
            ),
            None => None,
        };
        let state = AppState::new(Inner {
            auth: services.auth,
            contacts: services.contacts,
            store: services.store,
            trusted_proxies: settings.trusted_proxies.clone(),
            registration_open: settings.registration_open,
            body_timeout: settings.body_timeout,
            docs: settings.docs,
            metrics: services.metrics,
        });
        Ok(Application {
            listener,
            metrics_listener,
            state,
            keyring: services.keyring,
            live: services.live,
            limits: server::Limits {
                header_timeout: settings.header_timeout,
                write_timeout: settings.write_timeout,
                connection_lifetime: settings.connection_lifetime,
                max_connections: settings.max_connections,
                max_connections_per_client: settings.max_connections_per_client,
                trusted_proxies: settings.trusted_proxies.clone(),
                shutdown_timeout: settings.shutdown_timeout,
            },
        })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.listener
            .local_addr()
            .expect("a bound listener has an address")
    }

    /// The bound address of the metrics listener, if one is configured.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics_listener
            .as_ref()
            .and_then(|l| l.local_addr().ok())
    }

    pub fn state(&self) -> &AppState {
        &self.state
    }

    /// Serves until `shutdown` completes, then finishes the requests in flight.
    pub async fn run_until(self, shutdown: impl Future<Output = ()>) -> anyhow::Result<()> {
        let mut background = self.spawn_background();
        let addr = self.local_addr();
        tracing::info!("listening on http://{addr}");
        if let Some(listener) = self.metrics_listener {
            if let Ok(addr) = listener.local_addr() {
                tracing::info!("metrics on http://{addr}/metrics");
            }
            let router = crate::metrics::router(self.state.clone());
            background.push(tokio::spawn(async move {
                if let Err(error) = axum::serve(listener, router).await {
                    tracing::error!(error = %error, "the metrics listener failed");
                }
            }));
        }
        let router = http::router(self.state.clone());
        server::serve(self.listener, router, self.limits, shutdown).await;
        for task in background {
            task.abort();
        }
        // Uses seen since the last flush would otherwise be lost with the process.
        if let Err(error) = self.live.flush_activity(&self.state.store).await {
            tracing::warn!(error = %error, "cannot record the sessions' last use");
        }
        self.state.store.close().await;
        Ok(())
    }
}

impl Application {
    /// The periodic work of an instance: signing keys and revocations made elsewhere are read,
    /// session use is written, and old rows are deleted.
    fn spawn_background(&self) -> Vec<tokio::task::JoinHandle<()>> {
        let keyring = self.keyring.clone();
        let reload = every(KEY_RELOAD_INTERVAL, move || {
            let keyring = keyring.clone();
            async move {
                if let Err(error) = keyring.reload().await {
                    tracing::warn!(error = %error, "cannot reload the signing keys");
                }
            }
        });
        let (live, store) = (self.live.clone(), self.state.store.clone());
        // `sync` logs a failure once, when it starts, not twice a second during an outage.
        let revocations = every(live::SYNC_INTERVAL, move || {
            let (live, store) = (live.clone(), store.clone());
            async move {
                let _ = live.sync(&store).await;
            }
        });
        let (live, store) = (self.live.clone(), self.state.store.clone());
        let activity = every(live::ACTIVITY_FLUSH_INTERVAL, move || {
            let (live, store) = (live.clone(), store.clone());
            async move {
                if let Err(error) = live.flush_activity(&store).await {
                    tracing::debug!(error = %error, "cannot record the sessions' last use yet");
                }
            }
        });
        let state = self.state.clone();
        let housekeeping = every(HOUSEKEEPING_INTERVAL, move || {
            let state = state.clone();
            async move {
                match state.auth.housekeep(crate::store::now_ms()).await {
                    Ok(purged) => tracing::debug!(?purged, "housekeeping done"),
                    Err(error) => tracing::warn!(error = %error, "housekeeping failed"),
                }
            }
        });
        vec![reload, revocations, activity, housekeeping]
    }
}

/// Runs `job` every `period`, the first time one period from now; a slow run delays the next
/// rather than piling runs up.
fn every<F, Fut>(period: Duration, job: F) -> tokio::task::JoinHandle<()>
where
    F: Fn() -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(period);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tick.tick().await;
        loop {
            tick.tick().await;
            job().await;
        }
    })
}

/// Completes on SIGINT or SIGTERM.
pub async fn shutdown_signal() {
    let interrupt = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = interrupt => {},
        () = terminate => {},
    }
    tracing::info!("shutting down: finishing the requests in flight");
}
