//! When a session's holder last re-authenticated (docs/api.md §3, "Re-authentication").

use uuid::Uuid;

use crate::error::Result;
use crate::store::{Store, on_pool, on_write_pool};

impl Store {
    /// Records that the holder of `session` (of `user`) proved who they are at `at`; false if the
    /// session is not theirs or no longer live.
    pub async fn mark_reauthenticated(&self, session: Uuid, user: Uuid, at: i64) -> Result<bool> {
        let sql = "UPDATE sessions SET reauthenticated_at = $3 \
                   WHERE id = $1 AND user_id = $2 AND revoked_at IS NULL";
        let done = on_write_pool!(self, |pool| sqlx::query(sql)
            .bind(session)
            .bind(user)
            .bind(at)
            .execute(pool)
            .await
            .map(|done| done.rows_affected()))?;
        Ok(done == 1)
    }

    /// When the holder of the live `session` last re-authenticated, if ever.
    pub async fn reauthenticated_at(&self, session: Uuid) -> Result<Option<i64>> {
        let sql = "SELECT reauthenticated_at FROM sessions WHERE id = $1 AND revoked_at IS NULL";
        let at: Option<Option<i64>> = on_pool!(self, |pool| sqlx::query_scalar(sql)
            .bind(session)
            .fetch_optional(pool)
            .await)?;
        Ok(at.flatten())
    }
}
