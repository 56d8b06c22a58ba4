//! Signing keys: one active, the retired ones kept while tokens they signed may still be presented.

use super::{Store, on_pool, on_write_pool};
use crate::error::Result;

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct KeyRow {
    pub kid: String,
    pub private_key: Vec<u8>,
    pub public_key: Vec<u8>,
    pub state: String,
    pub created_at: i64,
}

const KEY_COLUMNS: &str = "kid, private_key, public_key, state, created_at";

impl Store {
    /// Whether anything in the database is sealed under a master key: signing keys (made at the
    /// first start), TOTP secrets, outbox mail. Such a database cannot be used with a new key.
    pub async fn holds_sealed_data(&self) -> Result<bool> {
        let sql = "SELECT (EXISTS (SELECT 1 FROM signing_keys) \
                   OR EXISTS (SELECT 1 FROM users WHERE totp_secret IS NOT NULL OR totp_pending IS NOT NULL) \
                   OR EXISTS (SELECT 1 FROM mail_outbox))";
        on_pool!(self, |pool| sqlx::query_scalar(sql).fetch_one(pool).await)
    }

    /// The active key and the keys retired after `retired_after`, newest first.
    pub async fn signing_keys(&self, retired_after: i64) -> Result<Vec<KeyRow>> {
        let sql = format!(
            "SELECT {KEY_COLUMNS} FROM signing_keys \
             WHERE revoked_at IS NULL AND (state = 'active' OR retired_at > $1) \
             ORDER BY created_at DESC"
        );
        on_pool!(self, |pool| sqlx::query_as(&sql)
            .bind(retired_after)
            .fetch_all(pool)
            .await)
    }

    /// Inserts `key` as the active key unless one exists (the unique index on the active state
    /// settles a race between instances starting together). Returns whether it was inserted.
    pub async fn insert_first_key(&self, key: &KeyRow) -> Result<bool> {
        let sql = "INSERT INTO signing_keys (kid, private_key, public_key, state, created_at) \
                   VALUES ($1, $2, $3, 'active', $4) ON CONFLICT DO NOTHING";
        let n = on_write_pool!(self, |pool| sqlx::query(sql)
            .bind(&key.kid)
            .bind(&key.private_key)
            .bind(&key.public_key)
            .bind(key.created_at)
            .execute(pool)
            .await
            .map(|r| r.rows_affected()))?;
        Ok(n == 1)
    }

    /// Retires the active key and makes `key` the active one, in one transaction.
    pub async fn rotate_key(&self, key: &KeyRow, now: i64) -> Result<()> {
        let retire =
            "UPDATE signing_keys SET state = 'retired', retired_at = $1 WHERE state = 'active'";
        let insert = "INSERT INTO signing_keys (kid, private_key, public_key, state, created_at) \
                      VALUES ($1, $2, $3, 'active', $4)";
        on_write_pool!(self, |pool| {
            let mut tx = pool.begin().await?;
            sqlx::query(retire).bind(now).execute(&mut *tx).await?;
            sqlx::query(insert)
                .bind(&key.kid)
                .bind(&key.private_key)
                .bind(&key.public_key)
                .bind(key.created_at)
                .execute(&mut *tx)
                .await?;
            tx.commit().await
        })
    }

    /// Revokes a retired key; false if there is no such retired, unrevoked key (the active key
    /// is replaced with `rotate_key` first).
    pub async fn revoke_key(&self, kid: &str, now: i64) -> Result<bool> {
        let sql = "UPDATE signing_keys SET revoked_at = $2 \
                   WHERE kid = $1 AND state = 'retired' AND revoked_at IS NULL";
        let n = on_write_pool!(self, |pool| sqlx::query(sql)
            .bind(kid)
            .bind(now)
            .execute(pool)
            .await
            .map(|r| r.rows_affected()))?;
        Ok(n == 1)
    }

    /// Every key ever made, newest first, for `gatehouse keys list`.
    pub async fn all_signing_keys(&self) -> Result<Vec<KeyRow>> {
        let sql = "SELECT kid, private_key, public_key, \
                   CASE WHEN revoked_at IS NULL THEN state ELSE 'revoked' END AS state, created_at \
                   FROM signing_keys ORDER BY created_at DESC";
        on_pool!(self, |pool| sqlx::query_as(sql).fetch_all(pool).await)
    }
}
