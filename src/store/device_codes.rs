//! Device authorizations (RFC 8628, docs/api.md §11), by the SHA-256 of their device code and of
//! their user code.

use uuid::Uuid;

use super::{Store, on_pool, on_write_pool};
use crate::error::{Error, Result};
use crate::model::oauth::{
    AuthorizationCode, DeviceDecision, DevicePoll, DeviceRequest, DeviceStatus, Redemption,
};

fn words(text: &str) -> Vec<String> {
    text.split_whitespace().map(str::to_owned).collect()
}

/// Counts a client's poll at `$2`: one that comes before the interval has passed since the last
/// grows the interval by 5 s (RFC 8628 §3.5) and is marked early. One statement, so that two
/// instances polled at once agree: the SET expressions read the row as it was.
const POLL: &str = "UPDATE device_authorizations SET \
     early = (polled_at IS NOT NULL AND $2 - polled_at < interval_ms), \
     interval_ms = CASE WHEN polled_at IS NOT NULL AND $2 - polled_at < interval_ms \
                   THEN interval_ms + 5000 ELSE interval_ms END, \
     polled_at = $2 \
     WHERE device_hash = $1 AND client_id = $3 \
     RETURNING status, early, expires_at, used_at, session_id, user_id";

/// Collects the tokens of an approved authorization, once: of two racing polls exactly one
/// finds it.
const REDEEM: &str = "UPDATE device_authorizations SET used_at = $2, session_id = $3 \
     WHERE device_hash = $1 AND status = 'approved' AND used_at IS NULL AND expires_at > $2 \
     RETURNING client_id, user_id, parent_id, scope, audience, amr, auth_time, expires_at, org_id";

#[derive(sqlx::FromRow)]
struct ApprovalRow {
    client_id: Uuid,
    user_id: Option<Uuid>,
    parent_id: Option<Uuid>,
    scope: String,
    audience: Option<String>,
    amr: Option<String>,
    auth_time: Option<i64>,
    expires_at: i64,
    org_id: Option<Uuid>,
}

impl ApprovalRow {
    /// The approval as the authorization code it stands for: no redirect URI and no PKCE (the
    /// device code, which only the client holds, is its proof).
    fn into_code(self) -> Result<AuthorizationCode> {
        let broken = || {
            Error::Internal(anyhow::anyhow!(
                "an approved device authorization lacks its approval"
            ))
        };
        Ok(AuthorizationCode {
            client_id: self.client_id,
            user_id: self.user_id.ok_or_else(broken)?,
            parent_id: self.parent_id.ok_or_else(broken)?,
            redirect_uri: String::new(),
            code_challenge: String::new(),
            scope: words(&self.scope),
            nonce: None,
            audience: self.audience,
            amr: words(self.amr.as_deref().unwrap_or_default()),
            auth_time: self.auth_time.ok_or_else(broken)?,
            expires_at: self.expires_at,
            org_id: self.org_id,
        })
    }
}

impl Store {
    /// Records a device authorization; `false` when its user code is taken (the caller draws
    /// another).
    pub async fn insert_device_request(
        &self,
        device_hash: &[u8; 32],
        user_code_hash: &[u8; 32],
        request: &DeviceRequest,
    ) -> Result<bool> {
        let sql = "INSERT INTO device_authorizations (device_hash, user_code_hash, client_id, \
                   scope, audience, created_at, expires_at, interval_ms, status) \
                   VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'pending') ON CONFLICT DO NOTHING";
        let inserted = on_write_pool!(self, |pool| sqlx::query(sql)
            .bind(&device_hash[..])
            .bind(&user_code_hash[..])
            .bind(request.client_id)
            .bind(request.scope.join(" "))
            .bind(request.audience.as_deref())
            .bind(request.created_at)
            .bind(request.expires_at)
            .bind(request.interval_ms)
            .execute(pool)
            .await
            .map(|done| done.rows_affected()))?;
        Ok(inserted == 1)
    }

    /// The authorization the person's user code names, while it waits for them.
    pub async fn pending_device_request(
        &self,
        user_code_hash: &[u8; 32],
        now: i64,
    ) -> Result<Option<DeviceRequest>> {
        type Row = (Uuid, String, Option<String>, i64, i64, i64);
        let row: Option<Row> = on_pool!(self, |pool| sqlx::query_as(
            "SELECT client_id, scope, audience, created_at, expires_at, interval_ms \
             FROM device_authorizations \
             WHERE user_code_hash = $1 AND status = 'pending' AND expires_at > $2"
        )
        .bind(&user_code_hash[..])
        .bind(now)
        .fetch_optional(pool)
        .await)?;
        Ok(row.map(
            |(client_id, scope, audience, created_at, expires_at, interval_ms)| DeviceRequest {
                client_id,
                scope: words(&scope),
                audience,
                created_at,
                expires_at,
                interval_ms,
            },
        ))
    }

    /// The person's answer for the authorization `user_code_hash` names, if it still waits for
    /// one: `false` when it does not (answered meanwhile, or expired).
    pub async fn decide_device_request(
        &self,
        user_code_hash: &[u8; 32],
        now: i64,
        decision: &DeviceDecision,
    ) -> Result<bool> {
        let sql = "UPDATE device_authorizations SET status = $3, user_id = $4, parent_id = $5, \
                   amr = $6, auth_time = $7, org_id = $8 \
                   WHERE user_code_hash = $1 AND status = 'pending' AND expires_at > $2";
        let (status, user_id, parent_id, amr, auth_time, org_id) = match decision {
            DeviceDecision::Approved {
                user_id,
                parent_id,
                amr,
                auth_time,
                org_id,
            } => (
                DeviceStatus::Approved,
                Some(*user_id),
                Some(*parent_id),
                Some(amr.join(" ")),
                Some(*auth_time),
                *org_id,
            ),
            DeviceDecision::Denied => (DeviceStatus::Denied, None, None, None, None, None),
        };
        let changed = on_write_pool!(self, |pool| sqlx::query(sql)
            .bind(&user_code_hash[..])
            .bind(now)
            .bind(status.as_str())
            .bind(user_id)
            .bind(parent_id)
            .bind(amr.as_deref())
            .bind(auth_time)
            .bind(org_id)
            .execute(pool)
            .await
            .map(|done| done.rows_affected()))?;
        Ok(changed == 1)
    }

    /// A poll by `client` at `now`, counted (see `POLL`); `None` for a device code unknown, or
    /// not this client's.
    pub async fn poll_device(
        &self,
        device_hash: &[u8; 32],
        client: Uuid,
        now: i64,
    ) -> Result<Option<DevicePoll>> {
        type Row = (String, bool, i64, Option<i64>, Option<Uuid>, Option<Uuid>);
        let row: Option<Row> = on_write_pool!(self, |pool| sqlx::query_as(POLL)
            .bind(&device_hash[..])
            .bind(now)
            .bind(client)
            .fetch_optional(pool)
            .await)?;
        let Some((status, early, expires_at, used_at, session_id, user_id)) = row else {
            return Ok(None);
        };
        let status = DeviceStatus::parse(&status).ok_or_else(|| {
            Error::Internal(anyhow::anyhow!(
                "unknown device authorization status {status:?}"
            ))
        })?;
        Ok(Some(DevicePoll {
            status,
            early,
            expires_at,
            used: used_at.map(|at| (at, session_id)),
            user_id,
        }))
    }

    /// The single collection of an approved authorization's tokens at `now`, beginning
    /// `session_id`; a lost race with another poll is `Replayed`.
    pub async fn redeem_device(
        &self,
        device_hash: &[u8; 32],
        now: i64,
        session_id: Uuid,
    ) -> Result<Redemption> {
        let first: Option<ApprovalRow> = on_write_pool!(self, |pool| sqlx::query_as(REDEEM)
            .bind(&device_hash[..])
            .bind(now)
            .bind(session_id)
            .fetch_optional(pool)
            .await)?;
        if let Some(row) = first {
            return Ok(Redemption::First(row.into_code()?));
        }
        let used: Option<(Option<i64>, Option<Uuid>, Option<Uuid>)> =
            on_pool!(self, |pool| sqlx::query_as(
                "SELECT used_at, session_id, user_id FROM device_authorizations \
                 WHERE device_hash = $1"
            )
            .bind(&device_hash[..])
            .fetch_optional(pool)
            .await)?;
        Ok(match used {
            Some((Some(_), session_id, Some(user_id))) => Redemption::Replayed {
                session_id,
                user_id,
            },
            _ => Redemption::Unknown,
        })
    }
}
