//! Authorization codes (docs/api.md §11), by the SHA-256 of their value, and the consents people
//! gave clients.

use uuid::Uuid;

use super::{Store, on_pool, on_write_pool};
use crate::error::Result;
use crate::model::oauth::{AuthorizationCode, Consent, Redemption};

#[derive(sqlx::FromRow)]
struct CodeRow {
    client_id: Uuid,
    user_id: Uuid,
    parent_id: Uuid,
    redirect_uri: String,
    code_challenge: String,
    scope: String,
    nonce: Option<String>,
    audience: Option<String>,
    amr: String,
    auth_time: i64,
    expires_at: i64,
    org_id: Option<Uuid>,
}

impl From<CodeRow> for AuthorizationCode {
    fn from(r: CodeRow) -> Self {
        let words = |s: &str| s.split_whitespace().map(str::to_owned).collect();
        AuthorizationCode {
            client_id: r.client_id,
            user_id: r.user_id,
            parent_id: r.parent_id,
            redirect_uri: r.redirect_uri,
            code_challenge: r.code_challenge,
            scope: words(&r.scope),
            nonce: r.nonce,
            audience: r.audience,
            amr: words(&r.amr),
            auth_time: r.auth_time,
            expires_at: r.expires_at,
            org_id: r.org_id,
        }
    }
}

/// Uses the code up, if it is unused and unexpired, naming the session its exchange begins: one
/// conditional UPDATE, so of two racing exchanges exactly one finds it.
const REDEEM: &str = "UPDATE oauth_codes SET used_at = $2, session_id = $3 \
     WHERE code_hash = $1 AND used_at IS NULL AND expires_at > $2 \
     RETURNING client_id, user_id, parent_id, redirect_uri, code_challenge, scope, nonce, \
     audience, amr, auth_time, expires_at, org_id";

impl Store {
    pub async fn insert_code(&self, hash: &[u8; 32], code: &AuthorizationCode) -> Result<()> {
        let sql = "INSERT INTO oauth_codes (code_hash, client_id, user_id, parent_id, redirect_uri, \
                   code_challenge, scope, nonce, audience, amr, auth_time, expires_at, org_id) \
                   VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)";
        on_write_pool!(self, |pool| sqlx::query(sql)
            .bind(&hash[..])
            .bind(code.client_id)
            .bind(code.user_id)
            .bind(code.parent_id)
            .bind(&code.redirect_uri)
            .bind(&code.code_challenge)
            .bind(code.scope.join(" "))
            .bind(code.nonce.as_deref())
            .bind(code.audience.as_deref())
            .bind(code.amr.join(" "))
            .bind(code.auth_time)
            .bind(code.expires_at)
            .bind(code.org_id)
            .execute(pool)
            .await
            .map(|_| ()))
    }

    /// The single use of a code at `now`, beginning `session_id` (see `Redemption`).
    pub async fn redeem_code(
        &self,
        hash: &[u8; 32],
        now: i64,
        session_id: Uuid,
    ) -> Result<Redemption> {
        let first: Option<CodeRow> = on_write_pool!(self, |pool| sqlx::query_as(REDEEM)
            .bind(&hash[..])
            .bind(now)
            .bind(session_id)
            .fetch_optional(pool)
            .await)?;
        if let Some(row) = first {
            return Ok(Redemption::First(row.into()));
        }
        let used: Option<(Option<i64>, Option<Uuid>, Uuid)> = on_pool!(self, |pool| {
            sqlx::query_as(
                "SELECT used_at, session_id, user_id FROM oauth_codes WHERE code_hash = $1",
            )
            .bind(&hash[..])
            .fetch_optional(pool)
            .await
        })?;
        Ok(match used {
            Some((Some(_), session_id, user_id)) => Redemption::Replayed {
                session_id,
                user_id,
            },
            _ => Redemption::Unknown,
        })
    }

    /// What `user` allowed `client`, if anything.
    pub async fn consent(&self, user: Uuid, client: Uuid) -> Result<Option<Consent>> {
        let row: Option<(String, Option<Uuid>)> = on_pool!(self, |pool| sqlx::query_as(
            "SELECT scopes, org_id FROM oauth_consents WHERE user_id = $1 AND client_id = $2"
        )
        .bind(user)
        .bind(client)
        .fetch_optional(pool)
        .await)?;
        Ok(row.map(|(scopes, org_id)| Consent {
            scopes: scopes.split_whitespace().map(str::to_owned).collect(),
            org_id,
        }))
    }

    /// Records that `user` allowed `client` the consent's scopes (all of them: those allowed
    /// before and the new ones), in its organisation.
    pub async fn put_consent(
        &self,
        user: Uuid,
        client: Uuid,
        consent: &Consent,
        now: i64,
    ) -> Result<()> {
        let sql = "INSERT INTO oauth_consents (user_id, client_id, scopes, granted_at, org_id) \
                   VALUES ($1, $2, $3, $4, $5) ON CONFLICT (user_id, client_id) \
                   DO UPDATE SET scopes = excluded.scopes, granted_at = excluded.granted_at, \
                   org_id = excluded.org_id";
        on_write_pool!(self, |pool| sqlx::query(sql)
            .bind(user)
            .bind(client)
            .bind(consent.scopes.join(" "))
            .bind(now)
            .bind(consent.org_id)
            .execute(pool)
            .await
            .map(|_| ()))
    }

    /// When the account last changed (ms): the ID token's `updated_at` (OpenID Connect `profile`).
    pub async fn user_updated_at(&self, user: Uuid) -> Result<Option<i64>> {
        on_pool!(self, |pool| sqlx::query_scalar(
            "SELECT updated_at FROM users WHERE id = $1"
        )
        .bind(user)
        .fetch_optional(pool)
        .await)
    }
}
