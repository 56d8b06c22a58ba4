//! Passkeys (docs/api.md §9): adding one (password re-checked), the list, renaming, removal, and
//! signing in with one, with an e-mail, without, or as the second factor of a 2FA challenge.

use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;
use uuid::Uuid;

use super::views::{CeremonyView, Deleted, PasskeyView, TokenSetView};
use super::{non_empty, password_or_window};
use crate::auth::passkeys::{AssertionResponse, PasskeyName, RegistrationResponse, SignInWith};
use crate::domain::Email;
use crate::error::{Error, Result, Validator};
use crate::http::docs::{
    bearer_errors, body_errors, error_responses, server_errors, throttle_errors,
};
use crate::http::extract::{AppJson, AuthUser, Caller, PathId};
use crate::http::{Answer, AppState, Envelope, ok};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub(super) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(start_registration))
        .routes(routes!(finish_registration))
        .routes(routes!(list_passkeys))
        .routes(routes!(rename_passkey, remove_passkey))
        .routes(routes!(start_login))
        .routes(routes!(finish_login))
}

/// `ceremonyId`: required, a UUID.
pub(super) fn ceremony_id(raw: &str) -> Result<Uuid, String> {
    if raw.is_empty() {
        return Err("is required".into());
    }
    Uuid::parse_str(raw).map_err(|_| "must be a ceremonyId from …/start".into())
}

/// Puts a credential's parse error under its path.
pub(super) fn credential<T>(v: &mut Validator, parsed: Result<T, (String, String)>) -> Option<T> {
    match parsed {
        Ok(value) => Some(value),
        Err((path, reason)) => v.check(&path, Err(reason)),
    }
}

#[derive(Deserialize, Default, ToSchema)]
#[serde(default)]
struct RegisterStartRequest {
    /// The account's password: an access token alone must not add a passkey. Not needed while this session is re-authenticated (`POST /auth/reauthenticate`).
    password: String,
}

error_responses!(RegisterStartErrors:
    body_errors(),
    [Error::PasswordRecheckFailed, Error::PasskeysOff],
    bearer_errors(),
    throttle_errors(),
    server_errors(),
    [Error::Overloaded { retry_after: 1 }],
);

/// Start adding a passkey (the password required).
///
/// Answers the options for `navigator.credentials.create()`; the passkeys the account has are
/// excluded, user verification is required, a discoverable credential is preferred. An account has
/// at most 20 passkeys.
#[utoipa::path(post, path = "/passkeys/register/start", tag = "passkeys",
    request_body = RegisterStartRequest, security(("bearer" = [])),
    responses((status = 200, description = "The ceremony", body = Envelope<CeremonyView>), RegisterStartErrors))]
async fn start_registration(
    State(state): State<AppState>,
    AuthUser(who): AuthUser,
    AppJson(body): AppJson<RegisterStartRequest>,
) -> Result<Answer<CeremonyView>> {
    let password = password_or_window(body.password);
    let started = state
        .auth
        .passkeys
        .start_passkey_registration(&who, password)
        .await?;
    Ok(ok(started.into()))
}

#[derive(Deserialize, Default, ToSchema)]
#[serde(rename_all = "camelCase", default)]
struct RegisterFinishRequest {
    /// From `…/register/start`.
    #[schema(required = true, format = Uuid)]
    ceremony_id: String,
    /// What `navigator.credentials.create()` gave, as `PublicKeyCredential.toJSON()` makes it:
    /// binary members base64url without padding.
    #[schema(required = true, value_type = Object)]
    credential: Value,
    /// A label for the list (trimmed, 1–64 characters); "Passkey" when left out.
    #[schema(example = "Laptop", max_length = 64)]
    name: Option<String>,
}

error_responses!(RegisterFinishErrors:
    body_errors(),
    [Error::PasskeyInvalid],
    bearer_errors(),
    [Error::PasskeysOff],
    server_errors(),
);

/// Finish adding a passkey.
///
/// The ceremony must be the caller's, unused, and at most 5 minutes old; any failure is
/// `PASSKEY_INVALID` (and uses the ceremony up, unless the body was malformed).
#[utoipa::path(post, path = "/passkeys/register/finish", tag = "passkeys",
    request_body = RegisterFinishRequest, security(("bearer" = [])),
    responses((status = 201, description = "The new passkey", body = Envelope<PasskeyView>), RegisterFinishErrors))]
async fn finish_registration(
    State(state): State<AppState>,
    AuthUser(who): AuthUser,
    Caller(client): Caller,
    AppJson(body): AppJson<RegisterFinishRequest>,
) -> Result<(StatusCode, Answer<PasskeyView>)> {
    let mut v = Validator::new();
    let id = v.check("ceremonyId", ceremony_id(&body.ceremony_id));
    let response = credential(&mut v, RegistrationResponse::parse(body.credential));
    let name = match body.name {
        Some(name) => v.check("name", PasskeyName::parse(&name)).map(Some),
        None => Some(None),
    };
    let (id, (response, name)) = v.finish(id.zip(response.zip(name)))?;
    let passkey = state
        .auth
        .passkeys
        .finish_passkey_registration(&who, id, response, name, &client)
        .await?;
    Ok((StatusCode::CREATED, ok(passkey.into())))
}

#[derive(Serialize, ToSchema)]
struct PasskeyList {
    items: Vec<PasskeyView>,
}

error_responses!(BearerErrors: bearer_errors(), server_errors());

/// The caller's passkeys, oldest first.
#[utoipa::path(get, path = "/passkeys", tag = "passkeys", security(("bearer" = [])),
    responses((status = 200, description = "The passkeys", body = Envelope<PasskeyList>), BearerErrors))]
async fn list_passkeys(
    State(state): State<AppState>,
    AuthUser(who): AuthUser,
) -> Result<Answer<PasskeyList>> {
    let items = state.auth.passkeys.list(&who).await?;
    let items = items.into_iter().map(PasskeyView::from).collect();
    Ok(ok(PasskeyList { items }))
}

#[derive(Deserialize, Default, ToSchema)]
#[serde(default)]
struct RenameRequest {
    /// Trimmed, 1–64 characters, no control characters.
    #[schema(required = true, example = "Phone", max_length = 64)]
    name: String,
}

error_responses!(RenameErrors: body_errors(), bearer_errors(), [Error::NotFound], server_errors());

/// Rename one of the caller's passkeys.
#[utoipa::path(patch, path = "/passkeys/{id}", tag = "passkeys", request_body = RenameRequest,
    security(("bearer" = [])),
    params(("id" = Uuid, Path, description = "A passkey id from `GET /auth/passkeys`")),
    responses((status = 200, description = "The passkey", body = Envelope<PasskeyView>), RenameErrors))]
async fn rename_passkey(
    State(state): State<AppState>,
    AuthUser(who): AuthUser,
    PathId(id): PathId,
    AppJson(body): AppJson<RenameRequest>,
) -> Result<Answer<PasskeyView>> {
    let mut v = Validator::new();
    let name = v.check("name", PasskeyName::parse(&body.name));
    let name = v.finish(name)?;
    Ok(ok(state
        .auth
        .passkeys
        .rename_passkey(&who, id, name)
        .await?
        .into()))
}

error_responses!(RemoveErrors: bearer_errors(), [Error::NotFound], server_errors());

/// Remove one of the caller's passkeys; it can no longer sign in.
#[utoipa::path(delete, path = "/passkeys/{id}", tag = "passkeys", security(("bearer" = [])),
    params(("id" = Uuid, Path, description = "A passkey id from `GET /auth/passkeys`")),
    responses((status = 200, description = "The passkey is gone", body = Envelope<Deleted>), RemoveErrors))]
async fn remove_passkey(
    State(state): State<AppState>,
    AuthUser(who): AuthUser,
    Caller(client): Caller,
    PathId(id): PathId,
) -> Result<Answer<Deleted>> {
    state
        .auth
        .passkeys
        .remove_passkey(&who, id, &client)
        .await?;
    Ok(ok(Deleted { id }))
}

#[derive(Deserialize, Default, ToSchema)]
#[serde(rename_all = "camelCase", default)]
struct LoginStartRequest {
    /// The account's e-mail; leave it (and `tempToken`) out to sign in with a discoverable
    /// passkey, which names its account itself.
    #[schema(format = Email, max_length = 254, example = "ada@example.com")]
    email: Option<String>,
    /// The temp token of a password login's 2FA challenge: the passkey is the second factor.
    /// Not together with `email`.
    temp_token: Option<String>,
}

error_responses!(LoginStartErrors:
    body_errors(),
    [Error::PasskeyInvalid, Error::TempTokenInvalid, Error::AccountDisabled, Error::PasskeysOff],
    [Error::EmailNotVerified],
    throttle_errors(),
    server_errors(),
);

/// Start signing in with a passkey.
///
/// With `email`: the options list the account's passkeys (any e-mail gets options of the same
/// form, so this does not tell whether an account exists). Without: a discoverable sign-in. With
/// `tempToken`: the second factor of a 2FA challenge (`PASSKEY_INVALID` if the account has no
/// passkey).
#[utoipa::path(post, path = "/passkeys/login/start", tag = "passkeys",
    request_body = LoginStartRequest,
    responses((status = 200, description = "The ceremony", body = Envelope<CeremonyView>), LoginStartErrors))]
async fn start_login(
    State(state): State<AppState>,
    Caller(client): Caller,
    AppJson(body): AppJson<LoginStartRequest>,
) -> Result<Answer<CeremonyView>> {
    let with = match (body.email, body.temp_token) {
        (Some(_), Some(_)) => {
            return Err(Error::field(
                "tempToken",
                "is not allowed together with email",
            ));
        }
        (Some(email), None) => {
            SignInWith::Email(Email::parse(&email).map_err(|r| Error::field("email", r))?)
        }
        (None, Some(token)) => {
            SignInWith::Challenge(non_empty(token).map_err(|r| Error::field("tempToken", r))?)
        }
        (None, None) => SignInWith::Discoverable,
    };
    Ok(ok(state
        .auth
        .passkeys
        .start_passkey_login(with, &client)
        .await?
        .into()))
}

#[derive(Deserialize, Default, ToSchema)]
#[serde(rename_all = "camelCase", default)]
struct LoginFinishRequest {
    /// From `…/login/start`.
    #[schema(required = true, format = Uuid)]
    ceremony_id: String,
    /// What `navigator.credentials.get()` gave, as `PublicKeyCredential.toJSON()` makes it.
    #[schema(required = true, value_type = Object)]
    credential: Value,
}

error_responses!(LoginFinishErrors:
    body_errors(),
    [Error::PasskeyInvalid, Error::TempTokenInvalid, Error::AccountDisabled, Error::PasskeysOff],
    throttle_errors(),
    server_errors(),
);

/// Finish signing in with a passkey: the token set.
///
/// Its access token's `amr` is `["hwk", "user"]`, or `["pwd", "hwk", "user"]` when the passkey
/// completed a 2FA challenge. Any failed ceremony (unknown, expired or used, a bad signature, a
/// wrong origin, another account's passkey, a counter that went back) is `PASSKEY_INVALID`.
#[utoipa::path(post, path = "/passkeys/login/finish", tag = "passkeys",
    request_body = LoginFinishRequest,
    responses((status = 200, description = "The token set", body = Envelope<TokenSetView>), LoginFinishErrors))]
async fn finish_login(
    State(state): State<AppState>,
    Caller(client): Caller,
    AppJson(body): AppJson<LoginFinishRequest>,
) -> Result<Answer<TokenSetView>> {
    let mut v = Validator::new();
    let id = v.check("ceremonyId", ceremony_id(&body.ceremony_id));
    let response = credential(&mut v, AssertionResponse::parse(body.credential));
    let (id, response) = v.finish(id.zip(response))?;
    let tokens = state
        .auth
        .passkeys
        .finish_passkey_login(id, response, &client)
        .await?;
    Ok(ok(tokens.into()))
}
