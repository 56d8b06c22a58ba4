//! `/api/v1/orgs/{id}/members…`: the member list, role changes, removals and leaving.

use axum::extract::{Query, State};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use crate::clock::rfc3339;
use crate::error::{Conflict, Error, Result, Validator};
use crate::http::auth::views::Deleted;
use crate::http::docs::{bearer_errors, body_errors, error_responses, server_errors};
use crate::http::extract::{AppJson, AuthUser, Caller, PathId, PathIds};
use crate::http::fields::page_limit;
use crate::http::{Answer, AppState, Envelope, ok};
use crate::model::orgs::Member;

pub(super) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list))
        .routes(routes!(update, remove))
}

pub(crate) const DEFAULT_LIMIT: u32 = 50;
pub(crate) const MAX_LIMIT: u32 = 200;

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct PageQuery {
    /// Page size, 1 to 200 (default 50).
    #[param(value_type = Option<u32>, minimum = 1, maximum = 200, example = 50)]
    pub limit: Option<String>,
    /// `nextCursor` of the previous page; empty for the first. Opaque: one the service did not
    /// issue is 400.
    pub cursor: Option<String>,
}

/// A member of an organisation.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = OrgMember)]
pub(crate) struct MemberView {
    user_id: Uuid,
    #[schema(example = "ada@example.com")]
    email: String,
    #[schema(example = "Ada Lovelace")]
    full_name: String,
    #[schema(example = json!(["admin"]))]
    roles: Vec<String>,
    #[schema(format = DateTime, example = "2026-11-24T09:30:00.417Z")]
    joined_at: String,
}

impl From<Member> for MemberView {
    fn from(m: Member) -> Self {
        MemberView {
            user_id: m.user_id,
            email: m.email,
            full_name: m.full_name,
            roles: m.roles,
            joined_at: rfc3339(m.joined_at),
        }
    }
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = OrgMemberPage)]
pub(crate) struct MemberPageView {
    pub items: Vec<MemberView>,
    /// Give it as `cursor` for the next page; `null` on the last page.
    pub next_cursor: Option<String>,
}

/// The page's size and cursor, checked.
pub(crate) fn page(
    query: Result<Query<PageQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<(u32, Option<String>)> {
    let Query(query) = query.map_err(|_| Error::field("query", "is not a valid query string"))?;
    let mut v = Validator::new();
    let limit = page_limit(&mut v, query.limit.as_deref(), DEFAULT_LIMIT, MAX_LIMIT);
    Ok((v.finish(limit)?, query.cursor))
}

error_responses!(ListErrors:
    [Error::field("cursor", "is not a cursor this service issued")],
    bearer_errors(),
    [Error::NotFound],
    server_errors(),
);

/// An organisation's members by user id, a page at a time (any member).
#[utoipa::path(get, path = "/{id}/members", tag = "orgs", security(("bearer" = [])),
    params(("id" = Uuid, Path, description = "The organisation's id"), PageQuery),
    responses((status = 200, description = "A page of members", body = Envelope<MemberPageView>), ListErrors))]
async fn list(
    State(state): State<AppState>,
    AuthUser(who): AuthUser,
    PathId(org): PathId,
    query: Result<Query<PageQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Answer<MemberPageView>> {
    let (limit, cursor) = page(query)?;
    let page = state
        .auth
        .orgs
        .members(&who, org, limit, cursor.as_deref())
        .await?;
    Ok(ok(MemberPageView {
        items: page.items.into_iter().map(MemberView::from).collect(),
        next_cursor: page.next_cursor,
    }))
}

#[derive(Deserialize, ToSchema)]
struct RolesChange {
    /// At least one: `owner`, `admin`, `member`, or any name of §6's form.
    #[schema(example = json!(["admin"]))]
    roles: Vec<String>,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct MemberRoles {
    user_id: Uuid,
    #[schema(example = json!(["admin"]))]
    roles: Vec<String>,
}

error_responses!(UpdateErrors:
    body_errors(),
    bearer_errors(),
    [Error::Forbidden, Error::NotFound, Error::Conflict(Conflict::LastOwner)],
    server_errors(),
);

/// Replace a member's roles (owner or admin; only an owner gives or takes `owner`). The last
/// owner cannot lose `owner`: 409. Seen by forward-auth and rules on every instance within 2 s.
#[utoipa::path(patch, path = "/{id}/members/{userId}", tag = "orgs", security(("bearer" = [])),
    request_body = RolesChange,
    params(("id" = Uuid, Path, description = "The organisation's id"),
        ("userId" = Uuid, Path, description = "The member's account id")),
    responses((status = 200, description = "The member's roles", body = Envelope<MemberRoles>), UpdateErrors))]
async fn update(
    State(state): State<AppState>,
    AuthUser(who): AuthUser,
    Caller(client): Caller,
    PathIds(org, user): PathIds,
    AppJson(body): AppJson<RolesChange>,
) -> Result<Answer<MemberRoles>> {
    let roles = state
        .auth
        .orgs
        .set_roles(&who, org, user, &body.roles, &client)
        .await?;
    Ok(ok(MemberRoles {
        user_id: user,
        roles,
    }))
}

error_responses!(RemoveErrors:
    bearer_errors(),
    [Error::Forbidden, Error::NotFound, Error::Conflict(Conflict::LastOwner)],
    server_errors(),
);

/// Remove a member (owner or admin; an owner to remove an owner), or leave (one's own id). The
/// last owner cannot leave: 409. Their tokens naming the organisation are refused on every
/// instance within 2 s.
#[utoipa::path(delete, path = "/{id}/members/{userId}", tag = "orgs", security(("bearer" = [])),
    params(("id" = Uuid, Path, description = "The organisation's id"),
        ("userId" = Uuid, Path, description = "The member's account id")),
    responses((status = 200, description = "Removed: the member's id", body = Envelope<Deleted>), RemoveErrors))]
async fn remove(
    State(state): State<AppState>,
    AuthUser(who): AuthUser,
    Caller(client): Caller,
    PathIds(org, user): PathIds,
) -> Result<Answer<Deleted>> {
    state
        .auth
        .orgs
        .remove_member(&who, org, user, &client)
        .await?;
    Ok(ok(Deleted { id: user }))
}
