//! `/admin/clients…` (docs/api.md §11, §8): the client registry of the OpenID provider, as
//! `gatehouse clients` manages it. The checks are the registry's (`provider::Clients`); this file
//! turns JSON into its requests and its clients into JSON.

use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use super::Admin;
use super::users::{gate_errors, given};
use crate::clock::rfc3339;
use crate::error::{Error, FieldErrors, Result};
use crate::http::docs::{body_errors, error_responses};
use crate::http::extract::{AppJson, PathId};
use crate::http::{Answer, AppState, Envelope, ok};
use crate::model::{Client, ClientOrigin};
use crate::provider::{ClientChanges, NewClient, SECRET_OVERLAP_MAX_MS};

pub(super) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list, create))
        .routes(routes!(one, update, delete))
        .routes(routes!(rotate_secret))
}

/// A registered client (docs/api.md §11).
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = OAuthClient)]
pub struct ClientView {
    /// Its `client_id`.
    client_id: Uuid,
    #[schema(example = "Grafana")]
    name: String,
    /// `confidential` (has a secret) or `public` (a SPA or native app: none).
    #[serde(rename = "type")]
    #[schema(example = "confidential")]
    client_type: &'static str,
    /// First-party clients skip the consent page.
    first_party: bool,
    #[schema(example = json!(["https://grafana.example.com/login/generic_oauth"]))]
    redirect_uris: Vec<String>,
    #[schema(example = json!(["https://grafana.example.com/logout"]))]
    post_logout_redirect_uris: Vec<String>,
    #[schema(example = json!(["authorization_code", "refresh_token"]))]
    grant_types: Vec<&'static str>,
    #[schema(example = json!(["openid", "profile", "email", "offline_access"]))]
    scopes: Vec<String>,
    #[schema(example = "https://grafana.example.com/backchannel-logout")]
    backchannel_logout_uri: Option<String>,
    #[schema(example = "RS256")]
    id_token_signed_response_alg: &'static str,
    #[schema(format = DateTime, example = "2026-11-24T09:30:00.417Z")]
    created_at: String,
    /// The organisation the client belongs to (docs/api.md §13), set at registration: its
    /// client-credentials tokens carry it as `org_id`, and people authorizing it act in it.
    org_id: Option<Uuid>,
    /// How it came: `operator` (CLI or this API), `registered` (it registered itself at
    /// `/oauth2/register`) or `metadata_document` (its client_id is `metadataUrl`).
    #[schema(example = "operator")]
    origin: &'static str,
    /// A metadata-document client's `client_id` at the OAuth endpoints: its document's URL.
    metadata_url: Option<String>,
    /// A resource server the operator lets introspect tokens (RFC 7662, docs/api.md §6).
    introspection: bool,
    /// Must use PKCE (always for a public client); `false`: a confidential client the operator
    /// let off, whose authorizations must carry `nonce` for `openid`.
    pkce_required: bool,
    /// Must prove a DPoP key at the token endpoint (RFC 9449 §5.2's `dpop_bound_access_tokens`):
    /// every token it gets is bound to its key.
    dpop_bound_access_tokens: bool,
    /// Until when the secret before the last rotation still works; `null` when none does.
    #[schema(format = DateTime)]
    previous_secret_expires_at: Option<String>,
}

impl From<Client> for ClientView {
    fn from(c: Client) -> Self {
        let metadata_url = match &c.origin {
            ClientOrigin::MetadataDocument { url, .. } => Some(url.clone()),
            _ => None,
        };
        ClientView {
            origin: c.origin.as_str(),
            metadata_url,
            client_id: c.id,
            client_type: c.client_type.as_str(),
            grant_types: c.grant_types.iter().map(|g| g.as_str()).collect(),
            id_token_signed_response_alg: c.id_token_alg.as_str(),
            created_at: rfc3339(c.created_at),
            name: c.name,
            first_party: c.first_party,
            redirect_uris: c.redirect_uris,
            post_logout_redirect_uris: c.post_logout_redirect_uris,
            scopes: c.scopes,
            backchannel_logout_uri: c.backchannel_logout_uri,
            org_id: c.org_id,
            introspection: c.introspection,
            pkce_required: c.pkce_required,
            dpop_bound_access_tokens: c.dpop_required,
            previous_secret_expires_at: c.previous_secret.map(|(_, until)| rfc3339(until)),
        }
    }
}

/// A new client, and its secret this once.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct CreatedClient {
    #[serde(flatten)]
    client: ClientView,
    /// Shown only now (stored as a keyed hash); `null` for a public client.
    #[schema(example = "q3Jx0v9Qm2p6a1F4b7c8d9e0f1g2h3i4j5k6l7m8n9o")]
    client_secret: Option<String>,
}

#[derive(Serialize, ToSchema)]
struct ClientList {
    /// Oldest first.
    items: Vec<ClientView>,
}

/// What was removed.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct ClientRemoved {
    client_id: Uuid,
}

error_responses!(ListErrors: gate_errors());

/// Every registered client, oldest first.
#[utoipa::path(get, path = "/clients", tag = "admin", security(("bearer" = [])),
    responses((status = 200, description = "The clients", body = Envelope<ClientList>), ListErrors))]
async fn list(State(state): State<AppState>, admin: Admin) -> Result<Answer<ClientList>> {
    let clients = state.auth.clients.list(admin.op()).await?;
    Ok(ok(ClientList {
        items: clients.into_iter().map(ClientView::from).collect(),
    }))
}

#[derive(Deserialize, Default, ToSchema)]
#[serde(rename_all = "camelCase", default)]
struct CreateRequest {
    /// 1 to 200 characters, shown on the consent page.
    #[schema(required = true, min_length = 1, max_length = 200, example = "Grafana")]
    name: String,
    /// `confidential` (default) or `public`.
    #[serde(rename = "type")]
    #[schema(example = "confidential")]
    client_type: Option<String>,
    first_party: bool,
    /// Absolute, no fragment: https, http on 127.0.0.1, [::1] or localhost, or a private-use
    /// scheme with a dot (`com.example.app:/callback`). Needed for `authorization_code`.
    #[schema(example = json!(["https://grafana.example.com/login/generic_oauth"]))]
    redirect_uris: Vec<String>,
    /// By the same rules as `redirectUris`.
    post_logout_redirect_uris: Vec<String>,
    /// Of `authorization_code`, `refresh_token`, `client_credentials` (not for a public client);
    /// default `authorization_code` and `refresh_token`.
    #[schema(example = json!(["authorization_code", "refresh_token"]))]
    grant_types: Option<Vec<String>>,
    /// Of `openid profile email offline_access roles contacts:read contacts:write`; default
    /// `openid profile email offline_access`.
    #[schema(example = json!(["openid", "profile", "email", "offline_access"]))]
    scopes: Option<Vec<String>>,
    /// https, or http on a loopback host.
    backchannel_logout_uri: Option<String>,
    /// `RS256` (default), `ES256` or `EdDSA`.
    #[schema(example = "RS256")]
    id_token_signed_response_alg: Option<String>,
    /// Binds the client to this organisation for good (docs/api.md §13).
    org_id: Option<Uuid>,
    /// May introspect tokens (RFC 7662): a resource server of the operator's; confidential
    /// clients only. Default: `true` for a confidential client given neither `grantTypes` nor
    /// `redirectUris` (what such a client is for), else `false`.
    introspection: Option<bool>,
    /// Default `true`; `false` lets a confidential client off PKCE (a legacy relying party).
    pkce_required: Option<bool>,
    /// Default `false`; `true`: token requests without a DPoP proof are refused (RFC 9449 §5.2).
    dpop_bound_access_tokens: Option<bool>,
}

fn uri_error() -> Error {
    Error::field(
        "redirectUris",
        "\"http://app.example.com/cb\" may be http only on 127.0.0.1, [::1] or localhost; else https",
    )
}

error_responses!(CreateErrors: body_errors(), [uri_error()], gate_errors());

/// Register a client; its secret is in the answer this once.
#[utoipa::path(post, path = "/clients", tag = "admin", security(("bearer" = [])),
    request_body = CreateRequest,
    responses((status = 201, description = "The new client, with its secret", body = Envelope<CreatedClient>), CreateErrors))]
async fn create(
    State(state): State<AppState>,
    admin: Admin,
    AppJson(body): AppJson<CreateRequest>,
) -> Result<(StatusCode, Answer<CreatedClient>)> {
    let new = NewClient {
        name: body.name,
        client_type: body.client_type,
        first_party: body.first_party,
        redirect_uris: body.redirect_uris,
        post_logout_redirect_uris: body.post_logout_redirect_uris,
        grant_types: body.grant_types,
        scopes: body.scopes,
        backchannel_logout_uri: body.backchannel_logout_uri,
        id_token_alg: body.id_token_signed_response_alg,
        org_id: body.org_id,
        introspection: body.introspection,
        pkce_required: body.pkce_required,
        dpop_required: body.dpop_bound_access_tokens,
    };
    let (client, secret) = state.auth.clients.create(admin.op(), new).await?;
    Ok((
        StatusCode::CREATED,
        ok(CreatedClient {
            client: client.into(),
            client_secret: secret,
        }),
    ))
}

error_responses!(OneErrors: [Error::NotFound], gate_errors());

/// One client.
#[utoipa::path(get, path = "/clients/{clientId}", tag = "admin", security(("bearer" = [])),
    params(("clientId" = Uuid, Path, description = "The client's id")),
    responses((status = 200, description = "The client", body = Envelope<ClientView>), OneErrors))]
async fn one(
    State(state): State<AppState>,
    admin: Admin,
    PathId(id): PathId,
) -> Result<Answer<ClientView>> {
    Ok(ok(state.auth.clients.get(admin.op(), id).await?.into()))
}

/// Each field is left out (kept) or given; `null` is no value but for `backchannelLogoutUri`,
/// where it removes the URI.
#[derive(Deserialize, Default, ToSchema)]
#[serde(rename_all = "camelCase", default)]
struct PatchRequest {
    /// Only the client's own: a client's type never changes.
    #[serde(rename = "type", deserialize_with = "given")]
    #[schema(value_type = Option<String>, example = "confidential")]
    client_type: Option<Option<String>>,
    #[serde(deserialize_with = "given")]
    #[schema(value_type = Option<String>, min_length = 1, max_length = 200, example = "Grafana")]
    name: Option<Option<String>>,
    #[serde(deserialize_with = "given")]
    #[schema(value_type = Option<bool>)]
    first_party: Option<Option<bool>>,
    /// The whole list (URIs left out are removed).
    #[serde(deserialize_with = "given")]
    #[schema(value_type = Option<Vec<String>>)]
    redirect_uris: Option<Option<Vec<String>>>,
    #[serde(deserialize_with = "given")]
    #[schema(value_type = Option<Vec<String>>)]
    post_logout_redirect_uris: Option<Option<Vec<String>>>,
    #[serde(deserialize_with = "given")]
    #[schema(value_type = Option<Vec<String>>)]
    grant_types: Option<Option<Vec<String>>>,
    #[serde(deserialize_with = "given")]
    #[schema(value_type = Option<Vec<String>>)]
    scopes: Option<Option<Vec<String>>>,
    /// `null` removes it.
    #[serde(deserialize_with = "given")]
    #[schema(value_type = Option<String>)]
    backchannel_logout_uri: Option<Option<String>>,
    #[serde(deserialize_with = "given")]
    #[schema(value_type = Option<String>, example = "ES256")]
    id_token_signed_response_alg: Option<Option<String>>,
    #[serde(deserialize_with = "given")]
    #[schema(value_type = Option<bool>)]
    introspection: Option<Option<bool>>,
    #[serde(deserialize_with = "given")]
    #[schema(value_type = Option<bool>)]
    pkce_required: Option<Option<bool>>,
    #[serde(deserialize_with = "given")]
    #[schema(value_type = Option<bool>)]
    dpop_bound_access_tokens: Option<Option<bool>>,
}

impl PatchRequest {
    /// The registry's changes; `null` where it means nothing is a field error.
    fn changes(self) -> Result<ClientChanges> {
        let mut nulls = FieldErrors::new();
        let n = &mut nulls;
        let client_type = not_null(n, "type", self.client_type);
        let name = not_null(n, "name", self.name);
        let first_party = not_null(n, "firstParty", self.first_party);
        let redirect_uris = not_null(n, "redirectUris", self.redirect_uris);
        let post_logout_redirect_uris =
            not_null(n, "postLogoutRedirectUris", self.post_logout_redirect_uris);
        let grant_types = not_null(n, "grantTypes", self.grant_types);
        let scopes = not_null(n, "scopes", self.scopes);
        let introspection = not_null(n, "introspection", self.introspection);
        let pkce_required = not_null(n, "pkceRequired", self.pkce_required);
        let dpop_required = not_null(n, "dpopBoundAccessTokens", self.dpop_bound_access_tokens);
        let id_token_alg = not_null(
            n,
            "idTokenSignedResponseAlg",
            self.id_token_signed_response_alg,
        );
        if !nulls.is_empty() {
            return Err(Error::Validation(nulls));
        }
        Ok(ClientChanges {
            client_type,
            name,
            first_party,
            redirect_uris,
            post_logout_redirect_uris,
            grant_types,
            scopes,
            backchannel_logout_uri: self.backchannel_logout_uri,
            id_token_alg,
            introspection,
            pkce_required,
            dpop_required,
        })
    }
}

/// A field's value when given; `null` recorded as an error.
fn not_null<T>(nulls: &mut FieldErrors, name: &str, value: Option<Option<T>>) -> Option<T> {
    if let Some(None) = value {
        nulls.insert(name.to_owned(), "must not be null".to_owned());
    }
    value.flatten()
}

error_responses!(PatchErrors: body_errors(), [uri_error(), Error::NotFound], gate_errors());

/// Change a client's registration.
///
/// Each given field is replaced; the others stay. The whole client is checked again (a client with
/// `authorization_code` keeps at least one redirect URI). Every instance sees the change within
/// 1 s.
#[utoipa::path(patch, path = "/clients/{clientId}", tag = "admin", security(("bearer" = [])),
    params(("clientId" = Uuid, Path, description = "The client's id")),
    request_body = PatchRequest,
    responses((status = 200, description = "The client as it is now", body = Envelope<ClientView>), PatchErrors))]
async fn update(
    State(state): State<AppState>,
    admin: Admin,
    PathId(id): PathId,
    AppJson(body): AppJson<PatchRequest>,
) -> Result<Answer<ClientView>> {
    let changes = body.changes()?;
    if changes.is_empty() {
        return Err(Error::field(
            "body",
            "must give at least one field of the client to change",
        ));
    }
    let client = state.auth.clients.update(admin.op(), id, changes).await?;
    Ok(ok(client.into()))
}

/// Remove a client: its calls (introspection, the token endpoint) are refused on every instance
/// within 1 s.
#[utoipa::path(delete, path = "/clients/{clientId}", tag = "admin", security(("bearer" = [])),
    params(("clientId" = Uuid, Path, description = "The client's id")),
    responses((status = 200, description = "Removed", body = Envelope<ClientRemoved>), OneErrors))]
async fn delete(
    State(state): State<AppState>,
    admin: Admin,
    PathId(id): PathId,
) -> Result<Answer<ClientRemoved>> {
    state.auth.clients.remove(admin.op(), id).await?;
    Ok(ok(ClientRemoved { client_id: id }))
}

#[derive(Deserialize, Default, ToSchema)]
#[serde(rename_all = "camelCase", default)]
struct RotateRequest {
    /// How long the previous secret keeps working, 0 to 2 592 000 (30 days); default 86 400.
    #[schema(example = 86400)]
    overlap_seconds: Option<i64>,
}

/// A confidential client's new secret, shown this once.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct RotatedSecretView {
    client_id: Uuid,
    #[schema(example = "q3Jx0v9Qm2p6a1F4b7c8d9e0f1g2h3i4j5k6l7m8n9o")]
    client_secret: String,
    /// Until when the previous secret still works.
    #[schema(format = DateTime, example = "2026-12-01T09:30:00.417Z")]
    previous_secret_expires_at: String,
}

error_responses!(RotateErrors: body_errors(), [Error::NotFound], gate_errors());

/// Rotate a confidential client's secret.
///
/// The new secret is in the answer this once; the previous one keeps working for `overlapSeconds`
/// (a day unless given; 0 ends it now), so that the relying party can be given the new one
/// without an outage. Every instance knows both within 1 s. Audited `client.secret_rotated`. A
/// public client has no secret: 400 `VALIDATION_ERROR`.
#[utoipa::path(post, path = "/clients/{clientId}/rotate-secret", tag = "admin",
    security(("bearer" = [])),
    params(("clientId" = Uuid, Path, description = "The client's id")),
    request_body = RotateRequest,
    responses((status = 200, description = "The new secret", body = Envelope<RotatedSecretView>), RotateErrors))]
async fn rotate_secret(
    State(state): State<AppState>,
    admin: Admin,
    PathId(id): PathId,
    AppJson(body): AppJson<RotateRequest>,
) -> Result<Answer<RotatedSecretView>> {
    // Checked here in the API's unit; the registry checks the milliseconds again.
    let max_seconds = SECRET_OVERLAP_MAX_MS / 1000;
    let overlap_ms = match body.overlap_seconds {
        None => None,
        Some(s) if (0..=max_seconds).contains(&s) => Some(s * 1000),
        Some(_) => {
            return Err(Error::field(
                "overlapSeconds",
                format!("must be from 0 to {max_seconds} (30 days)"),
            ));
        }
    };
    let rotated = state
        .auth
        .clients
        .rotate_secret(admin.op(), id, overlap_ms)
        .await?;
    Ok(ok(RotatedSecretView {
        client_id: id,
        client_secret: rotated.secret,
        previous_secret_expires_at: rfc3339(rotated.previous_until),
    }))
}
