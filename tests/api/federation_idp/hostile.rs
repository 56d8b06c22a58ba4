//! The hostile provider: discovery, JWK Set, an authorization endpoint that signs in at once, and
//! a token endpoint that checks the exchange as a provider does, then answers per `Scenario`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use ed25519_dalek::{Signer as _, SigningKey};
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};
use url::Url;

use super::UpstreamClient;

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
        HostileIdp::start_on(0).await
    }

    /// On this loopback port (0: any free one).
    pub async fn start_on(port: u16) -> HostileIdp {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
            .await
            .unwrap();
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
