//! Sessions, the refresh tokens that keep them alive, and two-factor challenges.

use uuid::Uuid;

use super::{Store, on_pool, on_write_pool};

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct SessionRow {
    pub id: Uuid,
    pub user_id: Uuid,
    pub amr: String,
    pub ip: Option<String>,
    pub user_agent: Option<String>,
    pub created_at: i64,
    pub last_used_at: i64,
    pub expires_at: i64,
    pub revoked_at: Option<i64>,
}

const SESSION_COLUMNS: &str =
    "id, user_id, amr, ip, user_agent, created_at, last_used_at, expires_at, revoked_at";

/// A refresh token as recorded: enough to mint the same token again.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct RefreshRow {
    pub jti: Uuid,
    pub session_id: Uuid,
    pub issued_at: i64,
    pub expires_at: i64,
    pub consumed_at: Option<i64>,
}

const REFRESH_COLUMNS: &str = "jti, session_id, issued_at, expires_at, consumed_at";

pub struct NewSession<'a> {
    pub id: Uuid,
    pub user_id: Uuid,
    pub amr: &'a str,
    pub ip: Option<&'a str>,
    pub user_agent: Option<&'a str>,
    pub refresh: &'a RefreshRow,
}

/// Rows deleted by one housekeeping pass.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Purged {
    pub sessions: u64,
    pub refresh_tokens: u64,
    pub challenges: u64,
    pub throttles: u64,
    pub audit_events: u64,
}

impl Store {
    /// Creates a session with its first refresh token.
    pub async fn insert_session(&self, s: &NewSession<'_>) -> Result<(), sqlx::Error> {
        let insert_session = "INSERT INTO sessions (id, user_id, amr, ip, user_agent, created_at, \
                              last_used_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $6, $7)";
        let insert_refresh = "INSERT INTO refresh_tokens (jti, session_id, issued_at, expires_at) \
                              VALUES ($1, $2, $3, $4)";
        on_write_pool!(self, |pool| {
            let mut tx = pool.begin().await?;
            sqlx::query(insert_session)
                .bind(s.id)
                .bind(s.user_id)
                .bind(s.amr)
                .bind(s.ip)
                .bind(s.user_agent)
                .bind(s.refresh.issued_at)
                .bind(s.refresh.expires_at)
                .execute(&mut *tx)
                .await?;
            sqlx::query(insert_refresh)
                .bind(s.refresh.jti)
                .bind(s.id)
                .bind(s.refresh.issued_at)
                .bind(s.refresh.expires_at)
                .execute(&mut *tx)
                .await?;
            tx.commit().await
        })
    }

    pub async fn session(&self, id: Uuid) -> Result<Option<SessionRow>, sqlx::Error> {
        let sql = format!("SELECT {SESSION_COLUMNS} FROM sessions WHERE id = $1");
        on_pool!(self, |pool| sqlx::query_as(&sql)
            .bind(id)
            .fetch_optional(pool)
            .await)
    }

    /// Consumes `jti` and records `next` as the session's current refresh token, atomically: the
    /// first statement is the conditional UPDATE, so of two racing rotations of one token exactly
    /// one finds a row to consume (PostgreSQL row lock; SQLite's single writer). Returns the
    /// session, or `None` if `jti` was not current (unknown, consumed, expired, session revoked).
    pub async fn rotate_refresh(
        &self,
        jti: Uuid,
        next: &RefreshRow,
    ) -> Result<Option<SessionRow>, sqlx::Error> {
        let now = next.issued_at;
        let consume = "UPDATE refresh_tokens SET consumed_at = $2 \
                       WHERE jti = $1 AND consumed_at IS NULL AND expires_at > $2 \
                       AND session_id IN (SELECT id FROM sessions WHERE revoked_at IS NULL) \
                       RETURNING session_id";
        let insert = "INSERT INTO refresh_tokens (jti, session_id, issued_at, expires_at) \
                      VALUES ($1, $2, $3, $4)";
        // Checked again here, not only in `consume`: this UPDATE waits for a concurrent revocation
        // of the row and then sees it (PostgreSQL re-reads an updated row before changing it), so
        // no token is minted for a session revoked while it was being refreshed.
        let touch = format!(
            "UPDATE sessions SET last_used_at = $2, expires_at = $3 \
             WHERE id = $1 AND revoked_at IS NULL RETURNING {SESSION_COLUMNS}"
        );
        on_write_pool!(self, |pool| {
            let mut tx = pool.begin().await?;
            let consumed: Option<Uuid> = sqlx::query_scalar(consume)
                .bind(jti)
                .bind(now)
                .fetch_optional(&mut *tx)
                .await?;
            let Some(session_id) = consumed else {
                tx.rollback().await?;
                return Ok(None);
            };
            sqlx::query(insert)
                .bind(next.jti)
                .bind(session_id)
                .bind(next.issued_at)
                .bind(next.expires_at)
                .execute(&mut *tx)
                .await?;
            let session: Option<SessionRow> = sqlx::query_as(&touch)
                .bind(session_id)
                .bind(now)
                .bind(next.expires_at)
                .fetch_optional(&mut *tx)
                .await?;
            if session.is_none() {
                tx.rollback().await?;
                return Ok(None);
            }
            tx.commit().await?;
            Ok(session)
        })
    }

    pub async fn refresh_token(&self, jti: Uuid) -> Result<Option<RefreshRow>, sqlx::Error> {
        let sql = format!("SELECT {REFRESH_COLUMNS} FROM refresh_tokens WHERE jti = $1");
        on_pool!(self, |pool| sqlx::query_as(&sql)
            .bind(jti)
            .fetch_optional(pool)
            .await)
    }

    /// The session's one unconsumed refresh token.
    pub async fn current_refresh_token(
        &self,
        session_id: Uuid,
    ) -> Result<Option<RefreshRow>, sqlx::Error> {
        let sql = format!(
            "SELECT {REFRESH_COLUMNS} FROM refresh_tokens WHERE session_id = $1 AND consumed_at IS NULL"
        );
        on_pool!(self, |pool| sqlx::query_as(&sql)
            .bind(session_id)
            .fetch_optional(pool)
            .await)
    }

    /// Revokes one session of `user_id` if it is still active; returns whether it was.
    pub async fn revoke_session(
        &self,
        user_id: Uuid,
        id: Uuid,
        reason: &str,
        now: i64,
    ) -> Result<bool, sqlx::Error> {
        let sql = "UPDATE sessions SET revoked_at = $3, revoked_reason = $4 \
                   WHERE id = $1 AND user_id = $2 AND revoked_at IS NULL";
        let n = on_write_pool!(self, |pool| sqlx::query(sql)
            .bind(id)
            .bind(user_id)
            .bind(now)
            .bind(reason)
            .execute(pool)
            .await
            .map(|r| r.rows_affected()))?;
        Ok(n == 1)
    }

    /// Revokes every active session of a user, except `keep` if given; returns their ids.
    pub async fn revoke_user_sessions(
        &self,
        user_id: Uuid,
        keep: Option<Uuid>,
        reason: &str,
        now: i64,
    ) -> Result<Vec<Uuid>, sqlx::Error> {
        let sql = "UPDATE sessions SET revoked_at = $2, revoked_reason = $3 \
                   WHERE user_id = $1 AND revoked_at IS NULL AND ($4 IS NULL OR id <> $4) \
                   RETURNING id";
        on_write_pool!(self, |pool| sqlx::query_scalar(sql)
            .bind(user_id)
            .bind(now)
            .bind(reason)
            .bind(keep)
            .fetch_all(pool)
            .await)
    }

    /// Sessions revoked at or after `since`, with the time of their revocation.
    pub async fn revoked_since(&self, since: i64) -> Result<Vec<(Uuid, i64)>, sqlx::Error> {
        let sql = "SELECT id, revoked_at FROM sessions WHERE revoked_at >= $1";
        on_pool!(self, |pool| sqlx::query_as(sql)
            .bind(since)
            .fetch_all(pool)
            .await)
    }

    /// A user's live sessions, the most recently used first.
    pub async fn active_sessions(
        &self,
        user_id: Uuid,
        now: i64,
    ) -> Result<Vec<SessionRow>, sqlx::Error> {
        let sql = format!(
            "SELECT {SESSION_COLUMNS} FROM sessions \
             WHERE user_id = $1 AND revoked_at IS NULL AND expires_at > $2 \
             ORDER BY last_used_at DESC, id DESC"
        );
        on_pool!(self, |pool| sqlx::query_as(&sql)
            .bind(user_id)
            .bind(now)
            .fetch_all(pool)
            .await)
    }

    /// Records when sessions were last used, in one transaction; a time never moves back.
    pub async fn touch_sessions(&self, used: &[(Uuid, i64)]) -> Result<(), sqlx::Error> {
        let sql = "UPDATE sessions SET last_used_at = $2 WHERE id = $1 AND last_used_at < $2";
        on_write_pool!(self, |pool| {
            let mut tx = pool.begin().await?;
            for (id, at) in used {
                sqlx::query(sql).bind(id).bind(at).execute(&mut *tx).await?;
            }
            tx.commit().await
        })
    }

    /// Deletes what can no longer matter: sessions lapsed or revoked before `ended_before` (their
    /// refresh tokens go with them), refresh tokens consumed before `consumed_before`, and
    /// challenges that have expired.
    pub async fn purge(
        &self,
        now: i64,
        ended_before: i64,
        consumed_before: i64,
    ) -> Result<Purged, sqlx::Error> {
        let sessions = "DELETE FROM sessions WHERE expires_at < $1 OR revoked_at < $1";
        let refresh = "DELETE FROM refresh_tokens WHERE consumed_at < $1";
        let challenges = "DELETE FROM temp_tokens WHERE expires_at < $1";
        on_write_pool!(self, |pool| {
            let sessions = sqlx::query(sessions)
                .bind(ended_before)
                .execute(pool)
                .await?
                .rows_affected();
            let refresh_tokens = sqlx::query(refresh)
                .bind(consumed_before)
                .execute(pool)
                .await?
                .rows_affected();
            let challenges = sqlx::query(challenges)
                .bind(now)
                .execute(pool)
                .await?
                .rows_affected();
            Ok(Purged {
                sessions,
                refresh_tokens,
                challenges,
                throttles: 0,
                audit_events: 0,
            })
        })
    }

    pub async fn insert_challenge(
        &self,
        token_hash: &[u8; 32],
        user_id: Uuid,
        expires_at: i64,
    ) -> Result<(), sqlx::Error> {
        let sql = "INSERT INTO temp_tokens (token_hash, user_id, expires_at) VALUES ($1, $2, $3)";
        on_write_pool!(self, |pool| sqlx::query(sql)
            .bind(&token_hash[..])
            .bind(user_id)
            .bind(expires_at)
            .execute(pool)
            .await
            .map(|_| ()))?;
        Ok(())
    }

    /// Takes one attempt of a live challenge before its code is checked, so that however many
    /// requests race, no challenge ever has more than `max_attempts` codes checked. Returns the
    /// user and the attempts taken so far, or `None` if the challenge is unknown, used, expired
    /// or out of attempts.
    pub async fn take_challenge_attempt(
        &self,
        token_hash: &[u8; 32],
        max_attempts: i64,
        now: i64,
    ) -> Result<Option<(Uuid, i64)>, sqlx::Error> {
        let sql = "UPDATE temp_tokens SET attempts = attempts + 1 \
                   WHERE token_hash = $1 AND used_at IS NULL AND attempts < $2 AND expires_at > $3 \
                   RETURNING user_id, attempts";
        on_write_pool!(self, |pool| sqlx::query_as(sql)
            .bind(&token_hash[..])
            .bind(max_attempts)
            .bind(now)
            .fetch_optional(pool)
            .await)
    }

    /// Uses up a challenge whose code was right; false if a racing request used it first.
    pub async fn complete_challenge(
        &self,
        token_hash: &[u8; 32],
        now: i64,
    ) -> Result<bool, sqlx::Error> {
        let sql = "UPDATE temp_tokens SET used_at = $2 WHERE token_hash = $1 AND used_at IS NULL";
        let n = on_write_pool!(self, |pool| sqlx::query(sql)
            .bind(&token_hash[..])
            .bind(now)
            .execute(pool)
            .await
            .map(|r| r.rows_affected()))?;
        Ok(n == 1)
    }
}
