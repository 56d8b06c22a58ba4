//! A session's active organisation (docs/api.md §13): switched with a rotation of its refresh
//! token, and forgotten when the person leaves the organisation.

use uuid::Uuid;

use super::{INSERT_REFRESH, SessionRow};
use crate::error::Result;
use crate::model::{RefreshRecord, Session};
use crate::store::{Store, on_write_pool};

impl Store {
    /// Makes `org` the session's active organisation (docs/api.md §13) and rotates its refresh
    /// token as a refresh does: the current one is consumed, `next` recorded. `None` if the
    /// session is not live.
    pub async fn switch_session_org(
        &self,
        session: Uuid,
        org: Option<Uuid>,
        next: &RefreshRecord,
    ) -> Result<Option<Session>> {
        let touch = concat!(
            "UPDATE sessions SET org_id = $2, last_used_at = $3, expires_at = $4 \
             WHERE id = $1 AND revoked_at IS NULL RETURNING ",
            session_columns!()
        );
        let row: Option<SessionRow> = on_write_pool!(self, |pool| {
            let mut tx = pool.begin().await?;
            let Some(row) = sqlx::query_as::<_, SessionRow>(touch)
                .bind(session)
                .bind(org)
                .bind(next.issued_at)
                .bind(next.expires_at)
                .fetch_optional(&mut *tx)
                .await?
            else {
                return Ok(None);
            };
            sqlx::query(
                "UPDATE refresh_tokens SET consumed_at = $2 \
                 WHERE session_id = $1 AND consumed_at IS NULL",
            )
            .bind(session)
            .bind(next.issued_at)
            .execute(&mut *tx)
            .await?;
            sqlx::query(INSERT_REFRESH)
                .bind(next.jti)
                .bind(session)
                .bind(next.issued_at)
                .bind(next.expires_at)
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
            Ok(Some(row))
        })?;
        Ok(row.map(Session::from))
    }

    /// Forgets the session's active organisation if it is still `org` (the person left it).
    pub async fn clear_session_org(&self, session: Uuid, org: Uuid) -> Result<()> {
        let sql = "UPDATE sessions SET org_id = NULL WHERE id = $1 AND org_id = $2";
        on_write_pool!(self, |pool| sqlx::query(sql)
            .bind(session)
            .bind(org)
            .execute(pool)
            .await
            .map(|_| ()))
    }
}
