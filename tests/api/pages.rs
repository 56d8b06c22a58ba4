//! The pages over plain HTTP (docs/api.md §10), what a browser is told before any script runs:
//! a strict Content-Security-Policy and no framing on every page and asset, no Referer and no
//! caching for the pages (mailed tokens are in their URLs), the assets' types and revalidation,
//! return_to limited to the allowed URLs, and registration's page only when it is open. The
//! pages' behaviour is tested in Chromium (browser.rs).

use gatehouse::config::SettingsArgs;
use reqwest::StatusCode;

use crate::helpers::{Backend, TestApp, both_backends, spawn_app, spawn_app_with};

both_backends!(
    every_page_and_asset_is_served_with_the_security_headers,
    assets_have_their_types_and_revalidate,
    return_to_goes_only_where_allowed,
    registration_has_a_page_only_when_open,
    mailed_links_open_pages_that_consume_nothing,
    the_root_sends_a_browser_to_sign_in,
);

const PAGES: &[&str] = &[
    "/sign-in",
    "/forgot-password",
    "/reset-password?token=abc",
    "/verify-email?token=abc",
    "/accept-invitation?token=abc",
    "/register",
    "/account",
];

const ASSETS: &[(&str, &str)] = &[
    ("/assets/gatehouse.js", "text/javascript"),
    ("/assets/pages/ui.js", "text/javascript"),
    ("/assets/pages/sign-in.js", "text/javascript"),
    ("/assets/pages/account.js", "text/javascript"),
    ("/assets/pages/style.css", "text/css"),
    ("/assets/pages/favicon.svg", "image/svg+xml"),
];

struct Page {
    status: StatusCode,
    headers: reqwest::header::HeaderMap,
    body: String,
}

impl Page {
    fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_else(|| panic!("no {name} header"))
    }
}

async fn fetch(app: &TestApp, path: &str, headers: &[(&str, &str)]) -> Page {
    let mut request = app.client.get(app.url(path));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.unwrap();
    Page {
        status: response.status(),
        headers: response.headers().clone(),
        body: response.text().await.unwrap(),
    }
}

async fn every_page_and_asset_is_served_with_the_security_headers(backend: Backend) {
    let app = spawn_app_with(
        backend,
        SettingsArgs {
            registration: Some("open".into()),
            ..SettingsArgs::default()
        },
    )
    .await;
    let paths = PAGES
        .iter()
        .copied()
        .chain(ASSETS.iter().map(|(path, _)| *path));
    for path in paths {
        let page = fetch(&app, path, &[]).await;
        assert_eq!(page.status, StatusCode::OK, "{path}");
        let csp = page.header("content-security-policy");
        for directive in [
            "default-src 'none'",
            "script-src 'self'",
            "style-src 'self'",
            "frame-ancestors 'none'",
            "form-action 'self'",
            "base-uri 'none'",
        ] {
            assert!(csp.contains(directive), "{path}: {csp}");
        }
        assert!(!csp.contains("unsafe"), "{path}: {csp}");
        assert_eq!(page.header("x-frame-options"), "DENY", "{path}");
        assert_eq!(page.header("referrer-policy"), "no-referrer", "{path}");
        assert_eq!(page.header("x-content-type-options"), "nosniff", "{path}");
    }
    for path in PAGES {
        let page = fetch(&app, path, &[]).await;
        assert!(
            page.header("content-type").starts_with("text/html"),
            "{path}"
        );
        assert_eq!(page.header("cache-control"), "no-store", "{path}");
        // Nothing inline for the CSP to refuse: no script or style element without a source, no
        // style attribute, no event handler attribute; nothing from another origin.
        let body = page.body.to_ascii_lowercase();
        assert!(body.starts_with("<!doctype html>"), "{path}");
        assert!(!body.contains("<style"), "{path}");
        assert!(!body.contains(" style="), "{path}");
        assert!(
            !body.contains(" onclick=") && !body.contains(" onload="),
            "{path}"
        );
        assert!(!body.contains("<script>"), "{path}");
        assert!(
            !body.contains("http://") && !body.contains("https://"),
            "{path}"
        );
        // Every input has its label.
        for id in body
            .split("<input id=\"")
            .skip(1)
            .map(|rest| rest.split('"').next().unwrap())
        {
            assert!(
                body.contains(&format!("<label for=\"{id}\"")),
                "{path}: #{id} has no label"
            );
        }
    }
}

async fn assets_have_their_types_and_revalidate(backend: Backend) {
    let app = spawn_app(backend).await;
    for (path, kind) in ASSETS {
        let first = fetch(&app, path, &[]).await;
        assert!(first.header("content-type").starts_with(kind), "{path}");
        assert_eq!(first.header("cache-control"), "no-cache", "{path}");
        let etag = first.header("etag").to_owned();
        let again = fetch(&app, path, &[("if-none-match", &etag)]).await;
        assert_eq!(again.status, StatusCode::NOT_MODIFIED, "{path}");
        assert!(again.body.is_empty());
        let stale = fetch(&app, path, &[("if-none-match", "\"other\"")]).await;
        assert_eq!(stale.status, StatusCode::OK, "{path}");
        assert_eq!(stale.body, first.body);
    }
    // The account page is made of sections, each with a script of its own: every script it loads
    // is served, and revalidates, like the others.
    let account = fetch(&app, "/account", &[]).await;
    let scripts: Vec<&str> = account
        .body
        .split("<script type=\"module\" src=\"")
        .skip(1)
        .map(|rest| rest.split('"').next().unwrap())
        .collect();
    assert!(scripts.contains(&"/assets/pages/account.js"), "{scripts:?}");
    assert!(
        scripts.contains(&"/assets/pages/account/security.js"),
        "{scripts:?}"
    );
    for path in &scripts {
        let first = fetch(&app, path, &[]).await;
        assert_eq!(first.status, StatusCode::OK, "{path}");
        assert!(first.header("content-type").starts_with("text/javascript"));
        let etag = first.header("etag").to_owned();
        let again = fetch(&app, path, &[("if-none-match", &etag)]).await;
        assert_eq!(again.status, StatusCode::NOT_MODIFIED, "{path}");
    }
    // The library is the repository's very file.
    let library = fetch(&app, "/assets/gatehouse.js", &[]).await;
    assert_eq!(
        library.body,
        include_str!("../../clients/js/gatehouse.js"),
        "served as written"
    );
    for missing in [
        "/assets/pages/nope.js",
        "/assets/pages/..%2f..%2fCargo.toml",
        "/assets/pages/",
        "/assets/pages/account/nope.js",
        "/assets/pages/account/profile.html",
    ] {
        let page = fetch(&app, missing, &[]).await;
        assert_eq!(page.status, StatusCode::NOT_FOUND, "{missing}");
    }
}

/// The page puts the checked return URL where its script reads it; anything not allowed is the
/// account page.
async fn return_to_goes_only_where_allowed(backend: Backend) {
    let app = spawn_app_with(
        backend,
        SettingsArgs {
            allowed_return_urls: Some(
                "https://app.example.com, https://crm.example.com/app".into(),
            ),
            ..SettingsArgs::default()
        },
    )
    .await;
    let target = |page: &Page| -> String {
        let at = page.body.find("data-return-to=\"").expect("the attribute") + 16;
        let raw = &page.body[at..];
        raw[..raw.find('"').unwrap()]
            .replace("&#x2f;", "/")
            .replace("&amp;", "&")
    };
    for (given, lands) in [
        (
            "https://app.example.com/orders?id=7",
            "https://app.example.com/orders?id=7",
        ),
        (
            "https://crm.example.com/app/x",
            "https://crm.example.com/app/x",
        ),
        ("https://crm.example.com/application", "/account"),
        ("https://evil.example.com/", "/account"),
        ("https://app.example.com.evil.com/", "/account"),
        ("//evil.example.com/", "/account"),
        ("javascript:alert(1)", "/account"),
        ("/account/../../evil", "/account"),
    ] {
        let query = format!(
            "/sign-in?return_to={}",
            percent_encoding::utf8_percent_encode(given, percent_encoding::NON_ALPHANUMERIC)
        );
        let page = fetch(&app, &query, &[]).await;
        assert_eq!(page.status, StatusCode::OK);
        assert_eq!(target(&page), lands, "{given}");
    }
    let page = fetch(&app, "/sign-in", &[]).await;
    assert_eq!(target(&page), "/account");
    // A query that does not parse is ignored, not an error.
    let page = fetch(&app, "/sign-in?return_to=%ff%fe", &[]).await;
    assert_eq!(page.status, StatusCode::OK);
    assert_eq!(target(&page), "/account");
}

async fn registration_has_a_page_only_when_open(backend: Backend) {
    let closed = spawn_app(backend.clone()).await;
    let page = fetch(&closed, "/register", &[]).await;
    assert_eq!(page.status, StatusCode::NOT_FOUND);
    assert!(page.header("content-type").starts_with("text/html"));
    assert!(page.body.contains("Registration is closed"));
    assert!(!page.body.contains("<form"));
    let sign_in = fetch(&closed, "/sign-in", &[]).await;
    assert!(!sign_in.body.contains("href=\"/register\""));

    let open = spawn_app_with(
        backend,
        SettingsArgs {
            registration: Some("open".into()),
            ..SettingsArgs::default()
        },
    )
    .await;
    let page = fetch(&open, "/register", &[]).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.body.contains("<form id=\"register\""));
    let sign_in = fetch(&open, "/sign-in", &[]).await;
    assert!(sign_in.body.contains("href=\"/register\""));
}

/// The paths the mails link to are pages, and opening one (GET or HEAD, as a mail scanner
/// does) changes nothing: the token is consumed only by the page's POST.
async fn mailed_links_open_pages_that_consume_nothing(backend: Backend) {
    let app = spawn_app(backend).await;
    // The mails' own links are followed to these pages in browser.rs (mailed_links_…).
    for page in ["/reset-password", "/verify-email", "/accept-invitation"] {
        let opened = fetch(&app, &format!("{page}?token=abc"), &[]).await;
        assert_eq!(opened.status, StatusCode::OK, "{page}");
        assert!(opened.body.contains("<form"), "{page}");
        let head = app
            .client
            .head(app.url(&format!("{page}?token=abc")))
            .send()
            .await
            .unwrap();
        assert_eq!(head.status(), StatusCode::OK, "{page}");
    }
}

/// `GET /` in a browser: the sign-in page (which forwards a person signed in already to
/// `/account`), not a JSON 404.
async fn the_root_sends_a_browser_to_sign_in(backend: Backend) {
    let app = spawn_app(backend).await;
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    for method in [reqwest::Method::GET, reqwest::Method::HEAD] {
        let response = client
            .request(method.clone(), app.url("/"))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::SEE_OTHER, "{method}");
        assert_eq!(response.headers()["location"], "/sign-in");
        assert_eq!(response.headers()["x-frame-options"], "DENY");
    }
    let followed = fetch(&app, "/", &[]).await;
    assert_eq!(followed.status, StatusCode::OK);
    assert!(followed.body.contains("sign-in.js"), "{}", followed.body);
    // Only the root: other unknown paths stay the JSON 404 of the API for a program…
    let missing = fetch(&app, "/nothing-here", &[]).await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
    assert!(missing.body.contains("NOT_FOUND"), "{}", missing.body);
    // …and a page for a browser (issue 45: a cut-short link on the sign-in host showed JSON),
    // with the pages' headers; never under the API's own paths.
    let html = [("accept", "text/html,application/xhtml+xml,*/*;q=0.8")];
    let page = fetch(&app, "/nothing-here", &html).await;
    assert_eq!(page.status, StatusCode::NOT_FOUND);
    assert!(page.body.contains("id=\"not-found\""), "{}", page.body);
    assert!(page.headers.contains_key("content-security-policy"));
    let api = fetch(&app, "/api/v1/nothing-here", &html).await;
    assert!(api.body.contains("NOT_FOUND"), "{}", api.body);
    // The page a proxy sends a refused person to.
    let refused = fetch(&app, "/forbidden", &html).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);
    assert!(refused.body.contains("not open to you"), "{}", refused.body);
}
