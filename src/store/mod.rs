//! Storage: one `Store` over SQLite or PostgreSQL. Each query is written once in SQL that both
//! accept and runs against whichever pool is configured (`on_pool!`); the schema is one set of
//! embedded migrations. Nothing outside this module writes SQL or sees a driver type: every
//! function answers the service's own `Error`, a lost connection as `Unavailable`.

use std::str::FromStr;
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};

use crate::error::{Error, Result};
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};

pub mod audit;
pub mod challenges;
pub mod contacts;
pub mod keys;
pub mod sessions;
pub mod throttles;
pub mod users;

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");

/// Runs `$body` with `$pool` bound to the concrete pool, so the same query text and types serve
/// both backends while each is compiled against its own driver (no `Any` row conversion). For
/// reads; what writes uses `on_write_pool!`. `$body` is a `Result<_, sqlx::Error>` (its `?` and
/// `return` stay inside it); the driver's error becomes the service's.
macro_rules! on_pool {
    ($store:expr, |$pool:ident| $body:expr) => {
        match &$store.backend {
            $crate::store::Backend::Sqlite { read: $pool, .. } => async { $body }.await,
            $crate::store::Backend::Postgres($pool) => async { $body }.await,
        }
        .map_err($crate::store::db_error)
    };
}
pub(crate) use on_pool;

/// `on_pool!` for statements and transactions that write. SQLite has one writer at a time: left to
/// itself, a writer that finds the database locked sleeps in growing steps (its busy handler) and
/// tries again, which showed as a 90 ms p99 on refresh under load. Writing through a pool of one
/// connection makes the writers of this process queue instead, in order and without sleeping.
macro_rules! on_write_pool {
    ($store:expr, |$pool:ident| $body:expr) => {
        match &$store.backend {
            $crate::store::Backend::Sqlite { write: $pool, .. } => async { $body }.await,
            $crate::store::Backend::Postgres($pool) => async { $body }.await,
        }
        .map_err($crate::store::db_error)
    };
}
pub(crate) use on_write_pool;

#[derive(Clone, Debug)]
pub(crate) enum Backend {
    Sqlite { read: SqlitePool, write: SqlitePool },
    Postgres(PgPool),
}

#[derive(Clone, Debug)]
pub struct Store {
    pub(crate) backend: Backend,
}

/// How long a request waits for a connection before the database counts as unreachable (503).
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(3);

impl Store {
    /// Opens the pool; a SQLite file is created if missing.
    pub async fn connect(url: &str) -> anyhow::Result<Store> {
        let backend = if url.starts_with("sqlite:") {
            let options = SqliteConnectOptions::from_str(url)?
                .create_if_missing(true)
                // WAL lets readers run beside the one writer; NORMAL sync is durable in WAL mode
                // except for the last transactions before a power cut.
                .journal_mode(SqliteJournalMode::Wal)
                .synchronous(SqliteSynchronous::Normal)
                .busy_timeout(Duration::from_secs(5))
                .foreign_keys(true);
            let write = SqlitePoolOptions::new()
                .max_connections(1)
                .min_connections(1)
                .acquire_timeout(ACQUIRE_TIMEOUT)
                .connect_with(options.clone())
                .await?;
            let read = SqlitePoolOptions::new()
                .max_connections(8)
                .min_connections(1)
                .acquire_timeout(ACQUIRE_TIMEOUT)
                .connect_with(options.read_only(true))
                .await?;
            Backend::Sqlite { read, write }
        } else {
            let options = PgConnectOptions::from_str(url)?;
            let pool = PgPoolOptions::new()
                .max_connections(16)
                .acquire_timeout(ACQUIRE_TIMEOUT)
                .connect_with(options)
                .await?;
            Backend::Postgres(pool)
        };
        Ok(Store { backend })
    }

    /// Applies the embedded migrations (PostgreSQL: under an advisory lock, so instances starting
    /// together take turns).
    pub async fn migrate(&self) -> anyhow::Result<()> {
        match &self.backend {
            Backend::Sqlite { write, .. } => MIGRATOR.run(write).await?,
            Backend::Postgres(pool) => MIGRATOR.run(pool).await?,
        }
        Ok(())
    }

    /// A round trip to the database, for `/readyz`.
    pub async fn ping(&self) -> Result<()> {
        on_pool!(self, |pool| sqlx::query("SELECT 1")
            .execute(pool)
            .await
            .map(|_| ()))
    }

    /// Connections of the pool: (idle, in use).
    pub fn pool_use(&self) -> (u32, u32) {
        let (idle, size) = match &self.backend {
            Backend::Sqlite { read, .. } => (read.num_idle(), read.size()),
            Backend::Postgres(pool) => (pool.num_idle(), pool.size()),
        };
        (idle as u32, size.saturating_sub(idle as u32))
    }

    pub async fn close(&self) {
        match &self.backend {
            Backend::Sqlite { read, write } => {
                read.close().await;
                write.close().await;
            }
            Backend::Postgres(pool) => pool.close().await,
        }
    }
}

/// Whether an error is the violation of a unique constraint (e.g. an e-mail in use).
fn is_unique_violation(error: &sqlx::Error) -> bool {
    matches!(error, sqlx::Error::Database(e) if e.is_unique_violation())
}

/// The driver's error as the service's: connection-level failures mean the database is away,
/// which the service rides out (503); anything else (a constraint we did not expect, bad SQL) is
/// a bug (500).
pub(crate) fn db_error(error: sqlx::Error) -> Error {
    match &error {
        sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::Protocol(_)
        | sqlx::Error::WorkerCrashed => Error::Unavailable(error.into()),
        _ => Error::Internal(error.into()),
    }
}
