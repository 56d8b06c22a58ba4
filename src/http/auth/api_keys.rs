//! The caller's personal API keys (docs/api.md §12): making one (password re-checked; the key is
//! in this answer only), the list, deleting one.

use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use super::password_or_window;
use super::views::Deleted;
use crate::auth::api_keys::{Expiry, KeyName, KeyRequest, MAX_KEYS};
use crate::clock::rfc3339;
use crate::error::{Conflict, Error, Result, Validator};
use crate::http::docs::{
    bearer_errors, body_errors, error_responses, server_errors, throttle_errors,
};
use crate::http::extract::{AppJson, AuthUser, Caller, PathId};
use crate::http::{Answer, AppState, Envelope, ok};
use crate::model::{ApiKey, NewApiKey};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub(super) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_keys, create_key))
        .routes(routes!(delete_key))
}

/// A personal API key as its owner (or an admin) sees it: never the key itself.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = ApiKey)]
pub struct ApiKeyView {
    pub id: Uuid,
    #[schema(example = "Nightly export")]
    pub name: String,
    /// The first 8 characters after `ghk_`, to tell keys apart.
    #[schema(example = "4fQx9aZk")]
    pub prefix: String,
    /// The business API's scopes the key carries.
    #[schema(example = json!(["contacts:read"]))]
    pub scopes: Vec<String>,
    /// The organisation whose contacts the key works with; `null`: the owner's own.
    #[schema(format = Uuid)]
    pub org_id: Option<String>,
    /// When it stops working; `null`: never.
    #[schema(format = DateTime, example = "2027-01-01T00:00:00Z")]
    pub expires_at: Option<String>,
    #[schema(format = DateTime, example = "2026-11-21T09:30:00.417Z")]
    pub created_at: String,
    /// The last use (to within a minute); `null` before the first.
    #[schema(format = DateTime, example = "2026-11-22T08:01:45.200Z")]
    pub last_used_at: Option<String>,
}

impl From<ApiKey> for ApiKeyView {
    fn from(k: ApiKey) -> Self {
        ApiKeyView {
            id: k.id,
            name: k.name,
            prefix: k.prefix,
            scopes: k.scopes.names().into_iter().map(str::to_owned).collect(),
            org_id: k.org_id.map(|o| o.to_string()),
            expires_at: k.expires_at.map(rfc3339),
            created_at: rfc3339(k.created_at),
            last_used_at: k.last_used_at.map(rfc3339),
        }
    }
}

/// A key just made, with the key itself: shown this once.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct CreatedKey {
    id: Uuid,
    #[schema(example = "Nightly export")]
    name: String,
    /// The key: `ghk_` and 32 base62 characters. Send it as `Authorization: Bearer ghk_…`. Only
    /// its keyed hash is kept: it cannot be shown again.
    #[schema(example = "ghk_4fQx9aZkT1mB7cW2nR5yH8eJ3uL6pD0s")]
    key: String,
    #[schema(example = json!(["contacts:read", "contacts:write"]))]
    scopes: Vec<String>,
    #[schema(format = Uuid)]
    org_id: Option<String>,
    #[schema(format = DateTime, example = "2027-01-01T00:00:00Z")]
    expires_at: Option<String>,
    #[schema(format = DateTime, example = "2026-11-21T09:30:00.417Z")]
    created_at: String,
}

impl From<NewApiKey> for CreatedKey {
    fn from(n: NewApiKey) -> Self {
        let view = ApiKeyView::from(n.record);
        CreatedKey {
            id: view.id,
            name: view.name,
            key: n.key,
            scopes: view.scopes,
            org_id: view.org_id,
            expires_at: view.expires_at,
            created_at: view.created_at,
        }
    }
}

#[derive(Deserialize, Default, ToSchema)]
#[serde(rename_all = "camelCase", default)]
struct CreateKeyRequest {
    /// A label for the list: trimmed, 1–100 characters.
    #[schema(required = true, example = "Nightly export", max_length = 100)]
    name: String,
    /// The account's password: an access token alone must not make a standing credential. Not
    /// needed while this session is re-authenticated (`POST /auth/reauthenticate`).
    password: String,
    /// Scopes of the business APIs (docs/guide/resources.md: `contacts:read`, `contacts:write`
    /// and the operator's own); all of them when left out.
    #[schema(example = json!(["contacts:read"]))]
    scopes: Option<Vec<String>>,
    /// When the key stops working (RFC 3339, in the future). Left out: in 90 days, as the
    /// account page offers first; `null`: never (a key that never expires must be asked for).
    #[serde(deserialize_with = "crate::http::extract::given")]
    #[schema(value_type = Option<String>, format = DateTime, example = "2027-01-01T00:00:00Z")]
    expires_at: Option<Option<String>>,
    /// One of the caller's organisations: the key works with its contacts (as a token with that
    /// active organisation does) while the caller is its member.
    #[schema(format = Uuid)]
    org_id: Option<String>,
}

fn parse_time(raw: &str) -> Result<i64, String> {
    time::OffsetDateTime::parse(raw, &time::format_description::well_known::Rfc3339)
        .map(|t| (t.unix_timestamp_nanos() / 1_000_000) as i64)
        .map_err(|_| "must be an RFC 3339 time, e.g. 2027-01-01T00:00:00Z".to_owned())
}

impl CreateKeyRequest {
    fn parse(self) -> Result<KeyRequest> {
        let mut v = Validator::new();
        let name = v.check("name", KeyName::parse(&self.name));
        let expires_at = match self.expires_at {
            None => Some(Expiry::Default),
            Some(None) => Some(Expiry::Never),
            Some(Some(raw)) => v.check("expiresAt", parse_time(&raw).map(Expiry::At)),
        };
        let org_id = match self.org_id.as_deref() {
            None => Some(None),
            Some(raw) => v.check(
                "orgId",
                Uuid::parse_str(raw)
                    .map(Some)
                    .map_err(|_| "must be an organisation id".to_owned()),
            ),
        };
        let parsed = (|| {
            Some(KeyRequest {
                name: name?,
                password: password_or_window(self.password),
                scopes: self.scopes,
                expires_at: expires_at?,
                org_id: org_id?,
            })
        })();
        v.finish(parsed)
    }
}

error_responses!(CreateErrors:
    body_errors(),
    [Error::PasswordRecheckFailed],
    bearer_errors(),
    [Error::ClientToken, Error::NotFound, Error::Conflict(Conflict::TooManyApiKeys)],
    throttle_errors(),
    server_errors(),
);

/// Make a personal API key (the password required).
///
/// For scripts and integrations: the key is sent as `Authorization: Bearer ghk_…` to the business
/// API (within its scopes), to forward-auth (`Remote-Key` names it) and to introspection. It is
/// in this answer only. A key for `orgId` works with that organisation's contacts while the caller
/// is its member (not a member: 404). At most 50 keys an account (the 51st: 409). Its owner is
/// told by mail.
#[utoipa::path(post, path = "/api-keys", tag = "auth", request_body = CreateKeyRequest,
    security(("bearer" = [])),
    responses((status = 201, description = "The key, shown once", body = Envelope<CreatedKey>), CreateErrors))]
async fn create_key(
    State(state): State<AppState>,
    AuthUser(who): AuthUser,
    Caller(client): Caller,
    AppJson(body): AppJson<CreateKeyRequest>,
) -> Result<(StatusCode, Answer<CreatedKey>)> {
    let request = body.parse()?;
    let made = state.auth.api_keys.create(&who, request, &client).await?;
    Ok((StatusCode::CREATED, ok(made.into())))
}

#[derive(Serialize, ToSchema)]
pub struct ApiKeyList {
    pub items: Vec<ApiKeyView>,
    /// The scopes a new key may be given: every business API's (docs/guide/resources.md), in
    /// words, for the page that makes keys.
    pub scopes: Vec<KeyScope>,
}

/// A scope a key may be given.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct KeyScope {
    #[schema(example = "contacts:read")]
    pub scope: String,
    #[schema(example = "Read your contacts")]
    pub description: String,
    /// The API it is of.
    #[schema(example = "Contacts")]
    pub resource: String,
}

error_responses!(ListErrors: bearer_errors(), [Error::ClientToken], server_errors());

/// The caller's API keys, newest first (never the keys themselves).
#[utoipa::path(get, path = "/api-keys", tag = "auth", security(("bearer" = [])),
    responses((status = 200, description = "The keys", body = Envelope<ApiKeyList>), ListErrors))]
async fn list_keys(
    State(state): State<AppState>,
    AuthUser(who): AuthUser,
) -> Result<Answer<ApiKeyList>> {
    let keys = state.auth.api_keys.list(&who).await?;
    Ok(ok(ApiKeyList::of(&state, keys)))
}

impl ApiKeyList {
    pub(crate) fn of(state: &AppState, keys: Vec<ApiKey>) -> Self {
        let scopes = (state.auth.resources.list().into_iter())
            .flat_map(|r| {
                let resource = r.name;
                r.scopes.into_iter().map(move |s| KeyScope {
                    scope: s.name,
                    description: s.description,
                    resource: resource.clone(),
                })
            })
            .collect();
        ApiKeyList {
            items: keys.into_iter().map(ApiKeyView::from).collect(),
            scopes,
        }
    }
}

error_responses!(DeleteErrors:
    bearer_errors(),
    [Error::ClientToken, Error::NotFound],
    server_errors(),
);

/// Delete one of the caller's API keys: it is refused here at once and on every instance within
/// 2 s. Another person's key: 404. The owner is told by mail.
#[utoipa::path(delete, path = "/api-keys/{id}", tag = "auth", security(("bearer" = [])),
    params(("id" = Uuid, Path, description = "A key id from `GET /auth/api-keys`")),
    responses((status = 200, description = "The key deleted", body = Envelope<Deleted>), DeleteErrors))]
async fn delete_key(
    State(state): State<AppState>,
    AuthUser(who): AuthUser,
    Caller(client): Caller,
    PathId(id): PathId,
) -> Result<Answer<Deleted>> {
    state.auth.api_keys.delete(&who, id, &client).await?;
    Ok(ok(Deleted { id }))
}

// The limit the documentation states is the one enforced.
const _: () = assert!(MAX_KEYS == 50);
