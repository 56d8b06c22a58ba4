//! Storage: one `Store` over SQLite or PostgreSQL. Each query is written once in SQL that both
//! accept and runs against whichever pool is configured (`on_pool!`); the schema is one set of
//! embedded migrations. Nothing outside this module writes SQL.

use std::str::FromStr;
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};

pub mod audit;
pub mod contacts;
pub mod keys;
pub mod sessions;
pub mod throttles;
pub mod users;

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");

/// Runs `$body` with `$pool` bound to the concrete pool, so the same query text and types serve
/// both backends while each is compiled against its own driver (no `Any` row conversion). For
/// reads; what writes uses `on_write_pool!`.
macro_rules! on_pool {
    ($store:expr, |$pool:ident| $body:expr) => {
        match &$store.backend {
            $crate::store::Backend::Sqlite { read: $pool, .. } => $body,
            $crate::store::Backend::Postgres($pool) => $body,
        }
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
            $crate::store::Backend::Sqlite { write: $pool, .. } => $body,
            $crate::store::Backend::Postgres($pool) => $body,
        }
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
        on_write_pool!(self, |pool| MIGRATOR.run(pool).await)?;
        Ok(())
    }

    /// A round trip to the database, for `/readyz`.
    pub async fn ping(&self) -> Result<(), sqlx::Error> {
        on_pool!(self, |pool| sqlx::query("SELECT 1")
            .execute(pool)
            .await
            .map(|_| ()))?;
        Ok(())
    }

    /// Connections of the pool: (idle, in use).
    pub fn pool_use(&self) -> (u32, u32) {
        on_pool!(self, |pool| {
            let idle = pool.num_idle() as u32;
            (idle, pool.size().saturating_sub(idle))
        })
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

/// Milliseconds since the Unix epoch, the unit of every time column.
pub fn now_ms() -> i64 {
    time::OffsetDateTime::now_utc().unix_timestamp_nanos() as i64 / 1_000_000
}

/// A time column as RFC 3339 in UTC, for the API.
pub fn rfc3339(ms: i64) -> String {
    let t = time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
    t.format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

/// Whether an error is the violation of a unique constraint (e.g. an e-mail in use).
pub fn is_unique_violation(error: &sqlx::Error) -> bool {
    matches!(error, sqlx::Error::Database(e) if e.is_unique_violation())
}
