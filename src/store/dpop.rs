//! The DPoP proofs seen (RFC 9449, docs/api.md §11), until their window has passed.

use super::{Store, on_write_pool};
use crate::error::Result;

impl Store {
    /// Takes a proof's `jti` (`hash`: of the key's thumbprint and the jti) until `until_ms`:
    /// `false` when it was taken before, on this instance or another.
    pub async fn take_dpop_jti(&self, hash: &[u8], until_ms: i64) -> Result<bool> {
        let sql = "INSERT INTO dpop_proofs (proof_hash, expires_at) VALUES ($1, $2) \
                   ON CONFLICT DO NOTHING";
        let taken = on_write_pool!(self, |pool| sqlx::query(sql)
            .bind(hash)
            .bind(until_ms)
            .execute(pool)
            .await
            .map(|done| done.rows_affected()))?;
        Ok(taken == 1)
    }
}
