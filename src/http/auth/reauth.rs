//! Re-authentication (docs/api.md §3): the caller proves again who they are, and for a few minutes
//! their session needs no password at the calls that re-check it.

use axum::extract::State;
use secrecy::SecretString;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::reauth::Proof;
use crate::clock::rfc3339;
use crate::error::{Error, Result};
use crate::http::docs::{
    bearer_errors, body_errors, error_responses, server_errors, throttle_errors,
};
use crate::http::extract::{AppJson, AuthUser, Client};
use crate::http::{Answer, AppState, Envelope, ok};

pub(super) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(reauthenticate))
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
    Client(client): Client,
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
