//! Deleting what no request can need any more, every `HOUSEKEEPING_INTERVAL` on each instance.

use super::AuthService;
use crate::error::Result;
use crate::store::sessions::Purged;

/// A consumed refresh-token record is kept this long past the grace window, so that a racing
/// refresh still finds it however slowly it arrives.
const CONSUMED_RECORD_MARGIN_MS: i64 = 60_000;

impl AuthService {
    /// Sessions lapsed or revoked longer ago than any access token lives, refresh-token records
    /// consumed before the grace window (reuse of such a token is still detected: see
    /// `already_rotated`), expired challenges, idle throttle state, audit events past retention.
    pub async fn housekeep(&self) -> Result<Purged> {
        let now = self.clock.now_ms();
        let grace = self.settings.reuse_grace.as_millis() as i64;
        let mut purged = self
            .store
            .purge(
                now,
                now - self.live.horizon_ms(),
                now - grace - CONSUMED_RECORD_MARGIN_MS,
            )
            .await?;
        purged.throttles = self.throttle.housekeep(now).await?;
        let retention = self.settings.audit_retention.as_millis() as i64;
        purged.audit_events = self.store.purge_events(now - retention).await?;
        Ok(purged)
    }
}
