//! An organisation's members: the list, role changes and removals (docs/api.md §13). The last
//! owner can neither leave nor lose `owner` (checked by the store in the change's transaction).

use uuid::Uuid;

use super::{Orgs, membership_roles};
use crate::auth::audit::OrgEvent;
use crate::error::{Conflict, Error, Result};
use crate::model::orgs::{Member, MembershipChange, OWNER};
use crate::model::{ClientInfo, Principal};

/// A page of members and where the next one starts.
#[derive(Debug)]
pub struct MemberPage {
    pub items: Vec<Member>,
    pub next_cursor: Option<String>,
}

/// How often a role change is tried again when the member's roles moved under it.
const ATTEMPTS: usize = 4;

/// The scope of the member list's cursors.
const CURSOR_SCOPE: &[u8] = b"org-members";

impl Orgs {
    /// `GET /orgs/{id}/members` (any member): by user id, a page at a time.
    pub async fn members(
        &self,
        who: &Principal,
        org: Uuid,
        limit: u32,
        cursor: Option<&str>,
    ) -> Result<MemberPage> {
        self.member_of(who.user_id, org).await?;
        self.member_page(org, limit, cursor).await
    }

    /// A page of an organisation's members, whoever asks (the admin API too).
    pub(crate) async fn member_page(
        &self,
        org: Uuid,
        limit: u32,
        cursor: Option<&str>,
    ) -> Result<MemberPage> {
        let scope: [&[u8]; 2] = [CURSOR_SCOPE, org.as_bytes()];
        let after =
            match cursor.filter(|c| !c.is_empty()) {
                None => None,
                Some(c) => {
                    let key = self
                        .core
                        .secrets
                        .open_cursor(&scope, c)
                        .map_err(|reason| Error::field("cursor", reason))?;
                    Some(Uuid::from_slice(&key).map_err(|_| {
                        Error::field("cursor", "is not a cursor this service issued")
                    })?)
                }
            };
        let limit = i64::from(limit.max(1));
        let mut items = self.core.store.members(org, after, limit + 1).await?;
        let more = items.len() as i64 > limit;
        items.truncate(limit as usize);
        let next_cursor = more
            .then(|| items.last())
            .flatten()
            .map(|last| self.core.secrets.cursor(&scope, last.user_id.as_bytes()));
        Ok(MemberPage { items, next_cursor })
    }

    /// `PATCH /orgs/{id}/members/{userId}` (owner or admin; only an owner gives or takes `owner`).
    pub async fn set_roles(
        &self,
        who: &Principal,
        org: Uuid,
        target: Uuid,
        roles: &[String],
        client: &ClientInfo,
    ) -> Result<Vec<String>> {
        let (_, me) = self.member_of(who.user_id, org).await?;
        if !me.manages() {
            return Err(Error::Forbidden);
        }
        let new = membership_roles(roles).map_err(|reason| Error::field("roles", reason))?;
        for _ in 0..ATTEMPTS {
            let old = self
                .core
                .store
                .membership(org, target)
                .await?
                .ok_or(Error::NotFound)?;
            let owner_moves = old.is_owner() != new.iter().any(|r| r == OWNER);
            if owner_moves && !me.is_owner() {
                return Err(Error::Forbidden);
            }
            let now = self.core.clock.now_ms();
            match self
                .core
                .store
                .set_member_roles(org, target, &old.roles, &new, now)
                .await?
            {
                MembershipChange::Done => {
                    self.core.directory.forget(target);
                    let what = OrgEvent::RolesChanged { roles: new.clone() };
                    self.audit(who, org, what, Some(target), client).await;
                    return Ok(new);
                }
                MembershipChange::LastOwner => return Err(Error::Conflict(Conflict::LastOwner)),
                MembershipChange::Stale => continue,
            }
        }
        Err(Error::internal(anyhow::anyhow!(
            "the roles of member {target} of {org} changed under {ATTEMPTS} updates in a row"
        )))
    }

    /// `DELETE /orgs/{id}/members/{userId}`: owner or admin (an owner to remove an owner), or the
    /// member themselves (leaving).
    pub async fn remove_member(
        &self,
        who: &Principal,
        org: Uuid,
        target: Uuid,
        client: &ClientInfo,
    ) -> Result<()> {
        let (_, me) = self.member_of(who.user_id, org).await?;
        let leaving = target == who.user_id;
        if !leaving {
            if !me.manages() {
                return Err(Error::Forbidden);
            }
            let theirs = self
                .core
                .store
                .membership(org, target)
                .await?
                .ok_or(Error::NotFound)?;
            if theirs.is_owner() && !me.is_owner() {
                return Err(Error::Forbidden);
            }
        }
        let now = self.core.clock.now_ms();
        match self.core.store.remove_member(org, target, now).await? {
            MembershipChange::Done => {}
            MembershipChange::LastOwner => return Err(Error::Conflict(Conflict::LastOwner)),
            MembershipChange::Stale => return Err(Error::NotFound),
        }
        self.core.directory.forget(target);
        let what = if leaving {
            OrgEvent::Left
        } else {
            OrgEvent::MemberRemoved
        };
        self.audit(who, org, what, Some(target), client).await;
        Ok(())
    }
}
