//! Forward-auth for reverse proxies (docs/api.md §6): a proxy asks before each request it passes
//! on, with the client's own `Authorization` header (or, from a browser, its session cookie:
//! §6b), and passes the request on only after a 200. A browser's navigation without a session is
//! sent to sign in (302 at forward-auth; 401 with `Location` at auth-request, which nginx cannot
//! pass a 302 through).
//!
//! One endpoint per proxy convention, each reading only its own headers: a proxy replaces the
//! headers of its own convention, but passes the other convention's through as the client wrote
//! them, so an endpoint that read both would let a client choose which path a rule sees. Those
//! headers are believed only from `GATEHOUSE_TRUSTED_PROXIES`; with rules, a request from any other
//! peer is refused (`GATEHOUSE_UNTRUSTED_FORWARD_AUTH`). Answers carry no body and no
//! envelope: proxies read the status and the `Remote-*` headers, and nginx treats any status but
//! 2xx, 401 and 403 as its own error.
//!
//! What to answer is the guard's decision (`guard::forward_auth`); this file reads the proxies'
//! headers into what it judges and writes the answer in each proxy's convention.
//!
//! One file: the two proxies' conventions share every step from the headers to the answer.

use std::net::SocketAddr;

use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use percent_encoding::{AsciiSet, CONTROLS, utf8_percent_encode};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::AppState;
use super::cookies::{cookie_values, other_cookies};
use super::extract::{USER_AGENT_MAX, client_ip};
use super::navigation::{forwarded_url, is_navigation, sign_in_url, single};
use super::oauth::errors::Bearer;
use crate::authz::Described;
use crate::authz::rules::Policy;
use crate::error::Error;
use crate::guard::{Credential, Decision};
use crate::model::{ClientInfo, Holder, Identity};
use crate::provider::OAuthError;

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
    /// Forward-auth only: a browser's navigation is sent to sign in (Location: the sign-in URL)
    #[response(status = 302)]
    SignIn,
    /// Gatehouse cannot decide now (database unreachable)
    #[response(status = 503)]
    Unavailable,
}

/// Caddy `forward_auth` and Traefik `ForwardAuth`: the original request is described by
/// `X-Forwarded-Method`, `X-Forwarded-Host` and `X-Forwarded-Uri` (and `X-Forwarded-Proto`).
///
/// 200 with `Remote-User` (user id), `Remote-Email`, `Remote-Email-Verified` (`true` or
/// `false`), `Remote-Name`, `Remote-Groups` (current roles, comma-separated) and
/// `Remote-Session`, `Remote-Org` (the token's active organisation, empty without one) and
/// `Remote-Org-Roles` (the holder's roles in it now, comma-separated), `Remote-Client` (the
/// client the token was issued to; empty for the person's own sign-in). A client's token for
/// itself (`client_credentials`): `Remote-User` and `Remote-Client` = the client id, `Remote-Org`
/// its organisation if bound to one, the others empty. A personal API key (`ghk_…`):
/// `Remote-User` the owner, with the owner's current e-mail, name and roles, `Remote-Key` the
/// key's id (empty for anything else), `Remote-Org` the key's organisation, `Remote-Session` and
/// `Remote-Client` empty. 401 for no, a bad, an
/// expired or a revoked token or session cookie; 403 when an access rule denies. A browser's
/// navigation (GET or HEAD preferring `text/html`) without a valid token or cookie, or whose
/// cookie session lacks the second factor a `two_factor` rule asks for, gets 302 to
/// `/sign-in?return_to=<the original URL>`. No body. Any method.
#[utoipa::path(method(get, post, put, patch, delete, head, options),
    path = "/api/v1/authz/forward-auth", tag = "authz",
    security((), ("bearer" = []), ("session_cookie" = [])),
    responses(Decisions))]
async fn forward_auth(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
) -> Response {
    let (described, navigation) = if state.is_trusted(peer) {
        let method = single(&headers, "x-forwarded-method");
        let navigation = method
            .filter(|m| is_navigation(m, single(&headers, "accept")))
            .and_then(|_| forwarded_url(&headers, &state.public_url));
        let described = Described::forwarded(
            method,
            single(&headers, "x-forwarded-host"),
            single(&headers, "x-forwarded-uri"),
        );
        (described, navigation)
    } else {
        (Described::Untrusted, None)
    };
    let asked = Asked {
        described,
        navigation,
        redirects: true,
    };
    decide(&state, peer, &headers, &asked).await
}

/// nginx `auth_request`: the original request is described by `X-Original-Method` and
/// `X-Original-URL` (absolute, `host[:port]` only: `$scheme://$host$request_uri`). Answers as
/// forward-auth does, but never 302 (nginx cannot pass one on): a browser's navigation gets 401
/// with a `Location` header naming the sign-in URL, which the nginx recipe redirects to. A 200
/// also carries `Gatehouse-Cookie`: the request's cookies without Gatehouse's own (every copy of
/// the session cookie), which the recipe passes on as the application's `Cookie`.
#[utoipa::path(method(get, post, put, patch, delete, head, options),
    path = "/api/v1/authz/auth-request", tag = "authz",
    security((), ("bearer" = []), ("session_cookie" = [])),
    responses(Decisions))]
async fn auth_request(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
) -> Response {
    let (described, navigation) = if state.is_trusted(peer) {
        let method = single(&headers, "x-original-method");
        let url = single(&headers, "x-original-url");
        let navigation = method
            .filter(|m| is_navigation(m, single(&headers, "accept")))
            .and(url)
            .filter(|u| u.starts_with("http://") || u.starts_with("https://"))
            .map(str::to_owned);
        (Described::original(method, url), navigation)
    } else {
        (Described::Untrusted, None)
    };
    let asked = Asked {
        described,
        navigation,
        redirects: false,
    };
    decide(&state, peer, &headers, &asked).await
}

/// What a proxy asked about.
struct Asked {
    described: Described,
    /// The original URL, when the request is a browser's navigation (from a trusted proxy).
    navigation: Option<String>,
    /// Whether the endpoint answers a navigation with 302 (forward-auth) or with 401 and a
    /// `Location` (auth-request).
    redirects: bool,
}

/// The guard decides (`guard::forward_auth`); this reads the credential from the headers and
/// answers the decision in the asking proxy's convention.
async fn decide(
    state: &AppState,
    peer: SocketAddr,
    headers: &HeaderMap,
    asked: &Asked,
) -> Response {
    let described = &asked.described;
    let credential = if headers
        .get_all(header::AUTHORIZATION)
        .iter()
        .nth(1)
        .is_some()
    {
        Credential::Ambiguous
    } else if let Some(presented) = super::dpop::presented(headers) {
        let token = presented.token();
        if let Err(why) = sender_checked(state, headers, presented, described).await {
            tracing::debug!(why, "forward-auth: the token's DPoP was refused");
            return unauthorized(Bearer::described(OAuthError::InvalidToken, why));
        }
        // Behind a trusted proxy, the address it forwards.
        let client = ClientInfo {
            ip: Some(client_ip(peer.ip(), headers, &state.trusted_proxies)),
            user_agent: single(headers, "user-agent")
                .map(|ua| ua.chars().take(USER_AGENT_MAX).collect()),
        };
        Credential::Bearer { token, client }
    } else {
        Credential::Cookies(cookie_values(headers, &state.browser.cookie_name))
    };
    let may_sign_in = asked.navigation.is_some() || !asked.redirects;
    let decision = state
        .auth
        .guard
        .decide(&state.gate, described, credential, may_sign_in)
        .await;
    match decision {
        Decision::Admit(holder) => {
            let mut response = allowed(&holder);
            if !asked.redirects {
                // nginx cannot remove every copy of a cookie from a header itself (its `map`
                // replaces one match): the recipe passes this on as the application's `Cookie`.
                let cookies = other_cookies(headers, &state.browser.cookie_name);
                response.headers_mut().insert("gatehouse-cookie", cookies);
            }
            response
        }
        Decision::RefusedByRule { policy, holder } => {
            if holder.is_none() {
                log_denied(described, peer, state);
            }
            log_rule_refusal(state, described, holder.as_ref());
            refused_by_rule(state, asked, &policy)
        }
        Decision::SignIn { second_factor } => sign_in(state, asked, second_factor),
        // A status other than 401 or 403 would be an error to nginx.
        Decision::Ambiguous => unauthorized(Bearer::described(
            OAuthError::InvalidRequest,
            "more than one Authorization header",
        )),
        Decision::Refused(error) => refused(error),
    }
}

/// RFC 9449 §7 for the request a proxy describes: a DPoP-bound token only with a proof by its key
/// for that request's method, host and path (the scheme and port are not compared: proxies do not
/// all forward them, and the trusted proxy answered on them already); a request the proxy does
/// not describe cannot be matched, so a bound token is refused there.
async fn sender_checked(
    state: &AppState,
    headers: &HeaderMap,
    presented: super::dpop::Presented<'_>,
    described: &Described,
) -> Result<(), &'static str> {
    let binding = super::dpop::binding(state, presented.token());
    type Htu<'a> = Box<dyn Fn(&str) -> bool + Send + Sync + 'a>;
    let (method, htu): (&str, Htu<'_>) = match described {
        Described::Request(target) => {
            let htu = move |htu: &str| {
                url::Url::parse(htu).is_ok_and(|url| {
                    let host = url.host_str().unwrap_or_default();
                    host.trim_end_matches('.')
                        .eq_ignore_ascii_case(&target.host)
                        && crate::authz::path::NormalPath::parse(url.path())
                            .is_ok_and(|path| path == target.path)
                })
            };
            (target.method.as_str(), Box::new(htu))
        }
        _ => ("", Box::new(|_: &str| false)),
    };
    super::dpop::sender_checked(state, headers, presented, &binding, method, &*htu).await
}

fn log_denied(described: &Described, peer: SocketAddr, state: &AppState) {
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
}

/// A rule's refusal, named (`rule 3 (admin area)`), with who and what it refused: at most one
/// line per rule every 10 s, with the count since the last (an operator asks "which rule
/// refused Bob?"; a client retrying in a loop must not fill the log).
fn log_rule_refusal(state: &AppState, described: &Described, holder: Option<&Holder>) {
    let Some((rule, refused)) = state.gate.rule_refused(described) else {
        return;
    };
    let Described::Request(target) = described else {
        return;
    };
    let who = holder.map_or_else(|| "anyone".to_owned(), |h| h.subject().to_string());
    tracing::info!(
        rule = %rule,
        user = %who,
        method = %target.method,
        host = %target.host,
        path = %target.path,
        refused,
        "forward-auth: {rule} refused {} {}{} for {who} ({refused} refusal(s) by this rule \
         since its last line; at most one line per rule every 10 s)",
        target.method,
        target.host,
        target.path,
    );
}

/// The answer for a bearer token that does not identify anyone.
fn refused(error: Error) -> Response {
    match error {
        Error::TokenExpired => unauthorized(Bearer::described(
            OAuthError::InvalidToken,
            "the access token expired",
        )),
        Error::Unavailable(cause) => {
            tracing::warn!(error = %cause, "forward-auth cannot read the account");
            StatusCode::SERVICE_UNAVAILABLE.into_response()
        }
        Error::Internal(cause) => {
            tracing::error!(error = ?cause, "forward-auth failed");
            StatusCode::SERVICE_UNAVAILABLE.into_response()
        }
        _ => unauthorized(Bearer::error(OAuthError::InvalidToken)),
    }
}

/// The holder of the first session cookie that belongs to a live session (the guard's rule);
/// `Ok(None)` without one; `Err` with the answer when Gatehouse cannot tell (database unreachable).
pub(crate) async fn cookie_identity(
    state: &AppState,
    headers: &HeaderMap,
) -> Result<Option<Identity>, Response> {
    let values = cookie_values(headers, &state.browser.cookie_name);
    state
        .auth
        .guard
        .cookie_holder(values)
        .await
        .map_err(refused)
}

/// No (valid) credential, or a cookie session without the second factor a rule asks for: a
/// browser's navigation is sent to sign in (forward-auth: 302; auth-request: 401 with the
/// sign-in URL in `Location`, for the nginx recipe); anything else gets 401.
fn sign_in(state: &AppState, asked: &Asked, second_factor: bool) -> Response {
    let Some(original) = &asked.navigation else {
        return unauthorized(Bearer::default());
    };
    let url = sign_in_url(&state.public_url, original, second_factor);
    let Ok(location) = HeaderValue::from_str(&url) else {
        return unauthorized(Bearer::default());
    };
    let status = if asked.redirects {
        StatusCode::FOUND
    } else {
        StatusCode::UNAUTHORIZED
    };
    let mut response = status.into_response();
    response.headers_mut().insert(header::LOCATION, location);
    if !asked.redirects {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    }
    response
}

fn unauthorized(challenge: Bearer<'_>) -> Response {
    (
        StatusCode::UNAUTHORIZED,
        [(header::WWW_AUTHENTICATE, challenge.challenge())],
    )
        .into_response()
}

/// A rule's refusal: a browser's navigation is sent to Gatehouse's page saying so (forward-auth:
/// 302; auth-request: 403 with that page in `Location`, which the nginx recipes redirect to),
/// rather than shown a proxy's bare 403; anything else gets the 403 and its challenge.
fn refused_by_rule(state: &AppState, asked: &Asked, policy: &Policy) -> Response {
    let mut response = forbidden(policy);
    if asked.navigation.is_none() {
        return response;
    }
    let page = format!("{}/forbidden", state.public_url.trim_end_matches('/'));
    let Ok(location) = HeaderValue::from_str(&page) else {
        return response;
    };
    if asked.redirects {
        *response.status_mut() = StatusCode::FOUND;
    }
    response.headers_mut().insert(header::LOCATION, location);
    response
}

/// 403, with the challenge that says what would do: a second factor (RFC 9470's step-up
/// error), one of a rule's scopes (RFC 6750 §3.1), else no credential (`insufficient_scope`).
fn forbidden(policy: &Policy) -> Response {
    let challenge = match policy {
        Policy::TwoFactor => Bearer::described(
            OAuthError::InsufficientUserAuthentication,
            "a second factor is required",
        )
        .challenge(),
        Policy::Scopes(scopes) => Bearer {
            scope: Some(&scopes.join(" ")),
            ..Bearer::error(OAuthError::InsufficientScope)
        }
        .challenge(),
        _ => Bearer::error(OAuthError::InsufficientScope).challenge(),
    };
    (
        StatusCode::FORBIDDEN,
        [(header::WWW_AUTHENTICATE, challenge)],
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

/// Every header is always sent, empty where it does not apply, so that every proxy replaces
/// (nginx: drops) whatever a client sent under these names.
fn allowed(holder: &Holder) -> Response {
    let mut response = StatusCode::OK.into_response();
    let headers = response.headers_mut();
    headers.insert("remote-user", header_text(&holder.subject().to_string()));
    // The client the token was issued to (docs/api.md §12): the client itself for its own token,
    // the client acting for the person for a token the person gave it; empty for the person's
    // own sign-in and a session cookie.
    let client = holder.client().unwrap_or_default();
    headers.insert("remote-client", header_text(&client));
    // The client acting for the person with a token it exchanged for theirs (RFC 8693 `act`,
    // docs/api.md §11); empty for any other token.
    let actor = match holder {
        Holder::Person(who) => who.actor.clone().unwrap_or_default(),
        _ => String::new(),
    };
    headers.insert("remote-actor", header_text(&actor));
    // The DPoP key the token is bound to (RFC 9449: the caller proved it holds it, for this very
    // request); empty for a bearer token, an API key and a session cookie.
    let dpop = match holder {
        Holder::Person(who) => who.dpop.clone().unwrap_or_default(),
        Holder::Client(client) => client.dpop.clone().unwrap_or_default(),
        Holder::Key(_) => String::new(),
    };
    headers.insert("remote-dpop", header_text(&dpop));
    // The personal API key (docs/api.md §12); empty for anything else, and sent all the same:
    // Caddy's `copy_headers` passes a header the answer lacks on as its placeholder text
    // (`{http.reverse_proxy.header.Remote-Key}`).
    let key = match holder {
        Holder::Key(key) => key.key_id.to_string(),
        _ => String::new(),
    };
    headers.insert("remote-key", header_text(&key));
    let empty = || HeaderValue::from_static("");
    match holder {
        Holder::Person(who) => {
            headers.insert("remote-email", header_text(&who.email));
            let verified = if who.email_verified { "true" } else { "false" };
            headers.insert("remote-email-verified", HeaderValue::from_static(verified));
            headers.insert("remote-name", header_text(&who.full_name));
            headers.insert("remote-groups", header_text(&who.roles.join(",")));
            headers.insert("remote-session", header_text(&who.session_id.to_string()));
            // The active organisation (docs/api.md §13): empty without one.
            let (org, org_roles) = match &who.org {
                Some(org) => (org.id.to_string(), org.roles.join(",")),
                None => (String::new(), String::new()),
            };
            headers.insert("remote-org", header_text(&org));
            headers.insert("remote-org-roles", header_text(&org_roles));
        }
        // A client for itself is no person: no address, name, roles or session. An organisation
        // when the client is bound to one, in which it has no roles.
        Holder::Client(client) => {
            for name in [
                "remote-email",
                "remote-email-verified",
                "remote-name",
                "remote-groups",
                "remote-session",
                "remote-org-roles",
            ] {
                headers.insert(name, empty());
            }
            let org = client.org_id.map(|o| o.to_string()).unwrap_or_default();
            headers.insert("remote-org", header_text(&org));
        }
        // The key's owner as they are now; a key belongs to no session. Its organisation (the
        // one it was made for), with the owner's roles in it now.
        Holder::Key(key) => {
            headers.insert("remote-email", header_text(&key.email));
            let verified = if key.email_verified { "true" } else { "false" };
            headers.insert("remote-email-verified", HeaderValue::from_static(verified));
            headers.insert("remote-name", header_text(&key.full_name));
            headers.insert("remote-groups", header_text(&key.roles.join(",")));
            headers.insert("remote-session", empty());
            let (org, org_roles) = match &key.org {
                Some(org) => (org.id.to_string(), org.roles.join(",")),
                None => (String::new(), String::new()),
            };
            headers.insert("remote-org", header_text(&org));
            headers.insert("remote-org-roles", header_text(&org_roles));
        }
    }
    response
}
