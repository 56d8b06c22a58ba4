//! `/admin/resources…` (docs/guide/resources.md, docs/api.md §11): the business APIs tokens are
//! issued for, as `gatehouse resources` manages them. The settings' (the contacts example,
//! `GATEHOUSE_RESOURCES`) are listed and read-only; the operator's are declared, changed and
//! removed here.

use std::collections::BTreeMap;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::Admin;
use super::users::{gate_errors, given};
use crate::auth::{ResourceChanges, ResourceInput};
use crate::error::{Conflict, Error, Result};
use crate::http::docs::{body_errors, error_responses};
use crate::http::extract::AppJson;
use crate::http::{Answer, AppState, Envelope, ok};
use crate::model::Resource;

pub(super) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list, create))
        .routes(routes!(one, update, delete))
}

/// A business API and its scopes.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = Resource)]
pub struct ResourceView {
    #[schema(example = "orders")]
    id: String,
    #[schema(example = "Orders API")]
    name: String,
    /// The `aud` of its tokens (RFC 8707); `null`: `GATEHOUSE_AUDIENCE`, the services behind the
    /// proxies.
    #[schema(example = "https://orders.example.com")]
    audience: Option<String>,
    /// Scope name → what the consent screen says of it.
    #[schema(example = json!({"orders:read": "See your orders"}))]
    scopes: BTreeMap<String, String>,
    /// `built_in` (the contacts example), `settings` (`GATEHOUSE_RESOURCES`: read-only here) or
    /// `operator` (the CLI and this API).
    #[schema(example = "operator")]
    origin: &'static str,
}

impl From<Resource> for ResourceView {
    fn from(r: Resource) -> Self {
        ResourceView {
            origin: r.origin.as_str(),
            scopes: r
                .scopes
                .into_iter()
                .map(|s| (s.name, s.description))
                .collect(),
            id: r.id,
            name: r.name,
            audience: r.audience,
        }
    }
}

#[derive(Serialize, ToSchema)]
struct ResourceList {
    /// The settings' first, then the operator's by id.
    items: Vec<ResourceView>,
}

error_responses!(ListErrors: gate_errors());

/// Every business API.
#[utoipa::path(get, path = "/resources", tag = "admin", security(("bearer" = [])),
    responses((status = 200, description = "The APIs", body = Envelope<ResourceList>), ListErrors))]
async fn list(State(state): State<AppState>, _admin: Admin) -> Result<Answer<ResourceList>> {
    let items = state.auth.resources.list();
    Ok(ok(ResourceList {
        items: items.into_iter().map(ResourceView::from).collect(),
    }))
}

#[derive(Deserialize, Default, ToSchema)]
#[serde(rename_all = "camelCase", default)]
struct CreateRequest {
    /// 1 to 32 of a-z, 0-9 and -.
    #[schema(required = true, example = "orders")]
    id: String,
    #[schema(required = true, example = "Orders API")]
    name: String,
    /// An absolute http(s) URL: the `aud` of its tokens and the RFC 8707 resource indicator its
    /// clients send. Left out: `GATEHOUSE_AUDIENCE` (the services behind the proxies).
    #[schema(example = "https://orders.example.com")]
    audience: Option<String>,
    /// 1 to 50 scopes, each unique across every API, with what the consent screen says of it.
    #[schema(required = true, example = json!({"orders:read": "See your orders"}))]
    scopes: BTreeMap<String, String>,
}

error_responses!(CreateErrors: body_errors(), [Error::Conflict(Conflict::ResourceTaken)], gate_errors());

/// Declare a business API: clients, API keys and rules may use its scopes at once, on every
/// instance within a second. Audited `resource.added`.
#[utoipa::path(post, path = "/resources", tag = "admin", security(("bearer" = [])),
    request_body = CreateRequest,
    responses((status = 201, description = "Declared", body = Envelope<ResourceView>), CreateErrors))]
async fn create(
    State(state): State<AppState>,
    admin: Admin,
    AppJson(body): AppJson<CreateRequest>,
) -> Result<(StatusCode, Answer<ResourceView>)> {
    let input = ResourceInput {
        id: body.id,
        name: body.name,
        audience: body.audience,
        scopes: body.scopes.into_iter().collect(),
    };
    let made = state.auth.resources.create(admin.op(), input).await?;
    Ok((StatusCode::CREATED, ok(made.into())))
}

error_responses!(OneErrors: [Error::NotFound], gate_errors());

/// One business API.
#[utoipa::path(get, path = "/resources/{id}", tag = "admin", security(("bearer" = [])),
    params(("id" = String, Path, description = "The API's id")),
    responses((status = 200, description = "The API", body = Envelope<ResourceView>), OneErrors))]
async fn one(
    State(state): State<AppState>,
    _admin: Admin,
    Path(id): Path<String>,
) -> Result<Answer<ResourceView>> {
    Ok(ok(state.auth.resources.get(&id)?.into()))
}

/// Each field left out is kept; `audience: null` removes it.
#[derive(Deserialize, Default, ToSchema)]
#[serde(rename_all = "camelCase", default)]
struct PatchRequest {
    #[serde(deserialize_with = "given")]
    #[schema(value_type = Option<String>)]
    name: Option<Option<String>>,
    #[serde(deserialize_with = "given")]
    #[schema(value_type = Option<String>)]
    audience: Option<Option<String>>,
    /// The whole set (scopes left out are removed).
    #[serde(deserialize_with = "given")]
    #[schema(value_type = Option<BTreeMap<String, String>>)]
    scopes: Option<Option<BTreeMap<String, String>>>,
}

error_responses!(PatchErrors: body_errors(), [Error::NotFound, Error::Conflict(Conflict::ResourceInSettings), Error::Conflict(Conflict::ResourceTaken)], gate_errors());

/// Change an operator's business API (a settings' one is 409). A scope taken away is issued no
/// more (clients registered for it are refused it). Audited `resource.changed`.
#[utoipa::path(patch, path = "/resources/{id}", tag = "admin", security(("bearer" = [])),
    params(("id" = String, Path, description = "The API's id")),
    request_body = PatchRequest,
    responses((status = 200, description = "The API as it is now", body = Envelope<ResourceView>), PatchErrors))]
async fn update(
    State(state): State<AppState>,
    admin: Admin,
    Path(id): Path<String>,
    AppJson(body): AppJson<PatchRequest>,
) -> Result<Answer<ResourceView>> {
    if matches!(body.name, Some(None)) || matches!(body.scopes, Some(None)) {
        let field = if matches!(body.name, Some(None)) {
            "name"
        } else {
            "scopes"
        };
        return Err(Error::field(field, "must not be null"));
    }
    let changes = ResourceChanges {
        name: body.name.flatten(),
        audience: body.audience,
        scopes: body.scopes.flatten().map(|s| s.into_iter().collect()),
    };
    if changes.is_empty() {
        return Err(Error::field(
            "body",
            "must give at least one field to change",
        ));
    }
    let changed = state
        .auth
        .resources
        .update(admin.op(), &id, changes)
        .await?;
    Ok(ok(changed.into()))
}

/// What was removed.
#[derive(Serialize, ToSchema)]
struct Removed {
    id: String,
}

error_responses!(DeleteErrors: [Error::NotFound, Error::Conflict(Conflict::ResourceInSettings)], gate_errors());

/// Remove an operator's business API: its scopes are no scopes any more (tokens already issued
/// keep them until they expire). Audited `resource.removed`.
#[utoipa::path(delete, path = "/resources/{id}", tag = "admin", security(("bearer" = [])),
    params(("id" = String, Path, description = "The API's id")),
    responses((status = 200, description = "Removed", body = Envelope<Removed>), DeleteErrors))]
async fn delete(
    State(state): State<AppState>,
    admin: Admin,
    Path(id): Path<String>,
) -> Result<Answer<Removed>> {
    state.auth.resources.remove(admin.op(), &id).await?;
    Ok(ok(Removed { id }))
}
