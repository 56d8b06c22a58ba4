//! The caller's sessions: logout, the list, ending one.

use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use uuid::Uuid;

use super::views::{Deleted, SessionView, TokenSetView};
use crate::auth::LogoutScope;
use crate::error::{Error, Result};
use crate::http::cookies::clear_cookie;
use crate::http::docs::{bearer_errors, body_errors, error_responses, server_errors};
use crate::http::extract::{AppJson, AuthUser, Caller, MaybeJson, PathId};
use crate::http::{Answer, AppState, Envelope, ok};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub(super) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(logout))
        .routes(routes!(sessions))
        .routes(routes!(delete_session))
        .routes(routes!(switch_org))
}

error_responses!(BearerErrors: bearer_errors(), server_errors());

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
enum Scope {
    /// This session (the default).
    Current,
    /// Every other session of the account.
    Others,
    /// Every session of the account.
    All,
}

#[derive(Deserialize, ToSchema)]
struct LogoutRequest {
    #[schema(value_type = Option<Scope>)]
    scope: Option<String>,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct RevokedSessions {
    /// How many sessions ended.
    revoked_sessions: u64,
}

error_responses!(BearerBodyErrors: body_errors(), bearer_errors(), server_errors());

/// End this session, the others, or all of them.
///
/// Their access tokens and session cookies stop working at once on this instance and within a
/// second on every other. With `current` or `all`, the answer clears the session cookie
/// (`Set-Cookie` with `Max-Age=0`). The body may be left out.
#[utoipa::path(post, path = "/logout", tag = "auth", request_body(content = Option<LogoutRequest>),
    security(("bearer" = [])),
    responses((status = 200, description = "Sessions ended", body = Envelope<RevokedSessions>), BearerBodyErrors))]
async fn logout(
    State(state): State<AppState>,
    AuthUser(who): AuthUser,
    Caller(client): Caller,
    MaybeJson(body): MaybeJson<LogoutRequest>,
) -> Result<Response> {
    let scope = match body.and_then(|b| b.scope).as_deref() {
        None | Some("current") => LogoutScope::Current,
        Some("others") => LogoutScope::Others,
        Some("all") => LogoutScope::All,
        Some(_) => return Err(Error::field("scope", "must be current, others or all")),
    };
    let revoked_sessions = state.auth.sessions.logout(&who, scope, &client).await?;
    let answer = ok(RevokedSessions { revoked_sessions });
    if scope == LogoutScope::Others {
        return Ok(answer.into_response());
    }
    let clear = clear_cookie(&state.browser);
    Ok(([(header::SET_COOKIE, clear)], answer).into_response())
}

#[derive(Serialize, ToSchema)]
struct SessionList {
    items: Vec<SessionView>,
}

/// The caller's live sessions, the most recently used first.
#[utoipa::path(get, path = "/sessions", tag = "auth", security(("bearer" = [])),
    responses((status = 200, description = "The sessions", body = Envelope<SessionList>), BearerErrors))]
async fn sessions(
    State(state): State<AppState>,
    AuthUser(who): AuthUser,
) -> Result<Answer<SessionList>> {
    let items = state.auth.sessions.list(&who).await?;
    let items = items.into_iter().map(SessionView::from).collect();
    Ok(ok(SessionList { items }))
}

error_responses!(BearerNotFoundErrors: bearer_errors(), [Error::NotFound], server_errors());

/// End one of the caller's sessions (the current one included).
#[utoipa::path(delete, path = "/sessions/{id}", tag = "auth", security(("bearer" = [])),
    params(("id" = Uuid, Path, description = "A session id from `GET /auth/sessions`")),
    responses(
        (status = 200, description = "The session ended", body = Envelope<Deleted>),
        BearerNotFoundErrors,
    ))]
async fn delete_session(
    State(state): State<AppState>,
    AuthUser(who): AuthUser,
    Caller(client): Caller,
    PathId(id): PathId,
) -> Result<Answer<Deleted>> {
    state
        .auth
        .sessions
        .delete_session(&who, id, &client)
        .await?;
    Ok(ok(Deleted { id }))
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct OrgChoice {
    /// The organisation to work in; `null` (or left out) for none.
    #[schema(value_type = Option<Uuid>)]
    org_id: Option<String>,
}

error_responses!(SwitchErrors:
    body_errors(),
    bearer_errors(),
    [Error::NotFound, Error::TwoFactorRequired],
    server_errors(),
);

/// Choose the session's active organisation (docs/api.md §13), or leave it with `null`.
///
/// Answers a token set for the same session: its access token carries `org_id` and `org_roles`,
/// and the session's refresh token is rotated as a refresh does (the one held so far is used up).
/// Refresh keeps the organisation while the caller is its member. Not a member: 404; an
/// organisation requiring two-factor and a session signed in without one: 403.
#[utoipa::path(post, path = "/org", tag = "auth", request_body = OrgChoice, security(("bearer" = [])),
    responses((status = 200, description = "The token set", body = Envelope<TokenSetView>), SwitchErrors))]
async fn switch_org(
    State(state): State<AppState>,
    AuthUser(who): AuthUser,
    Caller(client): Caller,
    AppJson(body): AppJson<OrgChoice>,
) -> Result<Answer<TokenSetView>> {
    let org = match body.org_id.as_deref() {
        None => None,
        Some(id) => Some(
            Uuid::parse_str(id).map_err(|_| Error::field("orgId", "must be an organisation id"))?,
        ),
    };
    let tokens = state.auth.orgs.switch(&who, org, &client).await?;
    Ok(ok(tokens.into()))
}
