//! What the OpenID provider's tests share (docs/api.md §11): an app with the provider on, clients
//! registered as an operator registers them (`gatehouse clients add … --json`), PKCE, and the
//! authorization, exchange and refresh as a relying party makes them.

use base64::Engine as _;
use gatehouse::config::SettingsArgs;
use reqwest::Method;
use serde_json::{Value, json};
use sha2::Digest as _;

use crate::helpers::{Answer, Backend, TestApp, spawn_app_with};

pub const ISSUER: &str = "https://login.example.test";
pub const REDIRECT: &str = "https://app.example.test/callback";

/// An app with the provider on (an absolute issuer URL), over `args`.
pub async fn provider_app(backend: Backend, args: SettingsArgs) -> TestApp {
    spawn_app_with(
        backend,
        SettingsArgs {
            issuer: Some(ISSUER.into()),
            ..args
        },
    )
    .await
}

/// Two instances of one provider on one database (its issuer the same on both): a change made
/// on the first must reach the second within §2's 2 s.
pub async fn provider_pair(backend: Backend) -> (TestApp, TestApp) {
    let app = provider_app(backend, SettingsArgs::default()).await;
    let twin = app
        .twin_with(SettingsArgs {
            issuer: Some(ISSUER.into()),
            ..SettingsArgs::default()
        })
        .await;
    (app, twin)
}

/// A registered client: its id, and its secret when confidential.
pub struct Client {
    pub id: String,
    pub secret: Option<String>,
}

/// `gatehouse clients add NAME` with `flags` (e.g. `--public`, `--first-party`, `--scope S`) and
/// the redirect URI `REDIRECT`.
pub fn add_client(app: &TestApp, name: &str, flags: &[&str]) -> Client {
    let mut args = vec!["clients", "add", name, "--redirect-uri", REDIRECT, "--json"];
    args.extend_from_slice(flags);
    let output = app.cli(&args, None);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let printed: Value = serde_json::from_slice(&output.stdout).expect("JSON");
    Client {
        id: printed["clientId"].as_str().unwrap().to_owned(),
        secret: printed["clientSecret"].as_str().map(str::to_owned),
    }
}

/// A PKCE verifier and its S256 challenge.
pub fn pkce() -> (String, String) {
    let verifier =
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(rand::random::<[u8; 32]>());
    let challenge = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(sha2::Sha256::digest(verifier.as_bytes()));
    (verifier, challenge)
}

/// The body of `POST /api/v1/oauth2/authorize` for `client` with `scope` and `challenge`.
pub fn authorization(client: &Client, scope: &str, challenge: &str) -> Value {
    json!({
        "clientId": client.id,
        "redirectUri": REDIRECT,
        "scope": scope,
        "state": "st-123",
        "codeChallenge": challenge,
        "codeChallengeMethod": "S256",
        "nonce": "n-456",
    })
}

/// `POST /api/v1/oauth2/authorize` as the holder of `token`.
pub async fn authorize(app: &TestApp, token: &str, body: Value) -> Answer {
    app.call(
        Method::POST,
        "/api/v1/oauth2/authorize",
        Some(token),
        Some(body),
    )
    .await
}

/// The query parameters of a `redirectTo`.
pub fn query(redirect_to: &str) -> Vec<(String, String)> {
    let url = reqwest::Url::parse(redirect_to).unwrap();
    url.query_pairs()
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

pub fn param(redirect_to: &str, name: &str) -> Option<String> {
    query(redirect_to)
        .into_iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v)
}

/// A code for `client` with `scope` as the holder of `token` (consenting when asked): the code
/// and its verifier.
pub async fn code(app: &TestApp, token: &str, client: &Client, scope: &str) -> (String, String) {
    let (verifier, challenge) = pkce();
    let mut body = authorization(client, scope, &challenge);
    body["consent"] = json!(true);
    let answer = authorize(app, token, body).await;
    let to = answer.data(200)["redirectTo"].as_str().unwrap().to_owned();
    assert!(to.starts_with(REDIRECT), "{to}");
    assert_eq!(param(&to, "state").as_deref(), Some("st-123"));
    assert_eq!(param(&to, "iss").as_deref(), Some(ISSUER));
    (param(&to, "code").expect("a code"), verifier)
}

/// `POST /oauth2/token` with the form `pairs`, the client authenticating by HTTP Basic when
/// `basic` is given.
pub async fn token(
    app: &TestApp,
    basic: Option<(&str, &str)>,
    pairs: &[(&str, &str)],
) -> (u16, reqwest::header::HeaderMap, Value) {
    let body: String = form_urlencoded::Serializer::new(String::new())
        .extend_pairs(pairs)
        .finish();
    let mut request = app
        .client
        .post(app.url("/oauth2/token"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(body);
    if let Some((id, secret)) = basic {
        // RFC 6749 §2.3.1: each part form-urlencoded inside Basic.
        let enc = |s: &str| form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
        request = request.basic_auth(enc(id), Some(enc(secret)));
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    assert_eq!(headers.get("cache-control").unwrap(), "no-store");
    assert_eq!(headers.get("pragma").unwrap(), "no-cache");
    (status, headers, response.json().await.unwrap())
}

/// The code exchanged by a confidential client (Basic): the token answer.
pub async fn exchange(app: &TestApp, client: &Client, code: &str, verifier: &str) -> (u16, Value) {
    // A confidential client authenticates with Basic; a public one names itself in the form.
    let basic = client
        .secret
        .as_deref()
        .map(|secret| (client.id.as_str(), secret));
    let mut form = vec![
        ("grant_type", "authorization_code"),
        ("code", code),
        ("redirect_uri", REDIRECT),
        ("code_verifier", verifier),
    ];
    if basic.is_none() {
        form.push(("client_id", &client.id));
    }
    let (status, _, body) = token(app, basic, &form).await;
    (status, body)
}

/// `GET /oauth2/userinfo` with `token`: status, `WWW-Authenticate`, body.
pub async fn userinfo(app: &TestApp, token: &str) -> (u16, Option<String>, Value) {
    let response = app
        .client
        .get(app.url("/oauth2/userinfo"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let challenge = response
        .headers()
        .get("www-authenticate")
        .map(|v| v.to_str().unwrap().to_owned());
    let text = response.text().await.unwrap();
    (
        status,
        challenge,
        serde_json::from_str(&text).unwrap_or(Value::Null),
    )
}

/// Verifies a JWT's signature with the key of its `kid` in the app's JWK Set, with that key's own
/// algorithm; returns its claims.
pub async fn verified(app: &TestApp, jwt: &str, audience: &str) -> Value {
    let jwks = app.get_json("/.well-known/jwks.json").await;
    let header = jsonwebtoken::decode_header(jwt).unwrap();
    let kid = header.kid.clone().expect("a kid");
    let jwk_json = jwks["keys"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["kid"] == kid.as_str())
        .expect("the token's key is published")
        .clone();
    // The key's own algorithm, never the header's alone.
    assert_eq!(jwk_json["alg"], serde_json::to_value(header.alg).unwrap());
    let jwk: jsonwebtoken::jwk::Jwk = serde_json::from_value(jwk_json).unwrap();
    let key = jsonwebtoken::DecodingKey::from_jwk(&jwk).unwrap();
    let mut validation = jsonwebtoken::Validation::new(header.alg);
    validation.set_audience(&[audience]);
    validation.set_issuer(&[ISSUER]);
    jsonwebtoken::decode::<Value>(jwt, &key, &validation)
        .expect("the signature and claims verify")
        .claims
}

/// `challenge` with the `resource_metadata` parameter every bearer challenge of the `/api/v1/…`
/// calls carries while the provider is on (RFC 9728 §5.1, docs/api.md §12).
pub async fn with_resource_metadata(app: &TestApp, challenge: &str) -> String {
    let metadata = app.get_json("/.well-known/oauth-protected-resource").await;
    let url = format!(
        "{}/.well-known/oauth-protected-resource",
        metadata["resource"].as_str().unwrap()
    );
    match challenge {
        "Bearer" => format!(r#"Bearer resource_metadata="{url}""#),
        _ => format!(r#"{challenge}, resource_metadata="{url}""#),
    }
}
