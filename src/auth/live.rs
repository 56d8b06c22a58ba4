//! What each instance keeps in memory so that a bearer call costs no database round trip, yet a
//! revoked session's access tokens are refused everywhere within `SYNC_INTERVAL`:
//!
//! - the sessions revoked recently enough that an access token of theirs could still be valid
//!   (a deny-list: every correctly signed token belongs to a session that was created, so only
//!   revocations need to be known). Revocations made here are entered at once; those made by other
//!   instances or the CLI arrive by polling the `sessions_revoked` index.
//! - the sessions used since `last_used_at` was last written, written in batches.
//!
//! Polling rather than PostgreSQL `LISTEN/NOTIFY`: it works the same on SQLite (where the CLI is
//! another process), needs no dedicated connection, and catches up by itself after a database
//! outage or a restart, where notifications sent in between would be lost and need polling anyway.
//! Each poll is one indexed query returning the last `OVERLAP_MS` of revocations.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::RwLock;
use std::time::Duration;

use uuid::Uuid;

use crate::clock::Clock;
use crate::error::Result;
use crate::store::Store;

/// How often revocations made elsewhere are read: the bound on how long another instance's
/// revocation takes to reach this one (docs/api.md §2 allows 2 s).
pub const SYNC_INTERVAL: Duration = Duration::from_millis(500);

/// How often the sessions' `last_used_at` is written.
pub const ACTIVITY_FLUSH_INTERVAL: Duration = Duration::from_secs(15);

/// Each poll reads again the revocations of this long before the previous one, so that a
/// revocation committed late (a slow transaction) or stamped by an instance whose clock is
/// slightly behind is still seen. Instances' clocks must agree to within this.
const OVERLAP_MS: i64 = 30_000;

/// How often revocations that can no longer matter are dropped from memory.
const PRUNE_EVERY_MS: i64 = 60_000;

pub struct LiveSessions {
    /// Session id → when it was revoked.
    revoked: RwLock<HashMap<Uuid, i64>>,
    /// Session id → when a bearer call last used it, not yet written.
    activity: Mutex<HashMap<Uuid, i64>>,
    sync: Mutex<SyncState>,
    /// A revocation older than this cannot concern a token that is still valid.
    horizon_ms: i64,
    clock: Clock,
}

struct SyncState {
    /// Local time at which the last successful poll started.
    polled_at: i64,
    pruned_at: i64,
    failing: bool,
}

impl LiveSessions {
    /// Loads every revocation that can still concern a valid access token, so that a restarted
    /// instance starts with the current state.
    pub async fn load(store: &Store, clock: Clock, horizon: Duration) -> Result<LiveSessions> {
        let horizon_ms = horizon.as_millis() as i64;
        let now = clock.now_ms();
        let revoked = store.revoked_since(now - horizon_ms).await?;
        Ok(LiveSessions {
            revoked: RwLock::new(revoked.into_iter().collect()),
            activity: Mutex::new(HashMap::new()),
            sync: Mutex::new(SyncState {
                polled_at: now,
                pruned_at: now,
                failing: false,
            }),
            horizon_ms,
            clock,
        })
    }

    pub fn is_revoked(&self, session: Uuid) -> bool {
        read(&self.revoked).contains_key(&session)
    }

    /// Enters revocations made by this instance (already committed to the database).
    pub fn revoked(&self, sessions: &[Uuid], at: i64) {
        if sessions.is_empty() {
            return;
        }
        let mut revoked = write(&self.revoked);
        for id in sessions {
            revoked.entry(*id).or_insert(at);
        }
    }

    /// Reads the revocations made elsewhere since the last poll; returns how many were new.
    pub async fn sync(&self, store: &Store) -> Result<usize> {
        let started = self.clock.now_ms();
        let since = lock(&self.sync).polled_at - OVERLAP_MS;
        let rows = match store.revoked_since(since).await {
            Ok(rows) => rows,
            Err(error) => {
                let mut state = lock(&self.sync);
                if !state.failing {
                    state.failing = true;
                    tracing::warn!(error = %error, "cannot read revocations: serving from the last known state");
                }
                return Err(error);
            }
        };
        let mut added = 0;
        {
            let mut revoked = write(&self.revoked);
            for (id, at) in rows {
                if revoked.insert(id, at).is_none() {
                    added += 1;
                }
            }
        }
        let mut state = lock(&self.sync);
        if state.failing {
            state.failing = false;
            tracing::info!("reading revocations again");
        }
        state.polled_at = started;
        if started - state.pruned_at >= PRUNE_EVERY_MS {
            state.pruned_at = started;
            let cutoff = started - self.horizon_ms;
            write(&self.revoked).retain(|_, at| *at >= cutoff);
        }
        Ok(added)
    }

    /// Notes that a bearer call used the session now.
    pub fn used(&self, session: Uuid) {
        lock(&self.activity).insert(session, self.clock.now_ms());
    }

    /// The last use of a session seen by this instance and not yet written.
    pub fn unwritten_use(&self, session: Uuid) -> Option<i64> {
        lock(&self.activity).get(&session).copied()
    }

    /// Writes the uses noted since the last flush. What cannot be written is kept for the next.
    pub async fn flush_activity(&self, store: &Store) -> Result<usize> {
        let used: Vec<(Uuid, i64)> = std::mem::take(&mut *lock(&self.activity))
            .into_iter()
            .collect();
        if used.is_empty() {
            return Ok(0);
        }
        if let Err(error) = store.touch_sessions(&used).await {
            let mut activity = lock(&self.activity);
            for (id, at) in used {
                let entry = activity.entry(id).or_insert(at);
                *entry = (*entry).max(at);
            }
            return Err(error);
        }
        Ok(used.len())
    }

    pub fn horizon_ms(&self) -> i64 {
        self.horizon_ms
    }
}

// A panic while one of these locks is held cannot leave the maps half-updated in a way that
// matters (each operation is a single insert, remove or swap), so a poisoned lock is used as is.
pub(crate) fn read<T>(lock: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(|e| e.into_inner())
}

pub(crate) fn write<T>(lock: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(|e| e.into_inner())
}

pub(crate) fn lock<T>(lock: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    lock.lock().unwrap_or_else(|e| e.into_inner())
}
