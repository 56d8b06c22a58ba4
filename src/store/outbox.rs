//! The mail outbox: mails written with the change that causes them, claimed by delivery workers
//! under a lease, deleted once delivered.

use uuid::Uuid;

use super::{Backend, Store, on_pool, on_write_pool};
use crate::error::Result;
use crate::model::mail::{OutboxMail, PendingMail};

/// Queues `$mail` (an `&OutboxMail`) inside the open transaction `$tx`, due at once.
macro_rules! queue_mail {
    ($tx:ident, $mail:expr) => {{
        let mail: &$crate::model::mail::OutboxMail = $mail;
        sqlx::query(
            "INSERT INTO mail_outbox (id, recipient, message, kind, created_at, next_attempt_at) \
             VALUES ($1, $2, $3, $4, $5, $5)",
        )
        .bind(mail.id)
        .bind(&mail.recipient)
        .bind(&mail.message[..])
        .bind(mail.kind)
        .bind(mail.created_at)
        .execute(&mut *$tx)
        .await?;
    }};
}
pub(crate) use queue_mail;

#[derive(sqlx::FromRow)]
struct PendingRow {
    id: Uuid,
    recipient: String,
    message: Vec<u8>,
    kind: String,
    attempts: i64,
}

/// Takes up to `$3` due mails that nobody holds, holding them until `$2`. PostgreSQL skips the
/// rows another instance is claiming at this moment, rather than waiting for them.
macro_rules! claim_sql {
    ($lock:literal) => {
        concat!(
            "UPDATE mail_outbox SET claimed_until = $2, attempts = attempts + 1 \
             WHERE (claimed_until IS NULL OR claimed_until <= $1) AND id IN (\
             SELECT id FROM mail_outbox WHERE next_attempt_at <= $1 \
             AND (claimed_until IS NULL OR claimed_until <= $1) \
             ORDER BY next_attempt_at LIMIT $3",
            $lock,
            ") RETURNING id, recipient, message, kind, attempts"
        )
    };
}

impl Store {
    /// Writes mails on their own: for a mail whose cause is no change in the database (a resend).
    pub async fn queue_mails(&self, mails: &[&OutboxMail]) -> Result<()> {
        on_write_pool!(self, |pool| {
            let mut tx = pool.begin().await?;
            for mail in mails {
                queue_mail!(tx, mail);
            }
            tx.commit().await
        })
    }

    pub async fn claim_mails(&self, now: i64, until: i64, limit: i64) -> Result<Vec<PendingMail>> {
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
            .map(|r| PendingMail {
                id: r.id,
                recipient: r.recipient,
                message: r.message,
                kind: r.kind,
                attempts: r.attempts,
            })
            .collect())
    }

    pub async fn mail_delivered(&self, id: Uuid) -> Result<()> {
        on_write_pool!(self, |pool| sqlx::query(
            "DELETE FROM mail_outbox WHERE id = $1"
        )
        .bind(id)
        .execute(pool)
        .await
        .map(|_| ()))
    }

    /// Records a failed attempt and when to try again; the claim ends.
    pub async fn mail_failed(&self, id: Uuid, next_attempt_at: i64, error: &str) -> Result<()> {
        let sql = "UPDATE mail_outbox SET next_attempt_at = $2, last_error = $3, \
                   claimed_until = NULL WHERE id = $1";
        on_write_pool!(self, |pool| sqlx::query(sql)
            .bind(id)
            .bind(next_attempt_at)
            .bind(error)
            .execute(pool)
            .await
            .map(|_| ()))
    }

    /// When the oldest waiting mail was queued.
    pub async fn outbox_oldest(&self) -> Result<Option<i64>> {
        on_pool!(self, |pool| sqlx::query_scalar(
            "SELECT MIN(created_at) FROM mail_outbox"
        )
        .fetch_one(pool)
        .await)
    }
}
