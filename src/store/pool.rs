//! A connection pool of the store's own, in place of sqlx's `Pool`, which tests every connection
//! with a ping when it hands it out and again when it takes it back. A ping is a round trip to
//! PostgreSQL, or a hop to the SQLite connection's worker thread and back; with two of them around
//! each query, a one-query request (the contact list) did three round trips instead of one, and
//! SQLite's single write connection sat idle through a ping after every transaction while writers
//! queued for it. Profiled under load, those hand-offs (futex waits and wake-ups) were the largest
//! cost of an authenticated GET (BENCHMARKS.md).
//!
//! This one pings only a connection that sat idle for `PING_IF_IDLE_FOR` (a database restarted
//! meanwhile is noticed before the connection is used), and drops a connection whose query failed
//! at the connection level instead of taking it back. Waiters are served in order (tokio's
//! semaphore is fair), which SQLite's write queue relies on.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sqlx::{ConnectOptions as _, Connection};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// How long a request waits for a connection before the database counts as unreachable (503).
pub(super) const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(3);

/// A connection idle longer than this is pinged before it is handed out; one in steady use is not.
const PING_IF_IDLE_FOR: Duration = Duration::from_secs(5);

pub(crate) struct Pool<C: Connection> {
    inner: Arc<Inner<C>>,
}

impl<C: Connection> Clone for Pool<C> {
    fn clone(&self) -> Self {
        Pool {
            inner: self.inner.clone(),
        }
    }
}

impl<C: Connection> std::fmt::Debug for Pool<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool")
            .field("max", &self.inner.max)
            .field("idle", &self.idle())
            .finish()
    }
}

struct Inner<C: Connection> {
    options: <C as Connection>::Options,
    /// Connections not in use, with the time each was given back.
    idle: Mutex<Vec<(C, Instant)>>,
    /// One per connection that may exist: taken for as long as a connection is in use.
    permits: Arc<Semaphore>,
    max: usize,
    closed: AtomicBool,
}

/// A connection taken from the pool; given back when dropped if the work on it ran to its end
/// (`settle`) and did not break it.
pub(crate) struct Conn<C: Connection> {
    conn: Option<C>,
    pool: Arc<Inner<C>>,
    settled: bool,
    _permit: OwnedSemaphorePermit,
}

impl<C: Connection> Pool<C> {
    /// A pool of at most `max` connections, one of them opened now (a bad URL or an unreachable
    /// database fails here, at start).
    pub(crate) async fn connect(
        options: <C as Connection>::Options,
        max: usize,
    ) -> Result<Self, sqlx::Error> {
        let first = options.connect().await?;
        Ok(Pool {
            inner: Arc::new(Inner {
                options,
                idle: Mutex::new(vec![(first, Instant::now())]),
                permits: Arc::new(Semaphore::new(max)),
                max,
                closed: AtomicBool::new(false),
            }),
        })
    }

    /// A connection: an idle one (pinged first if it idled long), or a new one.
    pub(crate) async fn acquire(&self) -> Result<Conn<C>, sqlx::Error> {
        let permit =
            tokio::time::timeout(ACQUIRE_TIMEOUT, self.inner.permits.clone().acquire_owned())
                .await
                .map_err(|_| sqlx::Error::PoolTimedOut)?
                .map_err(|_| sqlx::Error::PoolClosed)?;
        if self.inner.closed.load(Ordering::Acquire) {
            return Err(sqlx::Error::PoolClosed);
        }
        loop {
            let idle = lock(&self.inner.idle).pop();
            let Some((mut conn, since)) = idle else { break };
            if since.elapsed() > PING_IF_IDLE_FOR && conn.ping().await.is_err() {
                continue;
            }
            return Ok(self.hand_out(conn, permit));
        }
        let conn = tokio::time::timeout(ACQUIRE_TIMEOUT, self.inner.options.connect())
            .await
            .map_err(|_| sqlx::Error::PoolTimedOut)??;
        Ok(self.hand_out(conn, permit))
    }

    fn hand_out(&self, conn: C, permit: OwnedSemaphorePermit) -> Conn<C> {
        Conn {
            conn: Some(conn),
            pool: self.inner.clone(),
            settled: false,
            _permit: permit,
        }
    }

    /// Connections not in use.
    pub(crate) fn idle(&self) -> usize {
        lock(&self.inner.idle).len()
    }

    /// Connections in use.
    pub(crate) fn in_use(&self) -> usize {
        self.inner.max - self.inner.permits.available_permits()
    }

    /// Closes the idle connections; connections in use are closed when given back, and every
    /// later `acquire` fails.
    pub(crate) async fn close(&self) {
        self.inner.closed.store(true, Ordering::Release);
        self.inner.permits.close();
        let idle = std::mem::take(&mut *lock(&self.inner.idle));
        for (conn, _) in idle {
            let _ = conn.close().await;
        }
    }
}

impl<C: Connection> Conn<C> {
    /// Marks the work on the connection done, so that dropping it gives it back; unless `result`
    /// failed at the connection level: it may be dead (the database restarted) or mid-protocol.
    /// A connection dropped unsettled (its request was cancelled, say mid-transaction) is closed
    /// instead: closing ends its transaction and releases its locks at once, where a rollback
    /// queued on it would wait for its next use.
    pub(crate) fn settle<T>(&mut self, result: &Result<T, sqlx::Error>) {
        self.settled = true;
        if result.as_ref().is_err_and(super::connection_lost) {
            self.conn = None;
        }
    }
}

impl<C: Connection> std::ops::Deref for Conn<C> {
    type Target = C;
    #[expect(clippy::expect_used, reason = "the connection is taken only in drop")]
    fn deref(&self) -> &C {
        self.conn.as_ref().expect("a connection until dropped")
    }
}

impl<C: Connection> std::ops::DerefMut for Conn<C> {
    #[expect(clippy::expect_used, reason = "the connection is taken only in drop")]
    fn deref_mut(&mut self) -> &mut C {
        self.conn.as_mut().expect("a connection until dropped")
    }
}

impl<C: Connection> Drop for Conn<C> {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take() {
            if self.settled && !self.pool.closed.load(Ordering::Acquire) {
                lock(&self.pool.idle).push((conn, Instant::now()));
            }
        }
    }
}

// Each critical section is a push or a pop: a panic cannot leave the list half-changed.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}
