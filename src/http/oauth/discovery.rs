//! The provider's metadata (docs/api.md §11, §6): OpenID Connect Discovery 1.0 at
//! `/.well-known/openid-configuration` and RFC 8414 at `/.well-known/oauth-authorization-server`,
//! one document. With the provider off (an issuer that is not a URL) the first is 404 and the
//! second says only what introspection clients need, as it did before the provider: services that
//! found their introspection endpoint there keep finding it.

use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::crypto::SigningAlg;
use crate::error::Error;
use crate::http::AppState;
use crate::http::docs::error_responses;
use crate::model::GrantType;

pub(super) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(openid_configuration))
        .routes(routes!(authorization_server))
}

/// The claims ID tokens and userinfo may carry, in the order listed.
const CLAIMS: [&str; 16] = [
    "sub",
    "iss",
    "aud",
    "exp",
    "iat",
    "auth_time",
    "nonce",
    "amr",
    "sid",
    "at_hash",
    "azp",
    "name",
    "updated_at",
    "email",
    "email_verified",
    "roles",
];

/// How clients may authenticate at the token, introspection and revocation endpoints.
const TOKEN_AUTH: [&str; 3] = ["client_secret_basic", "client_secret_post", "none"];
/// Introspection is for confidential clients only.
const INTROSPECTION_AUTH: [&str; 2] = ["client_secret_basic", "client_secret_post"];

/// OpenID Connect Discovery 1.0 §3 and RFC 8414 §2 metadata: every endpoint an absolute URL
/// under `GATEHOUSE_PUBLIC_URL`.
#[derive(Serialize, ToSchema)]
struct ProviderMetadata {
    /// `GATEHOUSE_ISSUER`, the `iss` of every token.
    #[schema(example = "https://login.example.com")]
    issuer: String,
    #[schema(example = "https://login.example.com/oauth2/authorize")]
    authorization_endpoint: String,
    #[schema(example = "https://login.example.com/oauth2/token")]
    token_endpoint: String,
    #[schema(example = "https://login.example.com/oauth2/userinfo")]
    userinfo_endpoint: String,
    #[schema(example = "https://login.example.com/.well-known/jwks.json")]
    jwks_uri: String,
    #[schema(example = "https://login.example.com/oauth2/revoke")]
    revocation_endpoint: String,
    #[schema(example = "https://login.example.com/oauth2/introspect")]
    introspection_endpoint: String,
    #[schema(example = "https://login.example.com/oauth2/end-session")]
    end_session_endpoint: String,
    /// RFC 8628.
    #[schema(example = "https://login.example.com/oauth2/device_authorization")]
    device_authorization_endpoint: String,
    /// RFC 9449 §5.1: the algorithms a DPoP proof may be signed with.
    #[schema(example = json!(["ES256", "ES384", "RS256", "PS256", "EdDSA"]))]
    dpop_signing_alg_values_supported: [&'static str; 5],
    /// The OpenID scopes and every business API's (docs/guide/resources.md).
    #[schema(example = json!(["openid", "profile", "email", "offline_access", "roles", "contacts:read", "contacts:write"]))]
    scopes_supported: Vec<String>,
    #[schema(example = json!(["code"]))]
    response_types_supported: [&'static str; 1],
    #[schema(example = json!(["query"]))]
    response_modes_supported: [&'static str; 1],
    #[schema(example = json!(["authorization_code", "refresh_token", "client_credentials", "urn:ietf:params:oauth:grant-type:device_code"]))]
    grant_types_supported: Vec<&'static str>,
    #[schema(example = json!(["S256"]))]
    code_challenge_methods_supported: [&'static str; 1],
    /// RS256 first: OpenID Connect Core §15.1 requires it, and many relying parties verify no other.
    #[schema(example = json!(["RS256", "ES256", "EdDSA"]))]
    id_token_signing_alg_values_supported: Vec<&'static str>,
    #[schema(example = json!(TOKEN_AUTH))]
    token_endpoint_auth_methods_supported: [&'static str; 3],
    #[schema(example = json!(TOKEN_AUTH))]
    revocation_endpoint_auth_methods_supported: [&'static str; 3],
    #[schema(example = json!(INTROSPECTION_AUTH))]
    introspection_endpoint_auth_methods_supported: [&'static str; 2],
    #[schema(example = json!(["public"]))]
    subject_types_supported: [&'static str; 1],
    #[schema(example = json!(CLAIMS))]
    claims_supported: [&'static str; 16],
    #[schema(example = json!(["login", "consent", "none"]))]
    prompt_values_supported: [&'static str; 3],
    backchannel_logout_supported: bool,
    backchannel_logout_session_supported: bool,
    /// RFC 9207: the authorization response carries `iss`.
    authorization_response_iss_parameter_supported: bool,
    request_parameter_supported: bool,
    request_uri_parameter_supported: bool,
    /// RFC 7591: with `GATEHOUSE_OAUTH_REGISTRATION` `token` or `open`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(example = "https://login.example.com/oauth2/register")]
    registration_endpoint: Option<String>,
    /// With `GATEHOUSE_OAUTH_CLIENT_METADATA_DOCUMENTS=on`: an https `client_id` is fetched.
    #[serde(skip_serializing_if = "Option::is_none")]
    client_id_metadata_document_supported: Option<bool>,
}

impl ProviderMetadata {
    fn new(state: &AppState, issuer: &str, base: &str) -> Self {
        let clients = &state.auth.clients;
        let registration = clients.registration_mode() != crate::config::RegistrationMode::Off;
        let at = |path: &str| format!("{base}{path}");
        ProviderMetadata {
            issuer: issuer.to_owned(),
            authorization_endpoint: at("/oauth2/authorize"),
            token_endpoint: at("/oauth2/token"),
            userinfo_endpoint: at("/oauth2/userinfo"),
            jwks_uri: at("/.well-known/jwks.json"),
            revocation_endpoint: at("/oauth2/revoke"),
            introspection_endpoint: at("/oauth2/introspect"),
            end_session_endpoint: at("/oauth2/end-session"),
            device_authorization_endpoint: at("/oauth2/device_authorization"),
            dpop_signing_alg_values_supported: crate::auth::dpop::PROOF_ALGS,
            scopes_supported: (state.auth.resources.catalog().all().iter())
                .map(|s| (*s).to_owned())
                .collect(),
            response_types_supported: ["code"],
            response_modes_supported: ["query"],
            grant_types_supported: GrantType::ALL.iter().map(|g| g.as_str()).collect(),
            code_challenge_methods_supported: ["S256"],
            id_token_signing_alg_values_supported: SigningAlg::ALL
                .iter()
                .map(|a| a.as_str())
                .collect(),
            token_endpoint_auth_methods_supported: TOKEN_AUTH,
            revocation_endpoint_auth_methods_supported: TOKEN_AUTH,
            introspection_endpoint_auth_methods_supported: INTROSPECTION_AUTH,
            subject_types_supported: ["public"],
            claims_supported: CLAIMS,
            prompt_values_supported: ["login", "consent", "none"],
            backchannel_logout_supported: true,
            backchannel_logout_session_supported: true,
            authorization_response_iss_parameter_supported: true,
            request_parameter_supported: false,
            request_uri_parameter_supported: false,
            registration_endpoint: registration.then(|| at("/oauth2/register")),
            client_id_metadata_document_supported: clients.documents_on().then_some(true),
        }
    }
}

/// RFC 8414 metadata of a service that only introspects (the provider off).
#[derive(Serialize, ToSchema)]
struct IntrospectionMetadata {
    /// The `iss` of the access tokens (`GATEHOUSE_ISSUER`), which need not be a URL here.
    issuer: String,
    jwks_uri: String,
    introspection_endpoint: String,
    #[schema(example = json!(INTROSPECTION_AUTH))]
    introspection_endpoint_auth_methods_supported: [&'static str; 2],
    /// Required by RFC 8414; empty, as there is no authorization endpoint.
    response_types_supported: [&'static str; 0],
}

/// Cached a minute by clients and proxies: it changes only with the settings.
fn cached(body: impl Serialize) -> Response {
    (
        [(header::CACHE_CONTROL, "public, max-age=60")],
        axum::Json(body),
    )
        .into_response()
}

error_responses!(OffErrors: [Error::NotFound]);

/// OpenID Connect discovery: where the provider's endpoints and keys are, and what it supports.
///
/// 404 while the provider is off (`GATEHOUSE_ISSUER` is not an absolute http(s) URL).
#[utoipa::path(get, path = "/.well-known/openid-configuration", tag = "oauth",
    responses((status = 200, description = "The provider's metadata", body = ProviderMetadata), OffErrors))]
async fn openid_configuration(State(state): State<AppState>) -> Result<Response, Error> {
    let issuer = state.provider_issuer().ok_or(Error::NotFound)?;
    Ok(cached(ProviderMetadata::new(
        &state,
        issuer,
        &state.public_url,
    )))
}

/// Authorization server metadata (RFC 8414): the same document as the OpenID configuration; with
/// the provider off, where the keys and the introspection endpoint are.
#[utoipa::path(get, path = "/.well-known/oauth-authorization-server", tag = "oauth",
    responses((status = 200, description = "The metadata (ProviderMetadata with the provider on)", body = IntrospectionMetadata)))]
async fn authorization_server(State(state): State<AppState>) -> Response {
    let base = &state.public_url;
    match state.provider_issuer() {
        Some(issuer) => cached(ProviderMetadata::new(&state, issuer, base)),
        None => cached(IntrospectionMetadata {
            issuer: state.issuer.to_string(),
            jwks_uri: format!("{base}/.well-known/jwks.json"),
            introspection_endpoint: format!("{base}/oauth2/introspect"),
            introspection_endpoint_auth_methods_supported: INTROSPECTION_AUTH,
            response_types_supported: [],
        }),
    }
}
