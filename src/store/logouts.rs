//! The back-channel logout outbox (docs/api.md §11; migration 0016): ended client sessions are
//! swept into it, delivery workers claim its rows under a lease like the mail outbox's, and a row
//! goes once the client took its logout token.

use uuid::Uuid;

use super::{Backend, Store, on_pool, on_write_pool};
use crate::error::Result;
use crate::model::logouts::PendingLogout;

/// Ended client sessions not yet swept, with where their client wants to hear of it. Served by
/// the partial index `sessions_logout_pending` (its very condition). A removed client has no row
/// left to join: its sessions were swept before it was deleted (`Clients::remove`).
const UNSWEPT: &str = "SELECT s.id, s.user_id, s.client_id, c.backchannel_logout_uri, c.id_token_alg \
     FROM sessions s LEFT JOIN api_clients c ON c.id = s.client_id \
     WHERE s.client_id IS NOT NULL AND s.revoked_at IS NOT NULL AND s.logout_queued = FALSE \
     ORDER BY s.revoked_at LIMIT $1";

/// The mark, set by one sweeper only: on PostgreSQL a concurrent sweeper's UPDATE waits for the
/// first one's row lock, then reads `TRUE` and changes nothing; SQLite has one writer.
const MARK: &str =
    "UPDATE sessions SET logout_queued = TRUE WHERE id = $1 AND logout_queued = FALSE";

const QUEUE: &str = "INSERT INTO backchannel_logouts \
     (id, client_id, uri, alg, user_id, session_id, next_attempt_at, created_at) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $7)";

type Unswept = (Uuid, Uuid, Uuid, Option<String>, Option<String>);

#[derive(sqlx::FromRow)]
struct PendingRow {
    id: Uuid,
    client_id: Uuid,
    uri: String,
    alg: String,
    user_id: Uuid,
    session_id: Uuid,
    attempts: i64,
    created_at: i64,
}

/// Takes up to `$3` due notices that nobody holds, holding them until `$2` (as `claim_mails`).
macro_rules! claim_sql {
    ($lock:literal) => {
        concat!(
            "UPDATE backchannel_logouts SET claimed_until = $2, attempts = attempts + 1 \
             WHERE (claimed_until IS NULL OR claimed_until <= $1) AND id IN (\
             SELECT id FROM backchannel_logouts WHERE next_attempt_at <= $1 \
             AND (claimed_until IS NULL OR claimed_until <= $1) \
             ORDER BY next_attempt_at LIMIT $3",
            $lock,
            ") RETURNING id, client_id, uri, alg, user_id, session_id, attempts, created_at"
        )
    };
}

impl Store {
    /// Queues a notice for each ended client session not yet swept (up to `limit`) whose client
    /// has a back-channel logout URI, and marks them all swept, in one transaction; returns how
    /// many it swept (0: none was left).
    pub async fn sweep_logouts(&self, now: i64, limit: i64) -> Result<usize> {
        on_write_pool!(self, |pool| {
            let mut tx = pool.begin().await?;
            let ended: Vec<Unswept> = sqlx::query_as(UNSWEPT)
                .bind(limit)
                .fetch_all(&mut *tx)
                .await?;
            let swept = ended.len();
            for (session, user, client, uri, alg) in ended {
                let marked = sqlx::query(MARK)
                    .bind(session)
                    .execute(&mut *tx)
                    .await?
                    .rows_affected();
                let (Some(uri), Some(alg), 1) = (uri, alg, marked) else {
                    continue;
                };
                sqlx::query(QUEUE)
                    .bind(Uuid::now_v7())
                    .bind(client)
                    .bind(uri)
                    .bind(alg)
                    .bind(user)
                    .bind(session)
                    .bind(now)
                    .execute(&mut *tx)
                    .await?;
            }
            tx.commit().await?;
            Ok(swept)
        })
    }

    pub async fn claim_logouts(
        &self,
        now: i64,
        until: i64,
        limit: i64,
    ) -> Result<Vec<PendingLogout>> {
        let sql = match self.backend {
            Backend::Sqlite { .. } => claim_sql!(""),
            Backend::Postgres(_) => claim_sql!(" FOR UPDATE SKIP LOCKED"),
        };
        let rows: Vec<PendingRow> = on_write_pool!(self, |pool| sqlx::query_as(sql)
            .bind(now)
            .bind(until)
            .bind(limit)
            .fetch_all(pool)
            .await)?;
        Ok(rows
            .into_iter()
            .map(|r| PendingLogout {
                id: r.id,
                client_id: r.client_id,
                uri: r.uri,
                alg: r.alg,
                user_id: r.user_id,
                session_id: r.session_id,
                attempts: r.attempts,
                created_at: r.created_at,
            })
            .collect())
    }

    /// The client took it, or it is given up: the row goes.
    pub async fn logout_done(&self, id: Uuid) -> Result<()> {
        on_write_pool!(self, |pool| sqlx::query(
            "DELETE FROM backchannel_logouts WHERE id = $1"
        )
        .bind(id)
        .execute(pool)
        .await
        .map(|_| ()))
    }

    /// Records a failed attempt and when to try again; the claim ends.
    pub async fn logout_failed(&self, id: Uuid, next_attempt_at: i64, error: &str) -> Result<()> {
        let sql = "UPDATE backchannel_logouts SET next_attempt_at = $2, last_error = $3, \
                   claimed_until = NULL WHERE id = $1";
        on_write_pool!(self, |pool| sqlx::query(sql)
            .bind(id)
            .bind(next_attempt_at)
            .bind(error)
            .execute(pool)
            .await
            .map(|_| ()))
    }

    /// When the oldest waiting notice was queued.
    pub async fn logouts_oldest(&self) -> Result<Option<i64>> {
        on_pool!(self, |pool| sqlx::query_scalar(
            "SELECT MIN(created_at) FROM backchannel_logouts"
        )
        .fetch_one(pool)
        .await)
    }

    /// Revokes every active session of a client (of one person only, with `user`); returns them
    /// as `(session, user)`.
    pub async fn revoke_client_sessions(
        &self,
        client: Uuid,
        user: Option<Uuid>,
        reason: &str,
        now: i64,
    ) -> Result<Vec<(Uuid, Uuid)>> {
        let sql = "UPDATE sessions SET revoked_at = $3, revoked_reason = $4 \
                   WHERE client_id = $1 AND ($2 IS NULL OR user_id = $2) AND revoked_at IS NULL \
                   RETURNING id, user_id";
        on_write_pool!(self, |pool| sqlx::query_as(sql)
            .bind(client)
            .bind(user)
            .bind(now)
            .bind(reason)
            .fetch_all(pool)
            .await)
    }

    /// Revokes the person's session `parent` and every client session begun from it; returns
    /// the ids of those that were active.
    pub async fn revoke_session_tree(
        &self,
        user: Uuid,
        parent: Uuid,
        reason: &str,
        now: i64,
    ) -> Result<Vec<Uuid>> {
        let sql = "UPDATE sessions SET revoked_at = $3, revoked_reason = $4 \
                   WHERE user_id = $1 AND (id = $2 OR parent_id = $2) AND revoked_at IS NULL \
                   RETURNING id";
        on_write_pool!(self, |pool| sqlx::query_scalar(sql)
            .bind(user)
            .bind(parent)
            .bind(now)
            .bind(reason)
            .fetch_all(pool)
            .await)
    }
}
