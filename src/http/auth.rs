//! `/api/v1/auth/…`: login, second factor, refresh, the caller's account, sessions and 2FA.

use axum::extract::State;
use axum::http::StatusCode;
use secrecy::SecretString;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use super::docs::{bearer_errors, body_errors, error_responses, server_errors, throttle_errors};
use super::extract::{AppJson, AuthUser, Client, MaybeJson, PathId};
use super::{Answer, AppState, Envelope, ok};
use crate::auth::service::{
    LoginOutcome, LogoutScope, Me, SessionView, TokenSet, TwoFactorSetup, UserView,
};
use crate::domain::{Email, FullName};
use crate::error::{Error, Result, Validator};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(login))
        .routes(routes!(verify_second_factor))
        .routes(routes!(refresh))
        .routes(routes!(register))
        .routes(routes!(logout))
        .routes(routes!(me))
        .routes(routes!(sessions))
        .routes(routes!(delete_session))
        .routes(routes!(change_password))
        .routes(routes!(setup_two_factor))
        .routes(routes!(enable_two_factor))
        .routes(routes!(disable_two_factor))
        .routes(routes!(new_recovery_codes))
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
enum LoginAnswer {
    Tokens(TokenSet),
    Challenge(Challenge),
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct Challenge {
    /// Always `true`.
    requires_two_factor: bool,
    /// Give it to `POST /auth/2fa/verify` with a code, within 5 minutes. Opaque.
    temp_token: String,
}

error_responses!(LoginErrors:
    body_errors(),
    [Error::InvalidCredentials, Error::AccountDisabled],
    throttle_errors(),
    server_errors(),
    [Error::Overloaded { retry_after: 1 }],
);

/// Log in with e-mail and password.
///
/// Answers the token set, or, for an account with two-factor authentication, a challenge to
/// complete with `POST /auth/2fa/verify`. An unknown e-mail and a wrong password get the same
/// answer in the same time.
#[utoipa::path(post, path = "/login", tag = "auth", request_body = LoginRequest,
    responses(
        (status = 200, description = "The token set, or a 2FA challenge", body = Envelope<LoginAnswer>),
        LoginErrors,
    ))]
async fn login(
    State(state): State<AppState>,
    Client(client): Client,
    AppJson(body): AppJson<LoginRequest>,
) -> Result<Answer<LoginAnswer>> {
    let mut v = Validator::new();
    let email = v.check("email", Email::parse(&body.email));
    let password = v.check("password", non_empty(body.password));
    let (email, password) = v.finish(email.zip(password))?;
    let answer = match state
        .auth
        .login(&email, SecretString::from(password), &client)
        .await?
    {
        LoginOutcome::Tokens(tokens) => LoginAnswer::Tokens(tokens),
        LoginOutcome::Challenge { temp_token } => LoginAnswer::Challenge(Challenge {
            requires_two_factor: true,
            temp_token,
        }),
    };
    Ok(ok(answer))
}

fn non_empty(value: String) -> Result<String, String> {
    if value.is_empty() {
        Err("is required".into())
    } else {
        Ok(value)
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
    responses((status = 200, description = "The token set", body = Envelope<TokenSet>), VerifyErrors))]
async fn verify_second_factor(
    State(state): State<AppState>,
    Client(client): Client,
    AppJson(body): AppJson<VerifyRequest>,
) -> Result<Answer<TokenSet>> {
    let mut v = Validator::new();
    let temp_token = v.check("tempToken", non_empty(body.temp_token));
    let code = v.check("code", non_empty(body.code.trim().to_owned()));
    let (temp_token, code) = v.finish(temp_token.zip(code))?;
    let tokens = state
        .auth
        .verify_second_factor(&temp_token, &code, &client)
        .await?;
    Ok(ok(tokens))
}

#[derive(Deserialize, Default, ToSchema)]
#[serde(rename_all = "camelCase", default)]
struct RefreshRequest {
    #[schema(required = true, min_length = 1)]
    refresh_token: String,
}

error_responses!(RefreshErrors:
    body_errors(),
    [Error::RefreshTokenInvalid],
    server_errors(),
);

/// Exchange a refresh token for a new token set.
///
/// The presented refresh token is used up. Presented again within 10 s (two tabs racing), it gets
/// the session's current tokens; later, it counts as stolen and ends the session.
#[utoipa::path(post, path = "/refresh", tag = "auth", request_body = RefreshRequest,
    responses((status = 200, description = "A new token set", body = Envelope<TokenSet>), RefreshErrors))]
async fn refresh(
    State(state): State<AppState>,
    Client(client): Client,
    AppJson(body): AppJson<RefreshRequest>,
) -> Result<Answer<TokenSet>> {
    let mut v = Validator::new();
    let token = v.check("refreshToken", non_empty(body.refresh_token));
    let token = v.finish(token)?;
    Ok(ok(state.auth.refresh(&token, &client).await?))
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
    #[schema(
        required = true,
        min_length = 1,
        max_length = 200,
        pattern = r"^[^\u0000-\u001f\u007f]*[^\s\u0000-\u001f\u007f][^\u0000-\u001f\u007f]*$",
        example = "Ada Lovelace"
    )]
    full_name: String,
}

#[derive(Serialize, ToSchema)]
struct Registered {
    user: UserView,
}

error_responses!(RegisterErrors:
    body_errors(),
    [
        Error::WeakPassword("this password is too common".into()),
        Error::RegistrationClosed,
        Error::EmailTaken,
    ],
    server_errors(),
);

/// Create an account (only where the operator opened registration).
#[utoipa::path(post, path = "/register", tag = "auth", request_body = RegisterRequest,
    responses((status = 201, description = "The new account", body = Envelope<Registered>), RegisterErrors))]
async fn register(
    State(state): State<AppState>,
    Client(client): Client,
    AppJson(body): AppJson<RegisterRequest>,
) -> Result<(StatusCode, Answer<Registered>)> {
    if !state.registration_open {
        return Err(Error::RegistrationClosed);
    }
    let mut v = Validator::new();
    let email = v.check("email", Email::parse(&body.email));
    let name = v.check("fullName", FullName::parse(&body.full_name));
    let password = v.check("password", non_empty(body.password));
    let (email, (name, password)) = v.finish(email.zip(name.zip(password)))?;
    let user = state
        .auth
        .create_user(
            &email,
            &name,
            SecretString::from(password),
            "registration",
            Some(&client),
        )
        .await?;
    let user = UserView::from(&user);
    Ok((StatusCode::CREATED, ok(Registered { user })))
}

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
/// Their access tokens stop working at once on this instance and within a second on every other.
/// The body may be left out.
#[utoipa::path(post, path = "/logout", tag = "auth", request_body(content = Option<LogoutRequest>),
    security(("bearer" = [])),
    responses((status = 200, description = "Sessions ended", body = Envelope<RevokedSessions>), BearerBodyErrors))]
async fn logout(
    State(state): State<AppState>,
    AuthUser(who): AuthUser,
    Client(client): Client,
    MaybeJson(body): MaybeJson<LogoutRequest>,
) -> Result<Answer<RevokedSessions>> {
    let scope = match body.and_then(|b| b.scope).as_deref() {
        None | Some("current") => LogoutScope::Current,
        Some("others") => LogoutScope::Others,
        Some("all") => LogoutScope::All,
        Some(_) => return Err(Error::field("scope", "must be current, others or all")),
    };
    let revoked_sessions = state.auth.logout(&who, scope, &client).await?;
    Ok(ok(RevokedSessions { revoked_sessions }))
}

error_responses!(BearerErrors: bearer_errors(), server_errors());

/// The caller's account.
#[utoipa::path(get, path = "/me", tag = "auth", security(("bearer" = [])),
    responses((status = 200, description = "The account", body = Envelope<Me>), BearerErrors))]
async fn me(State(state): State<AppState>, AuthUser(who): AuthUser) -> Result<Answer<Me>> {
    Ok(ok(state.auth.me(&who).await?))
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
    let items = state.auth.sessions(&who).await?;
    Ok(ok(SessionList { items }))
}

/// The id of what was deleted.
#[derive(Serialize, ToSchema)]
pub struct Deleted {
    pub id: Uuid,
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
    Client(client): Client,
    PathId(id): PathId,
) -> Result<Answer<Deleted>> {
    state.auth.delete_session(&who, id, &client).await?;
    Ok(ok(Deleted { id }))
}

#[derive(Deserialize, Default, ToSchema)]
#[serde(rename_all = "camelCase", default)]
struct PasswordRequest {
    #[schema(required = true, min_length = 1)]
    current_password: String,
    /// 8 to 256 characters, not a common breached password.
    #[schema(required = true, min_length = 8, max_length = 256)]
    new_password: String,
}

/// `{}`: done, nothing to tell.
#[derive(Serialize, ToSchema)]
struct Done {}

error_responses!(PasswordErrors:
    body_errors(),
    [Error::WeakPassword("this password is too common".into()), Error::PasswordRecheckFailed],
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
    Client(client): Client,
    AppJson(body): AppJson<PasswordRequest>,
) -> Result<Answer<Done>> {
    let mut v = Validator::new();
    let current = v.check("currentPassword", non_empty(body.current_password));
    let new = v.check("newPassword", non_empty(body.new_password));
    let (current, new) = v.finish(current.zip(new))?;
    state
        .auth
        .change_password(
            &who,
            SecretString::from(current),
            SecretString::from(new),
            &client,
        )
        .await?;
    Ok(ok(Done {}))
}

error_responses!(SetupErrors:
    [Error::TwoFactorAlreadyEnabled],
    bearer_errors(),
    server_errors(),
);

/// Start enrolling in two-factor authentication.
///
/// Gives a new TOTP secret (also as an `otpauth://` URI and a QR code) that stays pending until
/// `POST /auth/2fa/enable` confirms a code from it. A second call replaces the pending secret.
#[utoipa::path(post, path = "/2fa/setup", tag = "auth", security(("bearer" = [])),
    responses((status = 200, description = "The pending secret", body = Envelope<TwoFactorSetup>), SetupErrors))]
async fn setup_two_factor(
    State(state): State<AppState>,
    AuthUser(who): AuthUser,
) -> Result<Answer<TwoFactorSetup>> {
    Ok(ok(state.auth.setup_two_factor(&who).await?))
}

#[derive(Deserialize, Default, ToSchema)]
#[serde(default)]
struct CodeRequest {
    #[schema(required = true, pattern = "\\S", example = "492039")]
    code: String,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct RecoveryCodes {
    /// Ten single-use codes, shown this once.
    #[schema(example = json!(["k7d2m-9xq4t", "…"]))]
    recovery_codes: Vec<String>,
}

error_responses!(EnableErrors:
    body_errors(),
    [Error::CodeRecheckFailed, Error::TwoFactorAlreadyEnabled, Error::TwoFactorNotSetUp],
    bearer_errors(),
    server_errors(),
);

/// Turn two-factor authentication on with a code from the pending secret.
#[utoipa::path(post, path = "/2fa/enable", tag = "auth", request_body = CodeRequest,
    security(("bearer" = [])),
    responses((status = 200, description = "2FA is on; the recovery codes", body = Envelope<RecoveryCodes>), EnableErrors))]
async fn enable_two_factor(
    State(state): State<AppState>,
    AuthUser(who): AuthUser,
    Client(client): Client,
    AppJson(body): AppJson<CodeRequest>,
) -> Result<Answer<RecoveryCodes>> {
    let code = code(body.code)?;
    let recovery_codes = state.auth.enable_two_factor(&who, &code, &client).await?;
    Ok(ok(RecoveryCodes { recovery_codes }))
}

fn code(raw: String) -> Result<String> {
    let mut v = Validator::new();
    let code = v.check("code", non_empty(raw.trim().to_owned()));
    v.finish(code)
}

#[derive(Deserialize, Default, ToSchema)]
#[serde(default)]
struct DisableRequest {
    #[schema(required = true, min_length = 1)]
    password: String,
    /// A TOTP code or an unused recovery code.
    #[schema(required = true, pattern = "\\S", example = "492039")]
    code: String,
}

error_responses!(DisableErrors:
    body_errors(),
    [Error::PasswordRecheckFailed, Error::CodeRecheckFailed, Error::TwoFactorNotEnabled],
    bearer_errors(),
    throttle_errors(),
    server_errors(),
    [Error::Overloaded { retry_after: 1 }],
);

/// Turn two-factor authentication off (password and a code required).
#[utoipa::path(post, path = "/2fa/disable", tag = "auth", request_body = DisableRequest,
    security(("bearer" = [])),
    responses((status = 200, description = "2FA is off", body = Envelope<Done>), DisableErrors))]
async fn disable_two_factor(
    State(state): State<AppState>,
    AuthUser(who): AuthUser,
    Client(client): Client,
    AppJson(body): AppJson<DisableRequest>,
) -> Result<Answer<Done>> {
    let mut v = Validator::new();
    let password = v.check("password", non_empty(body.password));
    let code = v.check("code", non_empty(body.code.trim().to_owned()));
    let (password, code) = v.finish(password.zip(code))?;
    state
        .auth
        .disable_two_factor(&who, SecretString::from(password), &code, &client)
        .await?;
    Ok(ok(Done {}))
}

error_responses!(RecoveryErrors:
    body_errors(),
    [Error::CodeRecheckFailed, Error::TwoFactorNotEnabled],
    bearer_errors(),
    throttle_errors(),
    server_errors(),
);

/// Replace the recovery codes (a TOTP or recovery code required); the old set is void.
#[utoipa::path(post, path = "/2fa/recovery-codes", tag = "auth", request_body = CodeRequest,
    security(("bearer" = [])),
    responses((status = 200, description = "The new recovery codes", body = Envelope<RecoveryCodes>), RecoveryErrors))]
async fn new_recovery_codes(
    State(state): State<AppState>,
    AuthUser(who): AuthUser,
    Client(client): Client,
    AppJson(body): AppJson<CodeRequest>,
) -> Result<Answer<RecoveryCodes>> {
    let code = code(body.code)?;
    let recovery_codes = state.auth.new_recovery_codes(&who, &code, &client).await?;
    Ok(ok(RecoveryCodes { recovery_codes }))
}
