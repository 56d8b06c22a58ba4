//! Two-factor enrolment and upkeep: setup, enable, disable, new recovery codes.

use axum::extract::State;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::views::{Done, TwoFactorSetupView};
use super::{code, password_or_window};
use crate::error::{Error, Result};
use crate::http::docs::{
    bearer_errors, body_errors, error_responses, server_errors, throttle_errors,
};
use crate::http::extract::{AppJson, AuthUser, Caller};
use crate::http::{Answer, AppState, Envelope, ok};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub(super) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(setup_two_factor))
        .routes(routes!(enable_two_factor))
        .routes(routes!(disable_two_factor))
        .routes(routes!(new_recovery_codes))
}

#[derive(Deserialize, Default, ToSchema)]
#[serde(default)]
struct SetupRequest {
    /// The account's password: an access token alone must not enrol an authenticator. Not needed while this session is re-authenticated (`POST /auth/reauthenticate`).
    password: String,
}

error_responses!(SetupErrors:
    body_errors(),
    [Error::PasswordRecheckFailed, Error::TwoFactorAlreadyEnabled],
    bearer_errors(),
    throttle_errors(),
    server_errors(),
    [Error::Overloaded { retry_after: 1 }],
);

/// Start enrolling in two-factor authentication (the password required).
///
/// Gives a new TOTP secret (also as an `otpauth://` URI and a QR code) that stays pending until
/// `POST /auth/2fa/enable` confirms a code from it. A second call replaces the pending secret.
#[utoipa::path(post, path = "/2fa/setup", tag = "auth", request_body = SetupRequest,
    security(("bearer" = [])),
    responses((status = 200, description = "The pending secret", body = Envelope<TwoFactorSetupView>), SetupErrors))]
async fn setup_two_factor(
    State(state): State<AppState>,
    AuthUser(who): AuthUser,
    AppJson(body): AppJson<SetupRequest>,
) -> Result<Answer<TwoFactorSetupView>> {
    let password = password_or_window(body.password);
    let setup = state
        .auth
        .two_factor
        .setup_two_factor(&who, password)
        .await?;
    Ok(ok(setup.into()))
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
    Caller(client): Caller,
    AppJson(body): AppJson<CodeRequest>,
) -> Result<Answer<RecoveryCodes>> {
    let code = code(body.code)?;
    let recovery_codes = state
        .auth
        .two_factor
        .enable_two_factor(&who, &code, &client)
        .await?;
    Ok(ok(RecoveryCodes { recovery_codes }))
}

#[derive(Deserialize, Default, ToSchema)]
#[serde(default)]
struct DisableRequest {
    /// The account's password. Not needed while this session is re-authenticated (`POST /auth/reauthenticate`).
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
    Caller(client): Caller,
    AppJson(body): AppJson<DisableRequest>,
) -> Result<Answer<Done>> {
    let password = password_or_window(body.password);
    let code = code(body.code)?;
    state
        .auth
        .two_factor
        .disable_two_factor(&who, password, &code, &client)
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
    Caller(client): Caller,
    AppJson(body): AppJson<CodeRequest>,
) -> Result<Answer<RecoveryCodes>> {
    let code = code(body.code)?;
    let recovery_codes = state
        .auth
        .two_factor
        .new_recovery_codes(&who, &code, &client)
        .await?;
    Ok(ok(RecoveryCodes { recovery_codes }))
}
