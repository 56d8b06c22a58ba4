//! Other identity providers (docs/api.md §14): the providers the sign-in page offers, the
//! finished sign-in the pages collect, and the caller's linked identities (link, list, unlink).
//! The browser's side of a flow (start, callback) is in `http::federation`.

use axum::extract::{Path, State};
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::login::LoginAnswer;
use super::password_or_window;
use crate::clock::rfc3339;
use crate::error::{Conflict, Error, Result, Validator};
use crate::federation::{IdentityView, Started};
use crate::http::cookies::{FEDERATION_COOKIE, cookie_values, federation_cookie};
use crate::http::docs::{
    bearer_errors, body_errors, error_responses, server_errors, throttle_errors,
};
use crate::http::extract::{AppJson, AuthUser, Caller};
use crate::http::{Answer, AppState, Envelope, ok};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

/// Seconds a flow's cookie lives: the flow's own 10 minutes.
pub(crate) const FLOW_COOKIE_SECONDS: i64 = 600;

pub(super) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(providers))
        .routes(routes!(finish))
        .routes(routes!(list_identities))
        .routes(routes!(start_link))
        .routes(routes!(unlink))
        .routes(routes!(reauthenticate))
}

/// An identity provider as the sign-in page shows it.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct ProviderView {
    #[schema(example = "acme-sso")]
    id: String,
    /// The button's label.
    #[schema(example = "Acme single sign-on")]
    name: String,
    /// False while its discovery document could not be read (the button says it is unavailable).
    available: bool,
    /// Addresses here sign in through it (a domain covers its subdomains).
    #[schema(example = json!(["acme.example"]))]
    domains: Vec<String>,
}

#[derive(Serialize, ToSchema)]
struct ProviderList {
    items: Vec<ProviderView>,
}

/// The identity providers people may sign in with.
///
/// Public. Never waits on a provider: `available` is what the last discovery found.
#[utoipa::path(get, path = "/providers", tag = "auth",
    responses((status = 200, description = "The providers", body = Envelope<ProviderList>)))]
async fn providers(State(state): State<AppState>) -> Answer<ProviderList> {
    let items = state
        .auth
        .federation
        .providers()
        .into_iter()
        .map(|p| ProviderView {
            id: p.id,
            name: p.name,
            available: p.available,
            domains: p.domains,
        })
        .collect();
    ok(ProviderList { items })
}

error_responses!(FinishErrors: [Error::TokenInvalid], server_errors());

/// Collect a finished sign-in through another identity provider (the pages call this).
///
/// Takes no body: the `gatehouse_federation` cookie the callback set names the sign-in. Answers
/// what `POST /auth/login` answers (the token set, or a 2FA challenge), once; the cookie is
/// cleared. No such sign-in (none, used, or older than 60 s): 401 `TOKEN_INVALID`.
#[utoipa::path(post, path = "/providers/finish", tag = "auth",
    responses(
        (status = 200, description = "The token set, or a 2FA challenge", body = Envelope<LoginAnswer>,
            headers(("Set-Cookie" = String, description = "Clears the federation cookie"))),
        FinishErrors,
    ))]
async fn finish(State(state): State<AppState>, headers: HeaderMap) -> Result<Response> {
    let values = cookie_values(&headers, FEDERATION_COOKIE);
    let clear = federation_cookie(&state.browser, "", 0);
    match state.auth.federation.finish(&values).await {
        Ok(outcome) => {
            let answer: LoginAnswer = outcome.into();
            Ok(([(header::SET_COOKIE, clear)], ok(answer)).into_response())
        }
        Err(error) => Ok(([(header::SET_COOKIE, clear)], error).into_response()),
    }
}

/// A linked identity as its owner sees it.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = Identity)]
struct IdentityItem {
    #[schema(example = "acme-sso")]
    provider_id: String,
    #[schema(example = "Acme single sign-on")]
    provider_name: String,
    /// The provider's `sub`.
    #[schema(example = "248289761001")]
    subject: String,
    /// The address the provider last gave.
    #[schema(example = "ada@acme.example")]
    email: Option<String>,
    #[schema(format = DateTime, example = "2026-11-21T09:30:00.417Z")]
    linked_at: String,
    #[schema(format = DateTime, example = "2026-11-22T08:01:45.200Z")]
    last_used_at: Option<String>,
}

impl From<IdentityView> for IdentityItem {
    fn from(v: IdentityView) -> Self {
        IdentityItem {
            provider_id: v.identity.provider_id,
            provider_name: v.provider_name,
            subject: v.identity.subject,
            email: v.identity.email,
            linked_at: rfc3339(v.identity.linked_at),
            last_used_at: v.identity.last_used_at.map(rfc3339),
        }
    }
}

#[derive(Serialize, ToSchema)]
struct IdentityList {
    items: Vec<IdentityItem>,
}

error_responses!(ListErrors: bearer_errors(), [Error::ClientToken], server_errors());

/// The identities at other providers linked to the caller's account.
#[utoipa::path(get, path = "/identities", tag = "auth", security(("bearer" = [])),
    responses((status = 200, description = "The identities, by provider", body = Envelope<IdentityList>), ListErrors))]
async fn list_identities(
    State(state): State<AppState>,
    AuthUser(who): AuthUser,
) -> Result<Answer<IdentityList>> {
    let items = state.auth.federation.identities(&who).await?;
    Ok(ok(IdentityList {
        items: items.into_iter().map(IdentityItem::from).collect(),
    }))
}

#[derive(Deserialize, Default, ToSchema)]
#[serde(rename_all = "camelCase", default)]
struct StartLinkRequest {
    /// A provider's `id` (`GET /auth/providers`).
    #[schema(required = true, example = "acme-sso")]
    provider_id: String,
    /// The account's password: a new way into the account is the owner's decision. Not needed
    /// while this session is re-authenticated (`POST /auth/reauthenticate`).
    password: String,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct LinkStarted {
    /// Send the browser here (the provider's sign-in); it comes back to `/account`.
    #[schema(example = "https://login.acme.example/authorize?response_type=code&…")]
    redirect_to: String,
}

error_responses!(StartErrors:
    body_errors(),
    [Error::PasswordRecheckFailed],
    bearer_errors(),
    [
        Error::ClientToken,
        Error::NotFound,
        Error::Conflict(Conflict::AlreadyLinked),
        Error::SsoRequired { provider: String::new() },
    ],
    throttle_errors(),
    [Error::ProviderUnavailable],
    server_errors(),
);

/// Begin linking an identity at another provider to the caller's account.
///
/// The password is re-checked (or the session's re-authentication stands in for it). Answers
/// where to send the browser, with the cookie that binds the flow to it (`gatehouse_federation`,
/// 10 minutes); the provider sends the browser back to `/account?linked=<id>`, or
/// `/account?link_error=<code>&provider=<id>`. Unknown provider: 404; an identity at that
/// provider linked already: 409; an account whose address is under another provider's
/// `domains`: 403 `SSO_REQUIRED` naming that provider (it links no other); the provider
/// unreachable: 503.
#[utoipa::path(post, path = "/identities/start", tag = "auth", request_body = StartLinkRequest,
    security(("bearer" = [])),
    responses(
        (status = 200, description = "Where to send the browser", body = Envelope<LinkStarted>,
            headers(("Set-Cookie" = String, description = "The flow's cookie"))),
        StartErrors,
    ))]
async fn start_link(
    State(state): State<AppState>,
    AuthUser(who): AuthUser,
    Caller(client): Caller,
    AppJson(body): AppJson<StartLinkRequest>,
) -> Result<Response> {
    let provider = provider_id(body.provider_id)?;
    let started = state
        .auth
        .federation
        .start_link(&who, &provider, password_or_window(body.password), &client)
        .await?;
    Ok(flow_started(&state, started))
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct Unlinked {
    #[schema(example = "acme-sso")]
    provider_id: String,
}

error_responses!(UnlinkErrors:
    bearer_errors(),
    [Error::ClientToken, Error::NotFound, Error::Conflict(Conflict::LastWayIn)],
    server_errors(),
);

/// Unlink the caller's identity at a provider.
///
/// Refused (409) when it is the account's last way in: no password, no passkey, no other
/// identity. No identity there: 404. The owner is told by mail.
#[utoipa::path(delete, path = "/identities/{providerId}", tag = "auth", security(("bearer" = [])),
    params(("providerId" = String, Path, description = "A provider's id")),
    responses((status = 200, description = "Unlinked", body = Envelope<Unlinked>), UnlinkErrors))]
async fn unlink(
    State(state): State<AppState>,
    AuthUser(who): AuthUser,
    Caller(client): Caller,
    provider: std::result::Result<Path<String>, axum::extract::rejection::PathRejection>,
) -> Result<Answer<Unlinked>> {
    // A path that does not decode names no identity.
    let Path(provider) = provider.map_err(|_| Error::NotFound)?;
    state
        .auth
        .federation
        .unlink(&who, &provider, &client)
        .await?;
    Ok(ok(Unlinked {
        provider_id: provider,
    }))
}

#[derive(Deserialize, Default, ToSchema)]
#[serde(rename_all = "camelCase", default)]
struct ReauthenticateRequest {
    /// The id of a provider where the caller's account has an identity.
    #[schema(required = true, example = "acme-sso")]
    provider_id: String,
}

error_responses!(ReauthenticateErrors:
    body_errors(),
    bearer_errors(),
    [Error::ClientToken, Error::NotFound],
    throttle_errors(),
    [Error::ProviderUnavailable],
    server_errors(),
);

/// Re-authenticate this session through the provider of one of its linked identities.
///
/// The way an account without a password (one another provider made) opens the 5-minute window
/// of `POST /auth/reauthenticate`. Answers where to send the browser, with the flow's cookie;
/// the provider sends it back to `/account?reauthenticated=<id>` once the identity it signed in
/// is the one linked to this account and the session is still live (then `GET /auth/me` shows
/// `reauthenticatedUntil`), else to `/account?reauth_error=<code>&provider=<id>` (`not_linked`:
/// someone else signed in there). No identity of the account at that provider: 404.
#[utoipa::path(post, path = "/reauthenticate/provider", tag = "auth",
    request_body = ReauthenticateRequest, security(("bearer" = [])),
    responses(
        (status = 200, description = "Where to send the browser", body = Envelope<LinkStarted>,
            headers(("Set-Cookie" = String, description = "The flow's cookie"))),
        ReauthenticateErrors,
    ))]
async fn reauthenticate(
    State(state): State<AppState>,
    AuthUser(who): AuthUser,
    Caller(client): Caller,
    AppJson(body): AppJson<ReauthenticateRequest>,
) -> Result<Response> {
    let provider = provider_id(body.provider_id)?;
    let started = state
        .auth
        .federation
        .start_reauthentication(&who, &provider, &client)
        .await?;
    Ok(flow_started(&state, started))
}

/// A body's `providerId`, which must not be empty.
fn provider_id(raw: String) -> Result<String> {
    let mut v = Validator::new();
    let provider = v.check("providerId", super::non_empty(raw));
    v.finish(provider)
}

/// `{redirectTo}` with the cookie that binds the flow begun to this browser.
fn flow_started(state: &AppState, started: Started) -> Response {
    let cookie = federation_cookie(&state.browser, &started.binding, FLOW_COOKIE_SECONDS);
    let answer = ok(LinkStarted {
        redirect_to: started.location,
    });
    ([(header::SET_COOKIE, cookie)], answer).into_response()
}
