//! The API document and the docs page: every call of the contract is documented, the router has
//! no call the document lacks and the other way round, and the page works without the internet.

use std::collections::{BTreeMap, BTreeSet};

use reqwest::Method;
use serde_json::{Value, json};

use gatehouse::config::SettingsArgs;

use crate::helpers::{Backend, both_backends, spawn_app, spawn_app_with};

both_backends!(
    the_document_covers_every_call_of_the_contract,
    routes_and_document_agree,
    the_documents_error_examples_are_what_the_service_says,
    the_docs_page_is_served_whole_from_the_binary,
    the_docs_page_is_served_only_when_asked_for,
);

/// docs/api.md §3, call by call: (method, path, bearer).
const CONTRACT: &[(&str, &str, bool)] = &[
    ("post", "/api/v1/auth/login", false),
    ("post", "/api/v1/auth/2fa/verify", false),
    ("post", "/api/v1/auth/refresh", false),
    ("post", "/api/v1/auth/register", false),
    ("post", "/api/v1/auth/logout", true),
    ("post", "/api/v1/auth/browser-session", true),
    ("get", "/api/v1/auth/me", true),
    ("get", "/api/v1/auth/sessions", true),
    ("delete", "/api/v1/auth/sessions/{id}", true),
    ("post", "/api/v1/auth/password", true),
    ("post", "/api/v1/auth/reauthenticate", true),
    ("post", "/api/v1/auth/reauthenticate/passkey/start", true),
    ("post", "/api/v1/auth/reauthenticate/passkey/finish", true),
    ("post", "/api/v1/auth/2fa/setup", true),
    ("post", "/api/v1/auth/2fa/enable", true),
    ("post", "/api/v1/auth/2fa/disable", true),
    ("post", "/api/v1/auth/2fa/recovery-codes", true),
    ("get", "/api/v1/crm/contacts", true),
    ("post", "/api/v1/crm/contacts", true),
    ("get", "/api/v1/crm/contacts/{id}", true),
    ("patch", "/api/v1/crm/contacts/{id}", true),
    ("delete", "/api/v1/crm/contacts/{id}", true),
    ("get", "/.well-known/jwks.json", false),
    ("get", "/api/v1/openapi.json", false),
    ("get", "/healthz", false),
    ("get", "/readyz", false),
    ("post", "/oauth2/introspect", false),
    ("get", "/.well-known/oauth-authorization-server", false),
    ("get", "/.well-known/oauth-protected-resource", false),
    ("get", "/.well-known/openid-configuration", false),
    ("post", "/api/v1/auth/passkeys/register/start", true),
    ("post", "/api/v1/auth/passkeys/register/finish", true),
    ("get", "/api/v1/auth/passkeys", true),
    ("patch", "/api/v1/auth/passkeys/{id}", true),
    ("delete", "/api/v1/auth/passkeys/{id}", true),
    ("post", "/api/v1/auth/passkeys/login/start", false),
    ("post", "/api/v1/auth/passkeys/login/finish", false),
    // §7
    ("post", "/api/v1/auth/password/forgot", false),
    ("post", "/api/v1/auth/password/reset", false),
    ("post", "/api/v1/auth/password/reset/check", false),
    ("post", "/api/v1/auth/email/verify", false),
    ("post", "/api/v1/auth/email/verify/check", false),
    ("post", "/api/v1/auth/email/verify/resend", true),
    ("post", "/api/v1/auth/email", true),
    ("post", "/api/v1/auth/invitations/accept", false),
    ("delete", "/api/v1/auth/me", true),
    // §8
    ("get", "/api/v1/admin/users", true),
    ("post", "/api/v1/admin/users", true),
    ("get", "/api/v1/admin/users/{id}", true),
    ("patch", "/api/v1/admin/users/{id}", true),
    ("delete", "/api/v1/admin/users/{id}", true),
    ("get", "/api/v1/admin/users/{id}/sessions", true),
    ("delete", "/api/v1/admin/users/{id}/sessions", true),
    ("post", "/api/v1/admin/users/{id}/password-reset", true),
    ("post", "/api/v1/admin/users/{id}/reset-2fa", true),
    ("get", "/api/v1/admin/audit", true),
    // §13
    ("post", "/api/v1/orgs", true),
    ("get", "/api/v1/orgs", true),
    ("get", "/api/v1/orgs/{id}", true),
    ("patch", "/api/v1/orgs/{id}", true),
    ("delete", "/api/v1/orgs/{id}", true),
    ("get", "/api/v1/orgs/{id}/members", true),
    ("patch", "/api/v1/orgs/{id}/members/{userId}", true),
    ("delete", "/api/v1/orgs/{id}/members/{userId}", true),
    ("post", "/api/v1/orgs/{id}/invitations", true),
    ("get", "/api/v1/orgs/{id}/invitations", true),
    (
        "delete",
        "/api/v1/orgs/{id}/invitations/{invitationId}",
        true,
    ),
    ("post", "/api/v1/orgs/invitations/accept", true),
    ("post", "/api/v1/auth/org", true),
    ("get", "/api/v1/admin/orgs", true),
    ("get", "/api/v1/admin/orgs/{id}", true),
    ("delete", "/api/v1/admin/orgs/{id}", true),
    ("get", "/api/v1/admin/orgs/{id}/members", true),
    ("get", "/api/v1/admin/clients", true),
    ("post", "/api/v1/admin/clients", true),
    ("get", "/api/v1/admin/clients/{clientId}", true),
    ("patch", "/api/v1/admin/clients/{clientId}", true),
    ("delete", "/api/v1/admin/clients/{clientId}", true),
    (
        "post",
        "/api/v1/admin/clients/{clientId}/rotate-secret",
        true,
    ),
    ("get", "/api/v1/admin/resources", true),
    ("post", "/api/v1/admin/resources", true),
    ("get", "/api/v1/admin/resources/{id}", true),
    ("patch", "/api/v1/admin/resources/{id}", true),
    ("delete", "/api/v1/admin/resources/{id}", true),
    ("post", "/api/v1/oauth2/authorize", true),
    ("post", "/oauth2/token", false),
    ("post", "/oauth2/device_authorization", false),
    ("post", "/api/v1/oauth2/device", true),
    ("post", "/oauth2/register", false),
    ("post", "/api/v1/admin/clients/registration-tokens", true),
    ("get", "/oauth2/userinfo", true),
    ("post", "/oauth2/userinfo", true),
    ("get", "/api/v1/auth/consents", true),
    ("get", "/api/v1/auth/connected-apps", true),
    ("delete", "/api/v1/auth/connected-apps/{clientId}", true),
    ("get", "/api/v1/admin/users/{id}/connected-apps", true),
    (
        "delete",
        "/api/v1/admin/users/{id}/connected-apps/{clientId}",
        true,
    ),
    ("delete", "/api/v1/auth/consents/{clientId}", true),
    ("post", "/oauth2/revoke", false),
    ("get", "/oauth2/end-session", false),
    ("post", "/oauth2/end-session", false),
    // §12: personal API keys
    ("post", "/api/v1/auth/api-keys", true),
    ("get", "/api/v1/auth/api-keys", true),
    ("delete", "/api/v1/auth/api-keys/{id}", true),
    ("get", "/api/v1/admin/users/{id}/api-keys", true),
    ("delete", "/api/v1/admin/users/{id}/api-keys/{keyId}", true),
    // §14: other identity providers
    ("get", "/api/v1/auth/providers", false),
    ("post", "/api/v1/auth/providers/finish", false),
    ("post", "/api/v1/auth/identities/start", true),
    ("get", "/api/v1/auth/identities", true),
    ("delete", "/api/v1/auth/identities/{providerId}", true),
    ("post", "/api/v1/auth/reauthenticate/provider", true),
];

/// Forward-auth (docs/api.md §6): any method a proxy may use, a bearer token, no envelope.
const FORWARD_AUTH: &[&str] = &["/api/v1/authz/forward-auth", "/api/v1/authz/auth-request"];
const FORWARD_AUTH_METHODS: &[&str] = &["get", "post", "put", "patch", "delete", "head", "options"];

/// Calls that answer a proxy's or an OAuth library's format rather than the envelope.
const NOT_ENVELOPED: &[&str] = &[
    "/api/v1/authz/forward-auth",
    "/api/v1/authz/auth-request",
    "/oauth2/introspect",
    "/oauth2/token",
    "/oauth2/device_authorization",
    "/oauth2/userinfo",
    "/oauth2/revoke",
    "/oauth2/end-session",
    "/oauth2/register",
];

fn all_calls() -> Vec<(&'static str, &'static str, bool)> {
    let mut calls = CONTRACT.to_vec();
    for path in FORWARD_AUTH {
        calls.extend(FORWARD_AUTH_METHODS.iter().map(|m| (*m, *path, true)));
    }
    calls
}

const METHODS: &[&str] = &[
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

async fn document(app: &crate::helpers::TestApp) -> Value {
    let response = app
        .client
        .get(app.url("/api/v1/openapi.json"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert!(
        response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/json")
    );
    response.json().await.unwrap()
}

/// Every (method, path) the document describes.
fn operations(doc: &Value) -> BTreeSet<(String, String)> {
    let mut found = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for method in METHODS {
            if item.get(*method).is_some() {
                found.insert((method.to_string(), path.clone()));
            }
        }
    }
    found
}

async fn the_document_covers_every_call_of_the_contract(backend: Backend) {
    let app = spawn_app(backend).await;
    let doc = document(&app).await;
    assert_eq!(doc["openapi"], "3.1.0");
    assert!(
        doc.get("success").is_none(),
        "the document is not enveloped"
    );

    let contract: BTreeSet<(String, String)> = all_calls()
        .iter()
        .map(|(m, p, _)| (m.to_string(), p.to_string()))
        .collect();
    assert_eq!(operations(&doc), contract);

    let scheme = &doc["components"]["securitySchemes"]["bearer"];
    assert_eq!(scheme["type"], "http");
    assert_eq!(scheme["scheme"], "bearer");
    assert!(doc["components"]["schemas"]["ErrorEnvelope"].is_object());

    for (method, path, bearer) in all_calls() {
        let op = &doc["paths"][path][method];
        let at = format!("{method} {path}");
        assert!(
            op["summary"].as_str().is_some_and(|s| !s.is_empty()),
            "{at} has a summary"
        );
        if NOT_ENVELOPED.contains(&path) {
            let secured = op["security"]
                .as_array()
                .is_some_and(|s| s.iter().any(|r| r.get("bearer").is_some()));
            assert_eq!(secured, bearer, "{at}: bearer security");
            continue;
        }
        let responses = op["responses"].as_object().unwrap();
        let success = responses
            .iter()
            .find(|(status, _)| status.starts_with('2'))
            .unwrap_or_else(|| panic!("{at} documents its success"));
        assert!(
            success.1["content"]["application/json"]["schema"].is_object(),
            "{at}: the success has a schema"
        );
        let secured = op["security"]
            .as_array()
            .is_some_and(|s| s.iter().any(|r| r.get("bearer").is_some()));
        assert_eq!(secured, bearer, "{at}: bearer security");
        if bearer {
            let examples = responses["401"]["content"]["application/json"]["examples"]
                .as_object()
                .unwrap_or_else(|| panic!("{at} documents its 401s"));
            for code in ["UNAUTHENTICATED", "TOKEN_EXPIRED", "TOKEN_INVALID"] {
                assert!(examples.contains_key(code), "{at}: 401 {code}");
            }
        }
        if op.get("requestBody").is_some() {
            assert!(
                op["requestBody"]["content"]["application/json"]["schema"].is_object(),
                "{at}: the request has a schema"
            );
            for status in ["400", "413", "415"] {
                assert!(responses.contains_key(status), "{at}: {status}");
            }
        }
        // Every error answer is the envelope, with an example per code.
        for (status, response) in responses {
            if status.starts_with('4') || status.starts_with('5') {
                let content = &response["content"]["application/json"];
                assert_eq!(
                    content["schema"]["$ref"], "#/components/schemas/ErrorEnvelope",
                    "{at} {status}"
                );
                for (code, example) in content["examples"].as_object().unwrap() {
                    assert_eq!(example["value"]["success"], false, "{at} {status}");
                    assert_eq!(example["value"]["error"]["code"], code.as_str());
                }
            }
        }
    }

    // Named examples where a client developer needs them.
    let login = &doc["components"]["schemas"]["LoginRequest"]["properties"];
    assert!(login["email"]["example"].is_string());
    let verify = &doc["paths"]["/api/v1/auth/2fa/verify"]["post"]["responses"]["401"];
    let example = &verify["content"]["application/json"]["examples"]["INVALID_2FA_CODE"];
    assert_eq!(example["value"]["error"]["details"]["attemptsRemaining"], 4);
}

/// For each documented path, a method no call uses (PUT) is answered 405 by the router, whose
/// `Allow` lists exactly the documented methods: so every documented call is routed, and no path
/// has a routed method the document lacks.
async fn routes_and_document_agree(backend: Backend) {
    let app = spawn_app(backend).await;
    let doc = document(&app).await;
    for (path, item) in doc["paths"].as_object().unwrap() {
        if FORWARD_AUTH.contains(&path.as_str()) {
            // Every method is routed there (guard.rs asks with several).
            assert!(
                FORWARD_AUTH_METHODS.iter().all(|m| item.get(*m).is_some()),
                "{path}"
            );
            continue;
        }
        let url = app.url(&path.replace("{id}", &uuid::Uuid::now_v7().to_string()));
        let answer = app.send(app.client.request(Method::PUT, url)).await;
        answer.error(405, "METHOD_NOT_ALLOWED");
        let mut allowed: BTreeSet<String> = answer
            .header("allow")
            .unwrap()
            .split(',')
            .map(|m| m.trim().to_ascii_lowercase())
            .collect();
        // axum answers HEAD wherever it answers GET.
        if allowed.contains("get") {
            allowed.remove("head");
        }
        let documented: BTreeSet<String> = METHODS
            .iter()
            .filter(|m| item.get(**m).is_some())
            .map(|m| m.to_string())
            .collect();
        assert_eq!(allowed, documented, "{path}");
    }

    // A path the document lacks cannot be routed either: the router is built only from the
    // documented handlers (`OpenApiRouter::routes`), and nothing in `src/http` adds a route any
    // other way but the docs page and the pages. (`metrics.rs` is the metrics listener's own router, served on
    // another address and never merged into the API.)
    let mut files = vec![std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/http")];
    let pages = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/http/pages");
    while let Some(path) = files.pop() {
        if path.is_dir() {
            files.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
            continue;
        }
        // The pages (HTML for people, their scripts and stylesheet) are not API calls: they are
        // routed outside the document on purpose, in src/http/pages/ only (tested in pages.rs).
        if path.ends_with("src/http/metrics.rs") || path.starts_with(&pages) {
            continue;
        }
        let source = std::fs::read_to_string(&path).unwrap();
        // `OpenApiRouter::new()` is the documented kind; a bare `Router::new()` is not.
        let source = source.replace("OpenApiRouter::new()", "");
        for needle in [
            ".route(",
            ".route_service(",
            ".nest_service(",
            "Router::new()",
        ] {
            assert!(
                !source.contains(needle),
                "{} adds a route the API document does not see ({needle}): use OpenApiRouter::routes",
                path.display()
            );
        }
    }
}

async fn the_docs_page_is_served_whole_from_the_binary(backend: Backend) {
    let app = spawn_app_with(
        backend,
        SettingsArgs {
            docs: Some("on".into()),
            ..Default::default()
        },
    )
    .await;
    let page = app.client.get(app.url("/docs/")).send().await.unwrap();
    assert_eq!(page.status(), 200);
    // The page shares the tokens' origin: the pages' headers, with a CSP of its own (its
    // scripts, its styles, the document it fetches; nothing inline, nothing from elsewhere).
    let headers = page.headers().clone();
    let csp = headers["content-security-policy"].to_str().unwrap();
    for directive in [
        "default-src 'none'",
        "script-src 'self'",
        "connect-src 'self'",
        "frame-ancestors 'none'",
        "base-uri 'none'",
        "form-action 'none'",
    ] {
        assert!(csp.contains(directive), "{csp}");
    }
    assert!(!csp.contains("unsafe-eval") && !csp.contains("script-src 'self' 'unsafe-inline'"));
    for (name, value) in [
        ("x-content-type-options", "nosniff"),
        ("x-frame-options", "DENY"),
        ("referrer-policy", "no-referrer"),
        ("cache-control", "no-store"),
    ] {
        assert_eq!(headers[name], value, "{name}");
    }
    assert!(
        page.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html")
    );
    let html = page.text().await.unwrap();
    assert!(html.contains("swagger-ui"), "{html}");

    // Every script and stylesheet is a local file the service serves: no CDN.
    let mut assets = Vec::new();
    for attribute in ["src=\"", "href=\""] {
        for piece in html.split(attribute).skip(1) {
            let target = piece.split('"').next().unwrap();
            assert!(
                !target.contains("://") && !target.starts_with("//"),
                "{target} is not served by Gatehouse"
            );
            assets.push(target.trim_start_matches("./").to_owned());
        }
    }
    assert!(assets.iter().any(|a| a.ends_with(".js")));
    for asset in &assets {
        let response = app
            .client
            .get(app.url(&format!("/docs/{asset}")))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "/docs/{asset}");
        assert_eq!(response.headers()["x-content-type-options"], "nosniff");
        assert!(response.headers().contains_key("content-security-policy"));
        let body = response.text().await.unwrap_or_default();
        assert!(
            !body.contains("https://unpkg.com") && !body.contains("cdn.jsdelivr"),
            "{asset} loads from a CDN"
        );
    }
    // The page renders this service's document.
    let initializer = app
        .client
        .get(app.url("/docs/swagger-initializer.js"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        initializer.contains("/api/v1/openapi.json"),
        "{initializer}"
    );
    // A file the page does not have is a 404 like any other.
    app.send(app.client.get(app.url("/docs/no-such-file.js")))
        .await
        .error(404, "NOT_FOUND");
}

/// Swagger UI is off by default (`GATEHOUSE_DOCS`); the JSON document is always served.
async fn the_docs_page_is_served_only_when_asked_for(backend: Backend) {
    let app = spawn_app(backend).await;
    for path in ["/docs", "/docs/", "/docs/swagger-ui-bundle.js"] {
        app.send(app.client.get(app.url(path)))
            .await
            .error(404, "NOT_FOUND");
    }
    document(&app).await;
}

/// Every example of an error in the document is an answer the service gives: here the
/// `WEAK_PASSWORD` and `CONFLICT` examples, whose messages were once written by hand and drifted.
async fn the_documents_error_examples_are_what_the_service_says(backend: Backend) {
    let app = spawn_app(backend).await;
    let doc = document(&app).await;
    let mut examples: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for item in doc["paths"].as_object().unwrap().values() {
        for operation in item.as_object().unwrap().values() {
            let Some(responses) = operation["responses"].as_object() else {
                continue;
            };
            for response in responses.values() {
                let content = &response["content"]["application/json"]["examples"];
                for example in content.as_object().into_iter().flat_map(|e| e.values()) {
                    let error = &example["value"]["error"];
                    if let (Some(code), Some(message)) =
                        (error["code"].as_str(), error["message"].as_str())
                    {
                        examples
                            .entry(code.to_owned())
                            .or_default()
                            .insert(message.to_owned());
                    }
                }
            }
        }
    }
    let weak = &examples["WEAK_PASSWORD"];
    assert!(!weak.is_empty());
    let (token, _) = app.logged_in_user("wes@example.com").await;
    let answer = app
        .call(
            reqwest::Method::POST,
            "/api/v1/auth/password",
            Some(&token),
            Some(json!({"currentPassword": crate::helpers::PASSWORD, "newPassword": "password1"})),
        )
        .await;
    let said = answer.error(400, "WEAK_PASSWORD")["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        weak,
        &BTreeSet::from([said]),
        "the document shows what is said"
    );

    let conflicts = &examples["CONFLICT"];
    let root = crate::admin::admin(&app, "ada@example.com").await;
    let (admin, me) = (root.strong, root.id);
    for (method, path, body) in [
        (
            reqwest::Method::DELETE,
            format!("/api/v1/admin/users/{me}"),
            None,
        ),
        (
            reqwest::Method::POST,
            format!("/api/v1/admin/users/{me}/reset-2fa"),
            None,
        ),
        (
            reqwest::Method::PATCH,
            format!("/api/v1/admin/users/{me}"),
            Some(json!({"disabled": true})),
        ),
    ] {
        let answer = app.call(method, &path, Some(&admin), body).await;
        let said = answer.error(409, "CONFLICT")["message"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(
            conflicts.contains(&said),
            "{said:?} not among {conflicts:?}"
        );
    }
}
