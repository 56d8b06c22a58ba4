//! Re-authentication (docs/api.md §3): the caller proves again who they are, and for a few minutes
//! their session needs no password at the calls that re-check it.

use axum::extract::State;
use secrecy::SecretString;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::passkeys::{ceremony_id, credential};
use super::views::CeremonyView;
use crate::auth::passkeys::AssertionResponse;
use crate::auth::reauth::Proof;
use crate::clock::rfc3339;
use crate::error::{Error, Result, Validator};
use crate::http::docs::{
    bearer_errors, body_errors, error_responses, server_errors, throttle_errors,
};
use crate::http::extract::{AppJson, AuthUser, Caller};
use crate::http::{Answer, AppState, Envelope, ok};

pub(super) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(reauthenticate))
        .routes(routes!(start_passkey))
        .routes(routes!(finish_passkey))
}

#[derive(Deserialize, Default, ToSchema)]
#[serde(default)]
struct ReauthenticateRequest {
    /// The account's password; or, with 2FA on, `code` instead.
    password: String,
    /// With 2FA on: a 6-digit code of the authenticator app (recovery codes are not taken here).
    #[schema(example = "492039")]
    code: String,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct Reauthenticated {
    /// Until when this session needs no password at the calls that re-check it (5 minutes).
    #[schema(format = DateTime, example = "2026-11-21T09:35:00.417Z")]
    reauthenticated_until: String,
}

error_responses!(ReauthErrors:
    body_errors(),
    [Error::PasswordRecheckFailed, Error::CodeRecheckFailed, Error::TwoFactorNotEnabled],
    bearer_errors(),
    throttle_errors(),
    server_errors(),
    [Error::Overloaded { retry_after: 1 }],
);

/// Re-authenticate: the password (or, with 2FA on, a code from the authenticator app) again.
///
/// For 5 minutes afterwards, this session (and the tokens its refresh gives) may leave out the
/// password at `POST /auth/email`, `POST /auth/password`, `POST /auth/2fa/setup`,
/// `POST /auth/2fa/disable`, `POST /auth/passkeys/register/start` and `DELETE /auth/me`. Other
/// sessions of the account are not in the window, and signing in does not open it: it is there
/// to re-check the person at a computer that holds a live session. A wrong password or code is
/// throttled and audited like a wrong one at sign-in.
#[utoipa::path(post, path = "/reauthenticate", tag = "auth", request_body = ReauthenticateRequest,
    security(("bearer" = [])),
    responses((status = 200, description = "Re-authenticated", body = Envelope<Reauthenticated>), ReauthErrors))]
async fn reauthenticate(
    State(state): State<AppState>,
    AuthUser(who): AuthUser,
    Caller(client): Caller,
    AppJson(body): AppJson<ReauthenticateRequest>,
) -> Result<Answer<Reauthenticated>> {
    let code = body.code.trim();
    let proof = if !body.password.is_empty() {
        Proof::Password(SecretString::from(body.password))
    } else if !code.is_empty() {
        Proof::Code(code.to_owned())
    } else {
        return Err(Error::field(
            "password",
            "is required (or, with 2FA on, code)",
        ));
    };
    let until = state
        .auth
        .accounts
        .reauthenticate(&who, proof, &client)
        .await?;
    Ok(ok(Reauthenticated {
        reauthenticated_until: rfc3339(until),
    }))
}

error_responses!(PasskeyStartErrors:
    [Error::field("passkeys", "this account has no passkey: re-authenticate with the password")],
    [Error::PasskeysOff],
    bearer_errors(),
    throttle_errors(),
    server_errors(),
);

/// Start re-authenticating with a passkey (for an account that has one).
///
/// Answers the options for `navigator.credentials.get()`, listing only the caller's own passkeys
/// (`allowCredentials`), user verification required. The ceremony belongs to this session and
/// lives 5 minutes; an account without a passkey is `VALIDATION_ERROR` on `passkeys`.
#[utoipa::path(post, path = "/reauthenticate/passkey/start", tag = "auth",
    security(("bearer" = [])),
    responses((status = 200, description = "The ceremony", body = Envelope<CeremonyView>), PasskeyStartErrors))]
async fn start_passkey(
    State(state): State<AppState>,
    AuthUser(who): AuthUser,
    Caller(client): Caller,
) -> Result<Answer<CeremonyView>> {
    let started = state
        .auth
        .passkeys
        .start_passkey_reauthentication(&who, &client)
        .await?;
    Ok(ok(started.into()))
}

#[derive(Deserialize, Default, ToSchema)]
#[serde(rename_all = "camelCase", default)]
struct PasskeyFinishRequest {
    /// From `…/reauthenticate/passkey/start`, in this session.
    #[schema(required = true, format = Uuid)]
    ceremony_id: String,
    /// What `navigator.credentials.get()` gave, as `PublicKeyCredential.toJSON()` makes it.
    #[schema(required = true, value_type = Object)]
    credential: Value,
}

error_responses!(PasskeyFinishErrors:
    body_errors(),
    [Error::PasskeyRecheckFailed, Error::PasskeysOff],
    bearer_errors(),
    throttle_errors(),
    server_errors(),
);

/// Finish re-authenticating with a passkey: the same answer as `POST /auth/reauthenticate`.
///
/// The ceremony must be this session's, unused and at most 5 minutes old, and the passkey one of
/// the caller's. Any failure is `PASSKEY_INVALID`, uses the ceremony up, is audited
/// (`reauthentication.failed`) and costs a slot of the account's allowance of failures, as a
/// wrong password does.
#[utoipa::path(post, path = "/reauthenticate/passkey/finish", tag = "auth",
    request_body = PasskeyFinishRequest, security(("bearer" = [])),
    responses((status = 200, description = "Re-authenticated", body = Envelope<Reauthenticated>), PasskeyFinishErrors))]
async fn finish_passkey(
    State(state): State<AppState>,
    AuthUser(who): AuthUser,
    Caller(client): Caller,
    AppJson(body): AppJson<PasskeyFinishRequest>,
) -> Result<Answer<Reauthenticated>> {
    let mut v = Validator::new();
    let id = v.check("ceremonyId", ceremony_id(&body.ceremony_id));
    let response = credential(&mut v, AssertionResponse::parse(body.credential));
    let (id, response) = v.finish(id.zip(response))?;
    let until = state
        .auth
        .passkeys
        .finish_passkey_reauthentication(&who, id, response, &client)
        .await?;
    Ok(ok(Reauthenticated {
        reauthenticated_until: rfc3339(until),
    }))
}
