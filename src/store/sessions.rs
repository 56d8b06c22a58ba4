//! Sessions, the refresh tokens that keep them alive, and two-factor challenges.

use uuid::Uuid;

use super::{Backend, Store, on_pool, on_write_pool};
use crate::error::Result;
use crate::model::{ClientGrant, RefreshRecord, Session};

#[derive(sqlx::FromRow)]
pub(super) struct SessionRow {
    pub(super) id: Uuid,
    pub(super) user_id: Uuid,
    pub(super) amr: String,
    pub(super) ip: Option<String>,
    pub(super) user_agent: Option<String>,
    pub(super) created_at: i64,
    pub(super) last_used_at: i64,
    pub(super) revoked_at: Option<i64>,
    pub(super) org_id: Option<Uuid>,
    pub(super) client_id: Option<Uuid>,
    pub(super) scope: Option<String>,
    pub(super) parent_id: Option<Uuid>,
    pub(super) auth_time: Option<i64>,
    pub(super) audience: Option<String>,
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
            org_id: r.org_id,
            grant: r.client_id.map(|client_id| ClientGrant {
                client_id,
                scope: r
                    .scope
                    .as_deref()
                    .unwrap_or_default()
                    .split_whitespace()
                    .map(str::to_owned)
                    .collect(),
                parent_id: r.parent_id,
                auth_time: r.auth_time.unwrap_or(r.created_at),
                audience: r.audience,
            }),
        }
    }
}

/// The columns of `SessionRow`, as a literal so that query texts can be `concat!`ed consts.
macro_rules! session_columns {
    () => {
        "id, user_id, amr, ip, user_agent, created_at, last_used_at, revoked_at, org_id, client_id, \
         scope, parent_id, auth_time, audience"
    };
}

// After the macro, which it uses.
mod active_org;
mod reauth;
mod revocations;
#[cfg(test)]
pub(super) use revocations::REVOKED_SINCE;

#[derive(sqlx::FromRow)]
pub(super) struct RefreshRow {
    pub(super) jti: Uuid,
    pub(super) session_id: Uuid,
    pub(super) issued_at: i64,
    pub(super) expires_at: i64,
    pub(super) consumed_at: Option<i64>,
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

/// The columns of `RefreshRow` (see `session_columns!`).
macro_rules! refresh_columns {
    () => {
        "jti, session_id, issued_at, expires_at, consumed_at"
    };
}

// The query texts of the hot paths are module-level consts: the plan tests (`store::plans`) run
// EXPLAIN on these very texts.
pub(super) const SESSION_BY_ID: &str = concat!(
    "SELECT ",
    session_columns!(),
    " FROM sessions WHERE id = $1"
);
pub(super) const INSERT_REFRESH: &str =
    "INSERT INTO refresh_tokens (jti, session_id, issued_at, expires_at) VALUES ($1, $2, $3, $4)";

// The rotation: the presented token ($1) is consumed at $2 if it is current, and only then is the
// next one ($3, expiring at $4) recorded and the session touched. On PostgreSQL it is one statement,
// one round trip: as a transaction of five statements it was bounded by their round trips. On
// SQLite the statements run in the calling thread (`store::sqlite`), so several cost no more.

/// Consumes the presented token if it is current. A correlated EXISTS on the session's primary
/// key: an `IN (SELECT …)` list was run by SQLite as a scan of every session on each refresh.
macro_rules! rotate_consume {
    () => {
        "UPDATE refresh_tokens SET consumed_at = $2 \
         WHERE jti = $1 AND consumed_at IS NULL AND expires_at > $2 \
         AND EXISTS (SELECT 1 FROM sessions s \
                     WHERE s.id = refresh_tokens.session_id AND s.revoked_at IS NULL)"
    };
}
/// SQLite: the next token only if the presented one was consumed by the statement just before.
macro_rules! rotate_insert_sqlite {
    () => {
        "INSERT INTO refresh_tokens (jti, session_id, issued_at, expires_at) \
         SELECT $3, session_id, $2, $4 FROM refresh_tokens \
         WHERE jti = $1 AND consumed_at = $2 AND changes() = 1"
    };
}
/// SQLite: the session of the next token, if there is one.
macro_rules! rotate_touch_sqlite {
    () => {
        concat!(
            "UPDATE sessions SET last_used_at = $2, expires_at = $4 \
             WHERE id = (SELECT session_id FROM refresh_tokens WHERE jti = $3) \
             AND revoked_at IS NULL RETURNING ",
            session_columns!()
        )
    };
}
/// SQLite: the three statements, run in one IMMEDIATE transaction (`store::sqlite`): it takes the
/// write lock first, and between the statements nothing else can write, so the session that the
/// first statement found unrevoked is still so in the third.
pub(super) const ROTATE_SQLITE_STEPS: [&str; 3] = [
    rotate_consume!(),
    rotate_insert_sqlite!(),
    rotate_touch_sqlite!(),
];
/// PostgreSQL: one statement whose parts run under one snapshot, atomically. The touch is checked
/// again, not only in the consume: that UPDATE waits for a concurrent revocation of the session
/// row and then re-reads it, so no token is minted for a session revoked while it was being
/// refreshed (the consumed token of such a session stays consumed, which changes nothing: every
/// use of it is refused with its session).
pub(super) const ROTATE_POSTGRES: &str = concat!(
    "WITH consumed AS (",
    rotate_consume!(),
    " RETURNING session_id), \
     touched AS (UPDATE sessions SET last_used_at = $2, expires_at = $4 FROM consumed \
                 WHERE sessions.id = consumed.session_id AND sessions.revoked_at IS NULL \
                 RETURNING sessions.*), \
     inserted AS (INSERT INTO refresh_tokens (jti, session_id, issued_at, expires_at) \
                  SELECT $3, id, $2, $4 FROM touched) \
     SELECT ",
    session_columns!(),
    " FROM touched"
);
pub(super) const REFRESH_BY_JTI: &str = concat!(
    "SELECT ",
    refresh_columns!(),
    " FROM refresh_tokens WHERE jti = $1"
);
pub(super) const CURRENT_REFRESH: &str = concat!(
    "SELECT ",
    refresh_columns!(),
    " FROM refresh_tokens WHERE session_id = $1 AND consumed_at IS NULL"
);
pub(super) const ACTIVE_SESSIONS: &str = concat!(
    "SELECT ",
    session_columns!(),
    " FROM sessions WHERE user_id = $1 AND revoked_at IS NULL AND expires_at > $2 \
     ORDER BY last_used_at DESC, id DESC"
);
pub(super) const TOUCH_SESSION: &str =
    "UPDATE sessions SET last_used_at = $2 WHERE id = $1 AND last_used_at < $2";

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
    /// What a client is given, for a session begun by an authorization (docs/api.md §11).
    pub grant: Option<&'a ClientGrant>,
    /// The active organisation it begins with: only an authorization's, chosen by the person on
    /// the consent page (docs/api.md §13); a login never picks one.
    pub org_id: Option<Uuid>,
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

/// The session of a login, opened only if the account is live and unchanged (`insert_session`);
/// on PostgreSQL with the user row share-locked.
macro_rules! insert_session_sql {
    ($lock:literal) => {
        concat!(
            "INSERT INTO sessions (id, user_id, amr, ip, user_agent, created_at, last_used_at, \
             expires_at, client_id, scope, parent_id, auth_time, audience, org_id) \
             SELECT $1, id, $3, $4, $5, $6, $6, $7, $9, $10, $11, $12, $13, $14 FROM users \
             WHERE id = $2 AND disabled = FALSE AND auth_epoch = $8",
            $lock
        )
    };
}
pub(super) const INSERT_SESSION_SQLITE: &str = insert_session_sql!("");
const INSERT_SESSION_POSTGRES: &str = insert_session_sql!(" FOR SHARE");

pub(super) const RECORD_LOGIN: &str = "UPDATE users SET last_login_at = $2 \
                            WHERE id = $1 AND (last_login_at IS NULL OR last_login_at < $2)";

impl Store {
    /// Creates a session with its first refresh token, unless the account was disabled or its
    /// `auth_epoch` moved (a password change) since the login's checks began: false then. On
    /// PostgreSQL the user row is share-locked by the insert, so a concurrent disable or password
    /// change either commits first (and this finds it) or waits for this session and then ends it
    /// in its own transaction. SQLite runs one writer at a time, which gives the same order.
    pub async fn insert_session(&self, s: &NewSession<'_>) -> Result<bool> {
        let amr = s.amr.join(" ");
        let grant = s.grant;
        let scope = grant.map(ClientGrant::scope_string);
        let insert_session = match &self.backend {
            Backend::Sqlite { lite, .. } => {
                return lite.insert_session(s, &amr, scope.as_deref()).await;
            }
            Backend::Postgres(_) => INSERT_SESSION_POSTGRES,
        };
        on_write_pool!(self, |pool| {
            let mut tx = pool.begin().await?;
            let created = sqlx::query(insert_session)
                .bind(s.id)
                .bind(s.user_id)
                .bind(&amr)
                .bind(s.ip)
                .bind(s.user_agent)
                .bind(s.refresh.issued_at)
                .bind(s.refresh.expires_at)
                .bind(s.auth_epoch)
                .bind(grant.map(|g| g.client_id))
                .bind(scope.as_deref())
                .bind(grant.and_then(|g| g.parent_id))
                .bind(grant.map(|g| g.auth_time))
                .bind(grant.and_then(|g| g.audience.as_deref()))
                .bind(s.org_id)
                .execute(&mut *tx)
                .await?
                .rows_affected();
            if created != 1 {
                tx.rollback().await?;
                return Ok(false);
            }
            sqlx::query(INSERT_REFRESH)
                .bind(s.refresh.jti)
                .bind(s.id)
                .bind(s.refresh.issued_at)
                .bind(s.refresh.expires_at)
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
            // After the commit, not inside it: on PostgreSQL two logins of one account both hold
            // the row's share lock, and each upgrading it to write would deadlock the other.
            // A login is the only writer of `last_login_at` (never a bearer call), and it never
            // moves back, whichever of two racing logins writes last.
            sqlx::query(RECORD_LOGIN)
                .bind(s.user_id)
                .bind(s.refresh.issued_at)
                .execute(&mut *pool)
                .await?;
            Ok(true)
        })
    }

    pub async fn session(&self, id: Uuid) -> Result<Option<Session>> {
        if let Backend::Sqlite { lite, .. } = &self.backend {
            return lite.session(SESSION_BY_ID, id).await;
        }
        let row: Option<SessionRow> = on_pool!(self, |pool| sqlx::query_as(SESSION_BY_ID)
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
        if let Backend::Sqlite { lite, .. } = &self.backend {
            return lite.rotate_refresh(jti, next).await;
        }
        let rows: Vec<SessionRow> = on_write_pool!(self, |pool| sqlx::query_as(ROTATE_POSTGRES)
            .bind(jti)
            .bind(next.issued_at)
            .bind(next.jti)
            .bind(next.expires_at)
            .fetch_all(pool)
            .await)?;
        Ok(rows.into_iter().next().map(Session::from))
    }

    pub async fn refresh_token(&self, jti: Uuid) -> Result<Option<RefreshRecord>> {
        if let Backend::Sqlite { lite, .. } = &self.backend {
            return lite.refresh_record(REFRESH_BY_JTI, jti).await;
        }
        let row: Option<RefreshRow> = on_pool!(self, |pool| sqlx::query_as(REFRESH_BY_JTI)
            .bind(jti)
            .fetch_optional(pool)
            .await)?;
        Ok(row.map(RefreshRecord::from))
    }

    /// The session's one unconsumed refresh token.
    pub async fn current_refresh_token(&self, session_id: Uuid) -> Result<Option<RefreshRecord>> {
        if let Backend::Sqlite { lite, .. } = &self.backend {
            return lite.refresh_record(CURRENT_REFRESH, session_id).await;
        }
        let row: Option<RefreshRow> = on_pool!(self, |pool| sqlx::query_as(CURRENT_REFRESH)
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

    /// A user's live sessions, the most recently used first.
    pub async fn active_sessions(&self, user_id: Uuid, now: i64) -> Result<Vec<Session>> {
        let rows: Vec<SessionRow> = on_pool!(self, |pool| sqlx::query_as(ACTIVE_SESSIONS)
            .bind(user_id)
            .bind(now)
            .fetch_all(pool)
            .await)?;
        Ok(rows.into_iter().map(Session::from).collect())
    }

    /// Records when sessions were last used, in one transaction; a time never moves back.
    pub async fn touch_sessions(&self, used: &[(Uuid, i64)]) -> Result<()> {
        on_write_pool!(self, |pool| {
            let mut tx = pool.begin().await?;
            for (id, at) in used {
                sqlx::query(TOUCH_SESSION)
                    .bind(id)
                    .bind(at)
                    .execute(&mut *tx)
                    .await?;
            }
            tx.commit().await
        })
    }
}

// For the flows of other modules that end an account's logins in their own transactions.
pub(super) use {end_logins, revoke_all};
