//! What each instance keeps in memory about API keys, so that a key costs no database round trip
//! on most requests, yet a deleted key is refused everywhere within the §2 delay:
//!
//! - the keys verified in the last `FRESH_FOR` (by keyed hash, found or not); past that a key is
//!   read again, so a deletion on another instance is seen within it. The owner (disabled,
//!   deleted, no longer a member of the key's organisation) is judged on every use from the
//!   directory, which forgets a changed account within `live::SYNC_INTERVAL`, and the expiry by
//!   the clock;
//! - when this instance last wrote each key's `last_used_at` (at most once a `TOUCH_EVERY`), and
//!   the addresses it has seen each key used from (each recorded in the database once).

use std::time::{Duration, Instant};

use super::super::audit::{AuditEvent, Subject};
use super::super::live::{lock, read, write};
use crate::auth::core::Core;
use crate::auth::key_cache::Known;
use crate::error::{Error, Result};
use crate::model::orgs::ActiveOrg;
use crate::model::{ApiKey, ClientInfo, KeyIdentity, Principal};

/// How long a key read from the database is believed: a deletion elsewhere reaches this
/// instance within it (docs/api.md §12 allows 2 s).
pub const FRESH_FOR: Duration = Duration::from_secs(1);

/// `last_used_at` is written at most this often per key (docs/api.md §12: at most a minute behind).
pub const TOUCH_EVERY_MS: i64 = 60_000;

/// §2's clock leeway, applied to `expires_at` as to a token's `exp`.
const LEEWAY_MS: i64 = 5_000;

/// Entries remembered at most; past that a table starts over (a flood of made-up keys).
const CAPACITY: usize = 100_000;

/// The form of a key: `ghk_` and 32 base62 characters.
pub const PREFIX: &str = "ghk_";
pub const RANDOM_LENGTH: usize = 32;

/// Whether `token` is written as an API key (and not, say, a JWT): which verification it gets.
pub fn is_api_key(token: &str) -> bool {
    token.starts_with(PREFIX)
}

fn well_formed(key: &str) -> bool {
    key.strip_prefix(PREFIX).is_some_and(|random| {
        random.len() == RANDOM_LENGTH && random.bytes().all(|b| b.is_ascii_alphanumeric())
    })
}

/// A live key and its owner as they are now.
pub(crate) struct LiveKey {
    pub key: ApiKey,
    pub holder: KeyIdentity,
}

impl LiveKey {
    /// The key as the caller of a bearer call. A key has no session: its id stands in for one,
    /// and `api_key` tells every call of the person's own to refuse it.
    pub fn principal(self) -> Principal {
        Principal {
            user_id: self.key.user_id,
            session_id: self.key.id,
            api_key: Some(self.key.id),
            multi_factor: false,
            org: self.holder.org,
            scopes: Some(self.key.scopes),
            dpop_jkt: None,
        }
    }
}

impl Core {
    /// The live key `presented` is: well-formed, stored, unexpired (with §2's leeway), of an
    /// enabled owner who is still a member of the key's organisation. `TokenInvalid` for anything
    /// else, as for an access token of a revoked session.
    pub(crate) async fn live_key(&self, presented: &str) -> Result<LiveKey> {
        if !well_formed(presented) {
            return Err(Error::TokenInvalid);
        }
        let hash = self.secrets.api_key_hash(presented);
        let key = self.key_by_hash(&hash).await?.ok_or(Error::TokenInvalid)?;
        if key
            .expires_at
            .is_some_and(|at| self.clock.now_ms() > at + LEEWAY_MS)
        {
            return Err(Error::TokenInvalid);
        }
        let profile = self
            .directory
            .profile(key.user_id)
            .await?
            .filter(|p| !p.disabled)
            .ok_or(Error::TokenInvalid)?;
        let org = match key.org_id {
            None => None,
            Some(org) => {
                let membership = profile.membership(org).ok_or(Error::TokenInvalid)?;
                Some(ActiveOrg {
                    id: org,
                    roles: membership.roles.clone(),
                })
            }
        };
        let holder = KeyIdentity {
            key_id: key.id,
            user_id: key.user_id,
            email: profile.email.clone(),
            email_verified: profile.email_verified,
            full_name: profile.full_name.clone(),
            roles: profile.roles.clone(),
            org,
            scopes: key.scopes.clone(),
            expires_at: key.expires_at,
        };
        Ok(LiveKey { key, holder })
    }

    async fn key_by_hash(&self, hash: &[u8; 32]) -> Result<Option<ApiKey>> {
        if let Some(known) = read(&self.keys.known).get(hash) {
            if known.read_at.elapsed() < FRESH_FOR {
                return Ok(known.key.clone());
            }
        }
        let read_at = Instant::now();
        let key = self.store.api_key_by_hash(hash).await?;
        let mut known = write(&self.keys.known);
        if known.len() >= CAPACITY {
            known.clear();
        }
        known.insert(
            *hash,
            Known {
                read_at,
                key: key.clone(),
            },
        );
        Ok(key)
    }

    /// Notes a use of a live key: `last_used_at` at most once a minute, and the first use from an
    /// address audited. `client`: where the call came from, when known (introspection is asked by
    /// a service, not by the key's holder). Failures are logged: the call itself is fine.
    pub(crate) async fn key_used(&self, key: &ApiKey, client: Option<&ClientInfo>) {
        let now = self.clock.now_ms();
        let due = {
            let mut touched = lock(&self.keys.touched);
            let last = touched
                .get(&key.id)
                .copied()
                .or(key.last_used_at)
                .unwrap_or(i64::MIN);
            let due = now.saturating_sub(last) >= TOUCH_EVERY_MS;
            if due {
                if touched.len() >= CAPACITY {
                    touched.clear();
                }
                touched.insert(key.id, now);
            }
            due
        };
        if due {
            if let Err(error) = self.store.touch_api_key(key.id, now, TOUCH_EVERY_MS).await {
                tracing::warn!(key = %key.id, error = %error, "cannot record an API key's use");
            }
        }
        let Some(client) = client else { return };
        let Some(ip) = client.ip else { return };
        let new_here = {
            let mut seen = lock(&self.keys.seen);
            if seen.len() >= CAPACITY {
                seen.clear();
            }
            seen.insert((key.id, ip))
        };
        if !new_here {
            return;
        }
        match self
            .store
            .note_api_key_address(key.id, &ip.to_string())
            .await
        {
            Ok(true) => {
                let event = AuditEvent::ApiKeyNewAddress { key: key.id };
                self.audit(event, Subject::user(key.user_id).from(client))
                    .await;
            }
            Ok(false) => {}
            Err(error) => {
                // Not known to be recorded: asked again at the next use.
                lock(&self.keys.seen).remove(&(key.id, ip));
                tracing::warn!(key = %key.id, error = %error, "cannot record an API key's address");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_ghk_and_32_base62_characters_are_a_key() {
        assert!(well_formed(&format!("ghk_{}", "aZ0".repeat(10) + "xy")));
        for bad in [
            "ghk_".to_owned(),
            format!("ghk_{}", "a".repeat(31)),
            format!("ghk_{}", "a".repeat(33)),
            format!("ghk_{}-", "a".repeat(31)),
            format!("GHK_{}", "a".repeat(32)),
            format!("ghk_{}é", "a".repeat(30)),
        ] {
            assert!(!well_formed(&bad), "{bad}");
        }
    }
}
