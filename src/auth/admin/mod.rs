//! Administration: what an operator does to accounts, from the `gatehouse` command (by e-mail) or
//! through the administration API (by id, docs/api.md §8). Each action is here once, in `actions`,
//! whoever calls it; `listing` reads accounts and the audit trail a page at a time; this file
//! decides who may call the API and writes the trail of what they did.

use uuid::Uuid;

use super::AuthService;
use super::audit::{Actor, AuditEvent};
use crate::error::{Error, Result};
use crate::model::{ClientInfo, Principal};

pub mod actions;
mod listing;

pub use listing::{AuditFilter, UserFilter};

/// The role that opens the administration API.
pub const ADMIN_ROLE: &str = "admin";

/// Who asks for an administrative action.
#[derive(Debug, Clone, Copy)]
pub enum Operator<'a> {
    /// The `gatehouse` command: whoever holds the database and the master key, the last resort
    /// that can mend anything (so nothing it does counts as a lock-out).
    Cli,
    /// An admin through the API, as vetted by `AuthService::admin_caller`.
    Admin {
        who: &'a Principal,
        client: &'a ClientInfo,
    },
}

impl Operator<'_> {
    pub(crate) fn actor(self) -> Actor {
        match self {
            Operator::Cli => Actor::Cli,
            Operator::Admin { .. } => Actor::Admin,
        }
    }

    /// Refuses an admin's action on their own account that would shut them out of this API
    /// (`CONFLICT`); `what` names it in the answer.
    pub(crate) fn not_on_self(self, target: Uuid, what: &str) -> Result<()> {
        match self {
            Operator::Admin { who, .. } if who.user_id == target => Err(Error::Conflict(format!(
                "an admin cannot {what} their own account: ask another admin"
            ))),
            _ => Ok(()),
        }
    }
}

impl AuthService {
    /// The caller of an administration call: a live access token of an enabled account that has
    /// the `admin` role now (read from the directory every instance keeps current within
    /// `live::SYNC_INTERVAL`, not from the token's claims, which are as old as the token), whose
    /// session's login had a second factor (a passkey counts). Not an admin: `FORBIDDEN`, whatever
    /// the factors; an admin without a second factor: `TWO_FACTOR_REQUIRED`.
    pub async fn admin_caller(&self, access_token: &str) -> Result<Principal> {
        let identity = self.identify(access_token).await?;
        if !identity.roles.iter().any(|r| r == ADMIN_ROLE) {
            return Err(Error::Forbidden);
        }
        if !identity.multi_factor {
            return Err(Error::TwoFactorRequired);
        }
        Ok(Principal {
            user_id: identity.user_id,
            session_id: identity.session_id,
        })
    }

    /// Records what an operator did to `target`: for an admin, with their id (`actor_id`), their
    /// session and where they called from.
    pub(crate) async fn audit_by(&self, op: Operator<'_>, event: AuditEvent, target: Option<Uuid>) {
        match op {
            Operator::Cli => self.audit(event, target, None, None).await,
            Operator::Admin { who, client } => {
                self.auditor
                    .record_by(
                        event,
                        Some(who.user_id),
                        target,
                        Some(who.session_id),
                        Some(client),
                    )
                    .await
            }
        }
    }
}
