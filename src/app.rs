//! The running service: the services over the database, the listeners, the background work of an
//! instance. Tests build the same `Application` on port 0, with a clock they can move.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use tokio::net::TcpListener;
use uuid::Uuid;

use crate::auth::audit::Operator;
use crate::auth::live;
use crate::clock::Clock;
use crate::config::Settings;
use crate::domain::{Email, FullName, Role};
use crate::http::{self, AppState};
use crate::private_files;
use crate::server;
use crate::services::{Opening, Services, key_file_path};
use crate::store::purge::Purged;

/// How often each instance re-reads the signing keys, so a rotation done elsewhere (the CLI,
/// another instance) is signed with and published here within this time.
pub const KEY_RELOAD_INTERVAL: Duration = Duration::from_secs(1);

/// How often an instance copies SQLite's write-ahead log back into the database (`Store::checkpoint`;
/// no COMMIT does). At a few thousand writes a second the log grows by a few MiB between two.
const CHECKPOINT_INTERVAL: Duration = Duration::from_secs(1);

/// How often lapsed sessions, consumed refresh-token records and expired challenges are deleted.
const HOUSEKEEPING_INTERVAL: Duration = Duration::from_secs(600);
/// How often the imported password hashes are counted (`Housekeeping::count_imported_hashes`).
const DECOY_INTERVAL: Duration = Duration::from_secs(300);

/// Access rules only see what a trusted proxy describes: without one, forward-auth refuses every
/// request (or, with `GATEHOUSE_UNTRUSTED_FORWARD_AUTH=token-only`, judges none by the rules).
fn warn_if_rules_have_no_proxy(settings: &Settings) {
    if settings.access_rules.is_empty() || !settings.trusted_proxies.is_empty() {
        return;
    }
    let consequence = if settings.untrusted_token_only {
        "forward-auth judges every request by its token alone, without the rules"
    } else {
        "forward-auth refuses every request (403)"
    };
    tracing::warn!(
        "GATEHOUSE_ACCESS_RULES is set and GATEHOUSE_TRUSTED_PROXIES is not: {consequence}; \
         set GATEHOUSE_TRUSTED_PROXIES to the proxy's address"
    );
}

/// The service, bound and ready to run.
pub struct Application {
    listener: TcpListener,
    metrics_listener: Option<TcpListener>,
    services: Arc<Services>,
    state: AppState,
    limits: server::Limits,
}

impl Application {
    pub async fn build(settings: &Settings) -> anyhow::Result<Application> {
        Self::build_with_clock(settings, Clock::system()).await
    }

    /// `build`, with the clock every part of the service reads (tests move it forward).
    pub async fn build_with_clock(
        settings: &Settings,
        clock: Clock,
    ) -> anyhow::Result<Application> {
        // The port first: a service that cannot listen must leave nothing behind (no database,
        // key or mail folder made for nothing).
        let listener = listen(settings.listen)
            .with_context(|| format!("cannot listen on {}", settings.listen))?;
        let metrics_listener = match settings.metrics_listen {
            Some(addr) => Some(
                TcpListener::bind(addr)
                    .await
                    .with_context(|| format!("cannot listen for metrics on {addr}"))?,
            ),
            None => None,
        };
        let services = Arc::new(Services::open(settings, clock, Opening::Create).await?);
        services.transport.prepare()?;
        // The identity providers' discovery runs beside the server from now on: a provider out of
        // reach is retried, and shown unavailable meanwhile, never waited for (docs/api.md §14).
        services.auth.federation.discover_in_background();
        if let Some(db) = settings.sqlite_path() {
            private_files::warn_if_shared(&db, "database file");
            if settings.master_key.is_none() {
                private_files::warn_if_shared(&key_file_path(&db), "master key file");
            }
        }
        warn_if_rules_have_no_proxy(settings);
        crate::startup::report(settings, &services.store).await;
        let state = AppState::new(services.clone(), settings)?;
        Ok(Application {
            listener,
            metrics_listener,
            services,
            state,
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

    #[expect(
        clippy::expect_used,
        reason = "a bound TCP listener always has a local address"
    )]
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

    /// The operator's controls over this running service.
    pub fn handle(&self) -> Handle {
        Handle(self.services.clone())
    }

    /// Serves until `shutdown` completes, then finishes the requests in flight.
    pub async fn run_until(self, shutdown: impl Future<Output = ()>) -> anyhow::Result<()> {
        let mut background = spawn_background(&self.services);
        let addr = self.local_addr();
        tracing::info!("listening on http://{addr}");
        if let Some(listener) = self.metrics_listener {
            if let Ok(addr) = listener.local_addr() {
                tracing::info!("metrics on http://{addr}/metrics");
            }
            let router = http::metrics_router(self.services.clone());
            background.push(tokio::spawn(async move {
                if let Err(error) = axum::serve(listener, router).await {
                    tracing::error!(error = %error, "the metrics listener failed");
                }
            }));
        }
        let router = http::router(self.state);
        // Opening the services and building the routes with their API document leave ~7 MiB of
        // freed memory in the allocator's heap: back to the system before the first request.
        crate::memory::release_free_memory();
        server::serve(self.listener, router, self.limits, shutdown).await;
        for task in background {
            task.abort();
        }
        // Uses seen since the last flush would otherwise be lost with the process.
        if let Err(error) = self
            .services
            .live
            .flush_activity(&self.services.store)
            .await
        {
            tracing::warn!(error = %error, "cannot record the sessions' last use");
        }
        self.services.store.close().await;
        Ok(())
    }
}

/// Connections the kernel may hold for us before we accept them. tokio's `bind` asks for 128: a
/// burst of connections from one client (which the per-client cap then closes) overflowed it, and
/// a legitimate client whose attempt was dropped waited a second to retry. The kernel caps this at
/// `net.core.somaxconn` (4 096 on current Linux).
const LISTEN_BACKLOG: u32 = 1024;

fn listen(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let socket = match addr {
        SocketAddr::V4(_) => tokio::net::TcpSocket::new_v4()?,
        SocketAddr::V6(_) => tokio::net::TcpSocket::new_v6()?,
    };
    // As std's and tokio's `bind` do on Unix: a restarted service can bind at once.
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(LISTEN_BACKLOG)
}

/// The periodic work of an instance: signing keys and revocations made elsewhere are read,
/// session use is written, and old rows are deleted.
fn spawn_background(services: &Arc<Services>) -> Vec<tokio::task::JoinHandle<()>> {
    let s = services.clone();
    let reload = every(KEY_RELOAD_INTERVAL, move || {
        let s = s.clone();
        async move {
            if let Err(error) = s.keyring.reload().await {
                tracing::warn!(error = %error, "cannot reload the signing keys");
            }
        }
    });
    let s = services.clone();
    // `sync` logs a failure once, when it starts, not twice a second during an outage.
    let revocations = every(live::SYNC_INTERVAL, move || {
        let s = s.clone();
        async move {
            let _ = s.live.sync(&s.store).await;
            // Role and account changes made elsewhere reach forward-auth as fast as revocations.
            if let Err(error) = s.directory.sync().await {
                tracing::debug!(error = %error, "cannot read the changed accounts yet");
            }
        }
    });
    let s = services.clone();
    // The business APIs an operator declared elsewhere, and so their scopes and audiences.
    let resources = every(crate::auth::catalog::SYNC_INTERVAL, move || {
        let s = s.clone();
        async move {
            if let Err(error) = s.auth.resources.sync().await {
                tracing::debug!(error = %error, "cannot read the declared resources yet");
            }
        }
    });
    let s = services.clone();
    let activity = every(live::ACTIVITY_FLUSH_INTERVAL, move || {
        let s = s.clone();
        async move {
            if let Err(error) = s.live.flush_activity(&s.store).await {
                tracing::debug!(error = %error, "cannot record the sessions' last use yet");
            }
        }
    });
    let s = services.clone();
    let checkpoint = every(CHECKPOINT_INTERVAL, move || {
        let s = s.clone();
        async move {
            if let Err(error) = s.store.checkpoint().await {
                tracing::debug!(error = %error, "cannot checkpoint the database yet");
            }
        }
    });
    let s = services.clone();
    let housekeeping = every(HOUSEKEEPING_INTERVAL, move || {
        let s = s.clone();
        async move {
            match s.auth.housekeeping.housekeep().await {
                Ok(purged) => tracing::debug!(?purged, "housekeeping done"),
                Err(error) => tracing::warn!(error = %error, "housekeeping failed"),
            }
        }
    });
    let s = services.clone();
    let decoys = tokio::spawn(async move {
        // At start (a restart must not open a window), then every few minutes.
        let mut tick = tokio::time::interval(DECOY_INTERVAL);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            if let Err(error) = s.auth.housekeeping.count_imported_hashes().await {
                tracing::warn!(error = %error, "cannot count the imported password hashes");
            }
        }
    });
    tracing::info!("mail goes to {}", services.transport.describe());
    let delivery = tokio::spawn(services.delivery().run());
    vec![
        reload,
        revocations,
        resources,
        activity,
        checkpoint,
        housekeeping,
        decoys,
        delivery,
        tokio::spawn(services.backchannel().run()),
    ]
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

/// A future that completes on SIGINT or SIGTERM. The handlers are installed when this is called,
/// not when the future is first polled: `serve` calls it before it binds and says it is listening,
/// so a SIGTERM sent as soon as the log says so is a graceful shutdown, never the default action's
/// abrupt end.
pub fn shutdown_signal() -> impl std::future::Future<Output = ()> {
    #[cfg(unix)]
    let signals = {
        use tokio::signal::unix::{SignalKind, signal};
        (
            signal(SignalKind::terminate()).ok(),
            signal(SignalKind::interrupt()).ok(),
        )
    };
    async move {
        #[cfg(unix)]
        {
            let wait = |s: Option<tokio::signal::unix::Signal>| async move {
                match s {
                    Some(mut s) => {
                        s.recv().await;
                    }
                    None => std::future::pending::<()>().await,
                }
            };
            let (terminate, interrupt) = signals;
            tokio::select! {
                () = wait(terminate) => {},
                () = wait(interrupt) => {},
            }
        }
        #[cfg(not(unix))]
        let _ = tokio::signal::ctrl_c().await;
        tracing::info!("shutting down: finishing the requests in flight");
    }
}

/// An operator's controls over a running service, as the CLI offers them, for programs that embed
/// Gatehouse and for tests: the same actions, the same rules, the same audit trail.
#[derive(Clone)]
pub struct Handle(Arc<Services>);

impl Handle {
    /// `gatehouse user add`: the new account's id.
    pub async fn add_user(&self, email: &str, name: &str, password: &str) -> anyhow::Result<Uuid> {
        let email = Email::parse(email).map_err(|r| anyhow::anyhow!("the e-mail {r}"))?;
        let name = FullName::parse(name).map_err(|r| anyhow::anyhow!("the name {r}"))?;
        let user = self
            .0
            .auth
            .admin
            .add_user(
                Operator::Cli,
                &email,
                &name,
                &[],
                Some(password.to_owned().into()),
            )
            .await?;
        Ok(user.id)
    }

    /// `gatehouse user roles E --add …`: the roles the account has now.
    pub async fn add_roles(&self, email: &str, roles: &[&str]) -> anyhow::Result<Vec<String>> {
        let email = Email::parse(email).map_err(|r| anyhow::anyhow!("the e-mail {r}"))?;
        let roles = roles
            .iter()
            .map(|r| Role::parse(r).map_err(|reason| anyhow::anyhow!("the role {reason}")))
            .collect::<anyhow::Result<Vec<_>>>()?;
        let id = self.0.auth.admin.find_user(&email).await?.id;
        Ok(self
            .0
            .auth
            .admin
            .change_roles(Operator::Cli, id, &roles, &[])
            .await?)
    }

    /// `gatehouse user disable`: how many sessions ended.
    pub async fn disable_user(&self, email: &str) -> anyhow::Result<u64> {
        let email = Email::parse(email).map_err(|r| anyhow::anyhow!("the e-mail {r}"))?;
        let id = self.0.auth.admin.find_user(&email).await?.id;
        Ok(self.0.auth.admin.disable_user(Operator::Cli, id).await?)
    }

    /// `gatehouse user enable`.
    pub async fn enable_user(&self, email: &str) -> anyhow::Result<()> {
        let email = Email::parse(email).map_err(|r| anyhow::anyhow!("the e-mail {r}"))?;
        let id = self.0.auth.admin.find_user(&email).await?.id;
        Ok(self.0.auth.admin.enable_user(Operator::Cli, id).await?)
    }

    /// One housekeeping pass now (by the service's clock), as the background task runs it.
    pub async fn housekeep(&self) -> anyhow::Result<Purged> {
        Ok(self.0.auth.housekeeping.housekeep().await?)
    }

    /// Forgotten-password requests answered but still being handled off their path: until this
    /// is 0, a mail may yet be queued for them (tests wait for it before counting mail).
    pub fn resets_in_flight(&self) -> usize {
        self.0.auth.recovery.resets_in_flight()
    }

    /// The clock every part of the service reads.
    pub fn clock(&self) -> &Clock {
        &self.0.clock
    }

    /// Closes the database pool: every later call that needs it fails as during an outage.
    pub async fn close_database(&self) {
        self.0.store.close().await;
    }
}
