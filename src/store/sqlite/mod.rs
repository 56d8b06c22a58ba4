//! SQLite's hot paths in-process (rusqlite), beside sqlx. sqlx runs each SQLite connection on a
//! thread of its own and hands every query to it and every row back through a channel: one page
//! of contacts cost 124–134 µs of CPU that way against 17.5–18.5 µs read in the calling thread
//! (BENCHMARKS.md, "The authenticated GET: where the time goes"). So the queries every request
//! makes (the contact list, the refresh rotation, login's reads and its session) run here, on
//! connections of this module, in the thread of the request; the rest of the store stays on sqlx
//! for now. Both open the same WAL database file: sqlx's migrator makes the schema, and either
//! side sees what the other committed (SQLite's own file locking, within one process as between
//! processes).
//!
//! Reads take a connection from a stack of idle ones and run the statement inline, on the runtime's
//! worker: a read here is ~20 µs. Measured under the contact list at 32 connections (server CPU
//! per request, BENCHMARKS.md 2026-11-24): inline 49 µs, `spawn_blocking` (a hop to the blocking
//! pool and back) 86 µs, `block_in_place` (the worker's other tasks handed to a new worker first)
//! 89 µs, sqlx 147 µs. No bound and no waiting: a connection is held for one synchronous call
//! only, so there are never more in use than threads running them.
//!
//! Writes queue (`Writer`): SQLite has one writer at a time, and a writer that finds the database
//! locked sleeps in growing steps in its busy handler (a 90 ms p99 on refresh, BENCHMARKS.md).
//! Every writer of this process, whichever driver, waits its turn on one fair lock instead; the
//! holder of the turn runs its statements inline and gives it up as soon as they are done. Refresh
//! rotations that queue meanwhile are committed together by the next holder (`rotate`).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, Statement, ToSql};
use tokio::sync::{Mutex as AsyncMutex, MutexGuard as AsyncGuard};

use crate::error::{Error, Result};

mod hot;
mod rotate;

/// How long a statement waits for a lock held by another process (a `gatehouse` command run
/// beside the server): this process's own writers never meet one, as they queue.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

#[derive(Clone)]
pub(crate) struct Lite {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Lite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lite")
            .field("path", &self.inner.path)
            .finish()
    }
}

struct Inner {
    path: PathBuf,
    /// Idle read-only connections.
    readers: Mutex<Vec<Connection>>,
    /// The turn to write, with the connection this side writes on (opened on first use). sqlx's
    /// write connection takes the same turn (`Writer::turn`) before it writes.
    writer: AsyncMutex<Option<Connection>>,
    /// Refresh rotations waiting for a holder of the turn to run them (`rotate`).
    rotations: Mutex<Vec<rotate::Rotation>>,
    closed: AtomicBool,
}

/// The turn to write, held by a caller of either driver; dropping it gives the turn to the next
/// in line (tokio's mutex is fair: first come, first served).
pub(crate) type Turn<'a> = AsyncGuard<'a, Option<Connection>>;

impl Lite {
    /// The database at `path`, which sqlx has opened (and created) already.
    pub(crate) fn new(path: &Path) -> Lite {
        Lite {
            inner: Arc::new(Inner {
                path: path.to_owned(),
                readers: Mutex::new(Vec::new()),
                writer: AsyncMutex::new(None),
                rotations: Mutex::new(Vec::new()),
                closed: AtomicBool::new(false),
            }),
        }
    }

    /// Runs `read` on an idle read connection (or a new one), in this thread.
    pub(crate) async fn read<T>(
        &self,
        read: impl FnOnce(&Connection) -> rusqlite::Result<T>,
    ) -> Result<T> {
        let inner = &self.inner;
        if inner.closed.load(Ordering::Acquire) {
            return Err(Error::Unavailable(anyhow::anyhow!("the store is closed")));
        }
        let idle = lock(&inner.readers).pop();
        let conn = match idle {
            Some(conn) => conn,
            None => open(&inner.path, true).map_err(error)?,
        };
        let result = read(&conn);
        // A failed read leaves nothing behind (no transaction is open across calls).
        if !inner.closed.load(Ordering::Acquire) {
            lock(&inner.readers).push(conn);
        }
        result.map_err(error)
    }

    /// Waits for the turn to write. The caller may use it for sqlx's write connection, or
    /// `write` on it.
    pub(crate) async fn turn(&self) -> Result<Turn<'_>> {
        let turn = tokio::time::timeout(super::pool::ACQUIRE_TIMEOUT, self.inner.writer.lock())
            .await
            .map_err(|_| Error::Unavailable(anyhow::anyhow!("the write queue is stalled")))?;
        if self.inner.closed.load(Ordering::Acquire) {
            return Err(Error::Unavailable(anyhow::anyhow!("the store is closed")));
        }
        Ok(turn)
    }

    /// Runs `write` on this side's write connection, in its turn, in this thread.
    pub(crate) async fn write<T>(
        &self,
        write: impl FnOnce(&mut Connection) -> rusqlite::Result<T>,
    ) -> Result<T> {
        let mut turn = self.turn().await?;
        let conn = Lite::connection(&mut turn, &self.inner.path)?;
        let result = write(conn);
        if result.is_err() && !conn.is_autocommit() {
            // A statement failed inside a transaction the closure opened (it returned early with
            // `?`): end it, or the next writer would find it open.
            let _ = conn.execute_batch("ROLLBACK");
        }
        result.map_err(error)
    }

    /// The write connection of `turn`, opened on first use.
    fn connection<'t>(turn: &'t mut Option<Connection>, path: &Path) -> Result<&'t mut Connection> {
        let conn = match turn.take() {
            Some(conn) => conn,
            None => open(path, false).map_err(error)?,
        };
        Ok(turn.insert(conn))
    }

    /// Closes every connection; later calls fail as `Unavailable`.
    pub(crate) async fn close(&self) {
        self.inner.closed.store(true, Ordering::Release);
        lock(&self.inner.readers).clear();
        self.inner.writer.lock().await.take();
    }
}

/// A connection with the settings sqlx's have (`Store::connect`): WAL is the file's own setting,
/// already made; the rest are each connection's.
fn open(path: &Path, read_only: bool) -> rusqlite::Result<Connection> {
    let access = if read_only {
        OpenFlags::SQLITE_OPEN_READ_ONLY
    } else {
        OpenFlags::SQLITE_OPEN_READ_WRITE
    };
    // NO_MUTEX: a connection is used by one thread at a time (it is moved, never shared).
    let conn = Connection::open_with_flags(path, access | OpenFlags::SQLITE_OPEN_NO_MUTEX)?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    // The statements of the hot paths, kept prepared (each connection keeps its own).
    conn.set_prepared_statement_cache_capacity(32);
    conn.execute_batch(
        "PRAGMA foreign_keys = ON; PRAGMA synchronous = NORMAL; PRAGMA wal_autocheckpoint = 0;",
    )?;
    Ok(conn)
}

/// Binds `args` to a statement written for sqlx, whose parameters are `$1`, `$2`…: SQLite numbers
/// named parameters in the order they first appear (`SET a = $2 WHERE b = $1` has `$2` first), so
/// each is bound by the number in its name, as sqlx does.
pub(super) fn bind(stmt: &mut Statement<'_>, args: &[&dyn ToSql]) -> rusqlite::Result<()> {
    for index in 1..=stmt.parameter_count() {
        let n = stmt
            .parameter_name(index)
            .and_then(|name| name.strip_prefix('$'))
            .and_then(|n| n.parse::<usize>().ok())
            .unwrap_or(index);
        let arg = args
            .get(n.wrapping_sub(1))
            .ok_or(rusqlite::Error::InvalidParameterCount(n, args.len()))?;
        stmt.raw_bind_parameter(index, arg)?;
    }
    Ok(())
}

/// A UUID as sqlx stores it in SQLite: its 16 bytes, as a BLOB.
pub(super) fn uuid(row: &rusqlite::Row<'_>, index: usize) -> rusqlite::Result<uuid::Uuid> {
    let bytes = row.get_ref(index)?.as_blob()?;
    uuid::Uuid::from_slice(bytes).map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(index, rusqlite::types::Type::Blob, e.into())
    })
}

pub(super) fn uuid_opt(
    row: &rusqlite::Row<'_>,
    index: usize,
) -> rusqlite::Result<Option<uuid::Uuid>> {
    match row.get_ref(index)? {
        rusqlite::types::ValueRef::Null => Ok(None),
        _ => uuid(row, index).map(Some),
    }
}

/// The driver's error as the service's (as `store::db_error` for sqlx): a database that cannot
/// be opened or stays locked by another process is away (503); a write naming a row deleted
/// meanwhile is `NotFound` (`store::vanished`); anything else is a bug (500).
fn error(error: rusqlite::Error) -> Error {
    if let rusqlite::Error::SqliteFailure(e, _) = &error {
        if e.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_FOREIGNKEY {
            return super::vanished(error.into());
        }
    }
    let unavailable = unavailable(&error);
    classify(unavailable, error.into())
}

/// Whether `error` means the database is away (see `error`).
fn unavailable(error: &rusqlite::Error) -> bool {
    use rusqlite::ErrorCode::{
        CannotOpen, DatabaseBusy, DatabaseLocked, DiskFull, SystemIoFailure,
    };
    matches!(
        error.sqlite_error_code(),
        Some(CannotOpen | DatabaseBusy | DatabaseLocked | SystemIoFailure | DiskFull)
    )
}

fn classify(unavailable: bool, cause: anyhow::Error) -> Error {
    if unavailable {
        Error::Unavailable(cause)
    } else {
        Error::Internal(cause)
    }
}

// Each critical section is a push or a pop: a panic cannot leave the list half-changed.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}
