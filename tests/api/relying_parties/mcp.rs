//! A real MCP client and server, both from the TypeScript MCP SDK (`@modelcontextprotocol/sdk`):
//! tests/browser/mcp.mjs runs a small MCP server (mcp-server.mjs) that guards one tool,
//! `list_contacts`, with Gatehouse's introspection and serves its own RFC 9728 metadata, and the
//! SDK's client, which finds its way from the server's first 401 to Gatehouse, registers, asks
//! for a token for the server (RFC 8707 `resource`, listed in `GATEHOUSE_OAUTH_RESOURCES`) and
//! calls the tool. Details in the script.

use gatehouse::config::SettingsArgs;
use serde_json::json;

use super::{add_client, person_token, provider_with};
use crate::browser::{BROWSER_DIR, node, node_ready, packages_ready};
use crate::helpers::{Backend, PASSWORD, both_backends, free_port};

both_backends!(
    an_mcp_client_calls_a_tool_guarded_by_gatehouse_with_a_registered_client,
    an_mcp_client_registers_itself_by_dynamic_registration,
    an_mcp_client_names_itself_by_a_metadata_document,
);

/// The redirect URI the SDK's client gives: loopback, never listened on (the script hands the
/// code to the SDK as its redirect handler would).
const REDIRECT: &str = "http://127.0.0.1:8976/callback";

/// How the MCP client is known to Gatehouse (`MCP_REGISTRATION` of the script).
enum Registration {
    /// Registered by the operator: `gatehouse clients add --public`.
    Operator,
    /// RFC 7591 at `/oauth2/register`, by the SDK (`GATEHOUSE_OAUTH_REGISTRATION=open`).
    Dynamic,
    /// A client ID metadata document the script serves on loopback (http: the insecure loopback
    /// switch of tests).
    MetadataDocument,
}

/// Gatehouse with the MCP server's URL among its resources, a person with two contacts, and the
/// MCP server's confidential client (for introspection); then the script. Returns what it printed.
async fn run_mcp_client(backend: Backend, registration: Registration) -> String {
    let mcp_port = free_port();
    let resource = format!("http://127.0.0.1:{mcp_port}/mcp");
    let on = || Some("on".to_owned());
    let settings = SettingsArgs {
        oauth_resources: Some(resource),
        ..SettingsArgs::default()
    };
    let settings = match registration {
        Registration::Operator => settings,
        Registration::Dynamic => SettingsArgs {
            oauth_registration: Some("open".to_owned()),
            ..settings
        },
        Registration::MetadataDocument => SettingsArgs {
            oauth_client_metadata_documents: on(),
            oauth_client_metadata_insecure_loopback: true,
            ..settings
        },
    };
    let provider = provider_with(backend, "127.0.0.1", settings).await;
    let app = &provider.app;
    app.create_user("ann@example.com", PASSWORD).await;
    let token = person_token(app, "ann@example.com", PASSWORD).await;
    for (name, email) in [
        ("Grace Hopper", "grace@example.com"),
        ("Alan Turing", "alan@example.com"),
    ] {
        let body = json!({ "fullName": name, "email": email });
        app.call(
            reqwest::Method::POST,
            "/api/v1/crm/contacts",
            Some(&token),
            Some(body),
        )
        .await
        .data(201);
    }
    let introspector = add_client(
        app,
        "MCP server",
        &[
            "--grant",
            "client_credentials",
            "--scope",
            "contacts:read",
            "--introspect",
        ],
    );
    let registration = match registration {
        Registration::Operator => {
            let client = add_client(
                app,
                "MCP test client (registered)",
                &[
                    "--public",
                    "--redirect-uri",
                    REDIRECT,
                    "--scope",
                    "contacts:read",
                ],
            );
            format!("client:{}", client.id)
        }
        Registration::Dynamic => "dcr".to_owned(),
        Registration::MetadataDocument => "metadata-document".to_owned(),
    };
    let env = vec![
        ("GATEHOUSE_URL".to_owned(), provider.issuer.clone()),
        ("GATEHOUSE_EMAIL".to_owned(), "ann@example.com".to_owned()),
        ("GATEHOUSE_PASSWORD".to_owned(), PASSWORD.to_owned()),
        ("MCP_PORT".to_owned(), mcp_port.to_string()),
        (
            "MCP_INTROSPECTOR".to_owned(),
            json!({ "clientId": introspector.id, "clientSecret": introspector.secret }).to_string(),
        ),
        ("MCP_REDIRECT_URI".to_owned(), REDIRECT.to_owned()),
        (
            "MCP_CONTACTS".to_owned(),
            json!(["Grace Hopper", "Alan Turing"]).to_string(),
        ),
        ("MCP_REGISTRATION".to_owned(), registration.clone()),
    ];
    let printed = node(BROWSER_DIR, &["mcp.mjs"], env).await;
    eprintln!("{printed}");
    assert!(
        printed.contains(&format!("mcp {registration}: ok")),
        "the MCP client did not finish: {printed}"
    );
    printed
}

/// A client the operator registered: no registration step, the rest of the way as the SDK goes it.
async fn an_mcp_client_calls_a_tool_guarded_by_gatehouse_with_a_registered_client(
    backend: Backend,
) {
    if !node_ready() || !packages_ready(&["@modelcontextprotocol/sdk"]) {
        return;
    }
    run_mcp_client(backend, Registration::Operator).await;
}

/// The SDK registers the client itself (RFC 7591): a public client, third-party, whose consent is
/// asked like any other's.
async fn an_mcp_client_registers_itself_by_dynamic_registration(backend: Backend) {
    if !node_ready() || !packages_ready(&["@modelcontextprotocol/sdk"]) {
        return;
    }
    run_mcp_client(backend, Registration::Dynamic).await;
}

/// The client is named by the URL of its metadata document, which Gatehouse fetches (on loopback
/// over http here, which only the tests' switch allows).
async fn an_mcp_client_names_itself_by_a_metadata_document(backend: Backend) {
    if !node_ready() || !packages_ready(&["@modelcontextprotocol/sdk"]) {
        return;
    }
    run_mcp_client(backend, Registration::MetadataDocument).await;
}
