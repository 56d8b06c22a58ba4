//! `/admin/users/{id}/api-keys…` (docs/api.md §12): an account's personal API keys, listed and
//! deleted by an admin (a key leaked, a person leaving a team), audited like every admin call.

use axum::extract::State;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::Admin;
use super::users::gate_errors;
use crate::error::{Error, Result};
use crate::http::auth::api_keys::ApiKeyList;
use crate::http::auth::views::Deleted;
use crate::http::docs::error_responses;
use crate::http::extract::{PathId, PathIds};
use crate::http::{Answer, AppState, Envelope, ok};

pub(super) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_keys))
        .routes(routes!(delete_key))
}

error_responses!(NotFoundErrors: [Error::NotFound], gate_errors());

/// An account's API keys, newest first (never the keys themselves).
#[utoipa::path(get, path = "/users/{id}/api-keys", tag = "admin", security(("bearer" = [])),
    params(("id" = Uuid, Path, description = "The account's id")),
    responses((status = 200, description = "The keys", body = Envelope<ApiKeyList>), NotFoundErrors))]
async fn list_keys(
    State(state): State<AppState>,
    admin: Admin,
    PathId(id): PathId,
) -> Result<Answer<ApiKeyList>> {
    let keys = state.auth.api_keys.keys_of(admin.op(), id).await?;
    Ok(ok(ApiKeyList::of(&state, keys)))
}

/// Delete an account's API key: refused here at once and on every instance within 2 s; the owner
/// is told by mail. A key of another account: 404.
#[utoipa::path(delete, path = "/users/{id}/api-keys/{keyId}", tag = "admin",
    security(("bearer" = [])),
    params(("id" = Uuid, Path, description = "The account's id"),
        ("keyId" = Uuid, Path, description = "A key id from `GET /admin/users/{id}/api-keys`")),
    responses((status = 200, description = "The key deleted", body = Envelope<Deleted>), NotFoundErrors))]
async fn delete_key(
    State(state): State<AppState>,
    admin: Admin,
    PathIds(user, key): PathIds,
) -> Result<Answer<Deleted>> {
    state
        .auth
        .api_keys
        .delete_for(admin.op(), user, key)
        .await?;
    Ok(ok(Deleted { id: key }))
}
