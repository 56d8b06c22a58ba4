//! The caller's account: what it is, and its password.

use axum::extract::State;
use secrecy::SecretString;
use serde::Deserialize;
use utoipa::ToSchema;

use super::views::{Done, Me};
use super::{non_empty, password_or_window};
use crate::error::{Error, PasswordProblem, Result, Validator};
use crate::http::docs::{
    bearer_errors, body_errors, error_responses, server_errors, throttle_errors,
};
use crate::http::extract::{AppJson, AuthUser, Caller};
use crate::http::{Answer, AppState, Envelope, ok};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub(super) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(me, delete_me))
        .routes(routes!(change_password))
}

error_responses!(BearerErrors: bearer_errors(), server_errors());

/// The caller's account.
#[utoipa::path(get, path = "/me", tag = "auth", security(("bearer" = [])),
    responses((status = 200, description = "The account", body = Envelope<Me>), BearerErrors))]
async fn me(State(state): State<AppState>, AuthUser(who): AuthUser) -> Result<Answer<Me>> {
    Ok(ok(state.auth.accounts.account(&who).await?.into()))
}

#[derive(Deserialize, Default, ToSchema)]
#[serde(rename_all = "camelCase", default)]
struct PasswordRequest {
    /// The account's password. Not needed while this session is re-authenticated (`POST /auth/reauthenticate`).
    current_password: String,
    /// 8 to 256 characters, not a common breached password.
    #[schema(required = true, min_length = 8, max_length = 256)]
    new_password: String,
}

error_responses!(PasswordErrors:
    body_errors(),
    [Error::WeakPassword(PasswordProblem::Common), Error::PasswordRecheckFailed],
    bearer_errors(),
    throttle_errors(),
    server_errors(),
    [Error::Overloaded { retry_after: 1 }],
);

/// Change the caller's password; every other session ends.
#[utoipa::path(post, path = "/password", tag = "auth", request_body = PasswordRequest,
    security(("bearer" = [])),
    responses((status = 200, description = "Changed", body = Envelope<Done>), PasswordErrors))]
async fn change_password(
    State(state): State<AppState>,
    AuthUser(who): AuthUser,
    Caller(client): Caller,
    AppJson(body): AppJson<PasswordRequest>,
) -> Result<Answer<Done>> {
    let mut v = Validator::new();
    let current = password_or_window(body.current_password);
    let new = v.check("newPassword", non_empty(body.new_password));
    let new = v.finish(new)?;
    state
        .auth
        .accounts
        .change_password(&who, current, SecretString::from(new), &client)
        .await?;
    Ok(ok(Done {}))
}

#[derive(Deserialize, Default, ToSchema)]
#[serde(default)]
struct DeleteMeRequest {
    /// The account's password. Not needed while this session is re-authenticated (`POST /auth/reauthenticate`).
    password: String,
    /// A TOTP or recovery code; required when two-factor authentication is on.
    code: Option<String>,
}

error_responses!(DeleteMeErrors:
    body_errors(),
    [Error::PasswordRecheckFailed, Error::CodeRecheckFailed],
    bearer_errors(),
    throttle_errors(),
    server_errors(),
    [Error::Overloaded { retry_after: 1 }],
);

/// Delete the caller's account: its sessions, contacts and pending links go with it.
#[utoipa::path(delete, path = "/me", tag = "auth", request_body = DeleteMeRequest,
    security(("bearer" = [])),
    responses((status = 200, description = "Deleted", body = Envelope<Done>), DeleteMeErrors))]
async fn delete_me(
    State(state): State<AppState>,
    AuthUser(who): AuthUser,
    Caller(client): Caller,
    AppJson(body): AppJson<DeleteMeRequest>,
) -> Result<Answer<Done>> {
    let password = password_or_window(body.password);
    let code = body
        .code
        .map(|c| c.trim().to_owned())
        .filter(|c| !c.is_empty());
    state
        .auth
        .accounts
        .delete_account(&who, password, code.as_deref(), &client)
        .await?;
    Ok(ok(Done {}))
}
