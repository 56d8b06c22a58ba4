//! The consents people gave third-party clients (docs/api.md §11), as they list and withdraw them
//! (the authorization reads and writes them in `oauth_codes`).

use uuid::Uuid;

use super::{Store, on_pool, on_write_pool};
use crate::error::Result;
use crate::model::logouts::ConsentInfo;

impl Store {
    /// A person's consents, the most recent first, with their client's name.
    pub async fn consents_of(&self, user: Uuid) -> Result<Vec<ConsentInfo>> {
        let sql = "SELECT o.client_id, c.name, o.scopes, o.granted_at \
                   FROM oauth_consents o JOIN api_clients c ON c.id = o.client_id \
                   WHERE o.user_id = $1 ORDER BY o.granted_at DESC, o.client_id";
        let rows: Vec<(Uuid, String, String, i64)> = on_pool!(self, |pool| sqlx::query_as(sql)
            .bind(user)
            .fetch_all(pool)
            .await)?;
        Ok(rows
            .into_iter()
            .map(|(client_id, client_name, scopes, granted_at)| ConsentInfo {
                client_id,
                client_name,
                scopes: scopes.split_whitespace().map(str::to_owned).collect(),
                granted_at,
            })
            .collect())
    }

    /// Withdraws a consent and ends every session of the person with that client, in one
    /// transaction; `None` if there was no consent, else the ended sessions' ids.
    pub async fn withdraw_consent(
        &self,
        user: Uuid,
        client: Uuid,
        reason: &str,
        now: i64,
    ) -> Result<Option<Vec<Uuid>>> {
        on_write_pool!(self, |pool| {
            let mut tx = pool.begin().await?;
            let deleted =
                sqlx::query("DELETE FROM oauth_consents WHERE user_id = $1 AND client_id = $2")
                    .bind(user)
                    .bind(client)
                    .execute(&mut *tx)
                    .await?
                    .rows_affected();
            if deleted == 0 {
                tx.rollback().await?;
                return Ok(None);
            }
            let ended: Vec<Uuid> = sqlx::query_scalar(
                "UPDATE sessions SET revoked_at = $3, revoked_reason = $4 \
                 WHERE client_id = $1 AND user_id = $2 AND revoked_at IS NULL RETURNING id",
            )
            .bind(client)
            .bind(user)
            .bind(now)
            .bind(reason)
            .fetch_all(&mut *tx)
            .await?;
            tx.commit().await?;
            Ok(Some(ended))
        })
    }
}
