//! panva's openid-client (npm, v6, OpenID Certified relying party) against the provider:
//! tests/browser/oidc-rp.mjs, run by Node, once per client: one client per ID-token algorithm
//! (RS256 with `client_secret_basic`, ES256 with `client_secret_post`, EdDSA with
//! `client_secret_basic`) and a public client (`none`, RS256 by default); and
//! tests/browser/oidc-dcr.mjs, where openid-client registers its clients itself (RFC 7591); and
//! tests/browser/oidc-device.mjs, where it is a command-line tool using the device grant (RFC
//! 8628).

use gatehouse::config::SettingsArgs;
use serde_json::{Value, json};

use super::{Registered, add_client, provider, provider_with};
use crate::browser::{BROWSER_DIR, node, node_ready, packages_ready};
use crate::helpers::{Backend, PASSWORD, both_backends};

both_backends!(
    openid_client_signs_in_with_a_client_of_each_id_token_algorithm,
    openid_client_registers_itself_and_signs_in,
    openid_client_signs_a_tool_in_by_the_device_grant,
);

/// `initiateDeviceAuthorization` and `pollDeviceAuthorizationGrant` (which waits the interval,
/// and is told `authorization_pending` once: the person answers late), the ID token validated,
/// userinfo, a refresh; a request the person denies ends in `access_denied`. Details in the
/// script. Then the same with DPoP (an ES256 key openid-client makes): bound tokens, userinfo, the
/// business API and a refresh with proofs (the token endpoint asking for its nonce, which
/// openid-client supplies on its own), the refresh token refused without the key. The person's
/// connected applications then list the tool, with its two sessions.
async fn openid_client_signs_a_tool_in_by_the_device_grant(backend: Backend) {
    if !node_ready() || !packages_ready(&["openid-client"]) {
        return;
    }
    // DPoP nonces asked for (RFC 9449 §8): openid-client answers use_dpop_nonce by itself.
    let args = SettingsArgs {
        oauth_dpop_nonce: Some("required".into()),
        ..SettingsArgs::default()
    };
    let provider = provider_with(backend, "127.0.0.1", args).await;
    let app = &provider.app;
    let user = app.create_user("ann@example.com", PASSWORD).await;
    let tool = add_client(
        app,
        "Acme CLI",
        &[
            "--public",
            "--grant",
            "urn:ietf:params:oauth:grant-type:device_code",
            "--grant",
            "refresh_token",
            "--scope",
            "openid",
            "--scope",
            "profile",
            "--scope",
            "offline_access",
            "--scope",
            "contacts:read",
        ],
    );
    let env = vec![
        ("GATEHOUSE_URL".to_owned(), provider.issuer.clone()),
        ("GATEHOUSE_EMAIL".to_owned(), "ann@example.com".to_owned()),
        ("GATEHOUSE_PASSWORD".to_owned(), PASSWORD.to_owned()),
        ("GATEHOUSE_USER_ID".to_owned(), user.to_string()),
        ("OIDC_CLIENT_ID".to_owned(), tool.id.clone()),
    ];
    let printed = node(BROWSER_DIR, &["oidc-device.mjs"], env).await;
    eprintln!("{printed}");
    assert!(printed.contains("Acme CLI: ok"), "{printed}");
    let token = super::person_token(app, "ann@example.com", PASSWORD).await;
    let consents = app.get("/api/v1/auth/consents", &token).await;
    let names: Vec<&str> = (consents.data(200)["items"].as_array().unwrap().iter())
        .map(|c| c["clientName"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["Acme CLI"]);
    let sessions = app.get("/api/v1/auth/sessions", &token).await;
    let tools = (sessions.data(200)["items"].as_array().unwrap().iter())
        .filter(|s| s["client"]["name"] == "Acme CLI")
        .count();
    // The bearer tool's session and the DPoP-bound one's.
    assert_eq!(tools, 2, "{:#}", sessions.body);
    assert!(printed.contains("DPoP: ok"), "{printed}");
}

/// `dynamicClientRegistration` with an operator's initial access token (docs/api.md §12), for a
/// confidential and a public client, each then signing the person in (consent asked under the
/// name it registered), reading userinfo and refreshing; the spent token registers nothing more,
/// and the confidential client gets no client-credentials token. The registry then holds exactly
/// the two clients, marked as registered.
async fn openid_client_registers_itself_and_signs_in(backend: Backend) {
    if !node_ready() || !packages_ready(&["openid-client"]) {
        return;
    }
    let args = SettingsArgs {
        oauth_registration: Some("token".into()),
        ..SettingsArgs::default()
    };
    let provider = provider_with(backend, "127.0.0.1", args).await;
    let app = &provider.app;
    app.create_user("ann@example.com", PASSWORD).await;
    let token = || {
        let output = app.cli(&["clients", "registration-token", "--json"], None);
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let printed: Value = serde_json::from_slice(&output.stdout).unwrap();
        printed["token"].as_str().unwrap().to_owned()
    };
    let tokens = json!([token(), token()]);
    let env = vec![
        ("GATEHOUSE_URL".to_owned(), provider.issuer.clone()),
        ("GATEHOUSE_EMAIL".to_owned(), "ann@example.com".to_owned()),
        ("GATEHOUSE_PASSWORD".to_owned(), PASSWORD.to_owned()),
        ("OIDC_REDIRECT_URI".to_owned(), REDIRECT.to_owned()),
        ("OIDC_REGISTRATION_TOKENS".to_owned(), tokens.to_string()),
    ];
    let printed = node(BROWSER_DIR, &["oidc-dcr.mjs"], env).await;
    eprintln!("{printed}");
    for name in ["web app", "mobile app"] {
        assert!(
            printed.contains(&format!("Self-registered {name}: ok")),
            "{name} did not finish: {printed}"
        );
    }
    let listed = app.cli(&["clients", "list", "--json"], None);
    let listed: Value = serde_json::from_slice(&listed.stdout).unwrap();
    let mut kinds: Vec<(String, String, String)> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap().to_owned(),
                c["type"].as_str().unwrap().to_owned(),
                c["origin"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    kinds.sort();
    let kind = |n: &str, t: &str| (n.to_owned(), t.to_owned(), "registered".to_owned());
    assert_eq!(
        kinds,
        [
            kind("Self-registered mobile app", "public"),
            kind("Self-registered web app", "confidential"),
        ]
    );
}

/// The redirect URI every client registers: exact, never visited (the script hands the URL the
/// provider redirects to straight to openid-client, as a callback handler would).
const REDIRECT: &str = "https://rp.example.com/callback";

/// Discovery; an authorization URL with PKCE (S256), `state` and `nonce`; the person's consent
/// through `POST /api/v1/oauth2/authorize` (asked once per client, remembered the second time);
/// `authorizationCodeGrant` (the `iss` of the redirect, the ID token's signature by the client's
/// algorithm, `nonce`, `aud`, `at_hash`); `fetchUserInfo`; `refreshTokenGrant` (rotation);
/// `clientCredentialsGrant`; `tokenIntrospection`; `tokenRevocation` (the session ends: the
/// refresh token is refused and the access token inactive within 2 s). Details in the script.
async fn openid_client_signs_in_with_a_client_of_each_id_token_algorithm(backend: Backend) {
    if !node_ready() || !packages_ready(&["openid-client"]) {
        return;
    }
    let provider = provider(backend, "127.0.0.1").await;
    let app = &provider.app;
    let user = app.create_user("ann@example.com", PASSWORD).await;
    let scopes = [
        "--scope",
        "openid",
        "--scope",
        "profile",
        "--scope",
        "email",
        "--scope",
        "offline_access",
        "--scope",
        "contacts:read",
    ];
    let confidential = |name: &str, alg: &str| -> Registered {
        let mut args = vec![
            "--redirect-uri",
            REDIRECT,
            "--grant",
            "authorization_code",
            "--grant",
            "refresh_token",
            "--grant",
            "client_credentials",
            "--id-token-alg",
            alg,
            // The test introspects with each (docs/api.md §6: a resource server of the operator's).
            "--introspect",
        ];
        args.extend_from_slice(&scopes);
        add_client(app, name, &args)
    };
    let rs256 = confidential("Reports RS256", "RS256");
    let es256 = confidential("Reports ES256", "ES256");
    let eddsa = confidential("Reports EdDSA", "EdDSA");
    let mut public_args = vec!["--public", "--redirect-uri", REDIRECT];
    public_args.extend_from_slice(&scopes[..8]);
    let public = add_client(app, "Reports mobile", &public_args);
    assert!(public.secret.is_none(), "a public client has no secret");

    let clients = json!([
        { "name": "Reports RS256", "alg": "RS256", "auth": "basic", "clientId": rs256.id, "clientSecret": rs256.secret },
        { "name": "Reports ES256", "alg": "ES256", "auth": "post", "clientId": es256.id, "clientSecret": es256.secret },
        { "name": "Reports EdDSA", "alg": "EdDSA", "auth": "basic", "clientId": eddsa.id, "clientSecret": eddsa.secret },
        { "name": "Reports mobile", "alg": "RS256", "auth": "none", "clientId": public.id },
    ]);
    let env = vec![
        ("GATEHOUSE_URL".to_owned(), provider.issuer.clone()),
        ("GATEHOUSE_EMAIL".to_owned(), "ann@example.com".to_owned()),
        ("GATEHOUSE_PASSWORD".to_owned(), PASSWORD.to_owned()),
        ("GATEHOUSE_USER_ID".to_owned(), user.to_string()),
        ("OIDC_REDIRECT_URI".to_owned(), REDIRECT.to_owned()),
        ("OIDC_CLIENTS".to_owned(), clients.to_string()),
    ];
    let printed = node(BROWSER_DIR, &["oidc-rp.mjs"], env).await;
    eprintln!("{printed}");
    for name in ["RS256", "ES256", "EdDSA", "mobile"] {
        assert!(
            printed.contains(&format!("Reports {name}: ok")),
            "{name} did not finish: {printed}"
        );
    }
    // Each code exchange began a session of its own (two per client: the first authorization
    // and the remembered one), listed in the person's sessions with its client; the three the
    // script revoked are gone from the list.
    let token = super::person_token(app, "ann@example.com", PASSWORD).await;
    let sessions = app.get("/api/v1/auth/sessions", &token).await;
    let items = sessions.data(200)["items"].as_array().unwrap().clone();
    let mut named: Vec<&str> = items
        .iter()
        .filter_map(|s| s["client"]["name"].as_str())
        .collect();
    named.sort();
    assert_eq!(
        named,
        [
            "Reports ES256",
            "Reports EdDSA",
            "Reports RS256",
            "Reports mobile",
            "Reports mobile",
        ],
        "{items:#?}"
    );
}
