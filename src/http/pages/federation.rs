//! The browser's side of signing in with another identity provider (docs/api.md §14): page
//! routes, not API calls (no envelope, outside the API document). `start` sends the browser to the
//! provider with a cookie binding the flow to it; `callback` is where the provider sends it back,
//! and sends it on to `/sign-in` (or `/account` for a link or a re-authentication) with the
//! outcome in the query: a flag, or an error code the page turns into a sentence. Never a 5xx
//! page: whatever goes wrong is a redirect with a code.

use axum::Router;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde::Deserialize;

use crate::federation::{CallbackAnswer, Landing, Refusal};
use crate::http::AppState;
use crate::http::auth::identities::FLOW_COOKIE_SECONDS;
use crate::http::cookies::{FEDERATION_COOKIE, cookie_values, federation_cookie, set_cookie};
use crate::http::extract::Caller;
use crate::http::pages::ACCOUNT;
use crate::model::FlowPurpose;

/// Seconds the handoff cookie lives: the finished sign-in waits 60 s for the pages.
const HANDOFF_COOKIE_SECONDS: i64 = 60;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/auth/providers/{id}/start", get(start))
        .route("/auth/providers/{id}/callback", get(callback))
}

#[derive(Deserialize)]
struct StartQuery {
    return_to: Option<String>,
    login_hint: Option<String>,
}

/// `GET /auth/providers/{id}/start?return_to=&login_hint=`: to the provider.
async fn start(
    State(state): State<AppState>,
    Caller(client): Caller,
    id: Result<Path<String>, axum::extract::rejection::PathRejection>,
    query: Result<Query<StartQuery>, QueryRejection>,
) -> Response {
    let Ok(Path(id)) = id else {
        return to_sign_in(Refusal::ProviderUnknown, None, None);
    };
    let query = query.ok().map(|Query(q)| q);
    let return_to = query
        .as_ref()
        .and_then(|q| q.return_to.as_deref())
        .and_then(|r| state.pages.return_urls.allow(r))
        .unwrap_or_else(|| ACCOUNT.to_owned());
    // A hint is a convenience for the provider's form: an address's worth, no more.
    let hint = query
        .as_ref()
        .and_then(|q| q.login_hint.as_deref())
        .filter(|h| h.len() <= 254 && !h.chars().any(char::is_control));
    let known = state.auth.federation.providers().iter().any(|p| p.id == id);
    match state
        .auth
        .federation
        .start_sign_in(&id, return_to.clone(), hint, &client)
        .await
    {
        Ok(started) => {
            let cookie = federation_cookie(&state.browser, &started.binding, FLOW_COOKIE_SECONDS);
            redirect(&started.location, vec![cookie])
        }
        Err(refusal) => to_sign_in(refusal, known.then_some(id.as_str()), Some(&return_to)),
    }
}

#[derive(Deserialize)]
struct CallbackQuery {
    code: Option<String>,
    state: Option<String>,
    error: Option<String>,
}

/// `GET /auth/providers/{id}/callback?code&state` (or `?error&state`): the provider's answer.
async fn callback(
    State(state): State<AppState>,
    Caller(client): Caller,
    headers: HeaderMap,
    id: Result<Path<String>, axum::extract::rejection::PathRejection>,
    query: Result<Query<CallbackQuery>, QueryRejection>,
) -> Response {
    let clear = federation_cookie(&state.browser, "", 0);
    let Ok(Path(id)) = id else {
        return with_cookies(
            to_sign_in(Refusal::ProviderUnknown, None, None),
            vec![clear],
        );
    };
    let answer = match query.ok().map(|Query(q)| q) {
        Some(CallbackQuery {
            code: Some(code),
            state: Some(flow_state),
            error: None,
        }) => CallbackAnswer::Code {
            code,
            state: flow_state,
        },
        Some(CallbackQuery {
            error: Some(error),
            state: flow_state,
            ..
        }) => CallbackAnswer::Error {
            error,
            state: flow_state,
        },
        _ => CallbackAnswer::Malformed,
    };
    let bindings = cookie_values(&headers, FEDERATION_COOKIE);
    let landing = state
        .auth
        .federation
        .callback(&id, &bindings, answer, &client)
        .await;
    match landing {
        Landing::SignedIn {
            return_to,
            handoff,
            session_cookie,
        } => {
            let mut cookies = vec![federation_cookie(
                &state.browser,
                &handoff,
                HANDOFF_COOKIE_SECONDS,
            )];
            if let Some(session) = session_cookie {
                cookies.push(set_cookie(&state.browser, &session.value, session.max_age));
            }
            let location = format!("/sign-in?federated=1&return_to={}", encode(&return_to));
            redirect(&location, cookies)
        }
        Landing::Linked { provider } => {
            let location = format!("/account?linked={}", encode(&provider));
            redirect(&location, vec![clear])
        }
        Landing::Reauthenticated { provider } => {
            let location = format!("/account?reauthenticated={}", encode(&provider));
            redirect(&location, vec![clear])
        }
        Landing::Refused {
            refusal,
            provider,
            purpose: purpose @ (FlowPurpose::Link | FlowPurpose::Reauthenticate),
            ..
        } => {
            let key = match purpose {
                FlowPurpose::Link => "link_error",
                _ => "reauth_error",
            };
            let location = format!(
                "/account?{key}={}&provider={}",
                refusal.code(),
                encode(&provider)
            );
            redirect(&location, vec![clear])
        }
        Landing::Refused {
            refusal,
            provider,
            return_to,
            purpose: FlowPurpose::SignIn,
        } => {
            // Only a configured id goes back into the URL, never a made-up one.
            let known = refusal != Refusal::ProviderUnknown;
            let response = to_sign_in(
                refusal,
                known.then_some(provider.as_str()),
                return_to.as_deref(),
            );
            with_cookies(response, vec![clear])
        }
    }
}

/// `/sign-in?error=<code>&provider=<id>&return_to=<where>`.
fn to_sign_in(refusal: Refusal, provider: Option<&str>, return_to: Option<&str>) -> Response {
    let mut location = format!("/sign-in?error={}", refusal.code());
    if let Some(provider) = provider {
        location.push_str("&provider=");
        location.push_str(&encode(provider));
    }
    if let Some(return_to) = return_to {
        location.push_str("&return_to=");
        location.push_str(&encode(return_to));
    }
    redirect(&location, Vec::new())
}

/// 302 to `location` with `cookies` set.
fn redirect(location: &str, cookies: Vec<HeaderValue>) -> Response {
    let mut response = StatusCode::FOUND.into_response();
    let headers = response.headers_mut();
    match HeaderValue::from_str(location) {
        Ok(value) => {
            headers.insert(header::LOCATION, value);
        }
        // A provider's authorization URL is a URL; were it not, the sign-in page still works.
        Err(_) => {
            headers.insert(header::LOCATION, HeaderValue::from_static("/sign-in"));
        }
    }
    with_cookies(response, cookies)
}

fn with_cookies(mut response: Response, cookies: Vec<HeaderValue>) -> Response {
    for cookie in cookies {
        response.headers_mut().append(header::SET_COOKIE, cookie);
    }
    response
}

/// A query value, percent-encoded.
fn encode(value: &str) -> String {
    url::form_urlencoded::byte_serialize(value.as_bytes()).collect()
}
