//! Two-factor challenges: the temp token of a login that asked for a second factor. Only the
//! token's SHA-256 is kept.

use uuid::Uuid;

use super::{Store, on_pool, on_write_pool};
use crate::error::Result;

// Query texts of the 2FA step, shared with the plan tests (`store::plans`).
pub(super) const CHALLENGE_USER: &str = "SELECT user_id, first_factor FROM temp_tokens \
     WHERE token_hash = $1 AND used_at IS NULL AND attempts < $2 AND expires_at > $3";
pub(super) const TAKE_CHALLENGE_ATTEMPT: &str = "UPDATE temp_tokens SET attempts = attempts + 1 \
     WHERE token_hash = $1 AND used_at IS NULL AND attempts < $2 AND expires_at > $3 \
     RETURNING user_id, attempts";
pub(super) const COMPLETE_CHALLENGE: &str =
    "UPDATE temp_tokens SET used_at = $2 WHERE token_hash = $1 AND used_at IS NULL";

impl Store {
    /// A challenge of a login whose first factor was `first_factor` (`pwd`, or `fed`: another
    /// provider), which the session it completes keeps in its `amr`.
    pub async fn insert_challenge(
        &self,
        token_hash: &[u8; 32],
        user_id: Uuid,
        first_factor: &str,
        expires_at: i64,
    ) -> Result<()> {
        let sql = "INSERT INTO temp_tokens (token_hash, user_id, first_factor, expires_at) \
                   VALUES ($1, $2, $3, $4)";
        on_write_pool!(self, |pool| sqlx::query(sql)
            .bind(&token_hash[..])
            .bind(user_id)
            .bind(first_factor)
            .bind(expires_at)
            .execute(pool)
            .await
            .map(|_| ()))
    }

    /// The user of a challenge that can still be answered (live, unused, attempts left), and how
    /// its login began (`first_factor`).
    pub async fn challenge_user(
        &self,
        token_hash: &[u8; 32],
        max_attempts: i64,
        now: i64,
    ) -> Result<Option<(Uuid, String)>> {
        on_pool!(self, |pool| sqlx::query_as(CHALLENGE_USER)
            .bind(&token_hash[..])
            .bind(max_attempts)
            .bind(now)
            .fetch_optional(pool)
            .await)
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
    ) -> Result<Option<(Uuid, i64)>> {
        on_write_pool!(self, |pool| sqlx::query_as(TAKE_CHALLENGE_ATTEMPT)
            .bind(&token_hash[..])
            .bind(max_attempts)
            .bind(now)
            .fetch_optional(pool)
            .await)
    }

    /// Uses up a challenge whose code was right; false if a racing request used it first, or it
    /// was ended meanwhile (a password change ends an account's challenges).
    pub async fn complete_challenge(&self, token_hash: &[u8; 32], now: i64) -> Result<bool> {
        let n = on_write_pool!(self, |pool| sqlx::query(COMPLETE_CHALLENGE)
            .bind(&token_hash[..])
            .bind(now)
            .execute(pool)
            .await
            .map(|r| r.rows_affected()))?;
        Ok(n == 1)
    }
}
