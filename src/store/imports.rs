//! People brought from another system (`gatehouse import`, docs/api.md §15), a batch at a time.

use uuid::Uuid;

use super::audit::INSERT_EVENT;
use super::{Store, on_pool, on_write_pool};
use crate::error::Result;

/// One person of a batch, checked by the import.
pub struct ImportedUser<'a> {
    pub id: Uuid,
    pub email: &'a str,
    pub email_normalized: &'a str,
    pub full_name: &'a str,
    /// As the other system made it (verified in its own algorithm, replaced at the first sign-in),
    /// or empty: an account without a password.
    pub password_hash: &'a str,
    pub email_verified: bool,
    pub disabled: bool,
    /// Sorted, space-separated (as `users.roles` keeps them).
    pub roles: &'a str,
    /// Sealed under the account's id, as enrolment seals it.
    pub totp_secret: Option<&'a [u8]>,
}

/// The audit event each imported account gets, in the batch's transaction.
pub struct ImportEvent<'a> {
    pub name: &'a str,
    pub detail: Option<&'a str>,
}

const INSERT: &str = "INSERT INTO users (id, email, email_normalized, full_name, password_hash, \
    email_verified, disabled, roles, totp_secret, created_at, updated_at) \
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $10) \
    ON CONFLICT (email_normalized) DO NOTHING";

impl Store {
    /// Inserts the batch in one transaction (all of it or none), each with its audit event; an
    /// address already taken is left as it is. Says, for each person, whether they were made.
    pub async fn import_users(
        &self,
        batch: &[ImportedUser<'_>],
        event: &ImportEvent<'_>,
        now: i64,
    ) -> Result<Vec<bool>> {
        on_write_pool!(self, |pool| {
            let mut tx = pool.begin().await?;
            let mut made = Vec::with_capacity(batch.len());
            for user in batch {
                let inserted = sqlx::query(INSERT)
                    .bind(user.id)
                    .bind(user.email)
                    .bind(user.email_normalized)
                    .bind(user.full_name)
                    .bind(user.password_hash)
                    .bind(user.email_verified)
                    .bind(user.disabled)
                    .bind(user.roles)
                    .bind(user.totp_secret)
                    .bind(now)
                    .execute(&mut *tx)
                    .await?
                    .rows_affected()
                    == 1;
                if inserted {
                    sqlx::query(INSERT_EVENT)
                        .bind(Uuid::now_v7())
                        .bind(now)
                        .bind(event.name)
                        .bind(user.id)
                        .bind(None::<Uuid>)
                        .bind(None::<&str>)
                        .bind(None::<&str>)
                        .bind(event.detail)
                        .bind(None::<Uuid>)
                        .bind(None::<Uuid>)
                        .execute(&mut *tx)
                        .await?;
                }
                made.push(inserted);
            }
            tx.commit().await?;
            Ok(made)
        })
    }

    /// Which of these addresses (normalised) already have an account: the dry run's question.
    pub async fn taken_addresses(&self, normalized: &[&str]) -> Result<Vec<bool>> {
        let sql = "SELECT 1 FROM users WHERE email_normalized = $1";
        on_pool!(self, |pool| {
            let mut taken = Vec::with_capacity(normalized.len());
            for address in normalized {
                let row = sqlx::query(sql)
                    .bind(*address)
                    .fetch_optional(&mut *pool)
                    .await?;
                taken.push(row.is_some());
            }
            Ok(taken)
        })
    }
}

/// The accounts that still hold a hash another system made: not Argon2, not empty (no password).
/// The condition of the partial index `users_imported_hash` (migration 0026), word for word, so
/// that both databases count them from the index.
const IMPORTED: &str = "password_hash <> '' AND password_hash NOT LIKE '$argon2%'";

impl Store {
    /// Accounts in all (0 when none holds an imported hash), those still holding an imported hash,
    /// and up to `samples` of those hashes (`auth::password::Decoys`); minutes apart, not per
    /// request.
    pub async fn imported_hashes(&self, samples: i64) -> Result<(u64, u64, Vec<String>)> {
        let count_imported = format!("SELECT COUNT(*) FROM users WHERE {IMPORTED}");
        let sample = format!("SELECT password_hash FROM users WHERE {IMPORTED} LIMIT $1");
        on_pool!(self, |pool| {
            // From the partial index; the accounts in all are counted only when it holds any
            // (with no import, the usual case, no instance scans every account).
            let imported: i64 = sqlx::query_scalar(&count_imported)
                .fetch_one(&mut *pool)
                .await?;
            let (total, hashes): (i64, Vec<String>) = match imported {
                0 => (0, Vec::new()),
                _ => (
                    sqlx::query_scalar("SELECT COUNT(*) FROM users")
                        .fetch_one(&mut *pool)
                        .await?,
                    sqlx::query_scalar(&sample)
                        .bind(samples)
                        .fetch_all(&mut *pool)
                        .await?,
                ),
            };
            let count = |n: i64| u64::try_from(n).unwrap_or_default();
            Ok((count(total), count(imported), hashes))
        })
    }
}
