//! The caller's consents to third-party clients (docs/api.md §11): the list, and withdrawing one.

use axum::extract::State;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::clock::rfc3339;
use crate::error::{Error, Result};
use crate::http::docs::{bearer_errors, error_responses, server_errors};
use crate::http::extract::{AuthUser, PathId};
use crate::http::{Answer, AppState, Envelope, ok};
use crate::model::logouts::ConsentInfo;

pub(super) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(consents))
        .routes(routes!(withdraw))
}

/// What the caller allowed a client.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = Consent)]
struct ConsentView {
    #[schema(format = Uuid)]
    client_id: String,
    #[schema(example = "Grafana")]
    client_name: String,
    #[schema(example = json!(["openid", "profile", "contacts:read"]))]
    scopes: Vec<String>,
    /// `scopes` in the words of the consent screen, in the same order (a scope no API declares
    /// any more: its name).
    #[schema(example = json!(["Know who you are on this service", "See your name", "Read your contacts"]))]
    described: Vec<String>,
    #[schema(format = DateTime, example = "2026-11-21T09:30:00.417Z")]
    granted_at: String,
}

impl ConsentView {
    fn new(c: ConsentInfo, catalog: &crate::model::Catalog) -> Self {
        ConsentView {
            client_id: c.client_id.to_string(),
            client_name: c.client_name,
            described: (c.scopes.iter())
                .map(|s| catalog.describe(s).unwrap_or(s).to_owned())
                .collect(),
            scopes: c.scopes,
            granted_at: rfc3339(c.granted_at),
        }
    }
}

#[derive(Serialize, ToSchema)]
struct ConsentList {
    items: Vec<ConsentView>,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct Withdrawn {
    #[schema(format = Uuid)]
    client_id: String,
}

error_responses!(ListErrors: bearer_errors(), server_errors());

/// The third-party clients the caller allowed, the most recent first.
#[utoipa::path(get, path = "/consents", tag = "auth", security(("bearer" = [])),
    responses((status = 200, description = "The consents", body = Envelope<ConsentList>), ListErrors))]
async fn consents(
    State(state): State<AppState>,
    AuthUser(who): AuthUser,
) -> Result<Answer<ConsentList>> {
    let items = state.auth.logouts.consents(&who).await?;
    let catalog = state.auth.resources.catalog();
    let items = (items.into_iter())
        .map(|c| ConsentView::new(c, &catalog))
        .collect();
    Ok(ok(ConsentList { items }))
}

error_responses!(WithdrawErrors: bearer_errors(), [Error::NotFound], server_errors());

/// Withdraw a consent: the client's sessions and tokens for the caller end (on every instance
/// within 2 s, the client told by back-channel logout), and its next authorization asks again.
#[utoipa::path(delete, path = "/consents/{clientId}", tag = "auth", security(("bearer" = [])),
    params(("clientId" = Uuid, Path, description = "A client id from `GET /auth/consents`")),
    responses(
        (status = 200, description = "Withdrawn", body = Envelope<Withdrawn>),
        WithdrawErrors,
    ))]
async fn withdraw(
    State(state): State<AppState>,
    AuthUser(who): AuthUser,
    PathId(client_id): PathId,
) -> Result<Answer<Withdrawn>> {
    let client = state.auth.logouts.withdraw(&who, client_id).await?;
    Ok(ok(Withdrawn {
        client_id: client.to_string(),
    }))
}
