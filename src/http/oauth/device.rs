//! The device authorization grant's two calls (RFC 8628, docs/api.md §11): the client's
//! `POST /oauth2/device_authorization` (OAuth's own JSON, never cached), and the device page's
//! `POST /api/v1/oauth2/device`, where the person's first-party token answers for the code they
//! typed. The token endpoint's side is `token.rs`.

use std::net::SocketAddr;

use axum::body::Bytes;
use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use super::authorize::{OrgView, ScopeView};
use super::errors::{self, OAuthErrorBody, failed, no_store};
use super::{client_form, single};
use crate::error::{Error, Result};
use crate::http::docs::{bearer_errors, body_errors, error_responses, server_errors};
use crate::http::extract::{AppJson, AuthUser, Caller, client_ip};
use crate::http::{Answer, AppState, Envelope, ok};
use crate::provider::{DeviceAnswer, OAuthError, OAuthFailure, Person};

pub(super) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(device_authorization))
        .routes(routes!(device))
}

/// RFC 8628 §3.2.
#[derive(Serialize, ToSchema)]
struct DeviceAuthorization {
    /// What the client polls the token endpoint with.
    device_code: String,
    /// What the person types on `verification_uri`.
    #[schema(example = "BCDF-GHJK")]
    user_code: String,
    #[schema(example = "https://login.example.com/device")]
    verification_uri: String,
    /// `verification_uri` with the code filled in (for a QR code or a link).
    #[schema(example = "https://login.example.com/device?user_code=BCDF-GHJK")]
    verification_uri_complete: String,
    /// Seconds the codes live.
    #[schema(example = 600)]
    expires_in: i64,
    /// Seconds to wait between polls.
    #[schema(example = 5)]
    interval: i64,
}

fn refusal(error: OAuthError, description: impl Into<String>) -> Response {
    errors::answer(error, Some(description.into()))
}

/// Start a device authorization (RFC 8628 §3.1).
///
/// Form-encoded: `client_id` (a public client) or the client's credentials as at the token
/// endpoint, `scope` (required), optional `resource` (RFC 8707). The client must be registered
/// with the grant `urn:ietf:params:oauth:grant-type:device_code` by an operator. Show the person
/// `user_code` and `verification_uri` (or `verification_uri_complete`), then poll
/// `POST /oauth2/token` with `grant_type=urn:ietf:params:oauth:grant-type:device_code` and
/// `device_code` every `interval` seconds.
#[utoipa::path(post, path = "/oauth2/device_authorization", tag = "oauth",
    request_body(content = String, content_type = "application/x-www-form-urlencoded",
        description = "client_id=…&scope=openid%20offline_access"),
    responses(
        (status = 200, description = "The codes", body = DeviceAuthorization),
        (status = 400, description = "invalid_request, unauthorized_client, invalid_scope, invalid_target", body = OAuthErrorBody),
        (status = 401, description = "invalid_client", body = OAuthErrorBody),
        (status = 404, description = "The OpenID provider is off"),
        (status = 429, description = "Too many device authorizations from this address", body = OAuthErrorBody)))]
async fn device_authorization(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let (form, ip, client) = match client_form(&state, peer, &headers, &body).await {
        Ok(called) => called,
        Err(refused) => return refused,
    };
    let (Ok(scope), Ok(resource)) = (single(&form, "scope"), single(&form, "resource")) else {
        return refusal(OAuthError::InvalidRequest, "a parameter was repeated");
    };
    let resource = crate::http::resource::audience_of(&state, resource.map(str::to_owned));
    let started = state
        .auth
        .oauth
        .start_device(&client, scope, resource.as_deref(), Some(ip))
        .await;
    match started {
        Ok(start) => {
            let page = format!("{}/device", state.public_url);
            no_store(
                StatusCode::OK,
                DeviceAuthorization {
                    verification_uri_complete: format!("{page}?user_code={}", start.user_code),
                    verification_uri: page,
                    device_code: start.device_code,
                    user_code: start.user_code,
                    expires_in: start.expires_in,
                    interval: start.interval,
                },
            )
        }
        Err(OAuthFailure::Refused { error, description }) => refusal(error, description),
        Err(OAuthFailure::Failed(error)) => failed(error),
    }
}

/// The device page's question and answer.
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct DeviceBody {
    /// As the device shows it (case, dashes and spaces do not matter).
    #[schema(example = "BCDF-GHJK")]
    user_code: String,
    /// The person's answer: `true` allows, `false` denies; absent: what is asked, to show.
    #[serde(default)]
    consent: Option<bool>,
    /// With `consent: true`, the organisation to act in (one of `organisations`); absent or
    /// `null`: none (the person's own data).
    #[serde(default)]
    org_id: Option<Uuid>,
}

/// The application as the device page names it.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct DeviceClientView {
    #[schema(format = Uuid)]
    client_id: String,
    name: String,
    first_party: bool,
}

#[derive(Serialize, ToSchema)]
#[serde(untagged)]
enum DeviceAnswerView {
    /// What the device asks, to show before the person answers.
    #[serde(rename_all = "camelCase")]
    Consent {
        consent_required: bool,
        client: DeviceClientView,
        scopes: Vec<String>,
        /// `scopes` in words, in the same order.
        scope_details: Vec<ScopeView>,
        organisations: Vec<OrgView>,
        org_id: Option<Uuid>,
        org_fixed: bool,
    },
    /// The answer recorded: the device gets its tokens at its next poll (`approved`), or
    /// `access_denied` (`denied`).
    Done {
        #[schema(example = "approved")]
        status: &'static str,
    },
}

error_responses!(DeviceErrors: body_errors(), bearer_errors(),
    [Error::Forbidden, Error::NotFound, Error::TwoFactorRequired, Error::RateLimited { retry_after: 30 }],
    server_errors());

/// Answer a device's request (the device page's call).
///
/// Bearer: the person's own access token (a token issued to a client is refused: 403). Without
/// `consent`, says which application asks for which scopes; with it, records the answer, once.
/// A code that is unknown, expired or answered already is 400 `VALIDATION_ERROR` on `userCode`;
/// wrong codes are limited per account and address (429 `RATE_LIMITED`).
#[utoipa::path(post, path = "/api/v1/oauth2/device", tag = "oauth", security(("bearer" = [])),
    request_body = DeviceBody,
    responses((status = 200, description = "What is asked, or the answer recorded", body = Envelope<DeviceAnswerView>),
        DeviceErrors))]
async fn device(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    Caller(from): Caller,
    AuthUser(who): AuthUser,
    AppJson(body): AppJson<DeviceBody>,
) -> Result<Answer<DeviceAnswerView>> {
    state.require_provider()?;
    let ip = client_ip(peer.ip(), &headers, &state.trusted_proxies);
    let person = Person {
        user_id: who.user_id,
        session_id: who.session_id,
    };
    let oauth = &state.auth.oauth;
    let Some(consent) = body.consent else {
        let asked = oauth
            .device_consent(&body.user_code, person, Some(ip))
            .await?;
        let catalog = state.auth.resources.catalog();
        return Ok(ok(DeviceAnswerView::Consent {
            consent_required: true,
            client: DeviceClientView {
                client_id: asked.client.client_id(),
                name: asked.client.name,
                first_party: asked.client.first_party,
            },
            scope_details: ScopeView::all(&catalog, &asked.scopes),
            scopes: asked.scopes,
            organisations: asked.orgs.orgs.into_iter().map(OrgView::from).collect(),
            org_id: asked.orgs.chosen,
            org_fixed: asked.orgs.fixed,
        }));
    };
    let answer = oauth
        .decide_device(
            &body.user_code,
            person,
            consent,
            body.org_id,
            (Some(ip), &from),
        )
        .await?;
    Ok(ok(DeviceAnswerView::Done {
        status: match answer {
            DeviceAnswer::Approved => "approved",
            DeviceAnswer::Denied => "denied",
        },
    }))
}
