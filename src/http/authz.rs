//! Forward-auth for reverse proxies (docs/api.md §6): a proxy asks before each request it passes
//! on, with the client's own `Authorization` header, and passes the request on only after a 200.
//!
//! One endpoint per proxy convention, each reading only its own headers: a proxy replaces the
//! headers of its own convention, but passes the other convention's through as the client wrote
//! them, so an endpoint that read both would let a client choose which path a rule sees. Those
//! headers are believed only from `GATEHOUSE_TRUSTED_PROXIES`; with rules, a request from any other
//! peer is refused (`GATEHOUSE_UNTRUSTED_FORWARD_AUTH`). Answers carry no body and no
//! envelope: proxies read the status and the `Remote-*` headers, and nginx treats any status but
//! 2xx, 401 and 403 as its own error.

use std::net::SocketAddr;

use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use percent_encoding::{AsciiSet, CONTROLS, utf8_percent_encode};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::AppState;
use super::extract::bearer_token;
use crate::authz::Described;
use crate::authz::rules::Policy;
use crate::error::Error;
use crate::model::Identity;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(forward_auth))
        .routes(routes!(auth_request))
}

/// The answers of both endpoints, documented once: status and headers, never a body.
#[derive(utoipa::IntoResponses)]
#[allow(dead_code)] // only its documentation is used
enum Decisions {
    /// Allowed: the Remote-* headers describe the caller
    #[response(status = 200)]
    Allowed,
    /// No, a bad, an expired or a revoked access token
    #[response(status = 401)]
    Unauthenticated,
    /// An access rule denies the request
    #[response(status = 403)]
    Forbidden,
    /// Gatehouse cannot decide now (database unreachable)
    #[response(status = 503)]
    Unavailable,
}

/// Caddy `forward_auth` and Traefik `ForwardAuth`: the original request is described by
/// `X-Forwarded-Method`, `X-Forwarded-Host` and `X-Forwarded-Uri`.
///
/// 200 with `Remote-User` (user id), `Remote-Email`, `Remote-Email-Verified` (`true` or
/// `false`), `Remote-Name`, `Remote-Groups` (current roles, comma-separated) and
/// `Remote-Session`, `Remote-Org` (the token's active organisation, empty without one) and
/// `Remote-Org-Roles` (the holder's roles in it now, comma-separated); 401 for no, a bad, an expired or a revoked token; 403 when an access rule
/// denies. No body. Any method.
#[utoipa::path(method(get, post, put, patch, delete, head, options),
    path = "/api/v1/authz/forward-auth", tag = "authz",
    security((), ("bearer" = [])),
    responses(Decisions))]
async fn forward_auth(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
) -> Response {
    let described = if state.is_trusted(peer) {
        Described::forwarded(
            single(&headers, "x-forwarded-method"),
            single(&headers, "x-forwarded-host"),
            single(&headers, "x-forwarded-uri"),
        )
    } else {
        Described::Untrusted
    };
    decide(&state, peer, &headers, &described).await
}

/// nginx `auth_request`: the original request is described by `X-Original-Method` and
/// `X-Original-URL` (absolute, `host[:port]` only: `$scheme://$host$request_uri`). Answers as
/// forward-auth does.
#[utoipa::path(method(get, post, put, patch, delete, head, options),
    path = "/api/v1/authz/auth-request", tag = "authz",
    security((), ("bearer" = [])),
    responses(Decisions))]
async fn auth_request(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
) -> Response {
    let described = if state.is_trusted(peer) {
        Described::original(
            single(&headers, "x-original-method"),
            single(&headers, "x-original-url"),
        )
    } else {
        Described::Untrusted
    };
    decide(&state, peer, &headers, &described).await
}

/// The value of a header given exactly once, as text; a repeated header could be read two ways.
fn single<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    let mut values = headers.get_all(name).iter();
    let value = values.next()?;
    if values.next().is_some() {
        return None;
    }
    value.to_str().ok()
}

/// A denying rule refuses before the token is looked at (signing in would not help); otherwise the
/// token must belong to a live session whose holder meets the policy.
async fn decide(
    state: &AppState,
    peer: SocketAddr,
    headers: &HeaderMap,
    described: &Described,
) -> Response {
    let policy = state.gate.policy_for(described);
    if *policy == Policy::Deny {
        match described {
            Described::Untrusted => {
                if let Some(refused) = state.gate.untrusted_refused() {
                    tracing::warn!(
                        peer = %peer.ip(),
                        refused,
                        "forward-auth refused {refused} request(s), the last from {}, which is \
                         not in GATEHOUSE_TRUSTED_PROXIES: with access rules, only a trusted \
                         proxy's description of a request is judged (or set \
                         GATEHOUSE_UNTRUSTED_FORWARD_AUTH=token-only to judge the token alone); \
                         logged at most once a minute",
                        peer.ip()
                    );
                }
            }
            Described::Unreadable(why) => tracing::debug!(why, "forward-auth: unreadable request"),
            Described::Request(_) => {}
        }
        return forbidden();
    }
    if headers
        .get_all(header::AUTHORIZATION)
        .iter()
        .nth(1)
        .is_some()
    {
        // Which of two credentials counts is a question a proxy's upstream may answer
        // differently; a status other than 401 or 403 would be an error to nginx.
        return unauthorized(
            r#"Bearer error="invalid_request", error_description="more than one Authorization header""#,
        );
    }
    let Some(token) = bearer_token(headers) else {
        return unauthorized("Bearer");
    };
    let identity = match state.auth.guard.identify(token).await {
        Ok(identity) => identity,
        Err(Error::TokenExpired) => {
            return unauthorized(
                r#"Bearer error="invalid_token", error_description="the access token expired""#,
            );
        }
        Err(Error::Unavailable(cause)) => {
            tracing::warn!(error = %cause, "forward-auth cannot read the account");
            return StatusCode::SERVICE_UNAVAILABLE.into_response();
        }
        Err(Error::Internal(cause)) => {
            tracing::error!(error = ?cause, "forward-auth failed");
            return StatusCode::SERVICE_UNAVAILABLE.into_response();
        }
        Err(_) => return unauthorized(r#"Bearer error="invalid_token""#),
    };
    if !policy.admits(&identity) {
        return forbidden();
    }
    allowed(&identity)
}

fn unauthorized(challenge: &'static str) -> Response {
    (
        StatusCode::UNAUTHORIZED,
        [(header::WWW_AUTHENTICATE, challenge)],
    )
        .into_response()
}

fn forbidden() -> Response {
    (
        StatusCode::FORBIDDEN,
        [(
            header::WWW_AUTHENTICATE,
            r#"Bearer error="insufficient_scope""#,
        )],
    )
        .into_response()
}

/// Header values are bytes a proxy copies as they are: anything outside printable ASCII, and `%`
/// itself, is percent-encoded as UTF-8 (RFC 8187's encoding), so a name such as "Zoë" arrives as
/// `Zo%C3%AB` and a name can never break a header. Decode with any percent-decoder.
const HEADER_UNSAFE: &AsciiSet = &CONTROLS.add(b'%');

fn header_text(text: &str) -> HeaderValue {
    let encoded = utf8_percent_encode(text, HEADER_UNSAFE).to_string();
    HeaderValue::from_str(&encoded).unwrap_or(HeaderValue::from_static(""))
}

fn allowed(who: &Identity) -> Response {
    let mut response = StatusCode::OK.into_response();
    let headers = response.headers_mut();
    headers.insert("remote-user", header_text(&who.user_id.to_string()));
    headers.insert("remote-email", header_text(&who.email));
    let verified = if who.email_verified { "true" } else { "false" };
    headers.insert("remote-email-verified", HeaderValue::from_static(verified));
    headers.insert("remote-name", header_text(&who.full_name));
    headers.insert("remote-groups", header_text(&who.roles.join(",")));
    headers.insert("remote-session", header_text(&who.session_id.to_string()));
    // The active organisation (docs/api.md §13): empty without one, as `Remote-Groups` is without
    // roles, so that every proxy replaces (nginx: drops) what a client sent under these names.
    let (org, org_roles) = match &who.org {
        Some(org) => (org.id.to_string(), org.roles.join(",")),
        None => (String::new(), String::new()),
    };
    headers.insert("remote-org", header_text(&org));
    headers.insert("remote-org-roles", header_text(&org_roles));
    response
}
