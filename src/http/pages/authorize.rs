//! `GET /oauth2/authorize` (docs/api.md §11): the authorization page. The request is checked
//! here first: an unknown client or an unregistered redirect URI is an error page (never a
//! redirect), any other fault goes back to the client at once (a self-registered client's only as
//! a link, unless the person has dealt with it), and `prompt=none` is answered here
//! from the browser's session cookie (§6b) without a page. Otherwise the page's script signs the
//! person in (through `/sign-in`, which comes back here), asks consent, and calls
//! `POST /api/v1/oauth2/authorize` with the person's token: the consent is sent with a bearer
//! token no other site can read, so no cross-site form can forge it.

use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{Html, IntoResponse, Redirect, Response};

use super::{AppState, PageOptions};
use crate::error::Error;
use crate::http::authz::cookie_identity;
use crate::provider::{Authorization, AuthorizeRequest, Person};

/// The request of the query. Each parameter counts once (its first value): a repeated
/// `client_id` or `redirect_uri` is refused outright.
fn request(query: &str) -> Result<AuthorizeRequest, Error> {
    let pairs: Vec<(String, String)> = form_urlencoded::parse(query.as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    let count = |name: &str| pairs.iter().filter(|(k, _)| k == name).count();
    let one = |name: &str| {
        pairs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .filter(|v| !v.is_empty())
    };
    for name in ["client_id", "redirect_uri"] {
        if count(name) > 1 {
            return Err(Error::field(name, "is given more than once"));
        }
    }
    Ok(AuthorizeRequest {
        client_id: one("client_id").unwrap_or_default(),
        redirect_uri: one("redirect_uri").unwrap_or_default(),
        // Absent is not `code`: this endpoint answers unsupported_response_type for it.
        response_type: Some(one("response_type").unwrap_or_default()),
        scope: one("scope"),
        state: one("state"),
        code_challenge: one("code_challenge"),
        code_challenge_method: one("code_challenge_method"),
        nonce: one("nonce"),
        prompt: one("prompt"),
        // Not a number: as good as a negative one (invalid_request).
        max_age: one("max_age").map(|m| m.parse().unwrap_or(-1)),
        resource: one("resource"),
        consent: None,
        org_id: None,
    })
}

fn error_page(state: &AppState, error: &Error) -> Result<Response, Error> {
    let reason = match error {
        Error::Validation(fields)
            if fields.contains_key("clientId") || fields.contains_key("client_id") =>
        {
            "The application that sent you here is not registered with this service."
        }
        _ => "The address the application asked to return to is not registered for it.",
    };
    let options = PageOptions {
        client_name: Some(reason.to_owned()),
        form: minijinja::context! { return_url => None::<String>, return_host => None::<String> },
        ..PageOptions::default()
    };
    let body = state
        .pages
        .render_page("authorize-error", None, super::ACCOUNT, &options)?;
    Ok((StatusCode::BAD_REQUEST, Html(body)).into_response())
}

/// An error for a self-registered client the person has not dealt with: said here, with its
/// redirect URI as a link naming the host (never followed at once: docs/api.md §11).
fn unvouched_page(state: &AppState, name: &str, to: &str) -> Result<Response, Error> {
    let url = url::Url::parse(to).map_err(|_| Error::field("redirectUri", "is not a URL"))?;
    let description = url
        .query_pairs()
        .find(|(k, _)| k == "error_description")
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default();
    let options = PageOptions {
        client_name: Some(format!(
            "{name} sent a request this service cannot complete: {description}."
        )),
        form: minijinja::context! {
            return_url => to,
            return_host => url.host_str(),
        },
        ..PageOptions::default()
    };
    let body = state
        .pages
        .render_page("authorize-error", None, super::ACCOUNT, &options)?;
    Ok((StatusCode::BAD_REQUEST, Html(body)).into_response())
}

pub(super) async fn page(
    State(state): State<AppState>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Result<Response, Error> {
    state.require_provider()?;
    let mut request = match request(query.as_deref().unwrap_or_default()) {
        Ok(request) => request,
        Err(error) => return error_page(&state, &error),
    };
    request.resource = crate::http::resource::audience_of(&state, request.resource.take());
    let oauth = &state.auth.oauth;
    let client = match oauth
        .authorization_client(&request.client_id, &request.redirect_uri)
        .await
    {
        Ok(client) => client,
        Err(error @ Error::Validation(_)) => return error_page(&state, &error),
        Err(error) => return Err(error),
    };
    let silent = request
        .prompt
        .as_deref()
        .is_some_and(|p| p.split(' ').any(|v| v == "none"));
    // prompt=none: the browser's own session, from its cookie; no page.
    let person = if silent {
        match cookie_identity(&state, &headers).await {
            Ok(identity) => identity.map(|i| Person {
                user_id: i.user_id,
                session_id: i.session_id,
            }),
            Err(response) => return Ok(response),
        }
    } else {
        None
    };
    // Without a person this only judges the request: a fault comes back as a redirect, a good
    // request as LoginRequired, and the page takes over.
    let authorization = match oauth.authorize(&request, person).await {
        Ok(authorization) => authorization,
        // The client was removed meanwhile (another instance, the CLI).
        Err(error @ Error::Validation(_)) => return error_page(&state, &error),
        Err(error) => return Err(error),
    };
    match authorization {
        Authorization::Redirect(to) => Ok(Redirect::to(&to).into_response()),
        Authorization::Unvouched(to) => unvouched_page(&state, &client.name, &to),
        Authorization::ConsentRequired { .. } | Authorization::LoginRequired => {
            let options = PageOptions {
                title: Some(format!("Continue to {}", client.name)),
                client_name: Some(client.name),
                ..PageOptions::default()
            };
            let body = state.pages.render_page(
                "authorize",
                Some("authorize"),
                super::ACCOUNT,
                &options,
            )?;
            Ok(Html(body).into_response())
        }
    }
}
