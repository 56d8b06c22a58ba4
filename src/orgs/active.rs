//! The active organisation of a session (docs/api.md §13): chosen with `POST /auth/org`, kept by
//! refresh while the person is a member, and checked live on every use of a token naming it.

use uuid::Uuid;

use super::Orgs;
use crate::auth::Core;
use crate::auth::audit::{AuditEvent, OrgEvent, Subject};
use crate::error::{Error, Result};
use crate::model::orgs::{ActiveOrg, Membership};
use crate::model::{ClientInfo, Principal, RefreshRecord, Session, TokenSet};

impl Core {
    /// The holder's membership of the organisation a token names, from the directory every
    /// instance keeps current within `live::SYNC_INTERVAL`: a token naming an organisation its
    /// holder has left (or one that is gone) is `TOKEN_INVALID`.
    pub(crate) async fn active_org(
        &self,
        user: Uuid,
        org: Uuid,
        multi_factor: bool,
    ) -> Result<ActiveOrg> {
        let profile = self
            .directory
            .profile(user)
            .await?
            .ok_or(Error::TokenInvalid)?;
        let membership = profile
            .membership(org)
            .filter(|m| m.admits(multi_factor))
            .ok_or(Error::TokenInvalid)?;
        Ok(ActiveOrg {
            id: org,
            roles: membership.roles.clone(),
        })
    }

    /// The active organisation a refresh keeps: the session's, while the person is its member
    /// and the session meets its `require_two_factor`. Once not, the session forgets it and the
    /// tokens name none.
    pub(crate) async fn kept_org(&self, session: &Session) -> Result<Option<Membership>> {
        let Some(org) = session.org_id else {
            return Ok(None);
        };
        let multi_factor = crate::model::is_multi_factor(&session.amr);
        let membership =
            (self.store.membership(org, session.user_id).await?).filter(|m| m.admits(multi_factor));
        if membership.is_none() {
            self.store.clear_session_org(session.id, org).await?;
        }
        Ok(membership)
    }
}

impl Orgs {
    /// `POST /auth/org`: makes `org` (or none) the session's active organisation, and answers a
    /// token set for the same session, its refresh token rotated as a refresh would.
    pub async fn switch(
        &self,
        who: &Principal,
        org: Option<Uuid>,
        client: &ClientInfo,
    ) -> Result<TokenSet> {
        let user = self.core.user(who).await?;
        if user.disabled {
            return Err(Error::TokenInvalid);
        }
        let membership = match org {
            None => None,
            Some(org) => {
                let (found, membership) = self.member_of(who.user_id, org).await?;
                if found.require_two_factor && !who.multi_factor {
                    return Err(Error::TwoFactorRequired);
                }
                Some(membership)
            }
        };
        let now = self.core.clock.now_ms();
        let next = RefreshRecord {
            jti: Uuid::new_v4(),
            session_id: who.session_id,
            issued_at: now,
            expires_at: now + self.core.settings.refresh_ttl.as_millis() as i64,
            consumed_at: None,
        };
        let session = self
            .core
            .store
            .switch_session_org(who.session_id, org, &next)
            .await?
            .ok_or(Error::TokenInvalid)?;
        let tokens = self
            .core
            .token_set(&user, &session.amr, membership.as_ref(), &next)?;
        if let Some(org) = org {
            let event = AuditEvent::Org {
                org,
                what: OrgEvent::Switched,
            };
            self.core
                .audit(
                    event,
                    Subject::user(user.id).in_session(session.id).from(client),
                )
                .await;
        }
        Ok(tokens)
    }
}
