//! Sessions, the refresh tokens that keep them alive, and two-factor challenges.

use uuid::Uuid;

use super::{Store, now_ms, on_pool};

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

/// What became of a refresh token presented for rotation.
#[derive(Debug)]
pub enum Rotation {
    /// It was current: it is consumed now and `RefreshRow` (the one passed in) is current.
    Rotated(SessionRow),
    /// It had been consumed `ago_ms` before; the session's current token is given.
    AlreadyConsumed {
        ago_ms: i64,
        session: SessionRow,
        current: Option<RefreshRow>,
    },
    /// Unknown, expired, or its session is revoked or expired.
    Invalid,
}

impl Store {
    /// Creates a session with its first refresh token.
    pub async fn insert_session(&self, s: &NewSession<'_>) -> Result<(), sqlx::Error> {
        let insert_session = "INSERT INTO sessions (id, user_id, amr, ip, user_agent, created_at, \
                              last_used_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $6, $7)";
        let insert_refresh = "INSERT INTO refresh_tokens (jti, session_id, issued_at, expires_at) \
                              VALUES ($1, $2, $3, $4)";
        on_pool!(self, |pool| {
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

    /// Whether the session exists, is not revoked and has not lapsed.
    pub async fn session_is_active(&self, id: Uuid, now: i64) -> Result<bool, sqlx::Error> {
        let sql = "SELECT COUNT(*) FROM sessions WHERE id = $1 AND revoked_at IS NULL AND expires_at > $2";
        let n: i64 = on_pool!(self, |pool| sqlx::query_scalar(sql)
            .bind(id)
            .bind(now)
            .fetch_one(pool)
            .await)?;
        Ok(n == 1)
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
        let touch = format!(
            "UPDATE sessions SET last_used_at = $2, expires_at = $3 WHERE id = $1 \
             RETURNING {SESSION_COLUMNS}"
        );
        on_pool!(self, |pool| {
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
            let session: SessionRow = sqlx::query_as(&touch)
                .bind(session_id)
                .bind(now)
                .bind(next.expires_at)
                .fetch_one(&mut *tx)
                .await?;
            tx.commit().await?;
            Ok(Some(session))
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

    /// Revokes one session (if still active); returns whether it was.
    pub async fn revoke_session(&self, id: Uuid, reason: &str) -> Result<bool, sqlx::Error> {
        let sql = "UPDATE sessions SET revoked_at = $2, revoked_reason = $3 \
                   WHERE id = $1 AND revoked_at IS NULL";
        let n = on_pool!(self, |pool| sqlx::query(sql)
            .bind(id)
            .bind(now_ms())
            .bind(reason)
            .execute(pool)
            .await
            .map(|r| r.rows_affected()))?;
        Ok(n == 1)
    }

    /// Revokes every active session of a user, except `keep` if given; returns how many.
    pub async fn revoke_user_sessions(
        &self,
        user_id: Uuid,
        keep: Option<Uuid>,
        reason: &str,
    ) -> Result<u64, sqlx::Error> {
        let sql = "UPDATE sessions SET revoked_at = $2, revoked_reason = $3 \
                   WHERE user_id = $1 AND revoked_at IS NULL AND ($4 IS NULL OR id <> $4)";
        on_pool!(self, |pool| sqlx::query(sql)
            .bind(user_id)
            .bind(now_ms())
            .bind(reason)
            .bind(keep)
            .execute(pool)
            .await
            .map(|r| r.rows_affected()))
    }

    pub async fn insert_challenge(
        &self,
        token_hash: &[u8; 32],
        user_id: Uuid,
        expires_at: i64,
    ) -> Result<(), sqlx::Error> {
        let sql = "INSERT INTO temp_tokens (token_hash, user_id, expires_at) VALUES ($1, $2, $3)";
        on_pool!(self, |pool| sqlx::query(sql)
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
        on_pool!(self, |pool| sqlx::query_as(sql)
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
        let n = on_pool!(self, |pool| sqlx::query(sql)
            .bind(&token_hash[..])
            .bind(now)
            .execute(pool)
            .await
            .map(|r| r.rows_affected()))?;
        Ok(n == 1)
    }
}
