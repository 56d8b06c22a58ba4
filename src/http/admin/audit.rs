//! `GET /admin/audit`: the audit trail, newest first, filtered, a page at a time.

use axum::extract::{Query, State};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use super::users::gate_errors;
use super::views::EventView;
use super::{Admin, limit};
use crate::admin::AuditFilter;
use crate::error::{Error, Result, Validator};
use crate::http::docs::error_responses;
use crate::http::{Answer, AppState, Envelope, ok};

pub(super) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(audit))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct AuditQuery {
    /// Only the events of this account (for an admin's act: its target).
    #[param(value_type = Option<Uuid>)]
    user: Option<String>,
    /// Only the events of this organisation (docs/api.md §13).
    #[param(value_type = Option<Uuid>)]
    org: Option<String>,
    /// Only events of this name, e.g. `login.failed` (README, "Audit trail").
    #[serde(rename = "type")]
    #[param(
        rename = "type",
        pattern = r"^[a-z._]{0,64}$",
        example = "user.disabled"
    )]
    kind: Option<String>,
    /// Only events at or after this time (RFC 3339).
    #[param(value_type = Option<String>, format = DateTime, example = "2026-11-23T00:00:00Z")]
    since: Option<String>,
    /// Page size, 1 to 200 (default 50).
    #[param(value_type = Option<u32>, minimum = 1, maximum = 200, example = 50)]
    limit: Option<String>,
    /// `nextCursor` of the previous page; empty for the first. Opaque: one the service did not
    /// issue is 400.
    cursor: Option<String>,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct EventPage {
    items: Vec<EventView>,
    /// Give it as `cursor` for the next page; `null` on the last page.
    next_cursor: Option<String>,
}

error_responses!(AuditErrors:
    [Error::field("since", "must be an RFC 3339 time such as 2026-11-23T00:00:00Z")],
    gate_errors(),
);

/// The audit trail, newest first, a page at a time.
///
/// Every administration call is in it, reads included, with the acting admin (`actorId`) and the
/// account acted on (`userId`). Pages stay exact while events are written.
#[utoipa::path(get, path = "/audit", tag = "admin", security(("bearer" = [])), params(AuditQuery),
    responses((status = 200, description = "A page of events", body = Envelope<EventPage>), AuditErrors))]
async fn audit(
    State(state): State<AppState>,
    admin: Admin,
    query: Result<Query<AuditQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Answer<EventPage>> {
    let Query(query) = query.map_err(|_| Error::field("query", "is not a valid query string"))?;
    let mut v = Validator::new();
    let limit = limit(&mut v, query.limit.as_deref());
    let user = match query.user.as_deref().filter(|u| !u.is_empty()) {
        None => Some(None),
        Some(u) => v.check(
            "user",
            Uuid::parse_str(u)
                .map(Some)
                .map_err(|_| "must be an account id".to_owned()),
        ),
    };
    let org = match query.org.as_deref().filter(|o| !o.is_empty()) {
        None => Some(None),
        Some(o) => v.check(
            "org",
            Uuid::parse_str(o)
                .map(Some)
                .map_err(|_| "must be an organisation id".to_owned()),
        ),
    };
    let since = match query.since.as_deref().filter(|s| !s.is_empty()) {
        None => Some(None),
        Some(s) => v.check("since", parse_time(s).map(Some)),
    };
    let (limit, ((user, org), since)) = v.finish(limit.zip(user.zip(org).zip(since)))?;
    let filter = AuditFilter {
        user,
        org,
        event: query.kind,
        since,
        cursor: query.cursor,
        limit,
    };
    let page = state.auth.admin.audit_trail(admin.op(), filter).await?;
    Ok(ok(EventPage {
        items: page.items.into_iter().map(EventView::from).collect(),
        next_cursor: page.next_cursor,
    }))
}

/// An RFC 3339 time as milliseconds since the epoch.
fn parse_time(text: &str) -> Result<i64, String> {
    time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339)
        .map(|t| (t.unix_timestamp_nanos() / 1_000_000) as i64)
        .map_err(|_| "must be an RFC 3339 time such as 2026-11-23T00:00:00Z".to_owned())
}
