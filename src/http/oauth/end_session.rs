//! OpenID Connect RP-Initiated Logout 1.0 (docs/api.md §11): `GET|POST /oauth2/end-session`.
//! With a valid `id_token_hint` (expired or not) the person's Gatehouse session and every client
//! session begun from it end at once; without one, a page asks the person first, and its form
//! posts back a confirmation bound to the browser's session (no other site can forge it, and the
//! `SameSite=Lax` cookie does not travel with another site's POST anyway). Then the browser goes
//! to the client's `post_logout_redirect_uri` if it is registered for that client and the client
//! is vouched for (a valid hint, or an operator's client), else to a page saying it is signed
//! out, which offers a self-registered client's URI as a link naming its host.

use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Redirect, Response};
use minijinja::context;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::{form_parameters, single};
use crate::error::Error;
use crate::http::AppState;
use crate::http::cookies::{clear_cookie, cookie_values};
use crate::model::Client;
use crate::provider::logout::BrowserPerson;

/// As forward-auth: at most this many cookies of the name are tried.
const MAX_COOKIES: usize = 8;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(end_session_get, end_session_post))
}

/// The request's parameters, each given at most once (a repeated one counts as absent).
struct Request {
    id_token_hint: Option<String>,
    client_id: Option<String>,
    post_logout_redirect_uri: Option<String>,
    state: Option<String>,
    confirm: Option<String>,
}

impl Request {
    fn from_pairs(pairs: &[(String, String)]) -> Request {
        let one = |name: &str| single(pairs, name).ok().flatten().map(str::to_owned);
        Request {
            id_token_hint: one("id_token_hint"),
            client_id: one("client_id"),
            post_logout_redirect_uri: one("post_logout_redirect_uri"),
            state: one("state"),
            confirm: one("confirm"),
        }
    }
}

/// Sign the person out (OpenID Connect RP-Initiated Logout 1.0), for a browser sent here by a
/// relying party.
///
/// Query `id_token_hint` (an ID token of this issuer, expired or not), `post_logout_redirect_uri`
/// (followed only if registered for the client), `state`, `client_id` (with a hint, it must be
/// the hint's audience: else 400 and nothing ends). With a valid hint the person's session and
/// every client session begun from it end, and the browser goes to the redirect URI (303, with
/// `state`) or to a page saying it is signed out; without one, an HTML page asks for
/// confirmation first, and a self-registered client's redirect URI is offered on the signed-out
/// page as a link (never a 303 on its word alone). Errors are pages or the envelope (404 while the
/// provider is off), never a redirect to an unregistered URI.
#[utoipa::path(get, path = "/oauth2/end-session", tag = "oauth",
    params(
        ("id_token_hint" = Option<String>, Query, description = "An ID token this issuer signed"),
        ("post_logout_redirect_uri" = Option<String>, Query, description = "Registered for the client"),
        ("state" = Option<String>, Query, description = "Given back on the redirect"),
        ("client_id" = Option<String>, Query, description = "The client, when there is no hint"),
    ),
    responses(
        (status = 200, description = "A page: the confirmation, or signed out", content_type = "text/html", body = String),
        (status = 303, description = "Signed out; to the post-logout redirect URI"),
        (status = 400, description = "A page: client_id is not the hint's client; nothing ended", content_type = "text/html", body = String),
        (status = 404, description = "The OpenID provider is off")))]
async fn end_session_get(
    State(state): State<AppState>,
    headers: HeaderMap,
    query: RawQuery,
) -> Response {
    let pairs: Vec<(String, String)> =
        form_urlencoded::parse(query.0.unwrap_or_default().as_bytes())
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect();
    end_session(&state, &headers, Request::from_pairs(&pairs), false).await
}

/// Sign the person out: the relying party's request as a form, or the confirmation page's.
///
/// The parameters of `GET`, form-encoded, plus `confirm`: the confirmation page's value, bound to
/// the browser's session (a forged one ends nothing and shows the page again).
#[utoipa::path(post, path = "/oauth2/end-session", tag = "oauth",
    request_body(content = String, content_type = "application/x-www-form-urlencoded",
        description = "id_token_hint, post_logout_redirect_uri, state, client_id, confirm"),
    responses(
        (status = 200, description = "A page: the confirmation, or signed out", content_type = "text/html", body = String),
        (status = 303, description = "Signed out; to the post-logout redirect URI"),
        (status = 404, description = "The OpenID provider is off")))]
async fn end_session_post(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let pairs = form_parameters(&headers, &body).unwrap_or_default();
    end_session(&state, &headers, Request::from_pairs(&pairs), true).await
}

async fn end_session(
    state: &AppState,
    headers: &HeaderMap,
    req: Request,
    posted: bool,
) -> Response {
    match run(state, headers, req, posted).await {
        Ok(response) => response,
        Err(error) => error.into_response(),
    }
}

async fn run(
    state: &AppState,
    headers: &HeaderMap,
    req: Request,
    posted: bool,
) -> Result<Response, Error> {
    state.require_provider()?;
    let logouts = &state.auth.logouts;
    let hint = req.id_token_hint.as_deref().and_then(|t| logouts.hint(t));
    // RP-Initiated Logout §2: with both, `client_id` must be the hint's audience. A hint paired
    // with another client's id is no request of either client's: nothing ends.
    if let (Some(hint), Some(client_id)) = (&hint, req.client_id.as_deref()) {
        if hint.client != client_id {
            let page = state.pages.render_form(
                "signed-out",
                context! {
                    mismatch => true,
                    ended => false,
                    return_url => None::<String>,
                    return_host => None::<String>,
                    client_name => None::<String>,
                },
            )?;
            let answer = (StatusCode::BAD_REQUEST, Html(page)).into_response();
            return Ok(with_page_headers(answer, None));
        }
    }
    // The client: the hint's audience (an ID token of ours proves it was given tokens, so its
    // metadata document may be read), else `client_id`, known already: a bare link must not make
    // Gatehouse fetch a URL of its author's (docs/api.md §12).
    let client: Option<Client> = match (&hint, req.client_id.as_deref()) {
        (Some(hint), _) => state.auth.clients.find(&hint.client).await?,
        (None, Some(id)) => state.auth.clients.known(id).await?,
        (None, None) => None,
    };
    let registered = req.post_logout_redirect_uri.as_deref().filter(|uri| {
        client
            .as_ref()
            .is_some_and(|c| c.allows_post_logout_redirect(uri))
    });
    // Followed at once only for an operator's client, or with a valid hint: a self-registered
    // client's URI is anyone's (open registration), and a 303 from this origin to it without
    // proof would make Gatehouse a phishing link's first hop. Else the page offers it as a link.
    let vouched = hint.is_some() || client.as_ref().is_some_and(|c| !c.self_registered());
    let (redirect, offered) = match registered {
        Some(uri) if vouched => (Some(uri), None),
        Some(uri) => (None, Some(uri)),
        None => (None, None),
    };
    let browser = browser_person(state, headers).await?;
    let confirmed = posted
        && match (browser, req.confirm.as_deref()) {
            (Some(person), Some(value)) => logouts.confirmed(person, value),
            _ => false,
        };
    if hint.is_none() && !confirmed {
        if let Some(person) = browser {
            let form = context! {
                confirm => logouts.confirmation(person),
                client_id => client.as_ref().map(|c| c.id.to_string()),
                client_name => client.as_ref().map(|c| c.name.clone()),
                post_logout_redirect_uri => registered,
                state => req.state.as_deref(),
            };
            let page = state.pages.render_form("end-session", form)?;
            return Ok(with_page_headers(Html(page).into_response(), redirect));
        }
    }
    let ended = if hint.is_some() || confirmed {
        logouts.end_session(browser, hint.as_ref()).await?
    } else {
        0
    };
    let clear = clear_cookie(&state.browser);
    let with_state = |uri: &str| {
        url::Url::parse(uri).ok().map(|mut url| {
            if let Some(s) = req.state.as_deref() {
                url.query_pairs_mut().append_pair("state", s);
            }
            url
        })
    };
    if let Some(url) = redirect.and_then(with_state) {
        return Ok(([(header::SET_COOKIE, clear)], Redirect::to(url.as_str())).into_response());
    }
    let link = offered.and_then(with_state);
    let page = state.pages.render_form(
        "signed-out",
        context! {
            mismatch => false,
            ended => ended > 0 || browser.is_some() && confirmed,
            return_url => link.as_ref().map(url::Url::as_str),
            return_host => link.as_ref().and_then(|u| u.host_str().map(str::to_owned)),
            client_name => client.as_ref().filter(|_| link.is_some()).map(|c| c.name.clone()),
        },
    )?;
    let answer = (StatusCode::OK, [(header::SET_COOKIE, clear)], Html(page)).into_response();
    Ok(with_page_headers(answer, None))
}

/// The pages' headers (`pages::page_headers`), with the form allowed to end at the client's
/// post-logout URI: browsers hold a form's redirects to `form-action` too.
fn with_page_headers(mut response: Response, redirect: Option<&str>) -> Response {
    let origin = redirect
        .and_then(|uri| url::Url::parse(uri).ok())
        .map(|url| url.origin().ascii_serialization())
        .filter(|origin| origin != "null")
        .map_or(String::new(), |origin| format!(" {origin}"));
    let csp = format!(
        "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'{origin}; \
         frame-ancestors 'none'; base-uri 'none'"
    );
    let headers = response.headers_mut();
    if let Ok(value) = HeaderValue::from_str(&csp) {
        headers.insert(header::CONTENT_SECURITY_POLICY, value);
    }
    for (name, value) in [
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::REFERRER_POLICY, "no-referrer"),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::CACHE_CONTROL, "no-store"),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    response
}

/// The person whose session cookie the browser sent, if any is live.
async fn browser_person(
    state: &AppState,
    headers: &HeaderMap,
) -> Result<Option<BrowserPerson>, Error> {
    let values = cookie_values(headers, &state.browser.cookie_name);
    for value in values.into_iter().take(MAX_COOKIES) {
        match state.auth.browser.identify(value).await {
            Ok(identity) => {
                return Ok(Some(BrowserPerson {
                    user_id: identity.user_id,
                    session_id: identity.session_id,
                }));
            }
            Err(error @ (Error::Unavailable(_) | Error::Internal(_))) => return Err(error),
            Err(_) => {}
        }
    }
    Ok(None)
}
