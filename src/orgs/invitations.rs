//! Invitations to an organisation (docs/api.md §13): mailed (§7's outbox; they live
//! `GATEHOUSE_INVITE_TOKEN_TTL`, 7 days unless set, as every invitation link does), listed and
//! withdrawn by owners and admins, accepted by the signed-in addressee, or, for an address without
//! an account, by making the account (`POST /auth/invitations/accept`). A refused accept leaves the
//! invitation usable.

use secrecy::{ExposeSecret, SecretString};
use uuid::Uuid;

use super::{Orgs, membership_roles};
use crate::auth::AMR_PASSWORD;
use crate::auth::audit::{AuditEvent, OrgEvent, Subject};
use crate::auth::notices::{link_token_hash, new_link_token};
use crate::auth::password::check_policy;
use crate::domain::{Email, FullName};
use crate::error::{Error, Result, Validator};
use crate::mail::Letter;
use crate::model::orgs::{OWNER, Org, OrgInvitation};
use crate::model::{ClientInfo, Principal, TokenSet};
use crate::store::org_invitations::NewOrgInvitation;
use crate::store::users::NewUser;

#[derive(Debug)]
pub struct InvitationInput {
    pub email: String,
    pub roles: Vec<String>,
}

impl Orgs {
    /// `POST /orgs/{id}/invitations` (owner or admin; `owner` only by an owner).
    pub async fn invite(
        &self,
        who: &Principal,
        org: Uuid,
        input: InvitationInput,
        client: &ClientInfo,
    ) -> Result<OrgInvitation> {
        let (org, me) = self.member_of(who.user_id, org).await?;
        if !me.manages() {
            return Err(Error::Forbidden);
        }
        let mut v = Validator::new();
        let email = v.check("email", Email::parse(&input.email));
        let roles = v.check("roles", membership_roles(&input.roles));
        let (email, roles) = v.finish(email.zip(roles))?;
        if roles.iter().any(|r| r == OWNER) && !me.is_owner() {
            return Err(Error::Forbidden);
        }
        let now = self.core.clock.now_ms();
        let invitation = OrgInvitation {
            id: Uuid::now_v7(),
            org_id: org.id,
            email: email.as_str().to_owned(),
            email_normalized: email.normalized(),
            roles,
            created_at: now,
            expires_at: now + self.core.settings.links.invite_ttl.as_millis() as i64,
        };
        let (token, hash) = new_link_token();
        let letter = Letter::OrgInvitation {
            token: &token,
            org: &org.name,
        };
        let mail = self
            .core
            .mailer
            .compose(email.as_str(), email.as_str(), letter, now)?;
        let new = NewOrgInvitation {
            invitation: &invitation,
            token_hash: hash,
            invited_by: who.user_id,
        };
        self.core.store.insert_org_invitation(&new, &mail).await?;
        self.core.mailer.queued(&[&mail]);
        let what = OrgEvent::Invited {
            invitation: invitation.id,
        };
        self.audit(who, org.id, what, None, client).await;
        Ok(invitation)
    }

    /// `GET /orgs/{id}/invitations` (owner or admin): the pending ones.
    pub async fn invitations(&self, who: &Principal, org: Uuid) -> Result<Vec<OrgInvitation>> {
        let (_, me) = self.member_of(who.user_id, org).await?;
        if !me.manages() {
            return Err(Error::Forbidden);
        }
        let now = self.core.clock.now_ms();
        self.core.store.org_invitations(org, now).await
    }

    /// `DELETE /orgs/{id}/invitations/{invitationId}` (owner or admin): its link is void.
    pub async fn withdraw(
        &self,
        who: &Principal,
        org: Uuid,
        invitation: Uuid,
        client: &ClientInfo,
    ) -> Result<()> {
        let (_, me) = self.member_of(who.user_id, org).await?;
        if !me.manages() {
            return Err(Error::Forbidden);
        }
        if !self
            .core
            .store
            .delete_org_invitation(org, invitation)
            .await?
        {
            return Err(Error::NotFound);
        }
        let what = OrgEvent::InvitationDeleted { invitation };
        self.audit(who, org, what, None, client).await;
        Ok(())
    }

    /// `POST /orgs/invitations/accept`: the signed-in person joins, if the invitation is addressed
    /// to their address (else `FORBIDDEN`, and the invitation stays usable).
    pub async fn accept(&self, who: &Principal, token: &str, client: &ClientInfo) -> Result<Org> {
        let hash = link_token_hash(token)?;
        let now = self.core.clock.now_ms();
        let invitation = self
            .core
            .store
            .org_invitation_by_token(&hash, now)
            .await?
            .ok_or(Error::LinkInvalid)?;
        let user = self.core.user(who).await?;
        if invitation.email_normalized != user.email_normalized {
            return Err(Error::Forbidden);
        }
        let joined = self
            .core
            .store
            .accept_org_invitation(&hash, user.id, &user.email_normalized, now)
            .await?
            .ok_or(Error::LinkInvalid)?;
        self.core.directory.forget(user.id);
        let org = self
            .core
            .store
            .org(joined.org_id)
            .await?
            .ok_or(Error::LinkInvalid)?;
        let what = OrgEvent::Joined { new_account: false };
        self.audit(who, org.id, what, None, client).await;
        Ok(org)
    }

    /// `POST /auth/invitations/accept`, whichever invitation the link is: an organisation's to an
    /// address without an account (`accept_new_account`), or else an operator's (§7, which sets
    /// the password of the account made for it). The two kinds are kept apart, so a token finds
    /// at most one.
    pub async fn accept_invitation_link(
        &self,
        token: &str,
        password: SecretString,
        full_name: Option<&str>,
        client: &ClientInfo,
    ) -> Result<TokenSet> {
        if let Some(tokens) = self
            .accept_new_account(token, password.clone(), full_name, client)
            .await?
        {
            return Ok(tokens);
        }
        self.invitations
            .accept_invitation(token, password, client)
            .await
    }

    /// `POST /auth/invitations/accept` with an organisation's invitation: makes the account for its
    /// address and the membership, and opens a session. `None`: the token is no organisation's
    /// invitation (it may be §7's). `EMAIL_TAKEN`: the address has an account, which accepts
    /// signed in instead.
    pub(crate) async fn accept_new_account(
        &self,
        token: &str,
        password: SecretString,
        full_name: Option<&str>,
        client: &ClientInfo,
    ) -> Result<Option<TokenSet>> {
        let hash = link_token_hash(token)?;
        let now = self.core.clock.now_ms();
        let Some(invitation) = self.core.store.org_invitation_by_token(&hash, now).await? else {
            return Ok(None);
        };
        let name = full_name
            .filter(|n| !n.trim().is_empty())
            .unwrap_or_else(|| invitation.email.split('@').next().unwrap_or_default());
        let name = FullName::parse(name).map_err(|reason| Error::field("fullName", reason))?;
        check_policy(password.expose_secret())?;
        let password_hash = self.core.hasher.hash(password).await?;
        let id = Uuid::now_v7();
        let new = NewUser {
            id,
            email: &invitation.email,
            email_normalized: &invitation.email_normalized,
            full_name: name.as_str(),
            password_hash: &password_hash,
            created_at: now,
        };
        let joined = self
            .core
            .store
            .accept_org_invitation_new_account(&hash, &new, now)
            .await?
            .ok_or(Error::LinkInvalid)?;
        let user = self
            .core
            .store
            .user_by_id(id)
            .await?
            .ok_or(Error::LinkInvalid)?;
        let tokens = self
            .core
            .open_session(&user, vec![AMR_PASSWORD.into()], client)
            .await?
            .ok_or(Error::LinkInvalid)?;
        let event = AuditEvent::Org {
            org: joined.org_id,
            what: OrgEvent::Joined { new_account: true },
        };
        self.core
            .audit(
                event,
                Subject::user(user.id)
                    .in_session(tokens.session_id)
                    .from(client),
            )
            .await;
        Ok(Some(tokens))
    }
}
