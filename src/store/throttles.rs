//! Account throttling state (GCRA), shared through the database. See `auth::throttle`.

use super::{Store, on_pool, on_write_pool};
use crate::error::Result;

// Query texts of every login, shared with the plan tests (`store::plans`).
pub(super) const TAKE_THROTTLE_SLOT: &str = "INSERT INTO throttles (key, tat) VALUES ($1, $2 + $3) \
     ON CONFLICT (key) DO UPDATE \
     SET tat = (CASE WHEN throttles.tat > $2 THEN throttles.tat ELSE $2 END) + $3 \
     WHERE throttles.tat - $2 <= $4 \
     RETURNING tat";
pub(super) const RETURN_THROTTLE_SLOT: &str = "UPDATE throttles SET tat = tat - $2 WHERE key = $1";

impl Store {
    /// Takes one slot of `key`'s allowance if it has one: moves its arrival time one `interval`
    /// later unless that time is more than `tolerance` ahead of `now`. In one statement, so racing
    /// requests cannot take more slots than there are. Returns whether a slot was taken.
    pub async fn take_throttle_slot(
        &self,
        key: &str,
        now: i64,
        interval: i64,
        tolerance: i64,
    ) -> Result<bool> {
        let taken: Option<i64> =
            on_write_pool!(self, |pool| sqlx::query_scalar(TAKE_THROTTLE_SLOT)
                .bind(key)
                .bind(now)
                .bind(interval)
                .bind(tolerance)
                .fetch_optional(pool)
                .await)?;
        Ok(taken.is_some())
    }

    /// Gives back a slot taken for an attempt that succeeded.
    pub async fn return_throttle_slot(&self, key: &str, interval: i64) -> Result<()> {
        on_write_pool!(self, |pool| sqlx::query(RETURN_THROTTLE_SLOT)
            .bind(key)
            .bind(interval)
            .execute(pool)
            .await
            .map(|_| ()))
    }

    /// When `key` was last scheduled to (its arrival time), if it has state.
    pub async fn throttle_tat(&self, key: &str) -> Result<Option<i64>> {
        let sql = "SELECT tat FROM throttles WHERE key = $1";
        on_pool!(self, |pool| sqlx::query_scalar(sql)
            .bind(key)
            .fetch_optional(pool)
            .await)
    }
}
