//! The calls of the mailed links and the address (docs/api.md §7): forgotten password and reset,
//! verification and its resend, address change, invitations.

use axum::extract::State;
use axum::http::StatusCode;
use secrecy::SecretString;
use serde::Deserialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::views::{Done, TokenSetView};
use super::{non_empty, password_or_window};
use crate::domain::Email;
use crate::error::{Error, PasswordProblem, Result, Validator};
use crate::http::docs::{
    bearer_errors, body_errors, error_responses, server_errors, throttle_errors,
};
use crate::http::extract::{AppJson, AuthUser, Caller};
use crate::http::{Answer, AppState, Envelope, ok};

pub(super) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(forgot_password))
        .routes(routes!(reset_password))
        .routes(routes!(check_reset_link))
        .routes(routes!(verify_email))
        .routes(routes!(check_verify_link))
        .routes(routes!(resend_verification))
        .routes(routes!(change_email))
        .routes(routes!(accept_invitation))
}

#[derive(Deserialize, Default, ToSchema)]
#[serde(default)]
struct ForgotRequest {
    #[schema(required = true, format = Email, max_length = 254, example = "ada@example.com")]
    email: String,
}

error_responses!(ForgotErrors: body_errors(), server_errors());

/// Ask for a password-reset link.
///
/// Answers 202 at once whatever the address: a link is mailed only to an existing, enabled
/// account, at most a few an hour, and older links of the account stop working.
#[utoipa::path(post, path = "/password/forgot", tag = "auth", request_body = ForgotRequest,
    responses((status = 202, description = "Accepted", body = Envelope<Done>), ForgotErrors))]
async fn forgot_password(
    State(state): State<AppState>,
    Caller(client): Caller,
    AppJson(body): AppJson<ForgotRequest>,
) -> Result<(StatusCode, Answer<Done>)> {
    let mut v = Validator::new();
    let email = v.check("email", Email::parse(&body.email));
    let email = v.finish(email)?;
    state.auth.recovery.forgot_password(&email, &client);
    Ok((StatusCode::ACCEPTED, ok(Done {})))
}

#[derive(Deserialize, Default, ToSchema)]
#[serde(rename_all = "camelCase", default)]
struct ResetRequest {
    /// The `token` of the link's query.
    #[schema(required = true, min_length = 1)]
    token: String,
    /// 8 to 256 characters, not a common breached password.
    #[schema(required = true, min_length = 8, max_length = 256)]
    new_password: String,
}

error_responses!(ResetErrors:
    body_errors(),
    [Error::LinkInvalid, Error::WeakPassword(PasswordProblem::Common)],
    server_errors(),
    [Error::Overloaded { retry_after: 1 }],
);

/// Set a new password with a reset link's token; every session of the account ends.
#[utoipa::path(post, path = "/password/reset", tag = "auth", request_body = ResetRequest,
    responses((status = 200, description = "Reset", body = Envelope<Done>), ResetErrors))]
async fn reset_password(
    State(state): State<AppState>,
    Caller(client): Caller,
    AppJson(body): AppJson<ResetRequest>,
) -> Result<Answer<Done>> {
    let mut v = Validator::new();
    let token = v.check("token", non_empty(body.token));
    let password = v.check("newPassword", non_empty(body.new_password));
    let (token, password) = v.finish(token.zip(password))?;
    state
        .auth
        .recovery
        .reset_password(&token, SecretString::from(password), &client)
        .await?;
    Ok(ok(Done {}))
}

#[derive(Deserialize, Default, ToSchema)]
#[serde(default)]
struct TokenRequest {
    /// The `token` of the link's query.
    #[schema(required = true, min_length = 1)]
    token: String,
}

error_responses!(VerifyErrors:
    body_errors(),
    [Error::LinkInvalid, Error::EmailTaken],
    server_errors(),
);

/// Confirm an address with a verification link's token (for an address change: make the change).
#[utoipa::path(post, path = "/email/verify", tag = "auth", request_body = TokenRequest,
    responses((status = 200, description = "Verified", body = Envelope<Done>), VerifyErrors))]
async fn verify_email(
    State(state): State<AppState>,
    Caller(client): Caller,
    AppJson(body): AppJson<TokenRequest>,
) -> Result<Answer<Done>> {
    let token = link_token(body)?;
    state.auth.addresses.verify_email(&token, &client).await?;
    Ok(ok(Done {}))
}

/// The account a link is for.
#[derive(serde::Serialize, ToSchema)]
struct LinkView {
    #[schema(example = "ada@example.com")]
    email: String,
}

error_responses!(CheckErrors: body_errors(), [Error::LinkInvalid], server_errors());

/// Check a reset link before asking for a new password: the account's address, or
/// `LINK_INVALID` for a link that is used, replaced or expired. Uses nothing up.
#[utoipa::path(post, path = "/password/reset/check", tag = "auth", request_body = TokenRequest,
    responses((status = 200, description = "Live", body = Envelope<LinkView>), CheckErrors))]
async fn check_reset_link(
    State(state): State<AppState>,
    AppJson(body): AppJson<TokenRequest>,
) -> Result<Answer<LinkView>> {
    let token = link_token(body)?;
    let email = state.auth.recovery.reset_link_address(&token).await?;
    Ok(ok(LinkView { email }))
}

/// Check a verification link before confirming it: the address it confirms, or
/// `LINK_INVALID`. Uses nothing up.
#[utoipa::path(post, path = "/email/verify/check", tag = "auth", request_body = TokenRequest,
    responses((status = 200, description = "Live", body = Envelope<LinkView>), CheckErrors))]
async fn check_verify_link(
    State(state): State<AppState>,
    AppJson(body): AppJson<TokenRequest>,
) -> Result<Answer<LinkView>> {
    let token = link_token(body)?;
    let email = state.auth.addresses.verify_link_address(&token).await?;
    Ok(ok(LinkView { email }))
}

fn link_token(body: TokenRequest) -> Result<String> {
    let mut v = Validator::new();
    let token = v.check("token", non_empty(body.token));
    v.finish(token)
}

error_responses!(ResendErrors: bearer_errors(), server_errors());

/// Mail the caller a new verification link (nothing if the address is verified already).
#[utoipa::path(post, path = "/email/verify/resend", tag = "auth", security(("bearer" = [])),
    responses((status = 202, description = "Accepted", body = Envelope<Done>), ResendErrors))]
async fn resend_verification(
    State(state): State<AppState>,
    AuthUser(who): AuthUser,
    Caller(client): Caller,
) -> Result<(StatusCode, Answer<Done>)> {
    state
        .auth
        .addresses
        .resend_verification(&who, &client)
        .await?;
    Ok((StatusCode::ACCEPTED, ok(Done {})))
}

#[derive(Deserialize, Default, ToSchema)]
#[serde(rename_all = "camelCase", default)]
struct ChangeEmailRequest {
    #[schema(required = true, format = Email, max_length = 254, example = "ada@example.org")]
    new_email: String,
    /// The account's password. Not needed while this session is re-authenticated (`POST /auth/reauthenticate`).
    password: String,
}

error_responses!(ChangeEmailErrors:
    body_errors(),
    [Error::PasswordRecheckFailed],
    bearer_errors(),
    throttle_errors(),
    server_errors(),
    [Error::Overloaded { retry_after: 1 }],
);

/// Change the caller's address: a link goes to the new address; the change happens when it is
/// posted to `/auth/email/verify`, and the old address is told.
///
/// 202 whatever the address: one that another account has gets a mail saying someone tried to
/// use it, not the link, and the answer says nothing of it. At most 5 requests an hour per
/// account (then 429).
#[utoipa::path(post, path = "/email", tag = "auth", request_body = ChangeEmailRequest,
    security(("bearer" = [])),
    responses((status = 202, description = "Accepted", body = Envelope<Done>), ChangeEmailErrors))]
async fn change_email(
    State(state): State<AppState>,
    AuthUser(who): AuthUser,
    Caller(client): Caller,
    AppJson(body): AppJson<ChangeEmailRequest>,
) -> Result<(StatusCode, Answer<Done>)> {
    let mut v = Validator::new();
    let email = v.check("newEmail", Email::parse(&body.new_email));
    let email = v.finish(email)?;
    let password = password_or_window(body.password);
    state
        .auth
        .addresses
        .change_email(&who, &email, password, &client)
        .await?;
    Ok((StatusCode::ACCEPTED, ok(Done {})))
}

#[derive(Deserialize, Default, ToSchema)]
#[serde(default)]
struct AcceptRequest {
    /// The `token` of the invitation link's query.
    #[schema(required = true, min_length = 1)]
    token: String,
    /// 8 to 256 characters, not a common breached password.
    #[schema(required = true, min_length = 8, max_length = 256)]
    password: String,
    /// The new account's name, for an organisation's invitation (docs/api.md §13); the
    /// address's local part when left out. An operator's invitation has its name already.
    #[serde(rename = "fullName")]
    #[schema(max_length = 200)]
    full_name: Option<String>,
}

error_responses!(AcceptErrors:
    body_errors(),
    [Error::LinkInvalid, Error::WeakPassword(PasswordProblem::Common), Error::AccountDisabled,
     Error::EmailTaken],
    server_errors(),
    [Error::Overloaded { retry_after: 1 }],
);

/// Accept an invitation: choose the account's password, and get its first token set.
///
/// An operator's invitation (§7) sets the password of the account made for you. An organisation's
/// invitation (§13) to an address without an account makes the account (named `fullName`) and
/// its membership; for an address that has an account, `EMAIL_TAKEN`: sign in and accept with
/// `POST /api/v1/orgs/invitations/accept`.
#[utoipa::path(post, path = "/invitations/accept", tag = "auth", request_body = AcceptRequest,
    responses((status = 200, description = "The token set", body = Envelope<TokenSetView>), AcceptErrors))]
async fn accept_invitation(
    State(state): State<AppState>,
    Caller(client): Caller,
    AppJson(body): AppJson<AcceptRequest>,
) -> Result<Answer<TokenSetView>> {
    let mut v = Validator::new();
    let token = v.check("token", non_empty(body.token));
    let password = v.check("password", non_empty(body.password));
    let (token, password) = v.finish(token.zip(password))?;
    let tokens = state
        .auth
        .orgs
        .accept_invitation_link(
            &token,
            SecretString::from(password),
            body.full_name.as_deref(),
            &client,
        )
        .await?;
    Ok(ok(tokens.into()))
}
