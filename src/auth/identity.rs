//! Who holds an access token, as the services Gatehouse guards are told (docs/api.md §6): the
//! forward-auth endpoints ask `identify`, introspection asks `introspect`. Both answer from memory
//! (verified tokens, revocations, the directory of accounts), so a proxy asking on every request
//! costs no database round trip, and both see a revocation or a role change within the §2 delay.

use crate::auth::Core;
use std::sync::Arc;

use uuid::Uuid;

use super::directory::Profile;
use super::tokens::AccessClaims;
use crate::error::{Error, Result};
use crate::model::orgs::ActiveOrg;
use crate::model::{Identity, is_multi_factor};

/// The holder's membership of `org` now, as the token's active organisation.
fn active_in(profile: &Profile, org: Uuid) -> Option<ActiveOrg> {
    profile.membership(org).map(|m| ActiveOrg {
        id: org,
        roles: m.roles.clone(),
    })
}

/// A live access token's claims with the account as it is now (RFC 7662's answer).
#[derive(Debug)]
pub struct Introspection {
    pub claims: AccessClaims,
    pub identity: Identity,
}

/// Who holds an access token, for the services Gatehouse guards (forward-auth, introspection).
#[derive(Clone)]
pub struct Guard {
    pub(super) core: Arc<Core>,
}

impl Guard {
    /// The holder of a live access token; `TokenExpired` / `TokenInvalid` as for a bearer call,
    /// and `TokenInvalid` for an account that is gone or disabled.
    pub async fn identify(&self, access_token: &str) -> Result<Identity> {
        let verified = self.core.tokens.verify_access_cached(access_token)?;
        if self.core.live.is_revoked(verified.sid) {
            return Err(Error::TokenInvalid);
        }
        let profile = self
            .core
            .directory
            .profile(verified.sub)
            .await?
            .filter(|p| !p.disabled)
            .ok_or(Error::TokenInvalid)?;
        let org = match verified.org {
            None => None,
            Some(org) => Some(active_in(&profile, org).ok_or(Error::TokenInvalid)?),
        };
        self.core.live.used(verified.sid);
        Ok(Identity {
            user_id: verified.sub,
            session_id: verified.sid,
            email: profile.email.clone(),
            email_verified: profile.email_verified,
            full_name: profile.full_name.clone(),
            roles: profile.roles.clone(),
            multi_factor: verified.multi_factor,
            org,
        })
    }

    /// RFC 7662: a live access token's claims and holder, or `None` for anything else (expired,
    /// revoked, a refresh or temp token, garbage), which the answer does not tell apart.
    pub async fn introspect(&self, token: &str) -> Result<Option<Introspection>> {
        let claims = match self.core.tokens.access_claims_cached(token) {
            Ok(claims) => claims,
            Err(Error::TokenExpired | Error::TokenInvalid) => return Ok(None),
            Err(other) => return Err(other),
        };
        if self.core.live.is_revoked(claims.sid) {
            return Ok(None);
        }
        let Some(profile) = self
            .core
            .directory
            .profile(claims.sub)
            .await?
            .filter(|p| !p.disabled)
        else {
            return Ok(None);
        };
        // A token naming an organisation its holder has left is no longer active (§13).
        let org = match claims.org_id {
            None => None,
            Some(org) => match active_in(&profile, org) {
                Some(active) => Some(active),
                None => return Ok(None),
            },
        };
        let identity = Identity {
            user_id: claims.sub,
            session_id: claims.sid,
            email: profile.email.clone(),
            email_verified: profile.email_verified,
            full_name: profile.full_name.clone(),
            roles: profile.roles.clone(),
            multi_factor: is_multi_factor(&claims.amr),
            org,
        };
        Ok(Some(Introspection { claims, identity }))
    }
}
