//! Sender-constrained tokens (RFC 9449, docs/api.md §11): a DPoP proof at the token endpoint binds
//! the tokens to the client's key (`cnf.jkt`, `token_type: DPoP`; a public client's refresh token
//! too), and every endpoint that takes an access token (userinfo, the business API, forward-auth)
//! then wants a proof by that key for that very request; introspection says `cnf`. Hostile proofs
//! (another key, method, URL or token, a replay on another instance, an old one, `none`, HS256, a
//! private key in the header) are refused, and never use a refresh token up.

use base64::Engine as _;
use ed25519_dalek::pkcs8::EncodePrivateKey as _;
use gatehouse::config::SettingsArgs;
use reqwest::Method;
use serde_json::{Value, json};
use sha2::Digest as _;

use crate::guard::{FORWARD_AUTH, ask};
use crate::helpers::{Backend, TestApp, both_backends, claims};
use crate::introspection::introspect;
use crate::oauth_helpers::{
    Client, ISSUER, REDIRECT, add_client, authorization, authorize, param, pkce, provider_app,
    provider_pair,
};

both_backends!(
    a_public_clients_tokens_are_bound_to_its_key,
    hostile_proofs_are_refused_and_use_nothing_up,
    forward_auth_wants_the_proof_for_the_request_it_judges,
    the_token_endpoint_asks_for_its_nonce_when_told_to,
);

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// A client's DPoP key (Ed25519): its signing key, public JWK and RFC 7638 thumbprint.
struct Key {
    signing: jsonwebtoken::EncodingKey,
    jwk: Value,
    jkt: String,
}

fn key() -> Key {
    let secret = ed25519_dalek::SigningKey::from_bytes(&rand::random());
    let der = secret.to_pkcs8_der().unwrap();
    let x = b64(secret.verifying_key().as_bytes());
    let canonical = format!(r#"{{"crv":"Ed25519","kty":"OKP","x":"{x}"}}"#);
    Key {
        signing: jsonwebtoken::EncodingKey::from_ed_der(der.as_bytes()),
        jwk: json!({ "kty": "OKP", "crv": "Ed25519", "x": x }),
        jkt: b64(&sha2::Sha256::digest(canonical.as_bytes())),
    }
}

/// A proof by `key` for `method` `url` (with the hash of `token`), issued at `iat`.
fn proof_at(key: &Key, method: &str, url: &str, token: Option<&str>, iat: u64) -> String {
    proof_with(key, method, url, token, iat, None)
}

/// `proof_at`, carrying `nonce`.
fn proof_with(
    key: &Key,
    method: &str,
    url: &str,
    token: Option<&str>,
    iat: u64,
    nonce: Option<&str>,
) -> String {
    let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::EdDSA);
    header.typ = Some("dpop+jwt".into());
    header.jwk = Some(serde_json::from_value(key.jwk.clone()).unwrap());
    let mut claims = json!({
        "jti": uuid::Uuid::new_v4().to_string(),
        "htm": method,
        "htu": url,
        "iat": iat,
    });
    if let Some(token) = token {
        claims["ath"] = json!(b64(&sha2::Sha256::digest(token.as_bytes())));
    }
    if let Some(nonce) = nonce {
        claims["nonce"] = json!(nonce);
    }
    jsonwebtoken::encode(&header, &claims, &key.signing).unwrap()
}

fn proof(app: &TestApp, key: &Key, method: &str, url: &str, token: Option<&str>) -> String {
    proof_at(key, method, url, token, app.now_seconds())
}

/// The public URL, as discovery says it.
async fn base(app: &TestApp) -> String {
    let discovery = app.get_json("/.well-known/openid-configuration").await;
    let token = discovery["token_endpoint"].as_str().unwrap();
    token.strip_suffix("/oauth2/token").unwrap().to_owned()
}

/// `POST /oauth2/token` as the public client `client` with the form `pairs` and a DPoP header.
async fn token(
    app: &TestApp,
    client: &Client,
    pairs: &[(&str, &str)],
    dpop: Option<&str>,
) -> (u16, Value) {
    let mut form = vec![("client_id", client.id.as_str())];
    form.extend_from_slice(pairs);
    let body: String = form_urlencoded::Serializer::new(String::new())
        .extend_pairs(form)
        .finish();
    let mut request = app
        .client
        .post(app.url("/oauth2/token"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(body);
    if let Some(dpop) = dpop {
        request = request.header("dpop", dpop);
    }
    let response = request.send().await.unwrap();
    (response.status().as_u16(), response.json().await.unwrap())
}

/// A GET with `Authorization: <scheme> <token>` and a DPoP header: the status.
async fn get(app: &TestApp, path: &str, scheme: &str, token: &str, dpop: Option<&str>) -> u16 {
    let mut request = app
        .client
        .get(app.url(path))
        .header("authorization", format!("{scheme} {token}"));
    if let Some(dpop) = dpop {
        request = request.header("dpop", dpop);
    }
    request.send().await.unwrap().status().as_u16()
}

/// A public client's tokens from a code exchange with a proof by `key`.
async fn bound_tokens(app: &TestApp, person: &str, client: &Client, key: &Key) -> Value {
    let (verifier, challenge) = pkce();
    let mut body = authorization(client, "openid contacts:read offline_access", &challenge);
    body["consent"] = json!(true);
    let to = authorize(app, person, body).await.data(200)["redirectTo"]
        .as_str()
        .unwrap()
        .to_owned();
    let code = param(&to, "code").unwrap();
    let at = format!("{}/oauth2/token", base(app).await);
    let dpop = proof(app, key, "POST", &at, None);
    let (status, tokens) = token(
        app,
        client,
        &[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("redirect_uri", REDIRECT),
            ("code_verifier", &verifier),
        ],
        Some(&dpop),
    )
    .await;
    assert_eq!(status, 200, "{tokens}");
    tokens
}

fn public_client(app: &TestApp) -> Client {
    add_client(
        app,
        "Acme mobile",
        &[
            "--public",
            "--scope",
            "openid",
            "--scope",
            "contacts:read",
            "--scope",
            "offline_access",
        ],
    )
}

async fn a_public_clients_tokens_are_bound_to_its_key(backend: Backend) {
    let (app, twin) = provider_pair(backend).await;
    let (person, _) = app.logged_in_user("ada@example.com").await;
    let client = public_client(&app);
    let key = key();
    let tokens = bound_tokens(&app, &person, &client, &key).await;
    assert_eq!(tokens["token_type"], "DPoP");
    let access = tokens["access_token"].as_str().unwrap().to_owned();
    let refresh = tokens["refresh_token"].as_str().unwrap().to_owned();
    assert_eq!(claims(&access)["cnf"], json!({ "jkt": key.jkt }));
    assert_eq!(claims(&refresh)["cnf"], json!({ "jkt": key.jkt }));
    let base = base(&app).await;
    let userinfo = format!("{base}/oauth2/userinfo");
    let contacts = format!("{base}/api/v1/crm/contacts");

    // Userinfo and the business API, each with a proof for itself.
    let dpop = proof(&app, &key, "GET", &userinfo, Some(&access));
    assert_eq!(
        get(&app, "/oauth2/userinfo", "DPoP", &access, Some(&dpop)).await,
        200
    );
    let dpop = proof(&app, &key, "GET", &contacts, Some(&access));
    assert_eq!(
        get(&app, "/api/v1/crm/contacts", "DPoP", &access, Some(&dpop)).await,
        200
    );
    // Its proof again, on the other instance: a replay.
    assert_eq!(
        get(&twin, "/api/v1/crm/contacts", "DPoP", &access, Some(&dpop)).await,
        401
    );
    // As a bearer token, or without a proof: refused.
    assert_eq!(
        get(&app, "/api/v1/crm/contacts", "Bearer", &access, None).await,
        401
    );
    assert_eq!(
        get(&app, "/oauth2/userinfo", "DPoP", &access, None).await,
        401
    );

    // Introspection says to whom it is bound.
    let server = add_client(&app, "Orders API", &["--introspect"]);
    let basic = (server.id.as_str(), server.secret.as_deref().unwrap());
    let (_, _, seen) = introspect(&app, Some(basic), &format!("token={access}")).await;
    assert_eq!(
        (seen["active"].as_bool(), &seen["cnf"]),
        (Some(true), &json!({ "jkt": key.jkt }))
    );
    assert_eq!(seen["token_type"], "DPoP");

    // Refresh: by the same key only; a proof by another key uses nothing up.
    let at = format!("{base}/oauth2/token");
    let pairs = [
        ("grant_type", "refresh_token"),
        ("refresh_token", refresh.as_str()),
    ];
    let other = proof(&app, &crate::dpop::key(), "POST", &at, None);
    let (status, body) = token(&app, &client, &pairs, Some(&other)).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("invalid_grant")),
        "{body}"
    );
    let (status, body) = token(&app, &client, &pairs, None).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("invalid_grant")),
        "{body}"
    );
    let mine = proof(&app, &key, "POST", &at, None);
    let (status, renewed) = token(&app, &client, &pairs, Some(&mine)).await;
    assert_eq!(status, 200, "{renewed}");
    assert_eq!(renewed["token_type"], "DPoP");
    let renewed_access = renewed["access_token"].as_str().unwrap();
    assert_eq!(claims(renewed_access)["cnf"], json!({ "jkt": key.jkt }));
    assert_eq!(
        claims(renewed["refresh_token"].as_str().unwrap())["cnf"],
        json!({ "jkt": key.jkt })
    );

    // Discovery names the algorithms; a client without a proof still gets bearer tokens.
    let discovery = app.get_json("/.well-known/openid-configuration").await;
    assert_eq!(
        discovery["dpop_signing_alg_values_supported"],
        json!(["ES256", "ES384", "RS256", "PS256", "EdDSA"])
    );
    assert_eq!(ISSUER, discovery["issuer"]);
}

async fn hostile_proofs_are_refused_and_use_nothing_up(backend: Backend) {
    let app = provider_app(backend, SettingsArgs::default()).await;
    let (person, _) = app.logged_in_user("ada@example.com").await;
    let client = public_client(&app);
    let key = key();
    let tokens = bound_tokens(&app, &person, &client, &key).await;
    let access = tokens["access_token"].as_str().unwrap().to_owned();
    let base = base(&app).await;
    let contacts = format!("{base}/api/v1/crm/contacts");
    let now = app.now_seconds();
    let at = |dpop: String| {
        let access = access.clone();
        let app = &app;
        async move { get(app, "/api/v1/crm/contacts", "DPoP", &access, Some(&dpop)).await }
    };
    // Another method, URL, token; another key; too old; from the future.
    assert_eq!(
        at(proof(&app, &key, "POST", &contacts, Some(&access))).await,
        401
    );
    assert_eq!(
        at(proof(
            &app,
            &key,
            "GET",
            &format!("{base}/api/v1/crm/other"),
            Some(&access)
        ))
        .await,
        401
    );
    assert_eq!(
        at(proof(&app, &key, "GET", &contacts, Some("another token"))).await,
        401
    );
    assert_eq!(at(proof(&app, &key, "GET", &contacts, None)).await, 401);
    assert_eq!(
        at(proof(
            &app,
            &crate::dpop::key(),
            "GET",
            &contacts,
            Some(&access)
        ))
        .await,
        401
    );
    assert_eq!(
        at(proof_at(&key, "GET", &contacts, Some(&access), now - 120)).await,
        401
    );
    assert_eq!(
        at(proof_at(&key, "GET", &contacts, Some(&access), now + 60)).await,
        401
    );
    // alg none, HS256, a private key in the header, the wrong typ.
    let good = proof(&app, &key, "GET", &contacts, Some(&access));
    let parts: Vec<&str> = good.split('.').collect();
    let header = |h: Value| b64(h.to_string().as_bytes());
    let none = format!(
        "{}.{}.",
        header(json!({"typ": "dpop+jwt", "alg": "none", "jwk": key.jwk})),
        parts[1]
    );
    assert_eq!(at(none).await, 401);
    let hs = {
        let mut h = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256);
        h.typ = Some("dpop+jwt".into());
        let claims: Value = serde_json::from_slice(
            &base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(parts[1])
                .unwrap(),
        )
        .unwrap();
        jsonwebtoken::encode(
            &h,
            &claims,
            &jsonwebtoken::EncodingKey::from_secret(b"shared"),
        )
        .unwrap()
    };
    assert_eq!(at(hs).await, 401);
    let mut private = key.jwk.clone();
    private["d"] = json!(b64(&[7u8; 32]));
    let leaked = format!(
        "{}.{}.{}",
        header(json!({"typ": "dpop+jwt", "alg": "EdDSA", "jwk": private})),
        parts[1],
        parts[2]
    );
    assert_eq!(at(leaked).await, 401);
    let typ = format!(
        "{}.{}.{}",
        header(json!({"typ": "JWT", "alg": "EdDSA", "jwk": key.jwk})),
        parts[1],
        parts[2]
    );
    assert_eq!(at(typ).await, 401);
    // The good one still works: none of the above used it up.
    assert_eq!(at(good.clone()).await, 200);
    assert_eq!(at(good).await, 401, "used once");
    // At the token endpoint: a malformed proof is invalid_dpop_proof.
    let (status, body) = token(
        &app,
        &client,
        &[("grant_type", "refresh_token"), ("refresh_token", "x")],
        Some("garbage"),
    )
    .await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("invalid_dpop_proof")),
        "{body}"
    );
    // A bound token cannot be traded for an unbound one by whoever holds it (token exchange).
    let agent = add_client(
        &app,
        "Agent",
        &[
            "--grant",
            "urn:ietf:params:oauth:grant-type:token-exchange",
            "--scope",
            "contacts:read",
        ],
    );
    let (status, _, body) = crate::oauth_helpers::token(
        &app,
        Some((&agent.id, agent.secret.as_deref().unwrap())),
        &[
            (
                "grant_type",
                "urn:ietf:params:oauth:grant-type:token-exchange",
            ),
            ("subject_token", &access),
            (
                "subject_token_type",
                "urn:ietf:params:oauth:token-type:access_token",
            ),
        ],
    )
    .await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("invalid_grant")),
        "{body}"
    );

    // A client the operator requires to use DPoP gets no token without a proof.
    let strict = add_client(
        &app,
        "Strict mobile",
        &[
            "--public",
            "--dpop",
            "required",
            "--scope",
            "openid",
            "--scope",
            "offline_access",
        ],
    );
    let (verifier, challenge) = pkce();
    let mut body = authorization(&strict, "openid offline_access", &challenge);
    body["consent"] = json!(true);
    let to = authorize(&app, &person, body).await.data(200)["redirectTo"]
        .as_str()
        .unwrap()
        .to_owned();
    let code = param(&to, "code").unwrap();
    let pairs = [
        ("grant_type", "authorization_code"),
        ("code", code.as_str()),
        ("redirect_uri", REDIRECT),
        ("code_verifier", verifier.as_str()),
    ];
    let (status, body) = token(&app, &strict, &pairs, None).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("invalid_dpop_proof")),
        "{body}"
    );
    let listed = app.cli(&["clients", "list", "--json"], None);
    let listed: Value = serde_json::from_slice(&listed.stdout).unwrap();
    let strict_view = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "Strict mobile")
        .unwrap();
    assert_eq!(strict_view["dpopBoundAccessTokens"], true);

    // An unbound token is a bearer token: the DPoP scheme is refused for it.
    let (plain, _) = app.logged_in_user("bo@example.com").await;
    let dpop = proof(&app, &key, "GET", &contacts, Some(&plain));
    assert_eq!(
        get(&app, "/api/v1/crm/contacts", "DPoP", &plain, Some(&dpop)).await,
        401
    );
    assert_eq!(
        get(&app, "/api/v1/crm/contacts", "Bearer", &plain, None).await,
        200
    );
    let gone = app
        .call(Method::GET, "/api/v1/auth/me", Some(&plain), None)
        .await;
    gone.data(200);
    // Expired, a bound token is told so as any token is (the client then refreshes).
    app.clock()
        .advance(std::time::Duration::from_secs(25 * 3600));
    let late = proof(&app, &key, "GET", &contacts, Some(&access));
    let answer = app
        .send(
            app.client
                .get(app.url("/api/v1/crm/contacts"))
                .header("authorization", format!("DPoP {access}"))
                .header("dpop", late),
        )
        .await;
    answer.error(401, "TOKEN_EXPIRED");
}

/// Forward-auth checks the proof against the request the trusted proxy describes (method, host,
/// path), and tells the upstream the key (`Remote-Dpop`).
async fn forward_auth_wants_the_proof_for_the_request_it_judges(backend: Backend) {
    let args = SettingsArgs {
        trusted_proxies: Some("127.0.0.1/32".into()),
        ..SettingsArgs::default()
    };
    let app = provider_app(backend, args).await;
    let (person, _) = app.logged_in_user("ada@example.com").await;
    let client = public_client(&app);
    let key = key();
    let tokens = bound_tokens(&app, &person, &client, &key).await;
    let access = tokens["access_token"].as_str().unwrap();
    let described = [
        ("x-forwarded-method", "GET"),
        ("x-forwarded-proto", "https"),
        ("x-forwarded-host", "app.example.test"),
        ("x-forwarded-uri", "/orders/7?page=2"),
    ];
    let asked = |dpop: Option<String>| {
        let mut headers: Vec<(&str, String)> =
            described.iter().map(|(k, v)| (*k, v.to_string())).collect();
        headers.push(("authorization", format!("DPoP {access}")));
        if let Some(dpop) = dpop {
            headers.push(("dpop", dpop));
        }
        headers
    };
    let call = |headers: Vec<(&'static str, String)>| {
        let app = &app;
        async move {
            let pairs: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
            ask(&app.http, FORWARD_AUTH, None, &pairs).await
        }
    };
    let right = proof(
        &app,
        &key,
        "GET",
        "https://app.example.test/orders/7",
        Some(access),
    );
    let decision = call(asked(Some(right))).await;
    assert_eq!(decision.status, 200);
    assert_eq!(decision.header("remote-dpop"), Some(key.jkt.as_str()));
    assert_eq!(decision.header("remote-client"), Some(client.id.as_str()));
    let elsewhere = proof(
        &app,
        &key,
        "GET",
        "https://app.example.test/admin",
        Some(access),
    );
    assert_eq!(call(asked(Some(elsewhere))).await.status, 401);
    assert_eq!(call(asked(None)).await.status, 401);
    // A bearer token passes as before, with Remote-Dpop empty.
    let bearer = [
        ("x-forwarded-method", "GET"),
        ("x-forwarded-host", "app.example.test"),
        ("x-forwarded-uri", "/"),
    ];
    let decision = ask(&app.http, FORWARD_AUTH, Some(&person), &bearer).await;
    assert_eq!(decision.status, 200);
    assert_eq!(decision.header("remote-dpop"), Some(""));
}

/// `GATEHOUSE_OAUTH_DPOP_NONCE=required` (RFC 9449 §8): a proof without the server's nonce, or
/// with a made-up or stale one, is `use_dpop_nonce`, and every answer gives the nonce to use.
async fn the_token_endpoint_asks_for_its_nonce_when_told_to(backend: Backend) {
    let args = SettingsArgs {
        oauth_dpop_nonce: Some("required".into()),
        ..SettingsArgs::default()
    };
    let app = provider_app(backend, args).await;
    let client = add_client(
        &app,
        "Service",
        &["--grant", "client_credentials", "--scope", "contacts:read"],
    );
    let at = format!("{}/oauth2/token", base(&app).await);
    let key = key();
    let ask = |dpop: String| {
        let app = &app;
        let client = &client;
        async move {
            let response = app
                .client
                .post(app.url("/oauth2/token"))
                .basic_auth(&client.id, client.secret.as_deref())
                .header("content-type", "application/x-www-form-urlencoded")
                .header("dpop", dpop)
                .body("grant_type=client_credentials")
                .send()
                .await
                .unwrap();
            let status = response.status().as_u16();
            let nonce = response.headers()["dpop-nonce"]
                .to_str()
                .unwrap()
                .to_owned();
            let body: Value = response.json().await.unwrap();
            (status, nonce, body)
        }
    };
    let now = app.now_seconds();
    let (status, nonce, body) = ask(proof_at(&key, "POST", &at, None, now)).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("use_dpop_nonce")),
        "{body}"
    );
    let forged = ask(proof_with(
        &key,
        "POST",
        &at,
        None,
        now,
        Some("0.AAAAAAAAAAAAAAAAAAAAAA"),
    ))
    .await;
    assert_eq!(forged.2["error"], "use_dpop_nonce");
    let (status, again, body) = ask(proof_with(&key, "POST", &at, None, now, Some(&nonce))).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["token_type"], "DPoP");
    assert_eq!(again, nonce, "the same nonce within its window");
    // Ten minutes on, that nonce is stale.
    app.clock().advance(std::time::Duration::from_secs(600));
    let late = app.now_seconds();
    let (status, fresh, body) = ask(proof_with(&key, "POST", &at, None, late, Some(&nonce))).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("use_dpop_nonce")),
        "{body}"
    );
    assert_ne!(fresh, nonce);
}
