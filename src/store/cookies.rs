//! Browser session cookies (docs/api.md §6b): each a random value bound to one session. Only its
//! SHA-256 is kept; the cookie counts while its session does.

use uuid::Uuid;

use super::{Store, on_pool, on_write_pool};
use crate::error::Result;
use crate::model::CookieSession;

/// The session of a cookie, by the cookie's hash (the primary key), with what decides whether it
/// still counts.
pub(super) const COOKIE_SESSION: &str = "SELECT s.id, s.user_id, s.amr, s.expires_at, s.revoked_at \
     FROM browser_cookies c JOIN sessions s ON s.id = c.session_id WHERE c.token_hash = $1";

/// Cookies kept per session: a browser needs one; a few more allow for several tabs (or the pages
/// and an application of the site) asking at once. Older ones are deleted.
const KEPT_PER_SESSION: i64 = 8;

#[derive(sqlx::FromRow)]
struct CookieRow {
    id: Uuid,
    user_id: Uuid,
    amr: String,
    expires_at: i64,
    revoked_at: Option<i64>,
}

impl Store {
    /// Records a cookie for a session that is live at `now`; returns when the session lapses (its
    /// refresh token's expiry), or `None` if it has ended or lapsed (no cookie recorded).
    pub async fn insert_cookie(
        &self,
        token_hash: &[u8; 32],
        session_id: Uuid,
        now: i64,
    ) -> Result<Option<i64>> {
        let live = "SELECT expires_at FROM sessions \
                    WHERE id = $1 AND revoked_at IS NULL AND expires_at > $2";
        let insert =
            "INSERT INTO browser_cookies (token_hash, session_id, created_at) VALUES ($1, $2, $3)";
        let prune = "DELETE FROM browser_cookies WHERE session_id = $1 AND token_hash NOT IN \
                     (SELECT token_hash FROM browser_cookies WHERE session_id = $1 \
                      ORDER BY created_at DESC LIMIT $2)";
        on_write_pool!(self, |pool| {
            let mut tx = pool.begin().await?;
            let expires_at: Option<i64> = sqlx::query_scalar(live)
                .bind(session_id)
                .bind(now)
                .fetch_optional(&mut *tx)
                .await?;
            if expires_at.is_none() {
                tx.rollback().await?;
                return Ok(None);
            }
            sqlx::query(insert)
                .bind(&token_hash[..])
                .bind(session_id)
                .bind(now)
                .execute(&mut *tx)
                .await?;
            sqlx::query(prune)
                .bind(session_id)
                .bind(KEPT_PER_SESSION)
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
            Ok(expires_at)
        })
    }

    /// The session a cookie belongs to, ended or not; `None` for a cookie never issued (or whose
    /// session was deleted).
    pub async fn cookie_session(&self, token_hash: &[u8; 32]) -> Result<Option<CookieSession>> {
        let row: Option<CookieRow> = on_pool!(self, |pool| sqlx::query_as(COOKIE_SESSION)
            .bind(&token_hash[..])
            .fetch_optional(pool)
            .await)?;
        Ok(row.map(|r| CookieSession {
            session_id: r.id,
            user_id: r.user_id,
            amr: r.amr.split_whitespace().map(str::to_owned).collect(),
            expires_at: r.expires_at,
            revoked_at: r.revoked_at,
        }))
    }
}
