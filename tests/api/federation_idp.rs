//! Upstream identity providers for the federation tests (docs/api.md §14), and a browser to walk
//! their redirects:
//!
//! - `Upstream`: panva's oidc-provider (tests/browser/upstream-idp.mjs), a provider no one here
//!   wrote, with accounts set at runtime;
//! - `HostileIdp`: a provider in Rust whose token endpoint answers as the test's `Scenario` says
//!   (good, foreign key, wrong audience, expired, wrong nonce, unknown then rotated key, never
//!   answering…), so each refusal of the relying party can be provoked;
//! - `Browser::browse`: follows a redirect chain with a small cookie jar, posting the upstream's
//!   login form when it meets it, so an API test can go start → provider → callback → finish.

use std::collections::HashMap;
use std::io::BufRead as _;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use ed25519_dalek::{Signer as _, SigningKey};
use gatehouse::federation::ProviderConfig;
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};
use url::Url;

use crate::browser::{BROWSER_DIR, node_ready, packages_ready};

/// A client registered at an upstream.
#[derive(Clone, Debug, serde::Serialize)]
pub struct UpstreamClient {
    pub client_id: String,
    pub client_secret: String,
    pub redirect_uris: Vec<String>,
}

/// A provider's configuration as the providers file would give it.
pub fn provider_config(id: &str, issuer: &str, client: &UpstreamClient) -> ProviderConfig {
    ProviderConfig {
        id: id.to_owned(),
        name: format!("{id} sign-in"),
        issuer: Url::parse(issuer).unwrap(),
        client_id: client.client_id.clone(),
        client_secret: client.client_secret.clone().into(),
        scopes: vec!["openid".into(), "email".into(), "profile".into()],
        domains: Vec::new(),
        org: None,
        signup: false,
        trust_second_factor: false,
    }
}

/// oidc-provider on a loopback port, killed when dropped.
pub struct Upstream {
    pub issuer: String,
    child: Child,
    http: reqwest::Client,
    _stderr: tempfile::NamedTempFile,
}

impl Drop for Upstream {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Upstream {
    /// The upstream with these clients; `None` (a skip outside CI, a failure in it) without node
    /// or the oidc-provider package.
    pub async fn start(clients: &[UpstreamClient]) -> Option<Upstream> {
        Upstream::start_with(clients, false).await
    }

    /// With `id_token_claims`, email and name travel in the ID token too (else in userinfo only).
    pub async fn start_with(clients: &[UpstreamClient], id_token_claims: bool) -> Option<Upstream> {
        if !node_ready() || !packages_ready(&["oidc-provider"]) {
            return None;
        }
        let port = crate::helpers::free_port();
        let stderr = tempfile::NamedTempFile::new().unwrap();
        let mut child = Command::new("node")
            .arg("upstream-idp.mjs")
            .current_dir(BROWSER_DIR)
            .env("PORT", port.to_string())
            .env("CLIENTS", serde_json::to_string(clients).unwrap())
            .env("ID_TOKEN_CLAIMS", if id_token_claims { "1" } else { "0" })
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(stderr.reopen().unwrap())
            .spawn()
            .expect("node runs");
        let stdout = child.stdout.take().unwrap();
        // The line it prints once it listens; an empty read means it died first. The rest is
        // drained: oidc-provider prints notices, and a write to a closed pipe would kill it.
        let line = tokio::task::spawn_blocking(move || {
            let mut reader = std::io::BufReader::new(stdout);
            let mut line = String::new();
            let read = reader.read_line(&mut line).map(|_| line);
            std::thread::spawn(move || std::io::copy(&mut reader, &mut std::io::sink()));
            read
        })
        .await
        .unwrap()
        .unwrap_or_default();
        let printed: Value = serde_json::from_str(line.trim()).unwrap_or_else(|_| {
            panic!(
                "upstream-idp.mjs did not start: {line:?}\n{}",
                std::fs::read_to_string(stderr.path()).unwrap_or_default()
            )
        });
        Some(Upstream {
            issuer: printed["issuer"].as_str().unwrap().to_owned(),
            child,
            http: reqwest::Client::new(),
            _stderr: stderr,
        })
    }

    /// Sets the account `id`: its claims (email, email_verified, name…) and the `amr` of its logins.
    pub async fn account(&self, id: &str, claims: Value, amr: &[&str]) {
        let response = self
            .http
            .put(format!("{}/control/accounts/{id}", self.issuer))
            .body(json!({ "claims": claims, "amr": amr }).to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 204);
    }
}

/// What the hostile provider's token endpoint does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scenario {
    /// A right ID token, signed with EdDSA.
    Good,
    /// A right ID token, signed with ES256.
    GoodEs256,
    /// A right ID token without email and name, which userinfo gives.
    ClaimsInUserinfo,
    /// Signed by a key the provider does not publish, under the published key's `kid`.
    ForeignKey,
    /// `aud` is another client.
    WrongAudience,
    /// `exp` has passed.
    Expired,
    /// The nonce of another flow.
    WrongNonce,
    /// `iss` is another issuer.
    WrongIssuer,
    /// Signed with HS256 by the client secret.
    Symmetric,
    /// Signed by a key with a `kid` that no JWK Set ever holds.
    UnknownKid,
    /// Signed by a new key the JWK Set publishes from the moment this scenario is set (the
    /// relying party holds the old set: it must refetch).
    RotatedKey,
    /// The token endpoint answers `invalid_grant`.
    InvalidGrant,
    /// The token endpoint answers 502.
    ServerError,
    /// The token endpoint answers without an ID token.
    NoIdToken,
    /// The token endpoint never answers.
    NeverAnswers,
}

pub const HOSTILE_CLIENT_ID: &str = "gatehouse";
pub const HOSTILE_CLIENT_SECRET: &str = "hostile-client-secret";
pub const HOSTILE_SUBJECT: &str = "hostile-subject-1";

/// A provider in Rust whose ID tokens are crafted per scenario.
pub struct HostileIdp {
    pub issuer: String,
    state: Arc<Mutex<Hostile>>,
}

struct Hostile {
    issuer: String,
    scenario: Scenario,
    /// Claims merged into (and over) the ID token's.
    extra: Value,
    codes: HashMap<String, Pending>,
    key: SigningKey,
    rotated: SigningKey,
    foreign: SigningKey,
    es256: (jsonwebtoken::EncodingKey, Value),
    rotated_published: bool,
    jwks_fetches: usize,
    token_requests: usize,
}

struct Pending {
    nonce: String,
    challenge: String,
    redirect_uri: String,
}

type Shared = Arc<Mutex<Hostile>>;

impl HostileIdp {
    pub async fn start() -> HostileIdp {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let issuer = format!("http://{}", listener.local_addr().unwrap());
        let state = Arc::new(Mutex::new(Hostile {
            issuer: issuer.clone(),
            scenario: Scenario::Good,
            extra: json!({}),
            codes: HashMap::new(),
            key: random_key(),
            rotated: random_key(),
            foreign: random_key(),
            es256: es256_key(),
            rotated_published: false,
            jwks_fetches: 0,
            token_requests: 0,
        }));
        let app = axum::Router::new()
            .route("/.well-known/openid-configuration", get(discovery))
            .route("/jwks", get(jwks))
            .route("/authorize", get(authorize))
            .route("/token", post(token))
            .route("/userinfo", get(userinfo))
            .with_state(state.clone());
        tokio::spawn(async move { axum::serve(listener, app).await });
        HostileIdp { issuer, state }
    }

    pub fn client(redirect_uri: &str) -> UpstreamClient {
        UpstreamClient {
            client_id: HOSTILE_CLIENT_ID.into(),
            client_secret: HOSTILE_CLIENT_SECRET.into(),
            redirect_uris: vec![redirect_uri.into()],
        }
    }

    pub fn set(&self, scenario: Scenario) {
        let mut state = self.state.lock().unwrap();
        state.scenario = scenario;
        if scenario == Scenario::RotatedKey {
            state.rotated_published = true;
        }
    }

    /// Claims merged into the next ID tokens (e.g. `{"email_verified": false}`; `null` removes one).
    pub fn claims(&self, extra: Value) {
        self.state.lock().unwrap().extra = extra;
    }

    pub fn jwks_fetches(&self) -> usize {
        self.state.lock().unwrap().jwks_fetches
    }

    pub fn token_requests(&self) -> usize {
        self.state.lock().unwrap().token_requests
    }
}

fn random_key() -> SigningKey {
    let mut seed = [0u8; 32];
    openssl::rand::rand_bytes(&mut seed).unwrap();
    SigningKey::from_bytes(&seed)
}

fn ed_jwk(key: &SigningKey, kid: &str) -> Value {
    json!({
        "kty": "OKP", "crv": "Ed25519", "use": "sig", "alg": "EdDSA", "kid": kid,
        "x": URL_SAFE_NO_PAD.encode(key.verifying_key().as_bytes()),
    })
}

/// A P-256 key for jsonwebtoken, and its public JWK.
fn es256_key() -> (jsonwebtoken::EncodingKey, Value) {
    use openssl::bn::{BigNum, BigNumContext};
    use openssl::ec::{EcGroup, EcKey};
    use openssl::nid::Nid;
    let group = EcGroup::from_curve_name(Nid::X9_62_PRIME256V1).unwrap();
    let ec = EcKey::generate(&group).unwrap();
    let (mut x, mut y) = (BigNum::new().unwrap(), BigNum::new().unwrap());
    let mut ctx = BigNumContext::new().unwrap();
    ec.public_key()
        .affine_coordinates(&group, &mut x, &mut y, &mut ctx)
        .unwrap();
    let der = openssl::pkey::PKey::from_ec_key(ec)
        .unwrap()
        .private_key_to_pkcs8()
        .unwrap();
    let jwk = json!({
        "kty": "EC", "crv": "P-256", "use": "sig", "alg": "ES256", "kid": "es1",
        "x": URL_SAFE_NO_PAD.encode(x.to_vec_padded(32).unwrap()),
        "y": URL_SAFE_NO_PAD.encode(y.to_vec_padded(32).unwrap()),
    });
    (jsonwebtoken::EncodingKey::from_ec_der(&der), jwk)
}

fn ed_jwt(key: &SigningKey, kid: &str, claims: &Value) -> String {
    let header = json!({"alg": "EdDSA", "typ": "JWT", "kid": kid});
    let message = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    );
    let signature = key.sign(message.as_bytes()).to_bytes();
    format!("{message}.{}", URL_SAFE_NO_PAD.encode(signature))
}

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

async fn discovery(State(state): State<Shared>) -> Response {
    let issuer = state.lock().unwrap().issuer.clone();
    axum::Json(json!({
        "issuer": issuer,
        "authorization_endpoint": format!("{issuer}/authorize"),
        "token_endpoint": format!("{issuer}/token"),
        "userinfo_endpoint": format!("{issuer}/userinfo"),
        "jwks_uri": format!("{issuer}/jwks"),
        "response_types_supported": ["code"],
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": ["EdDSA", "ES256"],
        "token_endpoint_auth_methods_supported": ["client_secret_basic"],
        "code_challenge_methods_supported": ["S256"],
    }))
    .into_response()
}

async fn jwks(State(state): State<Shared>) -> Response {
    let mut state = state.lock().unwrap();
    state.jwks_fetches += 1;
    let mut keys = vec![ed_jwk(&state.key, "k1"), state.es256.1.clone()];
    if state.rotated_published {
        keys.push(ed_jwk(&state.rotated, "k2"));
    }
    axum::Json(json!({ "keys": keys })).into_response()
}

/// Signs in at once: straight back to the redirect URI with a code.
async fn authorize(
    State(state): State<Shared>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let param = |name: &str| query.get(name).cloned().unwrap_or_default();
    if param("client_id") != HOSTILE_CLIENT_ID || param("code_challenge_method") != "S256" {
        return (StatusCode::BAD_REQUEST, "bad authorization request").into_response();
    }
    let mut code = [0u8; 16];
    openssl::rand::rand_bytes(&mut code).unwrap();
    let code = URL_SAFE_NO_PAD.encode(code);
    let redirect_uri = param("redirect_uri");
    let mut target = Url::parse(&redirect_uri).unwrap();
    target
        .query_pairs_mut()
        .append_pair("code", &code)
        .append_pair("state", &param("state"));
    state.lock().unwrap().codes.insert(
        code,
        Pending {
            nonce: param("nonce"),
            challenge: param("code_challenge"),
            redirect_uri,
        },
    );
    (StatusCode::FOUND, [(header::LOCATION, target.to_string())]).into_response()
}

fn token_error(status: StatusCode, error: &str) -> Response {
    (status, axum::Json(json!({ "error": error }))).into_response()
}

/// The code exchange, checked as a provider checks it (client secret, single-use code, PKCE,
/// redirect URI), then answered as the scenario says.
async fn token(State(state): State<Shared>, headers: HeaderMap, body: String) -> Response {
    let form: HashMap<String, String> = form_urlencoded::parse(body.as_bytes())
        .into_owned()
        .collect();
    let field = |name: &str| form.get(name).cloned().unwrap_or_default();
    let basic = format!(
        "Basic {}",
        STANDARD.encode(format!("{HOSTILE_CLIENT_ID}:{HOSTILE_CLIENT_SECRET}"))
    );
    let scenario = {
        let mut state = state.lock().unwrap();
        state.token_requests += 1;
        state.scenario
    };
    if scenario == Scenario::NeverAnswers {
        std::future::pending::<()>().await;
    }
    if headers.get(header::AUTHORIZATION).map(|v| v.as_bytes()) != Some(basic.as_bytes()) {
        return token_error(StatusCode::UNAUTHORIZED, "invalid_client");
    }
    let Some(pending) = state.lock().unwrap().codes.remove(&field("code")) else {
        return token_error(StatusCode::BAD_REQUEST, "invalid_grant");
    };
    let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(field("code_verifier").as_bytes()));
    if field("grant_type") != "authorization_code"
        || challenge != pending.challenge
        || field("redirect_uri") != pending.redirect_uri
    {
        return token_error(StatusCode::BAD_REQUEST, "invalid_grant");
    }
    match scenario {
        Scenario::InvalidGrant => return token_error(StatusCode::BAD_REQUEST, "invalid_grant"),
        Scenario::ServerError => return StatusCode::BAD_GATEWAY.into_response(),
        Scenario::NoIdToken => {
            return axum::Json(json!({"access_token": "at", "token_type": "Bearer"}))
                .into_response();
        }
        _ => {}
    }
    let state = state.lock().unwrap();
    let now = now();
    let mut claims = json!({
        "iss": state.issuer, "sub": HOSTILE_SUBJECT, "aud": HOSTILE_CLIENT_ID,
        "exp": now + 300, "iat": now, "nonce": pending.nonce,
        "email": "eve@hostile.example", "email_verified": true, "name": "Eve Hostile",
        "amr": ["pwd"],
    });
    match scenario {
        Scenario::WrongAudience => claims["aud"] = json!("another-client"),
        Scenario::Expired => claims["exp"] = json!(now - 10),
        Scenario::WrongNonce => claims["nonce"] = json!("the-nonce-of-another-flow"),
        Scenario::WrongIssuer => claims["iss"] = json!("https://evil.example"),
        Scenario::ClaimsInUserinfo => {
            let object = claims.as_object_mut().unwrap();
            for claim in ["email", "email_verified", "name"] {
                object.remove(claim);
            }
        }
        _ => {}
    }
    for (name, value) in state.extra.as_object().unwrap() {
        match value {
            Value::Null => claims.as_object_mut().unwrap().remove(name),
            value => claims
                .as_object_mut()
                .unwrap()
                .insert(name.clone(), value.clone()),
        };
    }
    let id_token = match scenario {
        Scenario::ForeignKey => ed_jwt(&state.foreign, "k1", &claims),
        Scenario::UnknownKid => ed_jwt(&state.foreign, "never-published", &claims),
        Scenario::RotatedKey => ed_jwt(&state.rotated, "k2", &claims),
        Scenario::GoodEs256 => {
            let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::ES256);
            header.kid = Some("es1".into());
            jsonwebtoken::encode(&header, &claims, &state.es256.0).unwrap()
        }
        Scenario::Symmetric => {
            let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256);
            header.kid = Some("k1".into());
            let key = jsonwebtoken::EncodingKey::from_secret(HOSTILE_CLIENT_SECRET.as_bytes());
            jsonwebtoken::encode(&header, &claims, &key).unwrap()
        }
        _ => ed_jwt(&state.key, "k1", &claims),
    };
    axum::Json(json!({
        "access_token": format!("at-{}", field("code")),
        "token_type": "Bearer",
        "expires_in": 300,
        "id_token": id_token,
    }))
    .into_response()
}

async fn userinfo(headers: HeaderMap) -> Response {
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    if !bearer.starts_with("Bearer at-") {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    axum::Json(json!({
        "sub": HOSTILE_SUBJECT, "email": "eve@hostile.example", "email_verified": true,
        "name": "Eve from userinfo",
    }))
    .into_response()
}

/// Where a walk ended: the last URL and, when it was fetched, its answer.
#[derive(Debug)]
pub struct Landing {
    pub url: Url,
    /// `None` when the walk stopped before fetching `url` (`Browser::stop_at`).
    pub status: Option<u16>,
    pub body: String,
    /// Every URL fetched, in order.
    pub visited: Vec<Url>,
}

/// A browser for API tests: no script, redirects followed by hand, a cookie jar per host
/// (name, value and path; enough for Gatehouse and oidc-provider).
pub struct Browser {
    http: reqwest::Client,
    jar: HashMap<String, Vec<(String, String, String)>>,
    /// The account to sign in as at an upstream's login form; `None`: press Cancel.
    pub login: Option<String>,
    stop_at: Option<String>,
}

impl Browser {
    pub fn new(login: Option<&str>) -> Browser {
        Browser {
            http: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                // A connection per request, as the servers met here (node's among them) may
                // close a kept-alive one as the next request goes out: a reset, not a test result.
                .pool_max_idle_per_host(0)
                .timeout(Duration::from_secs(15))
                .build()
                .unwrap(),
            jar: HashMap::new(),
            login: login.map(str::to_owned),
            stop_at: None,
        }
    }

    /// The walk ends, unfetched, at the first URL starting with `prefix` (e.g. a redirect URI that
    /// nothing serves).
    pub fn stop_at(mut self, prefix: &str) -> Browser {
        self.stop_at = Some(prefix.to_owned());
        self
    }

    /// The `Cookie` header this browser would send to `url`.
    pub fn cookie_header(&self, url: &Url) -> Option<String> {
        let cookies = self.jar.get(url.host_str()?)?;
        let sent: Vec<String> = cookies
            .iter()
            .filter(|(_, _, path)| url.path().starts_with(path.as_str()))
            .map(|(name, value, _)| format!("{name}={value}"))
            .collect();
        (!sent.is_empty()).then(|| sent.join("; "))
    }

    /// The value of the cookie `name` for `url`'s host, if held.
    #[allow(dead_code)] // for the flow's tests, which read Gatehouse's cookies
    pub fn cookie(&self, url: &Url, name: &str) -> Option<String> {
        let cookies = self.jar.get(url.host_str()?)?;
        cookies
            .iter()
            .find(|(n, _, _)| n == name)
            .map(|(_, v, _)| v.clone())
    }

    fn keep(&mut self, url: &Url, headers: &reqwest::header::HeaderMap) {
        let Some(host) = url.host_str() else { return };
        let cookies = self.jar.entry(host.to_owned()).or_default();
        for set in headers.get_all(reqwest::header::SET_COOKIE) {
            let Ok(set) = set.to_str() else { continue };
            let mut parts = set.split(';').map(str::trim);
            let Some((name, value)) = parts.next().and_then(|p| p.split_once('=')) else {
                continue;
            };
            let mut path = "/".to_owned();
            let mut gone = value.is_empty();
            for attribute in parts {
                let (key, val) = attribute.split_once('=').unwrap_or((attribute, ""));
                match key.to_ascii_lowercase().as_str() {
                    "path" => path = val.to_owned(),
                    "max-age" => gone |= val.trim().starts_with('-') || val.trim() == "0",
                    "expires" => gone |= val.contains("1970"),
                    _ => {}
                }
            }
            cookies.retain(|(n, _, p)| !(n == name && *p == path));
            if !gone {
                cookies.push((name.to_owned(), value.to_owned(), path));
            }
        }
    }

    /// One request with the jar's cookies; the jar keeps what the answer sets.
    pub async fn request(
        &mut self,
        method: reqwest::Method,
        url: &Url,
        form: Option<&[(&str, &str)]>,
    ) -> reqwest::Response {
        let mut request = self.http.request(method, url.clone());
        if let Some(cookie) = self.cookie_header(url) {
            request = request.header(reqwest::header::COOKIE, cookie);
        }
        if let Some(form) = form {
            let body = form_urlencoded::Serializer::new(String::new())
                .extend_pairs(form)
                .finish();
            request = request
                .header(
                    reqwest::header::CONTENT_TYPE,
                    "application/x-www-form-urlencoded",
                )
                .body(body);
        }
        let response = request.send().await.unwrap();
        self.keep(url, response.headers());
        response
    }

    /// Follows redirects from `start`, posting an upstream's login form (as `login`, any
    /// password; or its Cancel button when `login` is `None`) when a page holds one; ends at the
    /// first answer that is neither a redirect nor such a page, or at `stop_at`.
    pub async fn browse(&mut self, start: &str) -> Landing {
        let mut url = Url::parse(start).unwrap();
        let mut visited = Vec::new();
        let mut form: Option<Vec<(String, String)>> = None;
        for _ in 0..20 {
            if self
                .stop_at
                .as_deref()
                .is_some_and(|p| url.as_str().starts_with(p))
            {
                return Landing {
                    url,
                    status: None,
                    body: String::new(),
                    visited,
                };
            }
            let pairs: Option<Vec<(&str, &str)>> = form
                .as_ref()
                .map(|f| f.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect());
            let method = if form.is_some() {
                reqwest::Method::POST
            } else {
                reqwest::Method::GET
            };
            let response = self.request(method, &url, pairs.as_deref()).await;
            visited.push(url.clone());
            form = None;
            let status = response.status();
            if status.is_redirection() {
                let location = response.headers()[reqwest::header::LOCATION]
                    .to_str()
                    .unwrap();
                url = url.join(location).unwrap();
                continue;
            }
            let body = response.text().await.unwrap();
            if let Some((action, fields)) = self.login_form(&body) {
                url = url.join(&action).unwrap();
                form = Some(fields);
                continue;
            }
            return Landing {
                url,
                status: Some(status.as_u16()),
                body,
                visited,
            };
        }
        panic!("more than 20 redirects: {visited:?}");
    }

    /// The upstream login form's target and fields, when `page` is that form.
    fn login_form(&self, page: &str) -> Option<(String, Vec<(String, String)>)> {
        let pattern = regex::Regex::new(r#"action="(/interaction/[^"]+)/login""#).unwrap();
        let base = pattern.captures(page)?.get(1)?.as_str().to_owned();
        Some(match &self.login {
            Some(login) => (
                format!("{base}/login"),
                vec![
                    ("login".into(), login.clone()),
                    ("password".into(), "any".into()),
                ],
            ),
            None => (format!("{base}/abort"), Vec::new()),
        })
    }
}
