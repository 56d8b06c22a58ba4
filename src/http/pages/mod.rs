//! The service's own pages (docs/api.md §10): sign-in, the mailed links' landing pages,
//! registration and the account page, with their scripts and stylesheet, all embedded in the
//! binary. The pages are HTML shells; their scripts call the JSON API through the browser client
//! library (`clients/js`), served here too. They are not API calls, so they are routed outside the
//! API document.

use std::sync::Arc;

use axum::Router;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::{HeaderValue, StatusCode};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::get;
use minijinja::{Environment, Value, context};
use serde::Deserialize;

use super::AppState;
use crate::config::{ReturnUrls, Settings};
use crate::error::Error;

mod account;
mod assets;
mod authorize;
pub(super) mod federation;

/// Where a signed-in user lands when no allowed `return_to` was given.
const ACCOUNT: &str = "/account";
/// The page made of `account::SECTIONS`.
const ACCOUNT_PAGE: &str = "account";

/// No inline script or style, nothing from another origin, no framing, no form posting
/// elsewhere: an injected `<script>` or `style=` does nothing, and no other site can frame the
/// pages to trick a click (X-Frame-Options for browsers that predate `frame-ancestors`).
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
                   connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// What a page may be told besides its name.
#[derive(Default)]
struct PageOptions {
    /// The sign-in page: an application asks for a second factor (docs/api.md §6b).
    second_factor: bool,
    /// Instead of the page's own title.
    title: Option<String>,
    /// The client an authorization is for (docs/api.md §11).
    client_name: Option<String>,
    /// The sign-in page: sign in again even with a session (`prompt=login`, `max_age`).
    again: bool,
    /// What a page's form shows (the end-session pages, docs/api.md §11).
    form: Value,
}

/// What the pages need of the settings.
pub struct Pages {
    templates: Environment<'static>,
    product_name: String,
    registration_open: bool,
    passkeys: bool,
    return_urls: ReturnUrls,
}

/// Every page: its path, template, title and script (`assets/pages/<script>.js`).
const PAGES: &[(&str, &str, &str)] = &[
    (
        "sign-in",
        "Sign in",
        include_str!("../../../assets/pages/sign-in.html"),
    ),
    (
        "forgot-password",
        "Forgotten password",
        include_str!("../../../assets/pages/forgot-password.html"),
    ),
    (
        "reset-password",
        "Choose a new password",
        include_str!("../../../assets/pages/reset-password.html"),
    ),
    (
        "verify-email",
        "Verify your address",
        include_str!("../../../assets/pages/verify-email.html"),
    ),
    (
        "accept-invitation",
        "Accept your invitation",
        include_str!("../../../assets/pages/accept-invitation.html"),
    ),
    (
        "register",
        "Create an account",
        include_str!("../../../assets/pages/register.html"),
    ),
    (
        "register-closed",
        "Registration is closed",
        include_str!("../../../assets/pages/register-closed.html"),
    ),
    (
        "account",
        "Your account",
        include_str!("../../../assets/pages/account.html"),
    ),
    (
        "authorize",
        "Authorize",
        include_str!("../../../assets/pages/authorize.html"),
    ),
    (
        "device",
        "Connect a device",
        include_str!("../../../assets/pages/device.html"),
    ),
    (
        "authorize-error",
        "This sign-in link is not valid",
        include_str!("../../../assets/pages/authorize-error.html"),
    ),
    (
        "end-session",
        "Sign out",
        include_str!("../../../assets/pages/end-session.html"),
    ),
    (
        "signed-out",
        "Signed out",
        include_str!("../../../assets/pages/signed-out.html"),
    ),
    (
        "not-found",
        "Page not found",
        include_str!("../../../assets/pages/not-found.html"),
    ),
    (
        "forbidden",
        "Not open to you",
        include_str!("../../../assets/pages/forbidden.html"),
    ),
];

const LAYOUT: &str = include_str!("../../../assets/pages/layout.html");

impl Pages {
    pub fn new(settings: &Settings) -> anyhow::Result<Pages> {
        let mut templates = Environment::new();
        templates.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
        // The `.html` names turn on auto-escaping: the product name is the operator's text.
        templates.add_template("layout.html", LAYOUT)?;
        for (name, _, source) in PAGES {
            templates.add_template_owned(format!("{name}.html"), *source)?;
        }
        for section in account::SECTIONS {
            templates.add_template_owned(account::template_name(section), section.html)?;
        }
        Ok(Pages {
            templates,
            product_name: settings.mail.product_name.clone(),
            registration_open: settings.registration_open,
            passkeys: settings.webauthn.is_some(),
            return_urls: settings.allowed_return_urls.clone().with_hosts(
                &settings.public_url,
                settings.browser.cookie_domain.as_deref(),
            ),
        })
    }

    /// The page `name` inside the layout, with the script of `script` (none for a page that needs
    /// none; the account page also loads each section's).
    fn render(&self, name: &str, script: Option<&str>, return_to: &str) -> Result<String, Error> {
        self.render_with(name, script, return_to, false)
    }

    /// A page without script whose template reads `form` (the end-session pages of the OpenID
    /// provider, docs/api.md §11: a plain form, no script needed).
    pub(crate) fn render_form(&self, name: &str, form: Value) -> Result<String, Error> {
        let options = PageOptions {
            form,
            ..PageOptions::default()
        };
        self.render_page(name, None, ACCOUNT, &options)
    }

    /// `render`; with `second_factor`, the sign-in page says that the application asks for a
    /// second factor (docs/api.md §6b) and signs in again instead of going straight back.
    fn render_with(
        &self,
        name: &str,
        script: Option<&str>,
        return_to: &str,
        second_factor: bool,
    ) -> Result<String, Error> {
        let options = PageOptions {
            second_factor,
            ..PageOptions::default()
        };
        self.render_page(name, script, return_to, &options)
    }

    /// `render`, with what a page may be told besides (`PageOptions`).
    fn render_page(
        &self,
        name: &str,
        script: Option<&str>,
        return_to: &str,
        options: &PageOptions,
    ) -> Result<String, Error> {
        let second_factor = options.second_factor;
        let title = options.title.as_deref().unwrap_or_else(|| {
            PAGES
                .iter()
                .find(|(n, _, _)| *n == name)
                .map_or("", |(_, title, _)| *title)
        });
        let account = name == ACCOUNT_PAGE;
        let mut scripts: Vec<String> = script
            .map(|s| format!("/assets/pages/{s}.js"))
            .into_iter()
            .collect();
        if account {
            scripts.extend(
                account::SECTIONS
                    .iter()
                    .map(|s| format!("/assets/pages/account/{}.js", s.id)),
            );
        }
        let page = context! {
            product_name => &self.product_name,
            registration_open => self.registration_open,
            passkeys => self.passkeys,
            return_to => return_to,
            title => title,
            second_factor => second_factor,
            client_name => options.client_name.as_deref().unwrap_or_default(),
            again => options.again,
            form => &options.form,
        };
        let failed = |e: minijinja::Error| Error::internal(anyhow::anyhow!("page {name}: {e}"));
        // The account page's sections, each rendered with the page's context.
        let sections = if account {
            account::SECTIONS
                .iter()
                .map(|s| {
                    let html = self
                        .templates
                        .get_template(&account::template_name(s))
                        .and_then(|t| t.render(&page))
                        .map_err(failed)?;
                    Ok(context! { id => s.id, title => s.title, html => Value::from_safe_string(html) })
                })
                .collect::<Result<Vec<Value>, Error>>()?
        } else {
            Vec::new()
        };
        let page = context! { sections => sections, ..page };
        let body = self
            .templates
            .get_template(&format!("{name}.html"))
            .and_then(|t| t.render(&page))
            .map_err(failed)?;
        self.templates
            .get_template("layout.html")
            .and_then(|t| {
                t.render(context! {
                    product_name => &self.product_name,
                    title => title,
                    scripts => scripts,
                    return_to => return_to,
                    // The account page: wide, with the person's name and a sign-out in the bar.
                    signed_in => account,
                    body => Value::from_safe_string(body),
                })
            })
            .map_err(failed)
    }
}

pub fn router() -> Router<AppState> {
    let page = |name: &'static str| {
        get(move |State(state): State<AppState>| async move { html(&state, name, None) })
    };
    Router::new()
        // A browser opening the service's address: the sign-in page, which sends a person signed
        // in already (the pages keep the session in the browser) on to the account page.
        .route("/", get(|| async { Redirect::to("/sign-in") }))
        .route("/sign-in", get(sign_in))
        .route("/forgot-password", page("forgot-password"))
        .route("/reset-password", page("reset-password"))
        .route("/verify-email", page("verify-email"))
        .route("/accept-invitation", page("accept-invitation"))
        .route("/register", get(register))
        .route("/account", page("account"))
        .route("/oauth2/authorize", get(authorize::page))
        .route("/device", page("device"))
        .route("/forbidden", get(forbidden))
        .merge(assets::router())
        .layer(axum::middleware::from_fn(page_headers))
}

/// What an unknown address answers: a page for a browser's navigation outside the API (a
/// mistyped or cut-short link on the sign-in host), the envelope's 404 for everything else.
pub(crate) async fn not_found(
    State(state): State<AppState>,
    method: axum::http::Method,
    uri: axum::http::Uri,
    headers: axum::http::HeaderMap,
) -> Response {
    let accept = headers
        .get(axum::http::header::ACCEPT)
        .and_then(|v| v.to_str().ok());
    let path = uri.path();
    let api = ["/api/", "/oauth2/", "/.well-known/", "/auth/", "/assets/"]
        .iter()
        .any(|prefix| path.starts_with(prefix));
    if api || !crate::http::navigation::is_navigation(method.as_str(), accept) {
        return Error::NotFound.into_response();
    }
    match state.pages.render("not-found", None, ACCOUNT) {
        Ok(body) => with_page_headers((StatusCode::NOT_FOUND, Html(body)).into_response()),
        Err(error) => error.into_response(),
    }
}

/// `GET /forbidden`: what a proxy shows a person an access rule refused (the web-apps recipes
/// send a refused navigation here), a page rather than the proxy's bare 403.
async fn forbidden(State(state): State<AppState>) -> Result<Response, Error> {
    let body = state.pages.render("forbidden", None, ACCOUNT)?;
    Ok((StatusCode::FORBIDDEN, Html(body)).into_response())
}

fn html(state: &AppState, name: &str, return_to: Option<String>) -> Result<Response, Error> {
    let return_to = return_to.unwrap_or_else(|| ACCOUNT.to_owned());
    let body = state.pages.render(name, Some(name), &return_to)?;
    Ok(Html(body).into_response())
}

#[derive(Deserialize)]
struct SignInQuery {
    return_to: Option<String>,
    /// `required`: forward-auth sent the browser because a rule asks for a second factor.
    second_factor: Option<String>,
    /// The client an authorization is for (docs/api.md §11): named in the heading.
    client_id: Option<String>,
    /// `1`: sign in again even with a session (`prompt=login`, an exceeded `max_age`).
    again: Option<String>,
}

/// `?return_to=` is followed only to the public URL's host, a host under
/// `GATEHOUSE_COOKIE_DOMAIN` and what `GATEHOUSE_ALLOWED_RETURN_URLS` allows, anything else
/// silently to the account page: an open redirect here would make the real sign-in page the first
/// step of a phishing link.
async fn sign_in(
    State(state): State<AppState>,
    // A query that does not parse is as good as none: the page still signs in.
    query: Result<Query<SignInQuery>, QueryRejection>,
) -> Result<Response, Error> {
    let query = query.ok().map(|Query(q)| q);
    let second_factor = query
        .as_ref()
        .is_some_and(|q| q.second_factor.as_deref() == Some("required"));
    let again = query
        .as_ref()
        .is_some_and(|q| q.again.as_deref() == Some("1"));
    // Only a client known already is named: the heading is no place for a link's own text, and
    // a link must not make Gatehouse fetch a metadata document (the authorization did that).
    let client_name = match query.as_ref().and_then(|q| q.client_id.as_deref()) {
        Some(id) if state.provider_issuer().is_some() => {
            state.auth.clients.known(id).await?.map(|c| c.name)
        }
        _ => None,
    };
    let return_to = query
        .and_then(|q| q.return_to)
        .and_then(|r| state.pages.return_urls.allow(&r))
        .unwrap_or_else(|| ACCOUNT.to_owned());
    let options = PageOptions {
        second_factor,
        title: client_name
            .as_ref()
            .map(|name| format!("Sign in to continue to {name}")),
        client_name,
        again,
        ..PageOptions::default()
    };
    let body = state
        .pages
        .render_page("sign-in", Some("sign-in"), &return_to, &options)?;
    Ok(Html(body).into_response())
}

/// Closed registration is a page saying so (and whom to ask), with 404: there is no form here.
async fn register(State(state): State<AppState>) -> Result<Response, Error> {
    if state.pages.registration_open {
        return html(&state, "register", None);
    }
    let body = state.pages.render("register-closed", None, ACCOUNT)?;
    Ok((StatusCode::NOT_FOUND, Html(body)).into_response())
}

/// The headers of every page and asset. `no-store` comes from the router's default for pages
/// (the mailed tokens are in their URLs); assets set their own caching.
async fn page_headers(req: axum::extract::Request, next: axum::middleware::Next) -> Response {
    with_page_headers(next.run(req).await)
}

fn with_page_headers(mut response: Response) -> Response {
    let headers = response.headers_mut();
    for (name, value) in [
        ("content-security-policy", CSP),
        ("x-frame-options", "DENY"),
        // The reset, verification and invitation tokens are in the pages' URLs: no request the
        // page makes may carry them to anyone in a Referer.
        ("referrer-policy", "no-referrer"),
        ("x-content-type-options", "nosniff"),
        // Another site's window opening a page gets no handle on it.
        ("cross-origin-opener-policy", "same-origin"),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    response
}

/// Shared with the router: built once at start, a broken template stops the start.
pub type SharedPages = Arc<Pages>;
