//! Sessions, the refresh tokens that keep them alive, and two-factor challenges.

use uuid::Uuid;

use super::{Backend, Store, on_pool, on_write_pool};
use crate::auth::model::{RefreshRecord, Session};
use crate::error::Result;

#[derive(sqlx::FromRow)]
struct SessionRow {
    id: Uuid,
    user_id: Uuid,
    amr: String,
    ip: Option<String>,
    user_agent: Option<String>,
    created_at: i64,
    last_used_at: i64,
    revoked_at: Option<i64>,
}

impl From<SessionRow> for Session {
    fn from(r: SessionRow) -> Self {
        Session {
            id: r.id,
            user_id: r.user_id,
            amr: r.amr.split_whitespace().map(str::to_owned).collect(),
            ip: r.ip,
            user_agent: r.user_agent,
            created_at: r.created_at,
            last_used_at: r.last_used_at,
            revoked_at: r.revoked_at,
        }
    }
}

const SESSION_COLUMNS: &str =
    "id, user_id, amr, ip, user_agent, created_at, last_used_at, revoked_at";

#[derive(sqlx::FromRow)]
struct RefreshRow {
    jti: Uuid,
    session_id: Uuid,
    issued_at: i64,
    expires_at: i64,
    consumed_at: Option<i64>,
}

impl From<RefreshRow> for RefreshRecord {
    fn from(r: RefreshRow) -> Self {
        RefreshRecord {
            jti: r.jti,
            session_id: r.session_id,
            issued_at: r.issued_at,
            expires_at: r.expires_at,
            consumed_at: r.consumed_at,
        }
    }
}

const REFRESH_COLUMNS: &str = "jti, session_id, issued_at, expires_at, consumed_at";

pub struct NewSession<'a> {
    pub id: Uuid,
    pub user_id: Uuid,
    pub amr: &'a [String],
    pub ip: Option<&'a str>,
    pub user_agent: Option<&'a str>,
    pub refresh: &'a RefreshRecord,
    /// The account's `auth_epoch` when the login's checks began: the session is opened only if it
    /// is still that, and the account is not disabled.
    pub auth_epoch: i64,
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

/// Revokes every active session of `$user` but `$keep` inside the open transaction `$tx`, and
/// evaluates to their ids.
macro_rules! revoke_all {
    ($tx:ident, $user:expr, $keep:expr, $reason:expr, $now:expr) => {
        sqlx::query_scalar::<_, Uuid>(
            "UPDATE sessions SET revoked_at = $2, revoked_reason = $3 \
             WHERE user_id = $1 AND revoked_at IS NULL AND ($4 IS NULL OR id <> $4) \
             RETURNING id",
        )
        .bind($user)
        .bind($now)
        .bind($reason)
        .bind($keep)
        .fetch_all(&mut *$tx)
        .await?
    };
}

/// `revoke_all!`, and the user's pending 2FA challenges deleted: what a change of password or a
/// disabled account ends.
macro_rules! end_logins {
    ($tx:ident, $user:expr, $keep:expr, $reason:expr, $now:expr) => {{
        sqlx::query("DELETE FROM temp_tokens WHERE user_id = $1")
            .bind($user)
            .execute(&mut *$tx)
            .await?;
        revoke_all!($tx, $user, $keep, $reason, $now)
    }};
}

impl Store {
    /// Creates a session with its first refresh token, unless the account was disabled or its
    /// `auth_epoch` moved (a password change) since the login's checks began: false then. On
    /// PostgreSQL the user row is share-locked by the insert, so a concurrent disable or password
    /// change either commits first (and this finds it) or waits for this session and then ends it
    /// in its own transaction. SQLite runs one writer at a time, which gives the same order.
    pub async fn insert_session(&self, s: &NewSession<'_>) -> Result<bool> {
        let lock = match self.backend {
            Backend::Sqlite { .. } => "",
            Backend::Postgres(_) => " FOR SHARE",
        };
        let insert_session = format!(
            "INSERT INTO sessions (id, user_id, amr, ip, user_agent, created_at, last_used_at, \
             expires_at) SELECT $1, id, $3, $4, $5, $6, $6, $7 FROM users \
             WHERE id = $2 AND disabled = FALSE AND auth_epoch = $8{lock}"
        );
        let insert_refresh = "INSERT INTO refresh_tokens (jti, session_id, issued_at, expires_at) \
                              VALUES ($1, $2, $3, $4)";
        let amr = s.amr.join(" ");
        on_write_pool!(self, |pool| {
            let mut tx = pool.begin().await?;
            let created = sqlx::query(&insert_session)
                .bind(s.id)
                .bind(s.user_id)
                .bind(&amr)
                .bind(s.ip)
                .bind(s.user_agent)
                .bind(s.refresh.issued_at)
                .bind(s.refresh.expires_at)
                .bind(s.auth_epoch)
                .execute(&mut *tx)
                .await?
                .rows_affected();
            if created != 1 {
                tx.rollback().await?;
                return Ok(false);
            }
            sqlx::query(insert_refresh)
                .bind(s.refresh.jti)
                .bind(s.id)
                .bind(s.refresh.issued_at)
                .bind(s.refresh.expires_at)
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
            Ok(true)
        })
    }

    pub async fn session(&self, id: Uuid) -> Result<Option<Session>> {
        let sql = format!("SELECT {SESSION_COLUMNS} FROM sessions WHERE id = $1");
        let row: Option<SessionRow> = on_pool!(self, |pool| sqlx::query_as(&sql)
            .bind(id)
            .fetch_optional(pool)
            .await)?;
        Ok(row.map(Session::from))
    }

    /// Consumes `jti` and records `next` as the session's current refresh token, atomically: the
    /// first statement is the conditional UPDATE, so of two racing rotations of one token exactly
    /// one finds a row to consume (PostgreSQL row lock; SQLite's single writer). Returns the
    /// session, or `None` if `jti` was not current (unknown, consumed, expired, session revoked).
    pub async fn rotate_refresh(&self, jti: Uuid, next: &RefreshRecord) -> Result<Option<Session>> {
        let now = next.issued_at;
        // A correlated EXISTS on the session's primary key: an `IN (SELECT …)` list was run by
        // SQLite as a scan of every session on each refresh.
        let consume = "UPDATE refresh_tokens SET consumed_at = $2 \
                       WHERE jti = $1 AND consumed_at IS NULL AND expires_at > $2 \
                       AND EXISTS (SELECT 1 FROM sessions s \
                                   WHERE s.id = refresh_tokens.session_id AND s.revoked_at IS NULL) \
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
        let session: Option<SessionRow> = on_write_pool!(self, |pool| {
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
        })?;
        Ok(session.map(Session::from))
    }

    pub async fn refresh_token(&self, jti: Uuid) -> Result<Option<RefreshRecord>> {
        let sql = format!("SELECT {REFRESH_COLUMNS} FROM refresh_tokens WHERE jti = $1");
        let row: Option<RefreshRow> = on_pool!(self, |pool| sqlx::query_as(&sql)
            .bind(jti)
            .fetch_optional(pool)
            .await)?;
        Ok(row.map(RefreshRecord::from))
    }

    /// The session's one unconsumed refresh token.
    pub async fn current_refresh_token(&self, session_id: Uuid) -> Result<Option<RefreshRecord>> {
        let sql = format!(
            "SELECT {REFRESH_COLUMNS} FROM refresh_tokens WHERE session_id = $1 AND consumed_at IS NULL"
        );
        let row: Option<RefreshRow> = on_pool!(self, |pool| sqlx::query_as(&sql)
            .bind(session_id)
            .fetch_optional(pool)
            .await)?;
        Ok(row.map(RefreshRecord::from))
    }

    /// Revokes one session of `user_id` if it is still active; returns whether it was.
    pub async fn revoke_session(
        &self,
        user_id: Uuid,
        id: Uuid,
        reason: &str,
        now: i64,
    ) -> Result<bool> {
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
    ) -> Result<Vec<Uuid>> {
        on_write_pool!(self, |pool| {
            let mut tx = pool.begin().await?;
            let ended = revoke_all!(tx, user_id, keep, reason, now);
            tx.commit().await?;
            Ok(ended)
        })
    }

    /// A new password (hashed), with what must go with it in one transaction: `auth_epoch` moves
    /// (a login that checked the old password opens no session), pending 2FA challenges end, and
    /// every session but `keep` is revoked; returns the ids of the revoked sessions.
    pub async fn change_password(
        &self,
        user_id: Uuid,
        hash: &str,
        keep: Option<Uuid>,
        reason: &str,
        now: i64,
    ) -> Result<Vec<Uuid>> {
        let update = "UPDATE users SET password_hash = $2, auth_epoch = auth_epoch + 1, \
                      updated_at = $3 WHERE id = $1";
        on_write_pool!(self, |pool| {
            let mut tx = pool.begin().await?;
            sqlx::query(update)
                .bind(user_id)
                .bind(hash)
                .bind(now)
                .execute(&mut *tx)
                .await?;
            let ended = end_logins!(tx, user_id, keep, reason, now);
            tx.commit().await?;
            Ok(ended)
        })
    }

    /// Disables an account and ends everything it had, in one transaction (see `insert_session`
    /// for why that closes the race with a login in flight); returns the revoked sessions' ids.
    pub async fn disable_user(&self, user_id: Uuid, reason: &str, now: i64) -> Result<Vec<Uuid>> {
        let update = "UPDATE users SET disabled = TRUE, auth_epoch = auth_epoch + 1, \
                      updated_at = $2 WHERE id = $1";
        on_write_pool!(self, |pool| {
            let mut tx = pool.begin().await?;
            sqlx::query(update)
                .bind(user_id)
                .bind(now)
                .execute(&mut *tx)
                .await?;
            let ended = end_logins!(tx, user_id, None::<Uuid>, reason, now);
            tx.commit().await?;
            Ok(ended)
        })
    }

    /// Sessions revoked at or after `since`, with the time of their revocation.
    pub async fn revoked_since(&self, since: i64) -> Result<Vec<(Uuid, i64)>> {
        let sql = "SELECT id, revoked_at FROM sessions WHERE revoked_at >= $1";
        on_pool!(self, |pool| sqlx::query_as(sql)
            .bind(since)
            .fetch_all(pool)
            .await)
    }

    /// A user's live sessions, the most recently used first.
    pub async fn active_sessions(&self, user_id: Uuid, now: i64) -> Result<Vec<Session>> {
        let sql = format!(
            "SELECT {SESSION_COLUMNS} FROM sessions \
             WHERE user_id = $1 AND revoked_at IS NULL AND expires_at > $2 \
             ORDER BY last_used_at DESC, id DESC"
        );
        let rows: Vec<SessionRow> = on_pool!(self, |pool| sqlx::query_as(&sql)
            .bind(user_id)
            .bind(now)
            .fetch_all(pool)
            .await)?;
        Ok(rows.into_iter().map(Session::from).collect())
    }

    /// Records when sessions were last used, in one transaction; a time never moves back.
    pub async fn touch_sessions(&self, used: &[(Uuid, i64)]) -> Result<()> {
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
    pub async fn purge(&self, now: i64, ended_before: i64, consumed_before: i64) -> Result<Purged> {
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
}
