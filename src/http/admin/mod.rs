//! `/api/v1/admin/…` (docs/api.md §8): accounts, the audit trail and the OAuth clients (§11), for admins signed in with a
//! second factor. Every handler takes `Admin`, the gate, first, so no call reads its body or
//! touches an account before the caller is known to be one; the actions themselves are the ones
//! the `gatehouse` command runs (`admin`).

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use utoipa_axum::router::OpenApiRouter;

use super::AppState;
use super::extract::{Caller, bearer_token};
use crate::auth::audit::Operator;
use crate::error::{Error, Result, Validator};
use crate::model::{ClientInfo, Principal};

mod api_keys;
mod audit;
mod clients;
mod connected_apps;
mod orgs;
mod registration_tokens;
mod resources;
mod users;
mod views;

/// Page sizes of the admin lists.
const DEFAULT_LIMIT: u32 = 50;
const MAX_LIMIT: u32 = 200;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .merge(users::router())
        .merge(api_keys::router())
        .merge(connected_apps::router())
        .merge(audit::router())
        .merge(orgs::router())
        .merge(clients::router())
        .merge(registration_tokens::router())
        .merge(resources::router())
}

/// The caller of an administration call: an admin whose session has a second factor
/// (`AuthService::admin_caller`), and where they call from, for the audit trail.
pub struct Admin {
    who: Principal,
    client: ClientInfo,
}

impl Admin {
    fn op(&self) -> Operator<'_> {
        Operator::Admin {
            who: &self.who,
            client: &self.client,
        }
    }
}

impl FromRequestParts<AppState> for Admin {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Error> {
        let token = bearer_token(&parts.headers).ok_or(Error::Unauthenticated)?;
        let who = state.auth.admin.admin_caller(token).await?;
        let Caller(client) = Caller::from_request_parts(parts, state).await?;
        Ok(Admin { who, client })
    }
}

/// A page size: absent → the default, else 1 to `MAX_LIMIT`.
fn limit(v: &mut Validator, raw: Option<&str>) -> Option<u32> {
    super::fields::page_limit(v, raw, DEFAULT_LIMIT, MAX_LIMIT)
}
