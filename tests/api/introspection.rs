//! RFC 7662 introspection for clients registered with `gatehouse clients`, and RFC 8414 metadata
//! (docs/api.md §6), through HTTP and the CLI as a guarded service and its operator use them.

use std::time::Duration;

use gatehouse::config::SettingsArgs;
use reqwest::header::HeaderMap;
use serde_json::Value;

use crate::guard::{roles, within};
use crate::helpers::{
    Backend, SPREAD_DEADLINE, TestApp, both_backends, claims, spawn_app, spawn_app_with,
};

both_backends!(
    introspection_answers_registered_clients_only,
    metadata_names_the_keys_and_the_introspection_endpoint,
    introspection_is_for_designated_servers_and_tells_what_the_scopes_allow,
);

/// `gatehouse clients add NAME`: (id, secret).
pub fn add_client(app: &TestApp, name: &str) -> (String, String) {
    let output = app.cli(&["clients", "add", name], None);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8(output.stdout).unwrap();
    let field = |key: &str| {
        stdout
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .unwrap()
            .trim()
            .to_owned()
    };
    (field("client_id:"), field("client_secret:"))
}

pub async fn introspect(
    app: &TestApp,
    credentials: Option<(&str, &str)>,
    body: &str,
) -> (u16, HeaderMap, Value) {
    let mut request = app
        .client
        .post(app.url("/oauth2/introspect"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(body.to_owned());
    if let Some((id, secret)) = credentials {
        request = request.basic_auth(id, Some(secret));
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    assert_eq!(headers.get("cache-control").unwrap(), "no-store");
    (status, headers, response.json().await.unwrap())
}

async fn introspection_answers_registered_clients_only(backend: Backend) {
    let app = spawn_app(backend).await;
    let (token, refresh) = app.logged_in_user("ann@example.com").await;
    roles(&app, "ann@example.com", &["--add", "billing"]);
    let (id, secret) = add_client(&app, "billing-service");
    let listed = String::from_utf8(app.cli(&["clients", "list"], None).stdout).unwrap();
    assert!(
        listed.contains(&id) && listed.contains("billing-service"),
        "{listed}"
    );
    assert!(!listed.contains(&secret), "the secret is shown once only");
    let stored: Vec<u8> = app.scalar("SELECT secret_hash FROM api_clients").await;
    assert_eq!(stored.len(), 32);

    let client = Some((id.as_str(), secret.as_str()));
    let (status, _, live) = introspect(
        &app,
        client,
        &format!("token={token}&token_type_hint=access_token"),
    )
    .await;
    assert_eq!(status, 200);
    let c = claims(&token);
    assert_eq!(live["active"], true);
    for key in ["sub", "sid", "jti", "iss", "aud", "exp", "iat", "amr"] {
        assert_eq!(live[key], c[key], "{key}");
    }
    assert_eq!(live["username"], "ann@example.com");
    assert_eq!(live["name"], "Test User");
    assert_eq!(live["token_type"], "Bearer");
    // The roles as they are now, not as issued.
    within(SPREAD_DEADLINE, || async {
        introspect(&app, client, &format!("token={token}")).await.2["roles"]
            == serde_json::json!(["billing"])
    })
    .await;

    // Anything but a live access token: `{"active": false}` and nothing else.
    let garbage = "token=not.a.token".to_owned();
    let refresh_form = format!("token={refresh}");
    for body in [garbage.as_str(), refresh_form.as_str()] {
        let (status, _, answer) = introspect(&app, client, body).await;
        assert_eq!(
            (status, answer),
            (200, serde_json::json!({ "active": false })),
            "{body}"
        );
    }

    // Bad client credentials: 401 invalid_client, whatever is wrong with them.
    let wrong_id = uuid::Uuid::now_v7().to_string();
    for credentials in [
        None,
        Some((id.as_str(), "wrong")),
        Some((wrong_id.as_str(), secret.as_str())),
        Some(("not-an-id", secret.as_str())),
    ] {
        let (status, headers, answer) =
            introspect(&app, credentials, &format!("token={token}")).await;
        assert_eq!(status, 401, "{credentials:?}");
        assert_eq!(answer, serde_json::json!({ "error": "invalid_client" }));
        assert!(
            headers
                .get("www-authenticate")
                .unwrap()
                .to_str()
                .unwrap()
                .starts_with("Basic")
        );
    }
    // Bad requests from a good client: 400 invalid_request.
    let two_tokens = format!("token={token}&token={token}");
    for body in ["", "token=", "tokens=x", "%zz", two_tokens.as_str()] {
        let (status, _, answer) = introspect(&app, client, body).await;
        assert_eq!(
            (status, answer),
            (400, serde_json::json!({ "error": "invalid_request" })),
            "{body}"
        );
    }
    let json = app
        .client
        .post(app.url("/oauth2/introspect"))
        .basic_auth(&id, Some(&secret))
        .json(&serde_json::json!({ "token": token }))
        .send()
        .await
        .unwrap();
    assert_eq!(json.status(), 400);

    // Logged out: inactive.
    app.call(
        reqwest::Method::POST,
        "/api/v1/auth/logout",
        Some(&token),
        None,
    )
    .await
    .data(200);
    let (_, _, answer) = introspect(&app, client, &format!("token={token}")).await;
    assert_eq!(answer, serde_json::json!({ "active": false }));

    // Removed (by another process): refused within the second an instance believes a client.
    let removed = app.cli(&["clients", "remove", &id], None);
    assert!(removed.status.success());
    within(Duration::from_millis(1_500), || async {
        introspect(&app, client, "token=x").await.0 == 401
    })
    .await;
    assert!(!app.cli(&["clients", "remove", &id], None).status.success());

    // Guessing secrets is throttled per address, like logins.
    let mut throttled = None;
    for attempt in 0..400 {
        let (status, headers, answer) =
            introspect(&app, Some((&wrong_id, "guess")), "token=x").await;
        if status == 429 {
            assert_eq!(answer["error"], "rate_limited");
            assert!(headers.get("retry-after").is_some());
            throttled = Some(attempt);
            break;
        }
    }
    let attempt = throttled.expect("wrong secrets are throttled");
    assert!((100..=300).contains(&attempt), "{attempt}");
}

async fn metadata_names_the_keys_and_the_introspection_endpoint(backend: Backend) {
    let app = spawn_app_with(
        backend,
        SettingsArgs {
            public_url: Some("https://auth.example.com/".into()),
            issuer: Some("https://auth.example.com".into()),
            ..Default::default()
        },
    )
    .await;
    let metadata = app
        .get_json("/.well-known/oauth-authorization-server")
        .await;
    assert_eq!(metadata["issuer"], "https://auth.example.com");
    assert_eq!(
        metadata["jwks_uri"],
        "https://auth.example.com/.well-known/jwks.json"
    );
    assert_eq!(
        metadata["introspection_endpoint"],
        "https://auth.example.com/oauth2/introspect"
    );
    assert_eq!(
        metadata["introspection_endpoint_auth_methods_supported"],
        serde_json::json!(["client_secret_basic", "client_secret_post"])
    );
}

/// Issue 38, F3: a client that registered itself (open registration), allowed only `openid`, is
/// no resource server: it introspects nothing, neither the token it was given (which would tell
/// it the address, name and roles the person never allowed) nor an API key it holds. A resource
/// server the operator designates learns of a client's token only what its scopes allow.
async fn introspection_is_for_designated_servers_and_tells_what_the_scopes_allow(backend: Backend) {
    use crate::oauth_helpers::{REDIRECT, code, exchange, provider_app};
    let app = provider_app(
        backend,
        SettingsArgs {
            oauth_registration: Some("open".into()),
            ..SettingsArgs::default()
        },
    )
    .await;
    let (person, _) = app.logged_in_user("ann@example.com").await;
    roles(&app, "ann@example.com", &["--add", "admin"]);
    // A stranger's confidential client, registered at /oauth2/register.
    let registered: Value = app
        .client
        .post(app.url("/oauth2/register"))
        .json(&serde_json::json!({
            "client_name": "Stranger",
            "redirect_uris": [REDIRECT],
            "token_endpoint_auth_method": "client_secret_basic",
            "scope": "openid",
        }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let stranger = crate::oauth_helpers::Client {
        id: registered["client_id"].as_str().unwrap().to_owned(),
        secret: registered["client_secret"].as_str().map(str::to_owned),
    };
    let (code, verifier) = code(&app, &person, &stranger, "openid").await;
    let (status, tokens) = exchange(&app, &stranger, &code, &verifier).await;
    assert_eq!(status, 200, "{tokens}");
    let given = tokens["access_token"].as_str().unwrap().to_owned();
    let (_, key) = crate::api_keys::new_key(&app, &person, serde_json::json!({"name": "ci"})).await;
    let own = Some((stranger.id.as_str(), stranger.secret.as_deref().unwrap()));
    for token in [&given, &person, &key] {
        let (status, _, answer) = introspect(&app, own, &format!("token={token}")).await;
        assert_eq!(
            (status, answer),
            (403, serde_json::json!({"error": "unauthorized_client"}))
        );
    }
    // Nor may it make itself one through a metadata field.
    let flagged: Value = app
        .client
        .post(app.url("/oauth2/register"))
        .json(&serde_json::json!({
            "client_name": "Sneaky", "redirect_uris": [REDIRECT], "introspection": true,
        }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(flagged["client_id"].is_string(), "{flagged}");
    let introspects: bool = app
        .scalar("SELECT introspection FROM api_clients WHERE name = 'Sneaky'")
        .await;
    assert!(!introspects);

    // An operator's client with redirect URIs is no resource server unless designated.
    let rp = crate::oauth_helpers::add_client(&app, "Web app", &[]);
    let rp_credentials = Some((rp.id.as_str(), rp.secret.as_deref().unwrap()));
    let (status, _, _) = introspect(&app, rp_credentials, &format!("token={given}")).await;
    assert_eq!(status, 403);
    let listed = String::from_utf8(app.cli(&["clients", "list"], None).stdout).unwrap();
    assert!(!listed.contains("introspects"), "{listed}");
    let server = crate::oauth_helpers::add_client(&app, "Orders API", &["--introspect"]);
    let server = Some((server.id.as_str(), server.secret.as_deref().unwrap()));
    let (status, _, answer) = introspect(&app, server, &format!("token={given}")).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["active"], true);
    assert_eq!(answer["scope"], "openid");
    assert_eq!(answer["client_id"], stranger.id.as_str());
    for withheld in ["username", "email_verified", "name", "roles"] {
        assert!(answer.get(withheld).is_none(), "{withheld}: {answer}");
    }
    // The person's own sign-in says everything, as before.
    let (_, _, answer) = introspect(&app, server, &format!("token={person}")).await;
    assert_eq!(answer["username"], "ann@example.com");
    assert_eq!(answer["roles"], serde_json::json!(["admin"]));
    let listed = app.cli(&["clients", "list", "--json"], None);
    let listed: Value = serde_json::from_slice(&listed.stdout).unwrap();
    let flags: Vec<(String, bool)> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let name = c["name"].as_str().unwrap().to_owned();
            (name, c["introspection"].as_bool().unwrap())
        })
        .collect();
    assert!(flags.contains(&("Orders API".into(), true)), "{flags:?}");
    assert!(flags.contains(&("Stranger".into(), false)), "{flags:?}");
}
