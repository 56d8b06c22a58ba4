//! The answers of `/admin/…` as JSON.

use serde::Serialize;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::clock::rfc3339;
use crate::model::ManagedUser;
use crate::store::audit::EventRow;

/// An account as admins see it.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = AdminUser)]
pub struct UserView {
    pub id: Uuid,
    #[schema(example = "ada@example.com")]
    pub email: String,
    #[schema(example = "Ada Lovelace")]
    pub full_name: String,
    /// Sorted.
    #[schema(example = json!(["admin"]))]
    pub roles: Vec<String>,
    /// A disabled account cannot sign in, and had every session ended.
    pub disabled: bool,
    pub email_verified: bool,
    pub two_factor_enabled: bool,
    /// How many passkeys it has.
    #[schema(example = 1)]
    pub passkeys: i64,
    /// Its identities at other providers (docs/api.md §14), by provider.
    pub identities: Vec<IdentityRef>,
    #[schema(format = DateTime, example = "2026-11-21T09:30:00.417Z")]
    pub created_at: String,
    /// The last sign-in (password, completed 2FA, passkey or accepted invitation); `null`: never.
    /// Bearer calls and refreshes do not move it.
    #[schema(format = DateTime, example = "2026-11-23T08:01:44.120Z")]
    pub last_login_at: Option<String>,
}

/// An identity at another provider linked to the account.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct IdentityRef {
    #[schema(example = "acme-sso")]
    pub provider_id: String,
    /// The provider's `sub`.
    #[schema(example = "248289761001")]
    pub subject: String,
}

impl From<ManagedUser> for UserView {
    fn from(m: ManagedUser) -> Self {
        let u = m.user;
        UserView {
            id: u.id,
            two_factor_enabled: u.two_factor_enabled(),
            email: u.email,
            full_name: u.full_name,
            roles: u.roles,
            disabled: u.disabled,
            email_verified: u.email_verified,
            passkeys: m.passkeys,
            identities: m
                .identities
                .into_iter()
                .map(|(provider_id, subject)| IdentityRef {
                    provider_id,
                    subject,
                })
                .collect(),
            created_at: rfc3339(u.created_at),
            last_login_at: u.last_login_at.map(rfc3339),
        }
    }
}

/// One audit event.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EventView {
    pub id: Uuid,
    #[schema(format = DateTime, example = "2026-11-23T08:01:44.120Z")]
    pub at: String,
    /// The event's name (README, "Audit trail").
    #[serde(rename = "type")]
    #[schema(example = "user.disabled")]
    pub event: String,
    /// The account it concerns (an admin's act: its target).
    pub user_id: Option<Uuid>,
    /// That account's address now (`deleted:<id>` once the account is deleted).
    #[schema(example = "ada@example.com")]
    pub email: Option<String>,
    /// The admin whose call it was; `null` for the user's own acts and the command line's.
    pub actor_id: Option<Uuid>,
    pub session_id: Option<Uuid>,
    #[schema(example = "203.0.113.9")]
    pub ip: Option<String>,
    pub user_agent: Option<String>,
    #[schema(example = "via=admin sessions_ended=2")]
    pub detail: Option<String>,
    /// The organisation it concerns (docs/api.md §13); absent for other events.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub org_id: Option<Uuid>,
}

impl From<EventRow> for EventView {
    fn from(e: EventRow) -> Self {
        EventView {
            id: e.id,
            at: rfc3339(e.at),
            event: e.event,
            user_id: e.user_id,
            org_id: e.org_id,
            email: e.email,
            actor_id: e.actor_id,
            session_id: e.session_id,
            ip: e.ip,
            user_agent: e.user_agent,
            detail: e.detail,
        }
    }
}
