//! What the tests of signing in with other identity providers share (docs/api.md §14): an app
//! whose providers file names a second Gatehouse (its OpenID provider, §11, with the first
//! registered as a client), and the browser's part of a flow, step by step: the start, the
//! upstream's authorization (through its API, as its pages do), the callback with the flow's
//! cookie, and the pages' `finish`.

use gatehouse::config::SettingsArgs;
use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::{Answer, Backend, TestApp, free_port, spawn_app_with};
use crate::oauth_helpers::{Client, param};

/// The first Gatehouse's public URL: the callbacks the upstream sends browsers to are under it
/// (the tests carry them to the app's real address).
pub const PUBLIC: &str = "https://gate.example.test";
/// The provider's id in the first Gatehouse's file.
pub const UP: &str = "up";

/// A Gatehouse (`app`) whose providers file names another Gatehouse (`up`) as provider `up`.
pub struct Pair {
    pub up: TestApp,
    pub app: TestApp,
    /// Holds the providers file.
    _dir: tempfile::TempDir,
}

/// A Gatehouse to be the upstream: its OpenID provider on, its issuer its own loopback address.
pub async fn upstream_gatehouse(backend: Backend) -> TestApp {
    let port = free_port();
    let address = format!("http://127.0.0.1:{port}");
    spawn_app_with(
        backend,
        SettingsArgs {
            listen: Some(format!("127.0.0.1:{port}")),
            public_url: Some(address.clone()),
            issuer: Some(address),
            ..SettingsArgs::default()
        },
    )
    .await
}

/// The upstream's client for the first Gatehouse (confidential, first party: no consent page).
pub fn register_client(up: &TestApp) -> Client {
    let redirect = format!("{PUBLIC}/auth/providers/{UP}/callback");
    let output = up.cli(
        &[
            "clients",
            "add",
            "Gatehouse",
            "--redirect-uri",
            &redirect,
            "--first-party",
            "--scope",
            "openid",
            "--scope",
            "email",
            "--scope",
            "profile",
            "--json",
        ],
        None,
    );
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let printed: Value = serde_json::from_slice(&output.stdout).unwrap();
    Client {
        id: printed["clientId"].as_str().unwrap().to_owned(),
        secret: printed["clientSecret"].as_str().map(str::to_owned),
    }
}

/// A providers file with provider `up` (over `extra` lines: `signup = true`, `org = "acme"`, …)
/// and any `more` providers' text.
pub fn providers_file(up: &TestApp, client: &Client, extra: &str, more: &str) -> String {
    format!(
        "[[provider]]\nid = \"{UP}\"\nname = \"Upstream Gatehouse\"\nissuer = \"{}\"\n\
         client_id = \"{}\"\nclient_secret = \"{}\"\n{extra}\n{more}",
        up.address,
        client.id,
        client.secret.as_deref().unwrap()
    )
}

/// The settings of an app with `file` as its providers file.
pub fn with_providers(path: &str, args: SettingsArgs) -> SettingsArgs {
    SettingsArgs {
        public_url: Some(PUBLIC.into()),
        identity_providers: Some(path.into()),
        ..args
    }
}

impl Pair {
    /// A pair of apps made elsewhere (an app that is a twin of another).
    pub fn from_parts(up: TestApp, app: TestApp, dir: tempfile::TempDir) -> Pair {
        Pair { up, app, _dir: dir }
    }

    /// An upstream Gatehouse, and an app whose provider `up` it is with the lines `extra`.
    pub async fn new(backend: Backend, extra: &str) -> Pair {
        // Metrics on their own listener, for the tests that count the callbacks.
        let args = SettingsArgs {
            metrics_listen: Some("127.0.0.1:0".into()),
            ..Default::default()
        };
        Pair::with(backend, extra, "", args).await
    }

    pub async fn with(backend: Backend, extra: &str, more: &str, args: SettingsArgs) -> Pair {
        let up = upstream_gatehouse(backend.clone()).await;
        let client = register_client(&up);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("providers.toml");
        let file = providers_file(&up, &client, extra, more);
        std::fs::write(&path, &file).unwrap();
        let path = path.to_str().unwrap().to_owned();
        let app = spawn_app_with(backend, with_providers(&path, args)).await;
        wait_available(&app, UP).await;
        Pair { up, app, _dir: dir }
    }
}

/// Waits (at most 10 s) until the app's provider `id` is discovered.
pub async fn wait_available(app: &TestApp, id: &str) {
    for _ in 0..200 {
        let list = app
            .call(Method::GET, "/api/v1/auth/providers", None, None)
            .await;
        let available = list.data(200)["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["id"] == id && p["available"] == true);
        if available {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("provider {id} was not discovered within 10 s");
}

/// A client that follows no redirect: each step of a flow is looked at.
pub fn no_redirects() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// A 302 (or any answer) of a page route: status, `Location`, and the cookies it set.
#[derive(Debug)]
pub struct Hop {
    pub status: u16,
    pub location: String,
    /// `name=value` of each `Set-Cookie`, with its attributes.
    pub set_cookies: Vec<String>,
}

impl Hop {
    /// The value this answer set for cookie `name` (empty: cleared).
    pub fn cookie(&self, name: &str) -> Option<String> {
        self.set_cookies.iter().find_map(|c| {
            let (pair, _) = c.split_once(';').unwrap_or((c, ""));
            let (n, v) = pair.split_once('=')?;
            (n == name).then(|| v.to_owned())
        })
    }

    /// The attributes of cookie `name`'s `Set-Cookie`.
    pub fn cookie_line(&self, name: &str) -> Option<&str> {
        self.set_cookies
            .iter()
            .find(|c| c.starts_with(&format!("{name}=")))
            .map(String::as_str)
    }

    /// A query parameter of `Location`.
    pub fn param(&self, name: &str) -> Option<String> {
        let absolute = if self.location.starts_with('/') {
            format!("http://x{}", self.location)
        } else {
            self.location.clone()
        };
        param(&absolute, name)
    }
}

/// `GET path` of `app` with `cookie` (a `Cookie` header's text), following nothing.
pub async fn hop(app: &TestApp, path: &str, cookie: Option<&str>) -> Hop {
    let mut request = no_redirects().get(app.url(path));
    if let Some(cookie) = cookie {
        request = request.header("cookie", cookie);
    }
    let response = request.send().await.unwrap();
    Hop {
        status: response.status().as_u16(),
        location: response
            .headers()
            .get("location")
            .map(|v| v.to_str().unwrap().to_owned())
            .unwrap_or_default(),
        set_cookies: response
            .headers()
            .get_all("set-cookie")
            .iter()
            .map(|v| v.to_str().unwrap().to_owned())
            .collect(),
    }
}

/// A flow begun at the sign-in page's button: the hop to the provider, and the cookie header that
/// binds the flow.
pub async fn start(app: &TestApp, provider: &str, return_to: &str) -> (Hop, String) {
    let path = format!(
        "/auth/providers/{provider}/start?return_to={}",
        form_urlencoded::byte_serialize(return_to.as_bytes()).collect::<String>()
    );
    let started = hop(app, &path, None).await;
    assert_eq!(started.status, 302, "{started:?}");
    let binding = started
        .cookie("gatehouse_federation")
        .unwrap_or_else(|| panic!("no flow cookie: {started:?}"));
    (started, format!("gatehouse_federation={binding}"))
}

/// The upstream's answer to the authorization request `to` for the holder of `token` there: the
/// callback URL it sends the browser to, rewritten to the app's real address.
pub async fn authorize_upstream(pair: &Pair, to: &str, token: &str) -> String {
    let get = |name: &str| param(to, name).unwrap_or_default();
    assert_eq!(get("code_challenge_method"), "S256");
    let body = json!({
        "clientId": get("client_id"),
        "redirectUri": get("redirect_uri"),
        "scope": get("scope"),
        "state": get("state"),
        "nonce": get("nonce"),
        "codeChallenge": get("code_challenge"),
        "codeChallengeMethod": "S256",
        "consent": true,
    });
    let answer = pair
        .up
        .call(
            Method::POST,
            "/api/v1/oauth2/authorize",
            Some(token),
            Some(body),
        )
        .await;
    let redirect = answer.data(200)["redirectTo"].as_str().unwrap().to_owned();
    local(&pair.app, &redirect)
}

/// A URL under `PUBLIC` as a path of the app.
pub fn local(app: &TestApp, url: &str) -> String {
    let path = url.strip_prefix(PUBLIC).unwrap_or_else(|| panic!("{url}"));
    let _ = app;
    path.to_owned()
}

/// The whole sign-in of the holder of `token` at the upstream, up to the callback's answer.
pub async fn through(pair: &Pair, token: &str, return_to: &str) -> Hop {
    let (started, cookie) = start(&pair.app, UP, return_to).await;
    let callback = authorize_upstream(pair, &started.location, token).await;
    hop(&pair.app, &callback, Some(&cookie)).await
}

/// `POST /api/v1/auth/providers/finish` with the handoff cookie `hop` set.
pub async fn finish(app: &TestApp, hop: &Hop) -> Answer {
    let value = hop
        .cookie("gatehouse_federation")
        .expect("a handoff cookie");
    let request = app
        .client
        .post(app.url("/api/v1/auth/providers/finish"))
        .header("cookie", format!("gatehouse_federation={value}"));
    app.send(request).await
}

/// A person at the upstream, signed in there: their access token.
pub async fn upstream_person(pair: &Pair, email: &str) -> String {
    pair.up.logged_in_user(email).await.0
}

/// Rows of `table` in the app's database.
pub async fn count(app: &TestApp, table: &str) -> i64 {
    app.scalar(&format!("SELECT COUNT(*) FROM {table}")).await
}

/// (users, identities, sessions) of the app: what a refused flow must not have changed.
pub async fn footprint(app: &TestApp) -> (i64, i64, i64) {
    (
        count(app, "users").await,
        count(app, "federated_identities").await,
        count(app, "sessions").await,
    )
}
