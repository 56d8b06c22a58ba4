//! `POST /auth/browser-session`: the session cookie for the caller's session (docs/api.md §6b).

use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};

use super::views::Done;
use crate::error::Result;
use crate::http::cookies::set_cookie;
use crate::http::docs::{bearer_errors, error_responses, server_errors};
use crate::http::extract::AuthUser;
use crate::http::{AppState, Envelope, ok};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub(super) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(browser_session))
}

error_responses!(BearerErrors: bearer_errors(), server_errors());

/// Set the session cookie of the caller's session (the pages call this after signing in).
///
/// The answer's `Set-Cookie` carries an opaque value bound to the session of the access token:
/// `HttpOnly`, `SameSite=Lax`, `Path=/`, `Secure` when the public URL is https, `Domain` from
/// `GATEHOUSE_COOKIE_DOMAIN`, `Max-Age` until the session lapses. The cookie counts at
/// forward-auth and auth-request only, and ends with its session. Takes no body; the cookie
/// itself is never accepted in place of the bearer token here.
#[utoipa::path(post, path = "/browser-session", tag = "auth", security(("bearer" = [])),
    responses((status = 200, description = "Cookie set", body = Envelope<Done>,
        headers(("Set-Cookie" = String, description = "The session cookie"))), BearerErrors))]
async fn browser_session(
    State(state): State<AppState>,
    AuthUser(who): AuthUser,
) -> Result<Response> {
    let cookie = state.auth.browser.issue(&who).await?;
    let set = set_cookie(&state.browser, &cookie.value, cookie.max_age);
    Ok(([(header::SET_COOKIE, set)], ok(Done {})).into_response())
}
