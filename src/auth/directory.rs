//! The accounts forward-auth and introspection describe (e-mail and whether it is verified, name,
//! current roles, organisations), kept in
//! memory per instance so that those calls cost no database round trip, and forgotten as soon as
//! they change anywhere: each instance polls the `users_updated_at` index (as `live` polls the
//! revocations), so a role removed on one instance is gone from every other within
//! `live::SYNC_INTERVAL`.
//!
//! An account read from the database just before a change commits could be remembered after the
//! poll that forgot it; each poll therefore reads the changes of the last `OVERLAP_MS` again, and
//! forgets them again, so such a stale entry lives at most one more poll.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};

use uuid::Uuid;

use super::live::{lock, read, write};
use crate::clock::Clock;
use crate::error::Result;
use crate::model::User;
use crate::model::orgs::Membership;
use crate::store::Store;

/// Changes read again on every poll: late commits, clocks of other instances slightly behind.
const OVERLAP_MS: i64 = 30_000;

/// Accounts remembered at most (~200 bytes each); past that the table starts over.
const CAPACITY: usize = 100_000;

/// What a guarded service is told about an account.
#[derive(Debug)]
pub struct Profile {
    pub email: String,
    pub email_verified: bool,
    pub full_name: String,
    pub roles: Vec<String>,
    pub disabled: bool,
    /// The organisations the account belongs to, with its roles in each (docs/api.md §13). A
    /// membership change moves the account's `updated_at`, so it is forgotten like any other.
    pub orgs: Vec<Membership>,
}

impl Profile {
    fn new(u: &User, orgs: Vec<Membership>) -> Self {
        Profile {
            email: u.email.clone(),
            email_verified: u.email_verified,
            full_name: u.full_name.clone(),
            roles: u.roles.clone(),
            disabled: u.disabled,
            orgs,
        }
    }

    /// The account's roles in `org` now; `None` if it is not a member.
    pub fn membership(&self, org: Uuid) -> Option<&Membership> {
        self.orgs.iter().find(|m| m.org_id == org)
    }
}

pub struct Directory {
    store: Store,
    clock: Clock,
    /// Account id → its profile; `None`: there is no such account.
    known: RwLock<HashMap<Uuid, Option<Arc<Profile>>>>,
    /// Local time at which the last successful poll started.
    polled_at: Mutex<i64>,
}

impl Directory {
    pub fn new(store: Store, clock: Clock) -> Directory {
        let now = clock.now_ms();
        Directory {
            store,
            clock,
            known: RwLock::new(HashMap::new()),
            polled_at: Mutex::new(now),
        }
    }

    /// The account's profile, from memory or else from the database; `None` if it does not exist.
    pub async fn profile(&self, id: Uuid) -> Result<Option<Arc<Profile>>> {
        if let Some(known) = read(&self.known).get(&id) {
            return Ok(known.clone());
        }
        let profile = match self.store.user_by_id(id).await? {
            // Memberships read after the account: a change committed in between moved
            // `updated_at`, so the next poll forgets this entry (see the module's note).
            Some(u) => Some(Arc::new(Profile::new(
                &u,
                self.store.memberships_of(id).await?,
            ))),
            None => None,
        };
        let mut known = write(&self.known);
        if known.len() >= CAPACITY {
            known.clear();
        }
        known.insert(id, profile.clone());
        Ok(profile)
    }

    /// Forgets an account changed by this instance, at once (others learn of it by polling).
    pub fn forget(&self, id: Uuid) {
        write(&self.known).remove(&id);
    }

    /// Forgets the accounts changed anywhere since the last poll; returns how many were known.
    pub async fn sync(&self) -> Result<usize> {
        let started = self.clock.now_ms();
        let since = *lock(&self.polled_at) - OVERLAP_MS;
        let changed = self.store.users_changed_since(since).await?;
        let mut forgotten = 0;
        if !changed.is_empty() {
            let mut known = write(&self.known);
            for id in changed {
                forgotten += usize::from(known.remove(&id).is_some());
            }
        }
        *lock(&self.polled_at) = started;
        Ok(forgotten)
    }
}
