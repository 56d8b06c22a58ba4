//! Initial access tokens of dynamic client registration (docs/api.md §12): a keyed hash per
//! token, used once.

use uuid::Uuid;

use super::{Store, on_write_pool};
use crate::error::Result;

/// A token to keep.
pub struct NewRegistrationToken<'a> {
    pub id: Uuid,
    pub token_hash: &'a [u8],
    pub created_at: i64,
    pub expires_at: i64,
    pub created_by: Option<Uuid>,
}

impl Store {
    pub async fn insert_registration_token(&self, t: &NewRegistrationToken<'_>) -> Result<()> {
        let sql = "INSERT INTO client_registration_tokens \
                   (id, token_hash, created_at, expires_at, created_by) VALUES ($1, $2, $3, $4, $5)";
        on_write_pool!(self, |pool| sqlx::query(sql)
            .bind(t.id)
            .bind(t.token_hash)
            .bind(t.created_at)
            .bind(t.expires_at)
            .bind(t.created_by)
            .execute(pool)
            .await
            .map(|_| ()))
    }

    /// Marks the token of `token_hash` used for `client` if it is unused and unexpired at `now`:
    /// the check and the mark are one statement, so a token registers one client however many
    /// requests race with it. False: no such usable token.
    pub async fn use_registration_token(
        &self,
        token_hash: &[u8],
        client: Uuid,
        now: i64,
    ) -> Result<bool> {
        let sql = "UPDATE client_registration_tokens SET used_at = $3, client_id = $2 \
                   WHERE token_hash = $1 AND used_at IS NULL AND expires_at > $3";
        on_write_pool!(self, |pool| sqlx::query(sql)
            .bind(token_hash)
            .bind(client)
            .bind(now)
            .execute(pool)
            .await
            .map(|r| r.rows_affected() == 1))
    }
}
