//! Personal API keys (docs/api.md §12): a person's long-lived credential for scripts and
//! integrations, limited to resource scopes of the business API and, optionally, to one of the
//! person's organisations. Only a keyed hash of the key itself is ever kept.

use uuid::Uuid;

use super::sessions::ApiScopes;

/// A key as stored (never the key itself).
#[derive(Debug, Clone)]
pub struct ApiKey {
    pub id: Uuid,
    pub user_id: Uuid,
    pub name: String,
    /// The first 8 characters after `ghk_`.
    pub prefix: String,
    pub scopes: ApiScopes,
    /// The organisation whose contacts the key works with; `None`: the owner's own.
    pub org_id: Option<Uuid>,
    /// ms; `None`: never.
    pub expires_at: Option<i64>,
    pub created_at: i64,
    pub last_used_at: Option<i64>,
}

/// A key just made: the key itself, shown this once, and the record.
#[derive(Debug, Clone)]
pub struct NewApiKey {
    pub key: String,
    pub record: ApiKey,
}

/// Who holds a live key, as a guarded service is told (forward-auth, introspection): the owner
/// as they are now. A key belongs to no session and never proves a second factor.
#[derive(Debug, Clone)]
pub struct KeyIdentity {
    pub key_id: Uuid,
    pub user_id: Uuid,
    pub email: String,
    pub email_verified: bool,
    pub full_name: String,
    /// The owner's current roles, sorted.
    pub roles: Vec<String>,
    /// The key's organisation, with the owner's roles in it now.
    pub org: Option<super::orgs::ActiveOrg>,
    pub scopes: ApiScopes,
    /// ms; `None`: never.
    pub expires_at: Option<i64>,
}
