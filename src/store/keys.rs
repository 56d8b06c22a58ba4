//! Signing keys: per algorithm one active, the retired ones kept while tokens they signed may
//! still be presented.

use super::{Store, on_pool, on_write_pool};
use crate::error::Result;

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct KeyRow {
    pub kid: String,
    /// `EdDSA`, `ES256` or `RS256` (`SigningAlg::as_str`).
    pub alg: String,
    pub private_key: Vec<u8>,
    pub public_key: Vec<u8>,
    pub state: String,
    pub created_at: i64,
}

const KEY_COLUMNS: &str = "kid, alg, private_key, public_key, state, created_at";
const INSERT_KEY: &str = "INSERT INTO signing_keys (kid, alg, private_key, public_key, state, created_at) \
                          VALUES ($1, $2, $3, $4, 'active', $5)";

impl Store {
    /// Whether anything in the database is sealed under a master key: signing keys (made at the
    /// first start), TOTP secrets, outbox mail. Such a database cannot be used with a new key.
    pub async fn holds_sealed_data(&self) -> Result<bool> {
        let sql = "SELECT (EXISTS (SELECT 1 FROM signing_keys) \
                   OR EXISTS (SELECT 1 FROM users WHERE totp_secret IS NOT NULL OR totp_pending IS NOT NULL) \
                   OR EXISTS (SELECT 1 FROM mail_outbox))";
        on_pool!(self, |pool| sqlx::query_scalar(sql).fetch_one(pool).await)
    }

    /// The active keys and the keys retired after `retired_after`, newest first.
    pub async fn signing_keys(&self, retired_after: i64) -> Result<Vec<KeyRow>> {
        let sql = format!(
            "SELECT {KEY_COLUMNS} FROM signing_keys \
             WHERE revoked_at IS NULL AND (state = 'active' OR retired_at > $1) \
             ORDER BY created_at DESC, alg"
        );
        on_pool!(self, |pool| sqlx::query_as(&sql)
            .bind(retired_after)
            .fetch_all(pool)
            .await)
    }

    /// Inserts each of `keys` as the active key of its algorithm unless that algorithm has one
    /// (the unique index on the active state per algorithm settles a race between instances
    /// starting together: the loser's keys are dropped). Returns how many were inserted.
    pub async fn insert_first_keys(&self, keys: &[KeyRow]) -> Result<u64> {
        let sql = format!("{INSERT_KEY} ON CONFLICT DO NOTHING");
        on_write_pool!(self, |pool| {
            let mut tx = pool.begin().await?;
            let mut inserted = 0;
            for key in keys {
                inserted += sqlx::query(&sql)
                    .bind(&key.kid)
                    .bind(&key.alg)
                    .bind(&key.private_key)
                    .bind(&key.public_key)
                    .bind(key.created_at)
                    .execute(&mut *tx)
                    .await?
                    .rows_affected();
            }
            tx.commit().await.map(|()| inserted)
        })
    }

    /// Retires every active key and makes `keys` the active ones, in one transaction.
    pub async fn rotate_keys(&self, keys: &[KeyRow], now: i64) -> Result<()> {
        let retire =
            "UPDATE signing_keys SET state = 'retired', retired_at = $1 WHERE state = 'active'";
        on_write_pool!(self, |pool| {
            let mut tx = pool.begin().await?;
            sqlx::query(retire).bind(now).execute(&mut *tx).await?;
            for key in keys {
                sqlx::query(INSERT_KEY)
                    .bind(&key.kid)
                    .bind(&key.alg)
                    .bind(&key.private_key)
                    .bind(&key.public_key)
                    .bind(key.created_at)
                    .execute(&mut *tx)
                    .await?;
            }
            tx.commit().await
        })
    }

    /// Revokes a retired key; false if there is no such retired, unrevoked key (an active key
    /// is replaced with `rotate_keys` first).
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
        let sql = "SELECT kid, alg, private_key, public_key, \
                   CASE WHEN revoked_at IS NULL THEN state ELSE 'revoked' END AS state, created_at \
                   FROM signing_keys ORDER BY created_at DESC, alg";
        on_pool!(self, |pool| sqlx::query_as(sql).fetch_all(pool).await)
    }
}
