//! What every instance's revocation poll reads (`auth::live`): the sessions revoked since its
//! last read, and the single tokens revoked meanwhile that belong to no session row (a client's
//! token for itself, RFC 7009).

use uuid::Uuid;

use crate::error::Result;
use crate::store::{Store, on_pool, on_write_pool};

/// The sessions revoked since `$1` (served by the partial index `sessions_revoked`: `revoked_at
/// >= $1` implies `IS NOT NULL`), and the single tokens revoked since then. `$2` is no bound but
/// the largest time: as for `USERS_CHANGED_SINCE`, PostgreSQL's generic plan reads a two-sided
/// range from the index where it would scan for a one-sided one (`store::plans`).
pub(in crate::store) const REVOKED_SINCE: &str = "SELECT id, revoked_at FROM sessions \
     WHERE revoked_at >= $1 AND revoked_at <= $2 \
     UNION ALL SELECT sid, revoked_at FROM token_revocations \
     WHERE revoked_at >= $1 AND revoked_at <= $2";

impl Store {
    /// Sessions and single tokens revoked at or after `since`, with the time of their revocation.
    pub async fn revoked_since(&self, since: i64) -> Result<Vec<(Uuid, i64)>> {
        on_pool!(self, |pool| sqlx::query_as(REVOKED_SINCE)
            .bind(since)
            .bind(i64::MAX)
            .fetch_all(pool)
            .await)
    }

    /// Records the revocation of a single access token that belongs to no session row (a
    /// client's token for itself): its `sid` joins the revocations every instance polls, until
    /// `expires_at`, when the token is dead anyway. A second revocation changes nothing.
    pub async fn revoke_token(&self, sid: Uuid, now: i64, expires_at: i64) -> Result<()> {
        let sql = "INSERT INTO token_revocations (sid, revoked_at, expires_at) VALUES ($1, $2, $3) \
                   ON CONFLICT (sid) DO NOTHING";
        on_write_pool!(self, |pool| sqlx::query(sql)
            .bind(sid)
            .bind(now)
            .bind(expires_at)
            .execute(pool)
            .await
            .map(|_| ()))
    }
}
