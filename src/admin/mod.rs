//! Administration: what an operator does to accounts, from the `gatehouse` command (by e-mail) or
//! through the administration API (by id, docs/api.md §8). Each action is here once, in `actions`,
//! whoever calls it; `listing` reads accounts and the audit trail a page at a time; this file
//! decides who may call the API and writes the trail of what they did. It stands above every flow
//! it drives (`auth`, `guard`, the organisations); only `flows`, `http` and the CLI call it.

use std::sync::Arc;

use crate::auth::{Accounts, Core, Invitations, Recovery, Sessions};
use crate::guard::Guard;
use crate::orgs::Orgs;

use crate::error::{Error, Result};
use crate::model::{Holder, Principal};

pub mod actions;
mod listing;
mod orgs;

pub use listing::{AuditFilter, UserFilter};

/// The role that opens the administration API.
pub const ADMIN_ROLE: &str = "admin";

/// What operators do to accounts, from the CLI or the administration API.
#[derive(Clone)]
pub struct Admin {
    pub(crate) core: Arc<Core>,
    /// Adding, deleting and setting passwords are the owner's own steps.
    pub(crate) accounts: Accounts,
    pub(crate) invitations: Invitations,
    /// An admin's reset mail is the forgotten-password mail.
    pub(crate) recovery: Recovery,
    pub(crate) sessions: Sessions,
    /// The admin gate judges a token as forward-auth does.
    pub(crate) guard: Guard,
    /// Organisations, read and deleted as their owners would.
    pub(crate) orgs: Orgs,
}

impl Admin {
    /// The caller of an administration call: a live access token of an enabled account that has
    /// the `admin` role now (read from the directory every instance keeps current within
    /// `live::SYNC_INTERVAL`, not from the token's claims, which are as old as the token), whose
    /// session's login had a second factor (a passkey counts). Not an admin: `FORBIDDEN`, whatever
    /// the factors; an admin without a second factor: `TWO_FACTOR_REQUIRED`.
    pub async fn admin_caller(&self, access_token: &str) -> Result<Principal> {
        // A client's token (forward-auth accepts it) never administers, whoever gave it.
        self.sessions.authenticate_person(access_token).await?;
        let Holder::Person(identity) = self.guard.identify(access_token).await? else {
            return Err(Error::ClientToken);
        };
        if !identity.roles.iter().any(|r| r == ADMIN_ROLE) {
            return Err(Error::Forbidden);
        }
        if !identity.multi_factor {
            return Err(Error::TwoFactorRequired);
        }
        Ok(Principal {
            user_id: identity.user_id,
            session_id: identity.session_id,
            api_key: None,
            multi_factor: identity.multi_factor,
            org: identity.org,
            scopes: None,
            dpop_jkt: None,
        })
    }
}
