//! Getting tokens: login, the second factor, refresh, and self-registration.

use axum::extract::State;
use axum::http::StatusCode;
use secrecy::SecretString;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::non_empty;
use super::views::{TokenSetView, UserView};
use crate::auth::LoginOutcome;
use crate::domain::{Email, FullName};
use crate::error::{Error, PasswordProblem, Result, Validator};
use crate::http::docs::{body_errors, error_responses, server_errors, throttle_errors};
use crate::http::extract::{AppJson, Caller};
use crate::http::fields;
use crate::http::{Answer, AppState, Envelope, ok};
use crate::model::UserSummary;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub(super) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(login))
        .routes(routes!(verify_second_factor))
        .routes(routes!(refresh))
        .routes(routes!(register))
}

// Request bodies default missing fields to empty, so that the handler's validation names every
// missing field at once (`details.fields`), rather than the deserializer stopping at the first.
// The schemas still mark them required.

#[derive(Deserialize, Default, ToSchema)]
#[serde(default)]
struct LoginRequest {
    #[schema(required = true, format = Email, max_length = 254, example = "ada@example.com")]
    email: String,
    #[schema(
        required = true,
        min_length = 1,
        example = "correct horse battery staple"
    )]
    password: String,
}

/// What a login answers: the token set, or a challenge when the account has 2FA.
#[derive(Serialize, ToSchema)]
#[serde(untagged)]
pub(super) enum LoginAnswer {
    Tokens(TokenSetView),
    Challenge(Challenge),
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct Challenge {
    /// Always `true`.
    requires_two_factor: bool,
    /// Give it to `POST /auth/2fa/verify` with a code, within the challenge's lifetime (5
    /// minutes by default). Opaque.
    temp_token: String,
}

error_responses!(LoginErrors:
    body_errors(),
    [
        Error::InvalidCredentials,
        Error::AccountDisabled,
        Error::EmailNotVerified,
        Error::SsoRequired { provider: "acme-sso".into() },
    ],
    throttle_errors(),
    server_errors(),
    [Error::Overloaded { retry_after: 1 }],
);

/// Log in with e-mail and password.
///
/// Answers the token set, or, for an account with two-factor authentication, a challenge to
/// complete with `POST /auth/2fa/verify`. An unknown e-mail and a wrong password get the same
/// answer in the same time. An address under an identity provider's `domains` is 403
/// `SSO_REQUIRED` (`details.provider`: where it signs in), after the same work.
#[utoipa::path(post, path = "/login", tag = "auth", request_body = LoginRequest,
    responses(
        (status = 200, description = "The token set, or a 2FA challenge", body = Envelope<LoginAnswer>),
        LoginErrors,
    ))]
async fn login(
    State(state): State<AppState>,
    Caller(client): Caller,
    AppJson(body): AppJson<LoginRequest>,
) -> Result<Answer<LoginAnswer>> {
    let mut v = Validator::new();
    let email = v.check("email", Email::parse(&body.email));
    let password = v.check("password", non_empty(body.password));
    let (email, password) = v.finish(email.zip(password))?;
    let outcome = state
        .auth
        .login
        .login(&email, SecretString::from(password), &client)
        .await?;
    Ok(ok(outcome.into()))
}

impl From<LoginOutcome> for LoginAnswer {
    fn from(outcome: LoginOutcome) -> Self {
        match outcome {
            LoginOutcome::Tokens(tokens) => LoginAnswer::Tokens(tokens.into()),
            LoginOutcome::Challenge { temp_token } => LoginAnswer::Challenge(Challenge {
                requires_two_factor: true,
                temp_token,
            }),
        }
    }
}

#[derive(Deserialize, Default, ToSchema)]
#[serde(rename_all = "camelCase", default)]
struct VerifyRequest {
    /// From the login's challenge.
    #[schema(required = true, min_length = 1)]
    temp_token: String,
    /// A 6-digit TOTP code, or an unused recovery code (any case, dash optional).
    #[schema(required = true, pattern = "\\S", example = "492039")]
    code: String,
}

error_responses!(VerifyErrors:
    body_errors(),
    [
        Error::Invalid2faCode { attempts_remaining: 4 },
        Error::TempTokenInvalid,
        Error::AccountDisabled,
    ],
    throttle_errors(),
    server_errors(),
);

/// Complete a two-factor login.
///
/// A challenge allows 5 wrong codes; the fifth answers `attemptsRemaining: 0`, after which the
/// challenge is void. A TOTP code is accepted once per account.
#[utoipa::path(post, path = "/2fa/verify", tag = "auth", request_body = VerifyRequest,
    responses((status = 200, description = "The token set", body = Envelope<TokenSetView>), VerifyErrors))]
async fn verify_second_factor(
    State(state): State<AppState>,
    Caller(client): Caller,
    AppJson(body): AppJson<VerifyRequest>,
) -> Result<Answer<TokenSetView>> {
    let mut v = Validator::new();
    let temp_token = v.check("tempToken", non_empty(body.temp_token));
    let code = v.check("code", non_empty(body.code.trim().to_owned()));
    let (temp_token, code) = v.finish(temp_token.zip(code))?;
    let tokens = state
        .auth
        .login
        .verify_second_factor(&temp_token, &code, &client)
        .await?;
    Ok(ok(tokens.into()))
}

#[derive(Deserialize, Default, ToSchema)]
#[serde(rename_all = "camelCase", default)]
struct RefreshRequest {
    #[schema(required = true, min_length = 1)]
    refresh_token: String,
}

error_responses!(RefreshErrors:
    body_errors(),
    [Error::RefreshTokenInvalid, Error::EmailNotVerified],
    server_errors(),
);

/// Exchange a refresh token for a new token set.
///
/// The presented refresh token is used up. Presented again within the reuse grace window (10 s by
/// default: two tabs racing), it gets the session's current tokens; later, it counts as stolen
/// and ends the session.
#[utoipa::path(post, path = "/refresh", tag = "auth", request_body = RefreshRequest,
    responses((status = 200, description = "A new token set", body = Envelope<TokenSetView>), RefreshErrors))]
async fn refresh(
    State(state): State<AppState>,
    Caller(client): Caller,
    AppJson(body): AppJson<RefreshRequest>,
) -> Result<Answer<TokenSetView>> {
    let mut v = Validator::new();
    let token = v.check("refreshToken", non_empty(body.refresh_token));
    let token = v.finish(token)?;
    Ok(ok(state
        .auth
        .sessions
        .refresh(&token, &client)
        .await?
        .into()))
}

#[derive(Deserialize, Default, ToSchema)]
#[serde(rename_all = "camelCase", default)]
struct RegisterRequest {
    #[schema(required = true, format = Email, max_length = 254, example = "ada@example.com")]
    email: String,
    /// 8 to 256 characters, not a common breached password.
    #[schema(
        required = true,
        min_length = 8,
        max_length = 256,
        example = "correct horse battery staple"
    )]
    password: String,
    #[schema(required = true, schema_with = fields::account_name)]
    full_name: String,
}

#[derive(Serialize, ToSchema)]
struct Registered {
    user: UserView,
}

error_responses!(RegisterErrors:
    body_errors(),
    [
        Error::WeakPassword(PasswordProblem::Common),
        Error::RegistrationClosed,
        Error::EmailTaken,
        Error::SsoRequired { provider: "acme-sso".into() },
    ],
    throttle_errors(),
    server_errors(),
    [Error::Overloaded { retry_after: 1 }],
);

/// Create an account (only where the operator opened registration).
#[utoipa::path(post, path = "/register", tag = "auth", request_body = RegisterRequest,
    responses((status = 201, description = "The new account", body = Envelope<Registered>), RegisterErrors))]
async fn register(
    State(state): State<AppState>,
    Caller(client): Caller,
    AppJson(body): AppJson<RegisterRequest>,
) -> Result<(StatusCode, Answer<Registered>)> {
    let mut v = Validator::new();
    let email = v.check("email", Email::parse(&body.email));
    let name = v.check("fullName", FullName::parse(&body.full_name));
    let password = v.check("password", non_empty(body.password));
    let (email, (name, password)) = v.finish(email.zip(name.zip(password)))?;
    let user = state
        .auth
        .accounts
        .register(&email, &name, SecretString::from(password), &client)
        .await?;
    let user = UserView::from(UserSummary::from(&user));
    Ok((StatusCode::CREATED, ok(Registered { user })))
}
