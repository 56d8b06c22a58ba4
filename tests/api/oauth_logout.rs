//! Ending what clients hold (docs/api.md §11): back-channel logout tokens received by a relying
//! party's endpoint (a real HTTP server on loopback) for each cause, checked against the JWK Set;
//! redelivery after the client failed; consents listed and withdrawn; client sessions in the
//! session list; RFC 7009 revocation's answers; end-session's confirmation page.
//!
//! Until the token endpoint (flows-A) is on this branch, a client's session is set up in the
//! database as an authorization would leave it (`client_session`); everything under test is
//! driven through the HTTP API and the CLI.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::http::StatusCode as AxumStatus;
use gatehouse::config::SettingsArgs;
use reqwest::Method;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::guard::within;
use crate::helpers::{
    Backend, PASSWORD, SPREAD_DEADLINE, TestApp, both_backends, claims, jwt_header, spawn_app_with,
};

both_backends!(
    logout_everywhere_tells_the_client_with_a_signed_logout_token,
    a_client_that_failed_gets_the_logout_token_again,
    withdrawing_a_consent_ends_the_clients_sessions_and_tells_it,
    removing_a_client_ends_its_sessions_and_tells_it_first,
    the_session_list_names_the_client_and_ending_it_tells_the_client,
    revocation_answers_as_rfc_7009_says,
    end_session_without_a_hint_asks_first,
);

/// Back-Channel Logout 1.0 §2.4.
const EVENT: &str = "http://schemas.openid.net/event/backchannel-logout";
/// docs/api.md §11: delivered within 5 s while the client answers.
pub(crate) const DELIVERY: Duration = Duration::from_secs(5);
const ISSUER: &str = "https://login.example.com";

async fn provider(backend: Backend) -> TestApp {
    spawn_app_with(
        backend,
        SettingsArgs {
            public_url: Some(format!("{ISSUER}/")),
            ..Default::default()
        },
    )
    .await
}

/// A relying party's back-channel logout endpoint: records each logout token; answers 500 to
/// the first `failures` posts, then 200.
#[derive(Clone)]
pub(crate) struct Receiver {
    pub(crate) uri: String,
    tokens: Arc<Mutex<Vec<String>>>,
    posts: Arc<AtomicUsize>,
}

impl Receiver {
    pub(crate) async fn start(failures: usize) -> Receiver {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let uri = format!("http://{}/backchannel", listener.local_addr().unwrap());
        let tokens: Arc<Mutex<Vec<String>>> = Arc::default();
        let posts: Arc<AtomicUsize> = Arc::default();
        let (t, p) = (tokens.clone(), posts.clone());
        let app = axum::Router::new().route(
            "/backchannel",
            axum::routing::post(move |body: Bytes| {
                let (t, p) = (t.clone(), p.clone());
                async move {
                    let token = form_urlencoded::parse(&body)
                        .find(|(k, _)| k == "logout_token")
                        .map(|(_, v)| v.into_owned())
                        .unwrap_or_default();
                    t.lock().unwrap().push(token);
                    if p.fetch_add(1, Ordering::SeqCst) < failures {
                        AxumStatus::INTERNAL_SERVER_ERROR
                    } else {
                        AxumStatus::OK
                    }
                }
            }),
        );
        tokio::spawn(async move { axum::serve(listener, app).await });
        Receiver { uri, tokens, posts }
    }

    fn tokens(&self) -> Vec<String> {
        self.tokens.lock().unwrap().clone()
    }

    /// Waits (at most `limit`) until `n` posts arrived; their tokens.
    pub(crate) async fn received(&self, n: usize, limit: Duration) -> Vec<String> {
        within(limit, || async { self.posts.load(Ordering::SeqCst) >= n }).await;
        self.tokens()
    }
}

/// `gatehouse clients add NAME --backchannel-logout-uri URI --json`: the client id.
fn add_client(app: &TestApp, name: &str, extra: &[&str]) -> String {
    let mut args = vec!["clients", "add", name, "--json"];
    args.extend_from_slice(extra);
    let output = app.cli(&args, None);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let out: Value = serde_json::from_slice(&output.stdout).unwrap();
    out["clientId"].as_str().unwrap().to_owned()
}

fn literal(app: &TestApp, id: &str) -> String {
    let id = Uuid::parse_str(id).unwrap();
    if app.db.url.starts_with("sqlite:") {
        format!("x'{}'", id.simple())
    } else {
        format!("'{id}'")
    }
}

/// The session an authorization of `client` by the person signed in as `session` leaves (set-up
/// standing in for the token endpoint); its id.
async fn client_session(app: &TestApp, person_session: &str, client: &str) -> String {
    let id = Uuid::now_v7().to_string();
    app.execute(&format!(
        "INSERT INTO sessions (id, user_id, amr, created_at, last_used_at, expires_at, client_id, \
         scope, parent_id, auth_time) SELECT {}, user_id, amr, created_at, last_used_at, \
         expires_at, {}, 'openid profile', id, created_at FROM sessions WHERE id = {}",
        literal(app, &id),
        literal(app, client),
        literal(app, person_session),
    ))
    .await;
    id
}

/// A signed-in person: (user id, access token, refresh token, session id).
async fn person(app: &TestApp, email: &str) -> (String, String, String, String) {
    let user = app.create_user(email, PASSWORD).await.to_string();
    let answer = app.login(email, PASSWORD).await;
    let data = answer.data(200);
    let access = data["accessToken"].as_str().unwrap().to_owned();
    let sid = claims(&access)["sid"].as_str().unwrap().to_owned();
    (
        user,
        access,
        data["refreshToken"].as_str().unwrap().to_owned(),
        sid,
    )
}

/// Checks a logout token as a relying party must (Back-Channel Logout §2.6): its signature by
/// the key its `kid` names in the JWK Set, with that key's algorithm, and its claims.
async fn check_logout_token(app: &TestApp, token: &str, client: &str, user: &str, sid: &str) {
    let c = check_logout_token_from(app, token, client, sid, ISSUER).await;
    assert_eq!(c["sub"], user);
}

/// `check_logout_token` for an app of another issuer; the claims.
pub(crate) async fn check_logout_token_from(
    app: &TestApp,
    token: &str,
    client: &str,
    sid: &str,
    issuer: &str,
) -> Value {
    let header = jwt_header(token);
    assert_eq!(header["typ"], "logout+jwt");
    let jwks = app.get_json("/.well-known/jwks.json").await;
    let jwk = jwks["keys"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["kid"] == header["kid"])
        .expect("the logout token's key is published")
        .clone();
    assert_eq!(
        jwk["alg"], header["alg"],
        "signed with the key's own algorithm"
    );
    let jwk: jsonwebtoken::jwk::Jwk = serde_json::from_value(jwk).unwrap();
    let key = jsonwebtoken::DecodingKey::from_jwk(&jwk).unwrap();
    let alg: jsonwebtoken::Algorithm = header["alg"].as_str().unwrap().parse().unwrap();
    let mut validation = jsonwebtoken::Validation::new(alg);
    validation.set_audience(&[client]);
    validation.set_issuer(&[issuer]);
    let data = jsonwebtoken::decode::<Value>(token, &key, &validation).expect("a valid signature");
    let c = data.claims;
    assert!(c["sub"].is_string());
    assert_eq!(c["sid"], sid);
    assert_eq!(c["events"], json!({ EVENT: {} }));
    assert!(c.get("nonce").is_none());
    assert!(c["jti"].as_str().is_some_and(|j| !j.is_empty()));
    let (iat, exp) = (c["iat"].as_i64().unwrap(), c["exp"].as_i64().unwrap());
    assert!(exp > iat && exp - iat <= 300, "{c}");
    c
}

async fn logout_everywhere_tells_the_client_with_a_signed_logout_token(backend: Backend) {
    let app = provider(backend).await;
    let rp = Receiver::start(0).await;
    let client = add_client(&app, "Grafana", &["--backchannel-logout-uri", &rp.uri]);
    let silent = add_client(&app, "Silent", &[]);
    let (user, access, _, sid) = person(&app, "ada@example.com").await;
    let given = client_session(&app, &sid, &client).await;
    client_session(&app, &sid, &silent).await;
    let answer = app
        .call(
            Method::POST,
            "/api/v1/auth/logout",
            Some(&access),
            Some(json!({ "scope": "all" })),
        )
        .await;
    assert_eq!(answer.data(200)["revokedSessions"], 3);
    let tokens = rp.received(1, DELIVERY).await;
    assert_eq!(tokens.len(), 1, "one token, for the client that has a URI");
    check_logout_token(&app, &tokens[0], &client, &user, &given).await;
    // Sent once: the notice is done (none left queued) and every ended client session is marked
    // swept, which is all a later pass looks at, so no later pass has anything more to say.
    within(SPREAD_DEADLINE, || async {
        app.scalar::<i64>("SELECT COUNT(*) FROM backchannel_logouts")
            .await
            == 0
    })
    .await;
    let unswept: i64 = app
        .scalar(
            "SELECT COUNT(*) FROM sessions WHERE client_id IS NOT NULL \
             AND revoked_at IS NOT NULL AND logout_queued = FALSE",
        )
        .await;
    assert_eq!(unswept, 0);
    assert_eq!(rp.tokens().len(), 1);
}

async fn a_client_that_failed_gets_the_logout_token_again(backend: Backend) {
    let app = provider(backend).await;
    let rp = Receiver::start(1).await;
    let client = add_client(
        &app,
        "Flaky",
        &[
            "--backchannel-logout-uri",
            &rp.uri,
            "--id-token-alg",
            "ES256",
        ],
    );
    let (user, access, _, sid) = person(&app, "bob@example.com").await;
    let given = client_session(&app, &sid, &client).await;
    let answer = app
        .call(
            Method::POST,
            "/api/v1/auth/logout",
            Some(&access),
            Some(json!({ "scope": "all" })),
        )
        .await;
    assert_eq!(answer.data(200)["revokedSessions"], 2);
    // The first post answered 500; the retry comes after a 1 s backoff.
    let tokens = rp.received(2, DELIVERY + Duration::from_secs(3)).await;
    assert_eq!(jwt_header(&tokens[1])["alg"], "ES256");
    check_logout_token(&app, &tokens[1], &client, &user, &given).await;
    assert_ne!(claims(&tokens[0])["jti"], claims(&tokens[1])["jti"]);
    within(Duration::from_secs(3), || async {
        app.scalar::<i64>("SELECT COUNT(*) FROM backchannel_logouts")
            .await
            == 0
    })
    .await;
}

async fn withdrawing_a_consent_ends_the_clients_sessions_and_tells_it(backend: Backend) {
    let app = provider(backend).await;
    let rp = Receiver::start(0).await;
    let client = add_client(&app, "Notes", &["--backchannel-logout-uri", &rp.uri]);
    let (user, access, _, sid) = person(&app, "cy@example.com").await;
    let given = client_session(&app, &sid, &client).await;
    app.execute(&format!(
        "INSERT INTO oauth_consents (user_id, client_id, scopes, granted_at) \
         VALUES ({}, {}, 'openid profile', 1700000000000)",
        literal(&app, &user),
        literal(&app, &client),
    ))
    .await;
    let list = app.get("/api/v1/auth/consents", &access).await;
    assert_eq!(
        list.data(200)["items"],
        json!([{
            "clientId": client,
            "clientName": "Notes",
            "scopes": ["openid", "profile"],
            "described": ["Know who you are on this service", "See your name"],
            "grantedAt": "2023-11-14T22:13:20Z",
        }])
    );
    let path = format!("/api/v1/auth/consents/{client}");
    let answer = app.call(Method::DELETE, &path, Some(&access), None).await;
    assert_eq!(answer.data(200), &json!({ "clientId": client }));
    let tokens = rp.received(1, DELIVERY).await;
    check_logout_token(&app, &tokens[0], &client, &user, &given).await;
    // The person's own session goes on; the consent is gone.
    let list = app.get("/api/v1/auth/consents", &access).await;
    assert_eq!(list.data(200)["items"], json!([]));
    let again = app.call(Method::DELETE, &path, Some(&access), None).await;
    again.error(404, "NOT_FOUND");
    let bad = app
        .call(
            Method::DELETE,
            "/api/v1/auth/consents/x",
            Some(&access),
            None,
        )
        .await;
    bad.error(404, "NOT_FOUND");
}

async fn removing_a_client_ends_its_sessions_and_tells_it_first(backend: Backend) {
    let app = provider(backend).await;
    let rp = Receiver::start(0).await;
    let client = add_client(&app, "Leaving", &["--backchannel-logout-uri", &rp.uri]);
    let (user, access, _, sid) = person(&app, "di@example.com").await;
    let given = client_session(&app, &sid, &client).await;
    let output = app.cli(&["clients", "remove", &client], None);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    // The CLI ended the session and queued the notice; the server delivers it.
    let tokens = rp.received(1, DELIVERY).await;
    check_logout_token(&app, &tokens[0], &client, &user, &given).await;
    // The person's own session is untouched.
    app.get("/api/v1/auth/me", &access).await.data(200);
}

async fn the_session_list_names_the_client_and_ending_it_tells_the_client(backend: Backend) {
    let app = provider(backend).await;
    let rp = Receiver::start(0).await;
    let client = add_client(&app, "Dashboard", &["--backchannel-logout-uri", &rp.uri]);
    let (user, access, _, sid) = person(&app, "ed@example.com").await;
    let given = client_session(&app, &sid, &client).await;
    let list = app.get("/api/v1/auth/sessions", &access).await;
    let items = list.data(200)["items"].as_array().unwrap().clone();
    assert_eq!(items.len(), 2);
    let mine = items.iter().find(|i| i["id"] == sid.as_str()).unwrap();
    assert_eq!(mine["client"], Value::Null);
    let theirs = items.iter().find(|i| i["id"] == given.as_str()).unwrap();
    assert_eq!(
        theirs["client"],
        json!({ "clientId": client, "name": "Dashboard" })
    );
    let path = format!("/api/v1/auth/sessions/{given}");
    let answer = app.call(Method::DELETE, &path, Some(&access), None).await;
    answer.data(200);
    let tokens = rp.received(1, DELIVERY).await;
    check_logout_token(&app, &tokens[0], &client, &user, &given).await;
}

async fn revoke(
    app: &TestApp,
    auth: Option<(&str, &str)>,
    form: &[(&str, &str)],
) -> reqwest::Response {
    let mut request = app
        .client
        .post(app.url("/oauth2/revoke"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(
            form_urlencoded::Serializer::new(String::new())
                .extend_pairs(form)
                .finish(),
        );
    if let Some((id, secret)) = auth {
        request = request.basic_auth(id, Some(secret));
    }
    request.send().await.unwrap()
}

async fn revocation_answers_as_rfc_7009_says(backend: Backend) {
    let app = provider(backend).await;
    let output = app.cli(&["clients", "add", "Backend", "--json"], None);
    let out: Value = serde_json::from_slice(&output.stdout).unwrap();
    let (id, secret) = (
        out["clientId"].as_str().unwrap().to_owned(),
        out["clientSecret"].as_str().unwrap().to_owned(),
    );
    let public = add_client(
        &app,
        "SPA",
        &["--public", "--redirect-uri", "http://127.0.0.1/cb"],
    );
    let (_, access, refresh, _) = person(&app, "fay@example.com").await;
    // Unknown and malformed tokens: 200, nothing to say.
    for token in ["garbage", "a.b.c"] {
        let answer = revoke(&app, Some((&id, &secret)), &[("token", token)]).await;
        assert_eq!(answer.status(), 200);
    }
    // The person's own tokens are no client's: not revoked, 200 all the same.
    for token in [&access, &refresh] {
        let answer = revoke(&app, Some((&id, &secret)), &[("token", token.as_str())]).await;
        assert_eq!(answer.status(), 200);
        let answer = revoke(
            &app,
            None,
            &[("token", token.as_str()), ("client_id", &public)],
        )
        .await;
        assert_eq!(answer.status(), 200);
    }
    app.get("/api/v1/auth/me", &access).await.data(200);
    // Wrong credentials: 401 invalid_client with a Basic challenge.
    let answer = revoke(&app, Some((&id, "wrong")), &[("token", "x")]).await;
    assert_eq!(answer.status(), 401);
    assert!(
        answer
            .headers()
            .get("www-authenticate")
            .unwrap()
            .to_str()
            .unwrap()
            .starts_with("Basic")
    );
    assert_eq!(
        answer.json::<Value>().await.unwrap()["error"],
        "invalid_client"
    );
    // A confidential client naming itself without its secret is no public client.
    let answer = revoke(&app, None, &[("token", "x"), ("client_id", &id)]).await;
    assert_eq!(answer.status(), 401);
    // No token: invalid_request.
    let answer = revoke(&app, Some((&id, &secret)), &[]).await;
    assert_eq!(answer.status(), 400);
    assert_eq!(
        answer.json::<Value>().await.unwrap()["error"],
        "invalid_request"
    );
}

async fn end_session_without_a_hint_asks_first(backend: Backend) {
    let app = provider(backend).await;
    let rp = Receiver::start(0).await;
    let client = add_client(
        &app,
        "Wiki",
        &[
            "--backchannel-logout-uri",
            &rp.uri,
            "--post-logout-redirect-uri",
            "https://wiki.example.com/bye",
        ],
    );
    let (user, access, _, _) = person(&app, "gil@example.com").await;
    let set = app
        .call(
            Method::POST,
            "/api/v1/auth/browser-session",
            Some(&access),
            None,
        )
        .await;
    let cookie = set
        .header("set-cookie")
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    let sid = claims(&access)["sid"].as_str().unwrap().to_owned();
    let given = client_session(&app, &sid, &client).await;
    let no_redirects = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let query = format!(
        "/oauth2/end-session?client_id={client}&post_logout_redirect_uri=https%3A%2F%2Fwiki.example.com%2Fbye&state=s1"
    );
    let page = no_redirects
        .get(app.url(&query))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 200);
    let html = page.text().await.unwrap();
    assert!(html.contains("id=\"end-session-confirm\""), "{html}");
    // Nothing ended yet.
    app.get("/api/v1/auth/me", &access).await.data(200);
    // A forged confirmation (another site's form) ends nothing.
    let forged = no_redirects
        .post(app.url("/oauth2/end-session"))
        .header("cookie", &cookie)
        .form(&[("confirm", "forged"), ("client_id", client.as_str())])
        .send()
        .await
        .unwrap();
    assert_eq!(forged.status(), 200);
    app.get("/api/v1/auth/me", &access).await.data(200);
    let confirm = regex::Regex::new(r#"name="confirm" value="([^"]+)""#)
        .unwrap()
        .captures(&html)
        .unwrap()[1]
        .to_owned();
    let done = no_redirects
        .post(app.url("/oauth2/end-session"))
        .header("cookie", &cookie)
        .form(&[
            ("confirm", confirm.as_str()),
            ("client_id", client.as_str()),
            ("post_logout_redirect_uri", "https://wiki.example.com/bye"),
            ("state", "s1"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(done.status(), 303);
    assert_eq!(
        done.headers()["location"],
        "https://wiki.example.com/bye?state=s1"
    );
    let tokens = rp.received(1, DELIVERY).await;
    check_logout_token(&app, &tokens[0], &client, &user, &given).await;
    app.get("/api/v1/auth/me", &access)
        .await
        .error(401, "TOKEN_INVALID");
    // An unregistered post-logout URI: no redirect, the page says so.
    let other = no_redirects
        .get(app.url(&format!(
            "/oauth2/end-session?client_id={client}&post_logout_redirect_uri=https%3A%2F%2Fevil.example%2F"
        )))
        .send()
        .await
        .unwrap();
    assert_eq!(other.status(), 200);
    assert!(other.text().await.unwrap().contains("id=\"signed-out\""));
}
