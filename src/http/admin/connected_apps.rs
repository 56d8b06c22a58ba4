//! `/admin/users/{id}/connected-apps…` (docs/api.md §8, §11): what acts for an account (a leaked
//! tool, a person leaving a team), listed and ended by an admin, audited like every admin call.

use axum::extract::State;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::Admin;
use super::users::gate_errors;
use crate::error::{Error, Result};
use crate::http::auth::connected_apps::{ConnectedAppList, ConnectedAppView, Disconnected};
use crate::http::docs::error_responses;
use crate::http::extract::{PathId, PathIds};
use crate::http::{Answer, AppState, Envelope, ok};

pub(super) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_apps))
        .routes(routes!(disconnect_app))
}

error_responses!(NotFoundErrors: [Error::NotFound], gate_errors());

/// The applications that act for an account, as its owner sees them.
#[utoipa::path(get, path = "/users/{id}/connected-apps", tag = "admin", security(("bearer" = [])),
    params(("id" = Uuid, Path, description = "The account's id")),
    responses((status = 200, description = "The applications", body = Envelope<ConnectedAppList>), NotFoundErrors))]
async fn list_apps(
    State(state): State<AppState>,
    admin: Admin,
    PathId(id): PathId,
) -> Result<Answer<ConnectedAppList>> {
    let apps = state.auth.oauth.connected_apps_of(admin.op(), id).await?;
    let catalog = state.auth.resources.catalog();
    Ok(ok(ConnectedAppList {
        items: (apps.into_iter())
            .map(|a| ConnectedAppView::new(a, &catalog))
            .collect(),
    }))
}

/// End an application for an account: as its owner would (consent withdrawn, every session of
/// it ended on every instance within 2 s). 404 when it holds nothing of the account.
#[utoipa::path(delete, path = "/users/{id}/connected-apps/{clientId}", tag = "admin",
    security(("bearer" = [])),
    params(("id" = Uuid, Path, description = "The account's id"),
        ("clientId" = Uuid, Path, description = "A client id from `GET /admin/users/{id}/connected-apps`")),
    responses((status = 200, description = "Ended", body = Envelope<Disconnected>), NotFoundErrors))]
async fn disconnect_app(
    State(state): State<AppState>,
    admin: Admin,
    PathIds(user, client): PathIds,
) -> Result<Answer<Disconnected>> {
    let sessions_ended = state
        .auth
        .oauth
        .disconnect(user, client, Some(admin.op()))
        .await?;
    Ok(ok(Disconnected { sessions_ended }))
}
