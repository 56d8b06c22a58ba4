//! Organisations (docs/api.md §13): a business API's customers, with members in roles, mailed
//! invitations, and the active organisation a session's tokens name. `Orgs` is the flow; the
//! members (`members`), invitations (`invitations`) and the active organisation (`active`) are
//! its parts. Someone who is not a member is told nothing about an organisation (404); a member
//! whose roles do not allow a call is `FORBIDDEN`, checked before any rule about the state
//! (the last owner).
//!
//! It stands on `auth` and on `provider` (deleting an organisation ends its clients' sessions);
//! only `flows`, `http`, the administration and the CLI call it. SCIM provisioning belongs here.

use std::sync::Arc;

use uuid::Uuid;

use crate::auth::audit::{Actor, AuditEvent, OrgEvent, Subject};
use crate::auth::{Core, Invitations};
use crate::error::{Conflict, Error, Result, Validator};
use crate::model::orgs::{Membership, Org};
use crate::model::{ClientInfo, Principal};

mod active;
mod invitations;
mod members;
mod names;

pub use invitations::InvitationInput;
pub use members::MemberPage;
pub use names::{Slug, membership_roles, org_name};

/// A change of an organisation's fields; what is `None` stays.
#[derive(Debug, Default)]
pub struct OrgPatch {
    pub name: Option<String>,
    pub slug: Option<String>,
    pub require_two_factor: Option<bool>,
}

#[derive(Clone)]
pub struct Orgs {
    pub(crate) core: Arc<Core>,
    /// An invitation link that is no organisation's is an operator's (docs/api.md §7).
    pub(crate) invitations: Invitations,
}

impl Orgs {
    /// `POST /orgs`: a new organisation, the caller its owner.
    pub async fn create(
        &self,
        who: &Principal,
        name: &str,
        slug: &str,
        client: &ClientInfo,
    ) -> Result<Org> {
        let mut v = Validator::new();
        let name = v.check("name", org_name(name));
        let slug = v.check("slug", Slug::parse(slug));
        let (name, slug) = v.finish(name.zip(slug))?;
        let org = Org {
            id: Uuid::now_v7(),
            name,
            slug: slug.into_inner(),
            require_two_factor: false,
            created_at: self.core.clock.now_ms(),
        };
        if !self.core.store.insert_org(&org, who.user_id).await? {
            return Err(Error::Conflict(Conflict::SlugTaken));
        }
        self.core.directory.forget(who.user_id);
        self.audit(who, org.id, OrgEvent::Created, None, client)
            .await;
        Ok(org)
    }

    /// `GET /orgs`: the caller's organisations with their roles.
    pub async fn mine(&self, who: &Principal) -> Result<Vec<(Org, Vec<String>)>> {
        self.core.store.orgs_of(who.user_id).await
    }

    /// `GET /orgs/{id}`: an organisation the caller belongs to, with their roles.
    pub async fn get(&self, who: &Principal, id: Uuid) -> Result<(Org, Membership)> {
        self.member_of(who.user_id, id).await
    }

    /// `PATCH /orgs/{id}` (owner or admin).
    pub async fn update(
        &self,
        who: &Principal,
        id: Uuid,
        patch: OrgPatch,
        client: &ClientInfo,
    ) -> Result<Org> {
        let (mut org, me) = self.member_of(who.user_id, id).await?;
        if !me.manages() {
            return Err(Error::Forbidden);
        }
        let mut v = Validator::new();
        let name = patch.name.map(|n| v.check("name", org_name(&n)));
        let slug = patch.slug.map(|s| v.check("slug", Slug::parse(&s)));
        v.finish(Some(()))?;
        if let Some(Some(name)) = name {
            org.name = name;
        }
        if let Some(Some(slug)) = slug {
            org.slug = slug.into_inner();
        }
        if let Some(required) = patch.require_two_factor {
            org.require_two_factor = required;
        }
        if !self
            .core
            .store
            .update_org(&org, self.core.clock.now_ms())
            .await?
        {
            return Err(Error::Conflict(Conflict::SlugTaken));
        }
        self.audit(who, id, OrgEvent::Updated, None, client).await;
        Ok(org)
    }

    /// `DELETE /orgs/{id}` (owner): ends every membership; tokens naming it are refused.
    pub async fn delete(&self, who: &Principal, id: Uuid, client: &ClientInfo) -> Result<()> {
        let (_, me) = self.member_of(who.user_id, id).await?;
        if !me.is_owner() {
            return Err(Error::Forbidden);
        }
        self.remove(id).await?;
        let event = OrgEvent::Deleted { by: Actor::Owner };
        self.audit(who, id, event, None, client).await;
        Ok(())
    }

    /// Deletes an organisation and makes its former members' directory entries forgotten here at
    /// once (elsewhere by polling). `NOT_FOUND` if it is gone already. The clients bound to it go
    /// with it (the database deletes them), their sessions ended first with their back-channel
    /// logouts queued, as removing a client does.
    pub(crate) async fn remove(&self, id: Uuid) -> Result<()> {
        let logouts = crate::provider::logout::Logouts {
            core: self.core.clone(),
        };
        for client in self.core.store.clients_of_org(id).await? {
            logouts.end_client(client).await?;
        }
        let now = self.core.clock.now_ms();
        let members = self
            .core
            .store
            .delete_org(id, now)
            .await?
            .ok_or(Error::NotFound)?;
        for member in members {
            self.core.directory.forget(member);
        }
        Ok(())
    }

    /// The organisation and the person's membership of it, read from the database (a decision
    /// about the organisation is made on its current state); `NOT_FOUND` for a non-member.
    pub(super) async fn member_of(&self, user: Uuid, org: Uuid) -> Result<(Org, Membership)> {
        let membership = self
            .core
            .store
            .membership(org, user)
            .await?
            .ok_or(Error::NotFound)?;
        let org = self.core.store.org(org).await?.ok_or(Error::NotFound)?;
        Ok((org, membership))
    }

    /// Records what the caller did in the organisation; `subject`: the member it concerned, when
    /// not the caller (who is then the event's `actor_id`).
    async fn audit(
        &self,
        who: &Principal,
        org: Uuid,
        what: OrgEvent,
        subject: Option<Uuid>,
        client: &ClientInfo,
    ) {
        let event = AuditEvent::Org { org, what };
        let (actor, user) = match subject {
            Some(subject) if subject != who.user_id => (Some(who.user_id), subject),
            _ => (None, who.user_id),
        };
        let subject = Subject::user(user).in_session(who.session_id).from(client);
        let subject = match actor {
            Some(actor) => subject.by(actor),
            None => subject,
        };
        self.core.audit(event, subject).await;
    }
}
