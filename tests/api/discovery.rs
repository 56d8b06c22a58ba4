//! The OpenID provider's discovery documents (docs/api.md §11): every field, absolute URLs under the
//! public URL, the issuer its tokens carry, and the provider off (404) without a URL issuer.

use gatehouse::config::SettingsArgs;
use serde_json::json;

use crate::helpers::{Backend, both_backends, spawn_app_with};

both_backends!(
    discovery_names_every_endpoint_under_the_public_url,
    discovery_is_off_without_a_url_issuer,
);

async fn discovery_names_every_endpoint_under_the_public_url(backend: Backend) {
    let app = spawn_app_with(
        backend,
        SettingsArgs {
            public_url: Some("https://login.example.com/".into()),
            ..Default::default()
        },
    )
    .await;
    let doc = app.get_json("/.well-known/openid-configuration").await;
    let at = |path: &str| json!(format!("https://login.example.com{path}"));
    let expected = json!({
        "issuer": "https://login.example.com",
        "authorization_endpoint": at("/oauth2/authorize"),
        "token_endpoint": at("/oauth2/token"),
        "userinfo_endpoint": at("/oauth2/userinfo"),
        "jwks_uri": at("/.well-known/jwks.json"),
        "revocation_endpoint": at("/oauth2/revoke"),
        "introspection_endpoint": at("/oauth2/introspect"),
        "end_session_endpoint": at("/oauth2/end-session"),
        "device_authorization_endpoint": at("/oauth2/device_authorization"),
        "dpop_signing_alg_values_supported": ["ES256", "ES384", "RS256", "PS256", "EdDSA"],
        "scopes_supported": ["openid", "profile", "email", "offline_access", "roles", "contacts:read", "contacts:write"],
        "response_types_supported": ["code"],
        "response_modes_supported": ["query"],
        "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials", "urn:ietf:params:oauth:grant-type:device_code", "urn:ietf:params:oauth:grant-type:token-exchange"],
        "code_challenge_methods_supported": ["S256"],
        "id_token_signing_alg_values_supported": ["RS256", "ES256", "EdDSA"],
        "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post", "none"],
        "revocation_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post", "none"],
        "introspection_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
        "subject_types_supported": ["public"],
        "claims_supported": ["sub", "iss", "aud", "exp", "iat", "auth_time", "nonce", "amr", "sid", "at_hash", "azp", "name", "updated_at", "email", "email_verified", "roles"],
        "prompt_values_supported": ["login", "consent", "none"],
        "backchannel_logout_supported": true,
        "backchannel_logout_session_supported": true,
        "authorization_response_iss_parameter_supported": true,
        "request_parameter_supported": false,
        "request_uri_parameter_supported": false,
    });
    for (key, value) in expected.as_object().unwrap() {
        assert_eq!(doc[key], *value, "{key}");
    }
    assert_eq!(
        doc.as_object().unwrap().len(),
        expected.as_object().unwrap().len()
    );
    // RFC 8414's document says the same.
    assert_eq!(
        app.get_json("/.well-known/oauth-authorization-server")
            .await,
        doc
    );
    // The issuer is the one its tokens carry.
    let (token, _) = app.logged_in_user("ann@example.com").await;
    assert_eq!(crate::helpers::claims(&token)["iss"], doc["issuer"]);
}

async fn discovery_is_off_without_a_url_issuer(backend: Backend) {
    let app = spawn_app_with(
        backend,
        SettingsArgs {
            public_url: Some("https://login.example.com/".into()),
            issuer: Some("gatehouse".into()),
            ..Default::default()
        },
    )
    .await;
    app.send(app.client.get(app.url("/.well-known/openid-configuration")))
        .await
        .error(404, "NOT_FOUND");
    // The RFC 8414 document stays for introspection clients, as before the provider.
    let metadata = app
        .get_json("/.well-known/oauth-authorization-server")
        .await;
    assert_eq!(
        metadata,
        json!({
            "issuer": "gatehouse",
            "jwks_uri": "https://login.example.com/.well-known/jwks.json",
            "introspection_endpoint": "https://login.example.com/oauth2/introspect",
            "introspection_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
            "response_types_supported": [],
        })
    );
}
