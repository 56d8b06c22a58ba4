//! Client ID metadata documents (docs/api.md §12) served by the test on loopback: a good one
//! completes the code flow and is fetched once while its Cache-Control holds; documents that
//! redirect, answer slowly, are too big, name another client_id, or sit at a private or loopback
//! address without the test switch are each refused, and nothing is registered.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use gatehouse::config::SettingsArgs;
use serde_json::{Value, json};

use crate::guard::{FORWARD_AUTH, ask};
use crate::helpers::{Backend, TestApp, both_backends, claims};
use crate::oauth_helpers::{
    Client, REDIRECT, authorize, exchange, param, pkce, provider_app, token,
};

both_backends!(
    pages_that_only_name_a_client_fetch_no_document,
    a_metadata_document_client_completes_the_code_flow,
    hostile_documents_are_refused_and_nothing_is_kept,
    private_addresses_are_refused_without_the_test_switch,
);

/// How often each document was asked for, by name.
type Hits = Arc<Mutex<HashMap<String, u32>>>;

/// The documents' server: its base URL and how often each document was asked for.
struct Documents {
    base: String,
    hits: Hits,
}

impl Documents {
    fn url(&self, name: &str) -> String {
        format!("{}/{name}", self.base)
    }

    fn hits(&self, name: &str) -> u32 {
        self.hits.lock().unwrap().get(name).copied().unwrap_or(0)
    }
}

async fn document(
    State((base, hits)): State<(String, Hits)>,
    Path(name): Path<String>,
) -> Response {
    *hits.lock().unwrap().entry(name.clone()).or_default() += 1;
    let own = format!("{base}/{name}");
    let doc = |client_id: &str| {
        json!({
            "client_id": client_id,
            "client_name": "Loopback Agent",
            "redirect_uris": [REDIRECT],
            "token_endpoint_auth_method": "none",
            "grant_types": ["authorization_code", "refresh_token"],
        })
    };
    let mut headers = HeaderMap::new();
    headers.insert(header::CONTENT_TYPE, "application/json".parse().unwrap());
    headers.insert(header::CACHE_CONTROL, "max-age=3600".parse().unwrap());
    match name.as_str() {
        "good.json" => (headers, doc(&own).to_string()).into_response(),
        "redirect.json" => (
            StatusCode::FOUND,
            [(header::LOCATION, format!("{base}/good.json"))],
        )
            .into_response(),
        "slow.json" => {
            tokio::time::sleep(Duration::from_secs(6)).await;
            (headers, doc(&own).to_string()).into_response()
        }
        "huge.json" => {
            let mut big = doc(&own);
            big["padding"] = json!("x".repeat(6 * 1024));
            (headers, big.to_string()).into_response()
        }
        "huge-chunked.json" => {
            // No Content-Length: the reader must stop by itself.
            let mut big = doc(&own);
            big["padding"] = json!("x".repeat(64 * 1024));
            let text = big.to_string().into_bytes();
            let chunks: Vec<Result<Vec<u8>, std::io::Error>> =
                text.chunks(1024).map(|c| Ok(c.to_vec())).collect();
            let body = axum::body::Body::from_stream(futures::stream::iter(chunks));
            (headers, body).into_response()
        }
        "other.json" => (headers, doc(&format!("{base}/good.json")).to_string()).into_response(),
        "not-json.json" => (headers, "<html>hello</html>").into_response(),
        _ => StatusCode::NOT_FOUND.into_response(),
    }
}

async fn serve_documents() -> Documents {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let hits = Arc::new(Mutex::new(HashMap::new()));
    let app = axum::Router::new()
        .route("/{name}", axum::routing::get(document))
        .with_state((base.clone(), hits.clone()));
    tokio::spawn(async move { axum::serve(listener, app).await });
    Documents { base, hits }
}

fn documents_on(insecure_loopback: bool) -> SettingsArgs {
    SettingsArgs {
        oauth_client_metadata_documents: Some("on".into()),
        oauth_client_metadata_insecure_loopback: insecure_loopback,
        ..SettingsArgs::default()
    }
}

fn request(client_id: &str, challenge: &str) -> Value {
    json!({
        "clientId": client_id,
        "redirectUri": REDIRECT,
        "scope": "openid email",
        "state": "s",
        "codeChallenge": challenge,
        "codeChallengeMethod": "S256",
    })
}

/// The authorization call for `client_id` is refused as an unknown client; returns why.
async fn refused(app: &TestApp, person: &str, client_id: &str) -> String {
    let (_, challenge) = pkce();
    let answer = authorize(app, person, request(client_id, &challenge)).await;
    let error = answer.error(400, "VALIDATION_ERROR");
    error["details"]["fields"]["clientId"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

async fn clients_count(app: &TestApp) -> i64 {
    app.scalar("SELECT COUNT(*) FROM api_clients").await
}

async fn a_metadata_document_client_completes_the_code_flow(backend: Backend) {
    let docs = serve_documents().await;
    let app = provider_app(backend, documents_on(true)).await;
    let discovery = app.get_json("/.well-known/openid-configuration").await;
    assert_eq!(discovery["client_id_metadata_document_supported"], true);
    let client_id = docs.url("good.json");
    let (person, _) = app.logged_in_user("ada@example.com").await;

    let (verifier, challenge) = pkce();
    let asked = authorize(&app, &person, request(&client_id, &challenge)).await;
    let asked = asked.data(200);
    assert_eq!(asked["consentRequired"], true);
    assert_eq!(asked["client"]["clientId"], json!(client_id));
    assert_eq!(asked["client"]["name"], "Loopback Agent");
    assert_eq!(asked["client"]["firstParty"], false);
    let mut consented = request(&client_id, &challenge);
    consented["consent"] = json!(true);
    let to = authorize(&app, &person, consented).await.data(200)["redirectTo"]
        .as_str()
        .unwrap()
        .to_owned();
    let code = param(&to, "code").expect("a code");
    let public = Client {
        id: client_id.clone(),
        secret: None,
    };
    let (status, tokens) = exchange(&app, &public, &code, &verifier).await;
    assert_eq!(status, 200, "{tokens}");
    let id_token = claims(tokens["id_token"].as_str().unwrap());
    assert_eq!(id_token["aud"], json!(client_id));
    assert_eq!(
        claims(tokens["access_token"].as_str().unwrap())["client_id"],
        json!(client_id)
    );
    // Forward-auth names the client by its client_id, the document's URL: a guarded service can
    // tell the agent's calls from the person's own sign-in (Remote-Client empty).
    let access = tokens["access_token"].as_str().unwrap();
    let allowed = ask(&app, FORWARD_AUTH, Some(access), &[]).await;
    assert_eq!(allowed.status, 200);
    assert_eq!(allowed.header("remote-client"), Some(client_id.as_str()));
    assert_eq!(
        allowed.header("remote-user"),
        claims(&person)["sub"].as_str()
    );

    // Fetched once: its Cache-Control (an hour) held for the consent and the token call.
    assert_eq!(docs.hits("good.json"), 1);
    let origin: String = app
        .scalar("SELECT origin FROM api_clients WHERE metadata_url IS NOT NULL")
        .await;
    assert_eq!(origin, "metadata_document");
    assert_eq!(app.audit_count("client.registered", None).await, 1);

    // With documents off, the same URL is no client.
    let off = provider_app(Backend::Sqlite, SettingsArgs::default()).await;
    let (person, _) = off.logged_in_user("ada@example.com").await;
    refused(&off, &person, &client_id).await;
    assert_eq!(docs.hits("good.json"), 1);
}

async fn hostile_documents_are_refused_and_nothing_is_kept(backend: Backend) {
    let docs = serve_documents().await;
    let app = provider_app(backend, documents_on(true)).await;
    let (person, _) = app.logged_in_user("ada@example.com").await;
    for (name, why) in [
        ("redirect.json", "redirect"),
        ("slow.json", "within 5 s"),
        ("huge.json", "larger than"),
        ("huge-chunked.json", "larger than"),
        ("other.json", "client_id"),
        ("not-json.json", "JSON"),
        ("missing.json", "404"),
    ] {
        let reason = refused(&app, &person, &docs.url(name)).await;
        assert!(reason.contains(why), "{name}: {reason}");
        assert_eq!(docs.hits(name), 1, "{name}");
    }
    // Never followed.
    assert_eq!(docs.hits("good.json"), 0);
    // The token endpoint refuses them the same way.
    let (status, _, answer) = token(
        &app,
        None,
        &[
            ("grant_type", "authorization_code"),
            ("client_id", &docs.url("other.json")),
            ("code", "x"),
            ("redirect_uri", REDIRECT),
            ("code_verifier", "y"),
        ],
    )
    .await;
    assert_eq!(status, 401, "{answer}");
    assert_eq!(answer["error"], "invalid_client");
    // A refused document is not cached: it is asked for again.
    refused(&app, &person, &docs.url("other.json")).await;
    assert_eq!(docs.hits("other.json"), 3);
    // Even with the test switch, only loopback is let through.
    let reason = refused(&app, &person, "http://10.0.0.1/client.json").await;
    assert!(reason.contains("https"), "{reason}");
    let reason = refused(&app, &person, "https://10.0.0.1/client.json").await;
    assert!(reason.contains("not a public address"), "{reason}");
    assert_eq!(clients_count(&app).await, 0);
}

async fn private_addresses_are_refused_without_the_test_switch(backend: Backend) {
    let docs = serve_documents().await;
    let app = provider_app(backend, documents_on(false)).await;
    let (person, _) = app.logged_in_user("ada@example.com").await;
    let port = docs.base.rsplit(':').next().unwrap().to_owned();
    for (client_id, why) in [
        // The loopback server itself, over http: not even read as a document's URL.
        (docs.url("good.json"), "not a registered client"),
        // By address: refused before any connection.
        (
            "https://10.0.0.1/client.json".to_owned(),
            "not a public address",
        ),
        (
            "https://169.254.169.254/latest/meta-data".to_owned(),
            "not a public address",
        ),
        (
            "https://[::ffff:7f00:1]/client.json".to_owned(),
            "not a public address",
        ),
        (
            "https://[fd00::1]/client.json".to_owned(),
            "not a public address",
        ),
        // By a name that resolves to loopback: refused by the resolver, which checks every
        // address the connection could go to.
        (format!("https://localhost:{port}/good.json"), "not public"),
    ] {
        let reason = refused(&app, &person, &client_id).await;
        assert!(reason.contains(why), "{client_id}: {reason}");
    }
    assert_eq!(docs.hits("good.json"), 0);
    assert_eq!(clients_count(&app).await, 0);
}

/// Issue 38, F11: the sign-in page and end-session without a hint only name a client; a link
/// naming a document's URL makes Gatehouse fetch nothing (only the authorization, and a valid
/// `id_token_hint` whose audience it is, may), and a document fetched before is still named.
async fn pages_that_only_name_a_client_fetch_no_document(backend: Backend) {
    let docs = serve_documents().await;
    let app = provider_app(backend, documents_on(true)).await;
    let unseen = docs.url("good.json");
    let encoded = |s: &str| form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
    let page = |path: String| {
        let app = &app;
        async move {
            let response = app.client.get(app.url(&path)).send().await.unwrap();
            (response.status().as_u16(), response.text().await.unwrap())
        }
    };
    let (status, body) = page(format!("/sign-in?client_id={}", encoded(&unseen))).await;
    assert_eq!(status, 200);
    assert!(
        !body.contains("Loopback Agent"),
        "named before it was fetched"
    );
    let (status, _) = page(format!(
        "/oauth2/end-session?client_id={}&post_logout_redirect_uri={}",
        encoded(&unseen),
        encoded(REDIRECT)
    ))
    .await;
    assert_eq!(status, 200);
    assert_eq!(
        docs.hits("good.json"),
        0,
        "a bare link fetched the document"
    );

    // Once an authorization fetched it, the sign-in page names it, still without a fetch.
    let (person, _) = app.logged_in_user("ada@example.com").await;
    let (_, challenge) = pkce();
    authorize(&app, &person, request(&unseen, &challenge))
        .await
        .data(200);
    assert_eq!(docs.hits("good.json"), 1);
    let (_, body) = page(format!("/sign-in?client_id={}", encoded(&unseen))).await;
    assert!(body.contains("Loopback Agent"), "{body}");
    assert_eq!(docs.hits("good.json"), 1);
}
