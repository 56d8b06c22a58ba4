//! Gatehouse's own business API as an OAuth protected resource (RFC 9728, docs/api.md §12): its
//! metadata at `/.well-known/oauth-protected-resource`, and the `resource_metadata` parameter of
//! every bearer challenge of the `/api/v1/…` calls, so that a client that knows nothing but one
//! refused call (an MCP client) finds the authorization server, its metadata (RFC 8414) and the
//! scopes to ask for.

use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::AppState;
use super::docs::error_responses;
use crate::error::Error;
use crate::model::resources::{CONTACTS_READ, CONTACTS_WRITE};

pub const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(protected_resource))
}

/// RFC 9728 §2 metadata of the business API.
#[derive(Serialize, ToSchema)]
struct ResourceMetadata {
    /// The resource identifier: the public URL this document is served under (RFC 9728 §3.3). A
    /// client may send it as RFC 8707's `resource`; its tokens then carry `GATEHOUSE_AUDIENCE`.
    #[schema(example = "https://login.example.com")]
    resource: String,
    /// The issuer, whose RFC 8414 metadata is at `/.well-known/oauth-authorization-server`.
    #[schema(example = json!(["https://login.example.com"]))]
    authorization_servers: [String; 1],
    /// The scopes of the business APIs whose tokens carry `GATEHOUSE_AUDIENCE` (the contacts
    /// example, and the operator's APIs declared without an audience of their own).
    #[schema(example = json!([CONTACTS_READ, CONTACTS_WRITE]))]
    scopes_supported: Vec<String>,
    /// Only the `Authorization` header: a token in a query string or a form is never read.
    #[schema(example = json!(["header"]))]
    bearer_methods_supported: [&'static str; 1],
}

error_responses!(OffErrors: [Error::NotFound]);

/// Protected resource metadata (RFC 9728): what the business API is, which authorization server
/// issues its tokens, and which scopes it takes.
///
/// 404 while the OpenID provider is off (`GATEHOUSE_ISSUER` is not an absolute http(s) URL):
/// there is then no authorization server to name.
#[utoipa::path(get, path = "/.well-known/oauth-protected-resource", tag = "oauth",
    responses((status = 200, description = "The business API's metadata", body = ResourceMetadata), OffErrors))]
async fn protected_resource(State(state): State<AppState>) -> Result<Response, Error> {
    let issuer = state.require_provider()?;
    let scopes_supported = (state.auth.resources.list().iter())
        .filter(|r| r.audience.is_none())
        .flat_map(|r| r.scopes.iter().map(|s| s.name.clone()))
        .collect();
    let metadata = ResourceMetadata {
        resource: state.public_url.to_string(),
        authorization_servers: [issuer.to_owned()],
        scopes_supported,
        bearer_methods_supported: ["header"],
    };
    // It changes with the settings and the operator's APIs: a minute's staleness is harmless.
    Ok((
        [(header::CACHE_CONTROL, "public, max-age=60")],
        axum::Json(metadata),
    )
        .into_response())
}

/// RFC 8707's `resource` as a client sends it: the resource identifier of the metadata above
/// names the business API, whose tokens carry `GATEHOUSE_AUDIENCE`; any other value is left for
/// the provider to judge.
pub(crate) fn audience_of(state: &AppState, resource: Option<String>) -> Option<String> {
    resource.map(|r| {
        if r.trim_end_matches('/') == state.public_url.trim_end_matches('/') {
            state.audience.to_string()
        } else {
            r
        }
    })
}

/// Adds `resource_metadata="<URL>"` (RFC 9728 §5.1) to the bearer challenge of a 401 (and of a
/// 403 `insufficient_scope`) from the `/api/v1/…` calls: the business API, the account, the
/// organisations, the administration. Not forward-auth's (`/api/v1/authz/…`): its answers go to
/// a proxy that guards another service, whose metadata this is not. Not while the provider is off.
pub(crate) async fn announce_metadata(
    State(state): State<AppState>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let path = req.uri().path();
    let applies = path.starts_with("/api/v1/")
        && !path.starts_with("/api/v1/authz/")
        && state.provider_issuer().is_some();
    let mut response = next.run(req).await;
    if !applies
        || !matches!(
            response.status(),
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN
        )
    {
        return response;
    }
    let Some(challenge) = response
        .headers()
        .get(header::WWW_AUTHENTICATE)
        .and_then(|v| v.to_str().ok())
        .filter(|v| *v == "Bearer" || v.starts_with("Bearer "))
    else {
        return response;
    };
    let url = format!("{}{METADATA_PATH}", state.public_url);
    let extended = if challenge == "Bearer" {
        format!(r#"Bearer resource_metadata="{url}""#)
    } else {
        format!(r#"{challenge}, resource_metadata="{url}""#)
    };
    if let Ok(value) = HeaderValue::from_str(&extended) {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, value);
    }
    response
}
