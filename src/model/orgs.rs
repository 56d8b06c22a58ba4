//! Organisations (docs/api.md §13): their members with roles, and the invitations to join them.

use uuid::Uuid;

/// The role every organisation has at least one holder of; it alone gives or takes itself.
pub const OWNER: &str = "owner";
/// May manage members and invitations (but not owners) and edit the organisation.
pub const ADMIN: &str = "admin";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Org {
    pub id: Uuid,
    pub name: String,
    pub slug: String,
    pub require_two_factor: bool,
    pub created_at: i64,
}

/// A person's place in an organisation: its role names, sorted, never empty; and the
/// organisation's `require_two_factor`, which a session acting in it must meet on every use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Membership {
    pub org_id: Uuid,
    pub roles: Vec<String>,
    pub two_factor_required: bool,
}

impl Membership {
    /// Whether a session whose sign-in had a second factor (`multi_factor`) or not may act in
    /// the organisation now: one that requires two factors admits no other (docs/api.md §13), a
    /// session begun before it did included.
    pub fn admits(&self, multi_factor: bool) -> bool {
        multi_factor || !self.two_factor_required
    }

    pub fn has(&self, role: &str) -> bool {
        self.roles.iter().any(|r| r == role)
    }

    pub fn is_owner(&self) -> bool {
        self.has(OWNER)
    }

    /// Owner or admin: may edit the organisation, its members and invitations.
    pub fn manages(&self) -> bool {
        self.has(OWNER) || self.has(ADMIN)
    }
}

/// A member as the organisation's member list shows them.
#[derive(Debug, Clone)]
pub struct Member {
    pub user_id: Uuid,
    pub email: String,
    pub full_name: String,
    pub roles: Vec<String>,
    pub joined_at: i64,
}

/// A pending invitation to an organisation.
#[derive(Debug, Clone)]
pub struct OrgInvitation {
    pub id: Uuid,
    pub org_id: Uuid,
    pub email: String,
    pub email_normalized: String,
    pub roles: Vec<String>,
    pub created_at: i64,
    pub expires_at: i64,
}

/// The active organisation of a session, as a token names it and the directory knows it now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActiveOrg {
    pub id: Uuid,
    /// The holder's roles in it now (not as the token was issued).
    pub roles: Vec<String>,
}

/// Whose contacts a call reads and writes: the person's own, or their active organisation's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Collection {
    Personal(Uuid),
    Org(Uuid),
}

impl Collection {
    /// The owner's id: a user's or an organisation's (UUIDs, so never the same).
    pub fn owner(self) -> Uuid {
        match self {
            Collection::Personal(id) | Collection::Org(id) => id,
        }
    }
}

/// Why a change of memberships was not made (the store checks these in the change's transaction).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MembershipChange {
    Done,
    /// The person is not (or no longer) a member, or their roles changed meanwhile.
    Stale,
    /// It would leave the organisation without an owner.
    LastOwner,
}
