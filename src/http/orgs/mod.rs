//! `/api/v1/orgs/…`: organisations, their members and invitations (docs/api.md §13). Thin: the
//! rules are `orgs`'.

use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use super::auth::views::Deleted;
use super::docs::{bearer_errors, body_errors, error_responses, server_errors};
use super::extract::{AppJson, AuthUser, Caller, PathId};
use super::{Answer, AppState, Envelope, ok};
use crate::clock::rfc3339;
use crate::error::{Conflict, Error, Result};
use crate::model::orgs::Org;
use crate::orgs::OrgPatch;

mod invitations;
pub(crate) mod members;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list, create))
        .routes(routes!(read, update, remove))
        .merge(members::router())
        .merge(invitations::router())
}

/// An organisation.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = Org)]
pub(crate) struct OrgView {
    id: Uuid,
    #[schema(example = "Acme Corp")]
    name: String,
    #[schema(example = "acme")]
    slug: String,
    /// Members must have signed in with a second factor to make it their active organisation.
    require_two_factor: bool,
    #[schema(format = DateTime, example = "2026-11-24T09:30:00.417Z")]
    created_at: String,
}

impl From<Org> for OrgView {
    fn from(o: Org) -> Self {
        OrgView {
            id: o.id,
            name: o.name,
            slug: o.slug,
            require_two_factor: o.require_two_factor,
            created_at: rfc3339(o.created_at),
        }
    }
}

/// An organisation with the caller's roles in it.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct MyOrg {
    org: OrgView,
    #[schema(example = json!(["owner"]))]
    roles: Vec<String>,
}

#[derive(Serialize, ToSchema)]
struct MyOrgs {
    items: Vec<MyOrg>,
}

/// A member's view of an organisation: its fields and the caller's roles.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct OrgWithRoles {
    #[serde(flatten)]
    org: OrgView,
    /// The caller's roles in it.
    #[schema(example = json!(["member"]))]
    roles: Vec<String>,
}

error_responses!(ListErrors: bearer_errors(), server_errors());

/// The caller's organisations, with their roles in each, by name.
#[utoipa::path(get, path = "", tag = "orgs", security(("bearer" = [])),
    responses((status = 200, description = "The caller's organisations", body = Envelope<MyOrgs>), ListErrors))]
async fn list(State(state): State<AppState>, AuthUser(who): AuthUser) -> Result<Answer<MyOrgs>> {
    let items = state.auth.orgs.mine(&who).await?;
    Ok(ok(MyOrgs {
        items: items
            .into_iter()
            .map(|(org, roles)| MyOrg {
                org: org.into(),
                roles,
            })
            .collect(),
    }))
}

#[derive(Deserialize, ToSchema)]
struct NewOrg {
    /// 1 to 200 characters.
    #[schema(example = "Acme Corp", min_length = 1, max_length = 200)]
    name: String,
    /// `[a-z0-9][a-z0-9-]{1,62}`, unique.
    #[schema(example = "acme", pattern = r"^[a-z0-9][a-z0-9-]{1,62}$")]
    slug: String,
}

error_responses!(CreateErrors:
    body_errors(),
    bearer_errors(),
    [Error::Conflict(Conflict::SlugTaken)],
    server_errors(),
);

/// Create an organisation; the caller is its owner.
#[utoipa::path(post, path = "", tag = "orgs", security(("bearer" = [])), request_body = NewOrg,
    responses((status = 201, description = "The organisation", body = Envelope<OrgView>), CreateErrors))]
async fn create(
    State(state): State<AppState>,
    AuthUser(who): AuthUser,
    Caller(client): Caller,
    AppJson(body): AppJson<NewOrg>,
) -> Result<(StatusCode, Answer<OrgView>)> {
    let org = state
        .auth
        .orgs
        .create(&who, &body.name, &body.slug, &client)
        .await?;
    Ok((StatusCode::CREATED, ok(org.into())))
}

error_responses!(ReadErrors: bearer_errors(), [Error::NotFound], server_errors());

/// An organisation the caller belongs to, with the caller's roles. Not a member: 404.
#[utoipa::path(get, path = "/{id}", tag = "orgs", security(("bearer" = [])),
    params(("id" = Uuid, Path, description = "The organisation's id")),
    responses((status = 200, description = "The organisation", body = Envelope<OrgWithRoles>), ReadErrors))]
async fn read(
    State(state): State<AppState>,
    AuthUser(who): AuthUser,
    PathId(id): PathId,
) -> Result<Answer<OrgWithRoles>> {
    let (org, me) = state.auth.orgs.get(&who, id).await?;
    Ok(ok(OrgWithRoles {
        org: org.into(),
        roles: me.roles,
    }))
}

/// The fields to change; those left out stay.
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct OrgChange {
    #[schema(example = "Acme Corporation", min_length = 1, max_length = 200)]
    name: Option<String>,
    #[schema(example = "acme-corp", pattern = r"^[a-z0-9][a-z0-9-]{1,62}$")]
    slug: Option<String>,
    require_two_factor: Option<bool>,
}

error_responses!(UpdateErrors:
    body_errors(),
    bearer_errors(),
    [Error::Forbidden, Error::NotFound, Error::Conflict(Conflict::SlugTaken)],
    server_errors(),
);

/// Change an organisation (owner or admin).
#[utoipa::path(patch, path = "/{id}", tag = "orgs", security(("bearer" = [])), request_body = OrgChange,
    params(("id" = Uuid, Path, description = "The organisation's id")),
    responses((status = 200, description = "The organisation", body = Envelope<OrgView>), UpdateErrors))]
async fn update(
    State(state): State<AppState>,
    AuthUser(who): AuthUser,
    Caller(client): Caller,
    PathId(id): PathId,
    AppJson(body): AppJson<OrgChange>,
) -> Result<Answer<OrgView>> {
    let patch = OrgPatch {
        name: body.name,
        slug: body.slug,
        require_two_factor: body.require_two_factor,
    };
    let org = state.auth.orgs.update(&who, id, patch, &client).await?;
    Ok(ok(org.into()))
}

error_responses!(DeleteErrors:
    bearer_errors(),
    [Error::Forbidden, Error::NotFound],
    server_errors(),
);

/// Delete an organisation (owner): its memberships, invitations and shared contacts end, and
/// tokens naming it are refused on every instance within 2 s.
#[utoipa::path(delete, path = "/{id}", tag = "orgs", security(("bearer" = [])),
    params(("id" = Uuid, Path, description = "The organisation's id")),
    responses((status = 200, description = "Deleted", body = Envelope<Deleted>), DeleteErrors))]
async fn remove(
    State(state): State<AppState>,
    AuthUser(who): AuthUser,
    Caller(client): Caller,
    PathId(id): PathId,
) -> Result<Answer<Deleted>> {
    state.auth.orgs.delete(&who, id, &client).await?;
    Ok(ok(Deleted { id }))
}
