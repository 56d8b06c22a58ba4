//! `/api/v1/orgs/{id}/invitations…` and `/api/v1/orgs/invitations/accept`: invitations by mail.

use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use super::OrgView;
use crate::clock::rfc3339;
use crate::error::{Error, Result};
use crate::http::auth::views::Deleted;
use crate::http::docs::{bearer_errors, body_errors, error_responses, server_errors};
use crate::http::extract::{AppJson, AuthUser, Caller, PathId, PathIds};
use crate::http::{Answer, AppState, Envelope, ok};
use crate::model::orgs::OrgInvitation;
use crate::orgs::InvitationInput;

pub(super) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list, invite))
        .routes(routes!(withdraw))
        .routes(routes!(accept))
}

/// A pending invitation.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = OrgInvitation)]
struct InvitationView {
    id: Uuid,
    #[schema(example = "grace@example.com")]
    email: String,
    #[schema(example = json!(["member"]))]
    roles: Vec<String>,
    #[schema(format = DateTime, example = "2026-12-01T09:30:00.417Z")]
    expires_at: String,
}

impl From<OrgInvitation> for InvitationView {
    fn from(i: OrgInvitation) -> Self {
        InvitationView {
            id: i.id,
            email: i.email,
            roles: i.roles,
            expires_at: rfc3339(i.expires_at),
        }
    }
}

#[derive(Serialize, ToSchema)]
struct InvitationList {
    items: Vec<InvitationView>,
}

#[derive(Deserialize, ToSchema)]
struct NewInvitation {
    #[schema(example = "grace@example.com")]
    email: String,
    /// At least one; `owner` only by an owner.
    #[schema(example = json!(["member"]))]
    roles: Vec<String>,
}

error_responses!(InviteErrors:
    body_errors(),
    bearer_errors(),
    [Error::Forbidden, Error::NotFound],
    server_errors(),
);

/// Invite someone by mail (owner or admin; `owner` only by an owner). The link, valid 7 days,
/// opens `/accept-invitation`, which serves an existing account and a new one alike.
#[utoipa::path(post, path = "/{id}/invitations", tag = "orgs", security(("bearer" = [])),
    request_body = NewInvitation,
    params(("id" = Uuid, Path, description = "The organisation's id")),
    responses((status = 201, description = "The invitation", body = Envelope<InvitationView>), InviteErrors))]
async fn invite(
    State(state): State<AppState>,
    AuthUser(who): AuthUser,
    Caller(client): Caller,
    PathId(org): PathId,
    AppJson(body): AppJson<NewInvitation>,
) -> Result<(StatusCode, Answer<InvitationView>)> {
    let input = InvitationInput {
        email: body.email,
        roles: body.roles,
    };
    let invitation = state.auth.orgs.invite(&who, org, input, &client).await?;
    Ok((StatusCode::CREATED, ok(invitation.into())))
}

error_responses!(ListErrors:
    bearer_errors(),
    [Error::Forbidden, Error::NotFound],
    server_errors(),
);

/// The pending invitations (owner or admin).
#[utoipa::path(get, path = "/{id}/invitations", tag = "orgs", security(("bearer" = [])),
    params(("id" = Uuid, Path, description = "The organisation's id")),
    responses((status = 200, description = "Pending invitations", body = Envelope<InvitationList>), ListErrors))]
async fn list(
    State(state): State<AppState>,
    AuthUser(who): AuthUser,
    PathId(org): PathId,
) -> Result<Answer<InvitationList>> {
    let items = state.auth.orgs.invitations(&who, org).await?;
    Ok(ok(InvitationList {
        items: items.into_iter().map(InvitationView::from).collect(),
    }))
}

/// Withdraw an invitation (owner or admin): its link answers `LINK_INVALID` from now on.
#[utoipa::path(delete, path = "/{id}/invitations/{invitationId}", tag = "orgs",
    security(("bearer" = [])),
    params(("id" = Uuid, Path, description = "The organisation's id"),
        ("invitationId" = Uuid, Path, description = "The invitation's id")),
    responses((status = 200, description = "Withdrawn", body = Envelope<Deleted>), ListErrors))]
async fn withdraw(
    State(state): State<AppState>,
    AuthUser(who): AuthUser,
    Caller(client): Caller,
    PathIds(org, invitation): PathIds,
) -> Result<Answer<Deleted>> {
    state
        .auth
        .orgs
        .withdraw(&who, org, invitation, &client)
        .await?;
    Ok(ok(Deleted { id: invitation }))
}

#[derive(Deserialize, ToSchema)]
struct AcceptRequest {
    /// The `token` of the invitation link's query.
    #[schema(min_length = 1)]
    token: String,
}

error_responses!(AcceptErrors:
    body_errors(),
    bearer_errors(),
    [Error::LinkInvalid, Error::Forbidden],
    server_errors(),
);

/// Accept an invitation signed in: the caller joins, if the invitation was sent to their
/// address (else 403 `FORBIDDEN`, and the invitation stays usable).
#[utoipa::path(post, path = "/invitations/accept", tag = "orgs", security(("bearer" = [])),
    request_body = AcceptRequest,
    responses((status = 200, description = "The organisation joined", body = Envelope<OrgView>), AcceptErrors))]
async fn accept(
    State(state): State<AppState>,
    AuthUser(who): AuthUser,
    Caller(client): Caller,
    AppJson(body): AppJson<AcceptRequest>,
) -> Result<Answer<OrgView>> {
    let org = state.auth.orgs.accept(&who, &body.token, &client).await?;
    Ok(ok(org.into()))
}
