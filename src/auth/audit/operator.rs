//! Who acts on an account when it is not its owner: the operator at the `gatehouse` command or an
//! admin through the API. What they do is recorded (`Core::audit_by`) under the `Actor` it maps to.

use uuid::Uuid;

use super::Actor;
use crate::error::{Conflict, Error, OwnAction, Result};
use crate::model::{ClientInfo, Principal};

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
    pub(crate) fn not_on_self(self, target: Uuid, what: OwnAction) -> Result<()> {
        match self {
            Operator::Admin { who, .. } if who.user_id == target => {
                Err(Error::Conflict(Conflict::OwnAccount(what)))
            }
            _ => Ok(()),
        }
    }
}
