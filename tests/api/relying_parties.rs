//! Relying parties that no one here wrote, signing people in with Gatehouse as their OpenID
//! provider (docs/api.md §11): panva's openid-client in Node (OpenID Certified), the Rust
//! `openidconnect` crate with its default verifier, and Debian's Apache with mod_auth_openidc
//! (OpenID Certified) in front of an upstream, driven by Chromium. What they check of the provider
//! is what they check of any provider; the tests add what a user of them would look at.
//!
//! The person's consent is given through the authorization page's own call, `POST
//! /api/v1/oauth2/authorize`, with the person's first-party token (Apache's scenario goes through
//! the page itself in the browser).

use reqwest::Method;
use serde_json::{Value, json};

use gatehouse::config::SettingsArgs;

use crate::helpers::{Backend, Http, TestApp, free_port, spawn_app_with};

mod apache;
mod libraries;
mod mcp;
mod openid_client;
mod rust_crate;

/// Gatehouse as an OpenID provider: the app and its issuer, which is its public URL
/// `http://HOST:PORT` (the provider is on only with a URL issuer).
pub(crate) struct Provider {
    pub app: TestApp,
    pub issuer: String,
}

/// The provider at `http://HOST:PORT`, listening on 127.0.0.1 (HOST is `127.0.0.1` or
/// `localhost`: what a relying party on this machine can resolve).
pub(crate) async fn provider(backend: Backend, host: &str) -> Provider {
    provider_with(backend, host, SettingsArgs::default()).await
}

/// `provider` over the settings `args`.
pub(crate) async fn provider_with(backend: Backend, host: &str, args: SettingsArgs) -> Provider {
    let port = free_port();
    let issuer = format!("http://{host}:{port}");
    let app = spawn_app_with(
        backend,
        SettingsArgs {
            listen: Some(format!("127.0.0.1:{port}")),
            public_url: Some(issuer.clone()),
            ..args
        },
    )
    .await;
    Provider { app, issuer }
}

/// A client registered as an operator registers one: `gatehouse clients add NAME ARGS… --json`.
#[derive(Debug, Clone)]
pub(crate) struct Registered {
    pub id: String,
    /// `None` for a public client.
    pub secret: Option<String>,
}

pub(crate) fn add_client(app: &TestApp, name: &str, args: &[&str]) -> Registered {
    let mut all = vec!["clients", "add", name];
    all.extend_from_slice(args);
    all.push("--json");
    let output = app.cli(&all, None);
    assert!(
        output.status.success(),
        "gatehouse {}: {}",
        all.join(" "),
        String::from_utf8_lossy(&output.stderr)
    );
    let printed: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|_| {
        panic!(
            "clients add --json printed no JSON: {}",
            String::from_utf8_lossy(&output.stdout)
        )
    });
    Registered {
        id: printed["clientId"]
            .as_str()
            .expect("clientId printed")
            .to_owned(),
        secret: printed["clientSecret"].as_str().map(str::to_owned),
    }
}

/// The person's first-party access token (`POST /api/v1/auth/login`).
pub(crate) async fn person_token(http: &Http, email: &str, password: &str) -> String {
    http.login(email, password).await.data(200)["accessToken"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// What the authorization page does with an authorization URL a relying party built: its query
/// as the body of `POST /api/v1/oauth2/authorize`, with the person's token; consent is asked the
/// first time (checked: the client's name and the scopes asked) and given. Returns `redirectTo`,
/// the redirect URI with the code.
pub(crate) async fn authorize(
    http: &Http,
    token: &str,
    url: &url::Url,
    client_name: &str,
) -> String {
    let mut body = serde_json::Map::new();
    for (key, value) in url.query_pairs() {
        let field = match key.as_ref() {
            "client_id" => "clientId",
            "redirect_uri" => "redirectUri",
            "scope" => "scope",
            "state" => "state",
            "code_challenge" => "codeChallenge",
            "code_challenge_method" => "codeChallengeMethod",
            "nonce" => "nonce",
            "prompt" => "prompt",
            "resource" => "resource",
            "max_age" => {
                body.insert("maxAge".into(), json!(value.parse::<u64>().unwrap()));
                continue;
            }
            _ => continue,
        };
        body.insert(field.into(), json!(value));
    }
    let call = |body: Value| {
        http.call(
            Method::POST,
            "/api/v1/oauth2/authorize",
            Some(token),
            Some(body),
        )
    };
    let first = call(Value::Object(body.clone())).await;
    let data = first.data(200).clone();
    if data["redirectTo"].is_string() {
        return data["redirectTo"].as_str().unwrap().to_owned();
    }
    assert_eq!(data["consentRequired"], json!(true), "{data:#}");
    assert_eq!(data["client"]["name"], json!(client_name), "{data:#}");
    assert_eq!(data["client"]["firstParty"], json!(false), "{data:#}");
    let asked: Vec<&str> = data["scopes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect();
    assert!(asked.contains(&"email"), "the scopes asked: {asked:?}");
    body.insert("consent".into(), json!(true));
    let given = call(Value::Object(body)).await;
    given.data(200)["redirectTo"]
        .as_str()
        .unwrap_or_else(|| panic!("no redirectTo after consent: {:#}", given.body))
        .to_owned()
}
