//! What acts for the caller (docs/api.md §11, "Connected applications"): every client holding a
//! grant of theirs, and ending one at once.

use axum::extract::State;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use crate::clock::rfc3339;
use crate::error::{Error, Result};
use crate::http::docs::{bearer_errors, error_responses, server_errors};
use crate::http::extract::{AuthUser, PathId};
use crate::http::{Answer, AppState, Envelope, ok};
use crate::model::Catalog;
use crate::provider::ConnectedApp;

pub(super) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(connected_apps))
        .routes(routes!(disconnect))
}

/// A client that acts for the person.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = ConnectedApp)]
pub(crate) struct ConnectedAppView {
    #[schema(format = Uuid)]
    client_id: String,
    #[schema(example = "Acme CLI")]
    name: String,
    /// `first_party`, `operator`, `device` (a command-line tool or agent of the device grant),
    /// `self_registered` (RFC 7591: its name is its own word) or `metadata_document`.
    #[schema(example = "device")]
    kind: &'static str,
    #[schema(example = json!(["openid", "offline_access"]))]
    scopes: Vec<String>,
    /// `scopes` in the words of the consent screen, in the same order.
    #[schema(example = json!(["Know who you are on this service", "Stay signed in"]))]
    described: Vec<String>,
    /// The organisation its latest session acts in (docs/api.md §13).
    org_id: Option<Uuid>,
    /// When the person allowed it; `null` for one that asks no consent.
    #[schema(format = DateTime)]
    allowed_at: Option<String>,
    /// Its live sessions.
    sessions: usize,
    /// Its latest session's last refresh or call.
    #[schema(format = DateTime)]
    last_used_at: Option<String>,
    /// Where its latest session began.
    #[schema(example = "203.0.113.9")]
    ip: Option<String>,
    user_agent: Option<String>,
}

impl ConnectedAppView {
    pub(crate) fn new(app: ConnectedApp, catalog: &Catalog) -> Self {
        ConnectedAppView {
            client_id: app.client.client_id(),
            name: app.client.name,
            kind: app.kind.as_str(),
            described: (app.scopes.iter())
                .map(|s| catalog.describe(s).unwrap_or(s).to_owned())
                .collect(),
            scopes: app.scopes,
            org_id: app.org_id,
            allowed_at: app.allowed_at.map(rfc3339),
            sessions: app.sessions,
            last_used_at: app.last_used_at.map(rfc3339),
            ip: app.ip,
            user_agent: app.user_agent,
        }
    }
}

#[derive(Serialize, ToSchema)]
pub(crate) struct ConnectedAppList {
    pub(crate) items: Vec<ConnectedAppView>,
}

/// How many sessions ended.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Disconnected {
    pub(crate) sessions_ended: u64,
}

error_responses!(ListErrors: bearer_errors(), server_errors());

/// The applications that act for the caller: each client holding a consent or a live session of
/// theirs (first-party apps, operators' clients, command-line tools and agents, self-registered
/// clients), the most recently used first.
#[utoipa::path(get, path = "/connected-apps", tag = "auth", security(("bearer" = [])),
    responses((status = 200, description = "The applications", body = Envelope<ConnectedAppList>), ListErrors))]
async fn connected_apps(
    State(state): State<AppState>,
    AuthUser(who): AuthUser,
) -> Result<Answer<ConnectedAppList>> {
    let apps = state.auth.oauth.connected_apps(who.user_id).await?;
    let catalog = state.auth.resources.catalog();
    Ok(ok(ConnectedAppList {
        items: (apps.into_iter())
            .map(|a| ConnectedAppView::new(a, &catalog))
            .collect(),
    }))
}

error_responses!(EndErrors: bearer_errors(), [Error::NotFound], server_errors());

/// End an application: its consent is withdrawn and every session it holds of the caller ends
/// (its access and refresh tokens refused here at once and on every instance within 2 s, the
/// client told by back-channel logout). 404 when it holds nothing.
#[utoipa::path(delete, path = "/connected-apps/{clientId}", tag = "auth", security(("bearer" = [])),
    params(("clientId" = Uuid, Path, description = "A client id from `GET /auth/connected-apps`")),
    responses((status = 200, description = "Ended", body = Envelope<Disconnected>), EndErrors))]
async fn disconnect(
    State(state): State<AppState>,
    AuthUser(who): AuthUser,
    PathId(client_id): PathId,
) -> Result<Answer<Disconnected>> {
    let sessions_ended = state
        .auth
        .oauth
        .disconnect(who.user_id, client_id, None)
        .await?;
    Ok(ok(Disconnected { sessions_ended }))
}
