//! `/admin/orgs…` (docs/api.md §13): every organisation, one, its members, and deleting it.

use axum::extract::{Query, State};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::users::gate_errors;
use super::{Admin, limit};
use crate::error::{Error, Result, Validator};
use crate::http::auth::views::Deleted;
use crate::http::docs::error_responses;
use crate::http::extract::PathId;
use crate::http::orgs::OrgView;
use crate::http::orgs::members::{MemberPageView, MemberView, PageQuery, page};
use crate::http::{Answer, AppState, Envelope, ok};

pub(super) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list))
        .routes(routes!(one, delete))
        .routes(routes!(members))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct ListQuery {
    /// Case-insensitive literal substring of the name or the slug; at most 200 characters, no
    /// control characters; empty for every organisation.
    #[param(
        max_length = 200,
        pattern = r"^[^\u0000-\u001f\u007f-\u009f]*$",
        example = "acme"
    )]
    q: Option<String>,
    /// Page size, 1 to 200 (default 50).
    #[param(value_type = Option<u32>, minimum = 1, maximum = 200, example = 50)]
    limit: Option<String>,
    /// `nextCursor` of the previous page; empty for the first. Opaque: one the service did not
    /// issue is 400.
    cursor: Option<String>,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct OrgPage {
    items: Vec<OrgView>,
    /// Give it as `cursor` for the next page; `null` on the last page.
    next_cursor: Option<String>,
}

error_responses!(ListErrors:
    [Error::field("cursor", "is not a cursor this service issued")],
    gate_errors(),
);

/// Every organisation, by id, a page at a time.
#[utoipa::path(get, path = "/orgs", tag = "admin", security(("bearer" = [])), params(ListQuery),
    responses((status = 200, description = "A page of organisations", body = Envelope<OrgPage>), ListErrors))]
async fn list(
    State(state): State<AppState>,
    admin: Admin,
    query: Result<Query<ListQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Answer<OrgPage>> {
    let Query(query) = query.map_err(|_| Error::field("query", "is not a valid query string"))?;
    let mut v = Validator::new();
    let limit = limit(&mut v, query.limit.as_deref());
    let limit = v.finish(limit)?;
    let page = state
        .auth
        .admin
        .list_orgs(
            admin.op(),
            query.q.as_deref(),
            limit,
            query.cursor.as_deref(),
        )
        .await?;
    Ok(ok(OrgPage {
        items: page.items.into_iter().map(OrgView::from).collect(),
        next_cursor: page.next_cursor,
    }))
}

error_responses!(OneErrors: [Error::NotFound], gate_errors());

/// One organisation.
#[utoipa::path(get, path = "/orgs/{id}", tag = "admin", security(("bearer" = [])),
    params(("id" = Uuid, Path, description = "The organisation's id")),
    responses((status = 200, description = "The organisation", body = Envelope<OrgView>), OneErrors))]
async fn one(
    State(state): State<AppState>,
    admin: Admin,
    PathId(id): PathId,
) -> Result<Answer<OrgView>> {
    Ok(ok(state.auth.admin.org(admin.op(), id).await?.into()))
}

/// Delete an organisation: its memberships, invitations and shared contacts end; tokens naming it
/// are refused on every instance within 2 s.
#[utoipa::path(delete, path = "/orgs/{id}", tag = "admin", security(("bearer" = [])),
    params(("id" = Uuid, Path, description = "The organisation's id")),
    responses((status = 200, description = "Deleted", body = Envelope<Deleted>), OneErrors))]
async fn delete(
    State(state): State<AppState>,
    admin: Admin,
    PathId(id): PathId,
) -> Result<Answer<Deleted>> {
    state.auth.admin.delete_org(admin.op(), id).await?;
    Ok(ok(Deleted { id }))
}

error_responses!(MembersErrors:
    [Error::field("cursor", "is not a cursor this service issued"), Error::NotFound],
    gate_errors(),
);

/// An organisation's members, by user id, a page at a time.
#[utoipa::path(get, path = "/orgs/{id}/members", tag = "admin", security(("bearer" = [])),
    params(("id" = Uuid, Path, description = "The organisation's id"), PageQuery),
    responses((status = 200, description = "A page of members", body = Envelope<MemberPageView>), MembersErrors))]
async fn members(
    State(state): State<AppState>,
    admin: Admin,
    PathId(id): PathId,
    query: Result<Query<PageQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Answer<MemberPageView>> {
    let (limit, cursor) = page(query)?;
    let page = state
        .auth
        .admin
        .org_members(admin.op(), id, limit, cursor.as_deref())
        .await?;
    Ok(ok(MemberPageView {
        items: page.items.into_iter().map(MemberView::from).collect(),
        next_cursor: page.next_cursor,
    }))
}
