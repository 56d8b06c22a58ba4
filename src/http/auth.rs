//! `/api/v1/auth/…`: login, second factor, refresh, the caller's account and 2FA enrolment.

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::{delete, get, post};
use secrecy::SecretString;
use serde::Deserialize;
use serde_json::json;

use super::extract::{AppJson, AuthUser, Client, MaybeJson, PathId};
use super::{AppState, ok};
use crate::auth::service::{LoginOutcome, LogoutScope, UserView};
use crate::domain::{Email, FullName};
use crate::error::{Error, Result, Validator};

// Request bodies default missing fields to empty, so that the handler's validation names every
// missing field at once (`details.fields`), rather than the deserializer stopping at the first.

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/login", post(login))
        .route("/2fa/verify", post(verify_second_factor))
        .route("/refresh", post(refresh))
        .route("/register", post(register))
        .route("/logout", post(logout))
        .route("/me", get(me))
        .route("/2fa/setup", post(setup_two_factor))
        .route("/2fa/enable", post(enable_two_factor))
        .route("/2fa/disable", post(disable_two_factor))
        .route("/2fa/recovery-codes", post(new_recovery_codes))
        .route("/sessions", get(sessions))
        .route("/sessions/{id}", delete(delete_session))
        .route("/password", post(change_password))
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct LoginRequest {
    email: String,
    password: String,
}

async fn login(
    State(state): State<AppState>,
    Client(client): Client,
    AppJson(body): AppJson<LoginRequest>,
) -> Result<impl IntoResponse> {
    let mut v = Validator::new();
    let email = v.check("email", Email::parse(&body.email));
    let password = v.check("password", non_empty(body.password));
    let (email, password) = v.finish(email.zip(password))?;
    let response = match state
        .auth
        .login(&email, SecretString::from(password), &client)
        .await?
    {
        LoginOutcome::Tokens(tokens) => ok(serde_json::to_value(tokens).map_err(Error::internal)?),
        LoginOutcome::Challenge { temp_token } => {
            ok(json!({ "requiresTwoFactor": true, "tempToken": temp_token }))
        }
    };
    Ok(response)
}

fn non_empty(value: String) -> Result<String, String> {
    if value.is_empty() {
        Err("is required".into())
    } else {
        Ok(value)
    }
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct VerifyRequest {
    temp_token: String,
    code: String,
}

async fn verify_second_factor(
    State(state): State<AppState>,
    Client(client): Client,
    AppJson(body): AppJson<VerifyRequest>,
) -> Result<impl IntoResponse> {
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

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct RefreshRequest {
    refresh_token: String,
}

async fn refresh(
    State(state): State<AppState>,
    AppJson(body): AppJson<RefreshRequest>,
) -> Result<impl IntoResponse> {
    let mut v = Validator::new();
    let token = v.check("refreshToken", non_empty(body.refresh_token));
    let token = v.finish(token)?;
    Ok(ok(state.auth.refresh(&token).await?))
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct RegisterRequest {
    email: String,
    password: String,
    full_name: String,
}

async fn register(
    State(state): State<AppState>,
    AppJson(body): AppJson<RegisterRequest>,
) -> Result<impl IntoResponse> {
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
        .create_user(&email, &name, SecretString::from(password))
        .await?;
    Ok((
        StatusCode::CREATED,
        ok(json!({ "user": UserView::from(&user) })),
    ))
}

#[derive(Deserialize)]
struct LogoutRequest {
    scope: Option<String>,
}

async fn logout(
    State(state): State<AppState>,
    AuthUser(who): AuthUser,
    MaybeJson(body): MaybeJson<LogoutRequest>,
) -> Result<impl IntoResponse> {
    let scope = match body.and_then(|b| b.scope).as_deref() {
        None | Some("current") => LogoutScope::Current,
        Some("others") => LogoutScope::Others,
        Some("all") => LogoutScope::All,
        Some(_) => return Err(Error::field("scope", "must be current, others or all")),
    };
    let revoked = state.auth.logout(&who, scope).await?;
    Ok(ok(json!({ "revokedSessions": revoked })))
}

async fn me(State(state): State<AppState>, AuthUser(who): AuthUser) -> Result<impl IntoResponse> {
    Ok(ok(state.auth.me(&who).await?))
}

async fn setup_two_factor(
    State(state): State<AppState>,
    AuthUser(who): AuthUser,
) -> Result<impl IntoResponse> {
    Ok(ok(state.auth.setup_two_factor(&who).await?))
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct CodeRequest {
    code: String,
}

async fn enable_two_factor(
    State(state): State<AppState>,
    AuthUser(who): AuthUser,
    AppJson(body): AppJson<CodeRequest>,
) -> Result<impl IntoResponse> {
    let mut v = Validator::new();
    let code = v.check("code", non_empty(body.code.trim().to_owned()));
    let code = v.finish(code)?;
    let codes = state.auth.enable_two_factor(&who, &code).await?;
    Ok(ok(json!({ "recoveryCodes": codes })))
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct DisableRequest {
    password: String,
    code: String,
}

async fn disable_two_factor(
    State(state): State<AppState>,
    AuthUser(who): AuthUser,
    AppJson(body): AppJson<DisableRequest>,
) -> Result<impl IntoResponse> {
    let mut v = Validator::new();
    let password = v.check("password", non_empty(body.password));
    let code = v.check("code", non_empty(body.code.trim().to_owned()));
    let (password, code) = v.finish(password.zip(code))?;
    state
        .auth
        .disable_two_factor(&who, SecretString::from(password), &code)
        .await?;
    Ok(ok(json!({})))
}

async fn new_recovery_codes(
    State(state): State<AppState>,
    AuthUser(who): AuthUser,
    AppJson(body): AppJson<CodeRequest>,
) -> Result<impl IntoResponse> {
    let mut v = Validator::new();
    let code = v.check("code", non_empty(body.code.trim().to_owned()));
    let code = v.finish(code)?;
    let codes = state.auth.new_recovery_codes(&who, &code).await?;
    Ok(ok(json!({ "recoveryCodes": codes })))
}

async fn sessions(
    State(state): State<AppState>,
    AuthUser(who): AuthUser,
) -> Result<impl IntoResponse> {
    Ok(ok(json!({ "items": state.auth.sessions(&who).await? })))
}

async fn delete_session(
    State(state): State<AppState>,
    AuthUser(who): AuthUser,
    PathId(id): PathId,
) -> Result<impl IntoResponse> {
    state.auth.delete_session(&who, id).await?;
    Ok(ok(json!({ "id": id })))
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct PasswordRequest {
    current_password: String,
    new_password: String,
}

async fn change_password(
    State(state): State<AppState>,
    AuthUser(who): AuthUser,
    AppJson(body): AppJson<PasswordRequest>,
) -> Result<impl IntoResponse> {
    let mut v = Validator::new();
    let current = v.check("currentPassword", non_empty(body.current_password));
    let new = v.check("newPassword", non_empty(body.new_password));
    let (current, new) = v.finish(current.zip(new))?;
    state
        .auth
        .change_password(&who, SecretString::from(current), SecretString::from(new))
        .await?;
    Ok(ok(json!({})))
}
