//! The passkey ceremonies that re-authenticate a session (`auth::passkeys::reauth`), kept in the
//! ceremonies table with the sign-ins so that any instance finishes them.

use uuid::Uuid;

use super::{Store, on_write_pool};
use crate::error::Result;
use crate::model::passkeys::{Ceremony, CeremonyKind};

/// A live one is deleted and its row returned, in one statement: single use however many
/// finishes race. Another user's attempt takes nothing, so it cannot spoil the owner's ceremony.
const TAKE_REAUTHENTICATION: &str = "DELETE FROM passkey_ceremonies \
     WHERE id = $1 AND kind = 'reauthenticate' AND user_id = $2 AND expires_at > $3 \
     RETURNING state, expires_at";

impl Store {
    /// Takes (deletes) `user`'s live re-authentication ceremony `id`.
    pub async fn take_reauthentication(
        &self,
        id: Uuid,
        user: Uuid,
        now: i64,
    ) -> Result<Option<Ceremony>> {
        let row: Option<(String, i64)> =
            on_write_pool!(self, |pool| sqlx::query_as(TAKE_REAUTHENTICATION)
                .bind(id)
                .bind(user)
                .bind(now)
                .fetch_optional(pool)
                .await)?;
        Ok(row.map(|(state, expires_at)| Ceremony {
            id,
            kind: CeremonyKind::Reauthenticate,
            user_id: Some(user),
            temp_token_hash: None,
            state,
            expires_at,
        }))
    }
}
