//! Storage: one `Store` over SQLite or PostgreSQL. Each query is written once in SQL that both
//! accept and runs against whichever pool is configured (`on_pool!`); the schema is one set of
//! embedded migrations. Nothing outside this module writes SQL or sees a driver type: every
//! function answers the service's own `Error`, a lost connection as `Unavailable`. On SQLite the
//! hot paths run in-process instead, the same texts on rusqlite (`sqlite`, which says why); the
//! rest of SQLite's queries stay on sqlx for now, both on the same WAL file.

use std::str::FromStr;
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgConnection};

use crate::error::{Error, Result};
use sqlx::ConnectOptions as _;
use sqlx::sqlite::{SqliteConnectOptions, SqliteConnection, SqliteJournalMode, SqliteSynchronous};

use pool::Pool;

pub mod admin;
pub mod api_keys;
pub mod audit;
mod backup;
pub mod challenges;
pub mod clients;
pub mod consents;
pub mod contacts;
pub mod cookies;
mod credentials;
pub mod device_codes;
mod dpop;
pub mod federation;
pub mod imports;
pub mod keys;
pub mod logouts;
pub mod mail_tokens;
pub mod moving;
pub mod oauth_codes;
pub mod org_invitations;
pub mod orgs;
pub mod outbox;
pub mod passkeys;
#[cfg(test)]
mod plans;
mod pool;
pub mod purge;
mod reauth_ceremonies;
pub mod registration_tokens;
pub mod resources;
pub mod sessions;
mod sqlite;
pub mod throttles;
pub mod users;

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");

/// What a migration of this binary does, from its file's name (`0023_federation.sql`:
/// "federation") and, for one that may take long on a big database, its `-- long:` line, for
/// `gatehouse migrate --dry-run`.
pub fn migration_description(version: i64) -> Option<String> {
    let migration = MIGRATOR.iter().find(|m| m.version == version)?;
    let long = migration
        .sql
        .lines()
        .take_while(|line| line.starts_with("--"))
        .find_map(|line| line.strip_prefix("-- long:"));
    Some(match long {
        Some(why) => format!("{} (may take long: {})", migration.description, why.trim()),
        None => migration.description.to_string(),
    })
}

pub static MIGRATIONS: std::sync::LazyLock<Vec<i64>> =
    std::sync::LazyLock::new(|| MIGRATOR.iter().map(|m| m.version).collect());

/// Runs `$body` with `$pool` bound to a connection of the concrete driver (`&mut`, an executor;
/// `&mut *pool` to use it more than once), so the same query text and types serve both backends
/// while each is compiled against its own driver (no `Any` row conversion). For
/// reads; what writes uses `on_write_pool!`. `$body` is a `Result<_, sqlx::Error>` (its `?` and
/// `return` stay inside it); the driver's error becomes the service's.
macro_rules! on_pool {
    ($store:expr, |$pool:ident| $body:expr) => {
        match &$store.backend {
            $crate::store::Backend::Sqlite { read, .. } => {
                $crate::store::on_conn!(read, $pool, $body)
            }
            $crate::store::Backend::Postgres(pool) => $crate::store::on_conn!(pool, $pool, $body),
        }
        .map_err($crate::store::db_error)
    };
}
pub(crate) use on_pool;

/// `on_pool!` for statements and transactions that write. SQLite has one writer at a time: left to
/// itself, a writer that finds the database locked sleeps in growing steps (its busy handler) and
/// tries again, which showed as a 90 ms p99 on refresh under load. So every writer of this process
/// queues for one turn (`sqlite::Lite::turn`, shared with the in-process writes of the hot paths),
/// in order and without sleeping, and then writes on sqlx's one write connection.
macro_rules! on_write_pool {
    ($store:expr, |$pool:ident| $body:expr) => {
        match &$store.backend {
            $crate::store::Backend::Sqlite { write, lite, .. } => match lite.turn().await {
                Ok(_turn) => {
                    $crate::store::on_conn!(write, $pool, $body).map_err($crate::store::db_error)
                }
                Err(error) => Err(error),
            },
            $crate::store::Backend::Postgres(pool) => {
                $crate::store::on_conn!(pool, $pool, $body).map_err($crate::store::db_error)
            }
        }
    };
}
pub(crate) use on_write_pool;

/// Runs `$body` with `$conn` bound to a connection of `$pool` (`&mut` the driver's connection, an
/// executor), then gives the connection back, or drops it if the body broke it (`pool::Conn`).
macro_rules! on_conn {
    ($pool:expr, $conn:ident, $body:expr) => {
        async {
            let mut held = $pool.acquire().await?;
            let result = async {
                // `begin()` on the connection, for the bodies that open a transaction.
                #[allow(unused_imports)]
                use sqlx::Connection as _;
                let $conn = &mut *held;
                $body
            }
            .await;
            held.settle(&result);
            result
        }
        .await
    };
}
pub(crate) use on_conn;

#[derive(Clone, Debug)]
pub(crate) enum Backend {
    Sqlite {
        read: Pool<SqliteConnection>,
        write: Pool<SqliteConnection>,
        /// Copies the write-ahead log back into the database (`Store::checkpoint`), off the
        /// write connection's path.
        checkpoint: Pool<SqliteConnection>,
        /// The hot paths, in-process on the same file, and the write turn of both.
        lite: sqlite::Lite,
    },
    Postgres(Pool<PgConnection>),
}

#[derive(Clone, Debug)]
pub struct Store {
    pub(crate) backend: Backend,
}

/// sqlx logs a statement slower than this at WARN, which the CLI (warnings and worse, docs/api.md
/// §4) printed under its one line of answer: a migration waiting for a starting instance's
/// advisory lock is no warning. At INFO, `serve` (info by default) still logs it.
const SLOW_STATEMENT: Duration = Duration::from_secs(1);

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
                .foreign_keys(true)
                // No checkpoint inside a COMMIT: by default the COMMIT that takes the log past
                // 1 000 pages copies it back into the database before it returns, on the one write
                // connection, with every queued writer behind it (a refresh storm's p99 doubled
                // during a purge, BENCHMARKS.md). `Store::checkpoint` does it on a connection of
                // its own instead, PASSIVE, so no writer waits for it.
                .pragma("wal_autocheckpoint", "0")
                .log_slow_statements(log::LevelFilter::Info, SLOW_STATEMENT);
            // The write pool first: it creates the file, which the read-only connections open.
            let write = Pool::connect(options.clone(), 1).await?;
            let checkpoint = Pool::connect(options.clone(), 1).await?;
            let read = Pool::connect(options.clone().read_only(true), 8).await?;
            let lite = sqlite::Lite::new(options.get_filename());
            Backend::Sqlite {
                read,
                write,
                checkpoint,
                lite,
            }
        } else {
            // The server's NOTICEs ("relation _sqlx_migrations already exists, skipping") are
            // no news to an operator: only warnings and errors are sent.
            let options = PgConnectOptions::from_str(url)?
                .options([("client_min_messages", "warning")])
                .log_slow_statements(log::LevelFilter::Info, SLOW_STATEMENT);
            let pool = Pool::connect(options, 16).await?;
            Backend::Postgres(pool)
        };
        Ok(Store { backend })
    }

    /// Applies the embedded migrations (PostgreSQL: under an advisory lock, so instances starting
    /// together take turns).
    pub async fn migrate(&self) -> anyhow::Result<()> {
        match &self.backend {
            Backend::Sqlite { write, .. } => MIGRATOR.run(&mut *write.acquire().await?).await?,
            Backend::Postgres(pool) => MIGRATOR.run(&mut *pool.acquire().await?).await?,
        }
        Ok(())
    }

    /// The versions of this binary's migrations the database has not applied (`gatehouse check`,
    /// `gatehouse migrate --dry-run`); an error when it has applied one this binary does not know
    /// (a newer Gatehouse made it). Reads only: a database without the migrations table has
    /// applied none, and is left without one.
    pub async fn pending_migrations(&self) -> anyhow::Result<Vec<i64>> {
        let exists = match self.backend {
            Backend::Sqlite { .. } => {
                "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = '_sqlx_migrations'"
            }
            Backend::Postgres(_) => {
                "SELECT COUNT(*) FROM information_schema.tables \
                 WHERE table_name = '_sqlx_migrations' AND table_schema = current_schema()"
            }
        };
        let tables: i64 = on_pool!(self, |pool| sqlx::query_scalar(exists)
            .fetch_one(pool)
            .await)?;
        let applied: Vec<i64> = if tables == 0 {
            Vec::new()
        } else {
            let sql = "SELECT version FROM _sqlx_migrations WHERE success ORDER BY version";
            on_pool!(self, |pool| sqlx::query_scalar(sql).fetch_all(pool).await)?
        };
        let known = &*MIGRATIONS;
        if let Some(version) = applied.iter().find(|v| !known.contains(v)) {
            anyhow::bail!(
                "cannot apply the database migrations: the database has migration {version}, \
                 which this gatehouse does not know (a newer version applied it)"
            );
        }
        Ok(known
            .iter()
            .copied()
            .filter(|v| !applied.contains(v))
            .collect())
    }

    /// SQLite: copies what the write-ahead log holds back into the database, as far as readers
    /// allow, without waiting for the writer or readers (PASSIVE), on a connection of its own.
    /// Every instance does it periodically and housekeeping after each batch, since no COMMIT
    /// does (`wal_autocheckpoint = 0`). PostgreSQL: nothing to do.
    pub async fn checkpoint(&self) -> Result<()> {
        match &self.backend {
            Backend::Sqlite { checkpoint, .. } => on_conn!(checkpoint, conn, {
                sqlx::query("PRAGMA wal_checkpoint(PASSIVE)")
                    .execute(conn)
                    .await
                    .map(|_| ())
            })
            .map_err(db_error),
            Backend::Postgres(_) => Ok(()),
        }
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
        let (idle, in_use) = match &self.backend {
            Backend::Sqlite { read, .. } => (read.idle(), read.in_use()),
            Backend::Postgres(pool) => (pool.idle(), pool.in_use()),
        };
        (idle as u32, in_use as u32)
    }

    pub async fn close(&self) {
        match &self.backend {
            Backend::Sqlite {
                read,
                write,
                checkpoint,
                lite,
            } => {
                read.close().await;
                lite.close().await;
                // The log copied back before the last connection goes, so the file is whole.
                let _ = self.checkpoint().await;
                checkpoint.close().await;
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
/// which the service rides out (503); a write naming a row deleted meanwhile is `NotFound`
/// (`vanished`); anything else (a constraint we did not expect, bad SQL) is a bug (500).
pub(crate) fn db_error(error: sqlx::Error) -> Error {
    if matches!(error, sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed)
        || connection_lost(&error)
    {
        Error::Unavailable(error.into())
    } else if matches!(&error, sqlx::Error::Database(e) if e.is_foreign_key_violation()) {
        vanished(error.into())
    } else {
        Error::Internal(error.into())
    }
}

/// A write that names a row deleted meanwhile (a client, an account or an organisation removed
/// by another instance or the CLI, which this instance still held in memory): answered as if
/// the row were gone already, never as a fault of the service.
pub(crate) fn vanished(cause: anyhow::Error) -> Error {
    tracing::info!(error = %cause, "a write named a row that is gone");
    Error::NotFound
}

/// Whether `error` means the connection it came from is gone or unusable: a transport failure, or
/// PostgreSQL saying so before it hangs up (SQLSTATE class 08, connection exception, and 57P,
/// e.g. 57P01 "terminating connection due to administrator command", which an idle connection
/// reads first after the server was stopped or restarted).
pub(crate) fn connection_lost(error: &sqlx::Error) -> bool {
    match error {
        sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::Protocol(_)
        | sqlx::Error::WorkerCrashed => true,
        sqlx::Error::Database(e) => e
            .code()
            .is_some_and(|code| code.starts_with("08") || code.starts_with("57P")),
        _ => false,
    }
}
