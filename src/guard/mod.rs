//! Who holds an access token, as the services Gatehouse guards are told (docs/api.md §6): the
//! forward-auth endpoints ask `identify`, introspection asks `introspect`. Both answer from memory
//! (verified tokens, revocations, the directory of accounts), so a proxy asking on every request
//! costs no database round trip, and both see a revocation or a role change within the §2 delay.
//! A personal API key (§12) is judged as the bearer calls judge it (`api_keys::live`).
//! A client's token for itself (§12) holds only while its client is registered with the
//! `client_credentials` grant, as the registry has it (read again within `CLIENT_CACHE_MS`).
//!
//! It stands above `auth` (tokens, sessions, API keys) and `provider` (the client registry): it is
//! where the holders of every kind of token meet. `authz` holds the access rules; forward-auth's
//! decision, rules and holder together, is `forward_auth`.

mod forward_auth;

pub use forward_auth::{Credential, Decision};

use crate::auth::Core;
use std::sync::Arc;

use uuid::Uuid;

use crate::auth::BrowserSessions;
use crate::auth::directory::Profile;
use crate::auth::tokens::AccessClaims;
use crate::error::{Error, Result};
use crate::model::orgs::ActiveOrg;
use crate::model::{
    ApiScopes, ClientIdentity, ClientInfo, ClientType, GrantType, Holder, Identity, KeyIdentity,
    is_multi_factor,
};
use crate::provider::Clients;

/// The holder's membership of `org` now, as the token's active organisation, if the token's
/// sign-in meets the organisation's `require_two_factor` now.
fn active_in(profile: &Profile, org: Uuid, multi_factor: bool) -> Option<ActiveOrg> {
    let membership = profile.membership(org).filter(|m| m.admits(multi_factor));
    membership.map(|m| ActiveOrg {
        id: org,
        roles: m.roles.clone(),
    })
}

/// What a live token is, as RFC 7662 answers it: an access token's claims and its holder as it
/// is now, or a personal API key (docs/api.md §12) and its owner as they are now.
#[derive(Debug)]
pub enum Introspection {
    Token {
        // Boxed: the claims are most of the size, and a key's answer has none.
        claims: Box<AccessClaims>,
        holder: Holder,
    },
    Key(KeyIdentity),
}

/// Who holds an access token, for the services Gatehouse guards (forward-auth, introspection).
#[derive(Clone)]
pub struct Guard {
    pub(crate) core: Arc<Core>,
    /// The registry, for a client's token for itself.
    pub(crate) clients: Clients,
    /// Browser sessions, for a session cookie (docs/api.md §6b).
    pub(crate) browser: BrowserSessions,
}

impl Guard {
    /// The holder of a live access token; `TokenExpired` / `TokenInvalid` as for a bearer call,
    /// and `TokenInvalid` for an account that is gone or disabled.
    /// A client's token for itself: `TokenInvalid` once the client is removed or loses the
    /// `client_credentials` grant.
    pub async fn identify(&self, access_token: &str) -> Result<Holder> {
        self.identify_from(access_token, None).await
    }

    /// `identify`, for a request from `client` (forward-auth): a personal API key's use is noted
    /// (`last_used_at`, a first use from an address audited).
    pub async fn identify_from(
        &self,
        access_token: &str,
        client: Option<&ClientInfo>,
    ) -> Result<Holder> {
        if crate::auth::api_keys::is_api_key(access_token) {
            let live = self.core.live_key(access_token).await?;
            if client.is_some() {
                self.core.key_used(&live.key, client).await;
            }
            return Ok(Holder::Key(live.holder));
        }
        let verified = self.core.tokens.verify_access_cached(access_token)?;
        // A token for another resource server (RFC 8707) is that server's to accept; the services
        // behind the proxies take tokens for GATEHOUSE_AUDIENCE.
        if verified.for_resource || self.core.live.is_revoked(verified.sid) {
            return Err(Error::TokenInvalid);
        }
        if verified.client_only {
            let scopes = verified.scopes.clone().unwrap_or_default();
            let mut client = self
                .client_itself(verified.sub, verified.org, scopes)
                .await?
                .ok_or(Error::TokenInvalid)?;
            client.dpop = verified.jkt.as_deref().map(str::to_owned);
            return Ok(Holder::Client(client));
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
            Some(org) => {
                Some(active_in(&profile, org, verified.multi_factor).ok_or(Error::TokenInvalid)?)
            }
        };
        self.core.live.used(verified.sid);
        Ok(Holder::Person(Identity {
            user_id: verified.sub,
            session_id: verified.sid,
            email: profile.email.clone(),
            email_verified: profile.email_verified,
            full_name: profile.full_name.clone(),
            roles: profile.roles.clone(),
            multi_factor: verified.multi_factor,
            org,
            client: verified.client.as_deref().map(str::to_owned),
            scopes: verified.scopes.clone(),
            actor: verified.actor.as_deref().map(str::to_owned),
            dpop: verified.jkt.as_deref().map(str::to_owned),
        }))
    }

    /// The client `id` holding a token for itself, if it may now: a confidential client still
    /// registered with the `client_credentials` grant, bound to the organisation the token names
    /// (or to none, as the token): a client moved to another organisation speaks no more for the
    /// one its earlier tokens name.
    async fn client_itself(
        &self,
        id: Uuid,
        org: Option<Uuid>,
        scopes: ApiScopes,
    ) -> Result<Option<ClientIdentity>> {
        let client = self.clients.find_id(id).await?.filter(|c| {
            c.client_type == ClientType::Confidential
                && c.has_grant(GrantType::ClientCredentials)
                && c.org_id == org
        });
        Ok(client.map(|c| ClientIdentity {
            client_id: c.id,
            org_id: org,
            scopes,
            dpop: None,
        }))
    }

    /// RFC 7662: a live access token's claims and holder, or `None` for anything else (expired,
    /// revoked, a refresh or temp token, garbage), which the answer does not tell apart.
    pub async fn introspect(&self, token: &str) -> Result<Option<Introspection>> {
        if crate::auth::api_keys::is_api_key(token) {
            return match self.core.live_key(token).await {
                Ok(live) => {
                    // A use, though not from the holder's address: the service asking is.
                    self.core.key_used(&live.key, None).await;
                    Ok(Some(Introspection::Key(live.holder)))
                }
                Err(Error::TokenInvalid) => Ok(None),
                Err(other) => Err(other),
            };
        }
        let claims = match self.core.tokens.access_claims_cached(token) {
            Ok(claims) => claims,
            Err(Error::TokenExpired | Error::TokenInvalid) => return Ok(None),
            Err(other) => return Err(other),
        };
        if self.core.live.is_revoked(claims.sid) {
            return Ok(None);
        }
        if claims.client_id.as_deref() == Some(claims.sub.to_string().as_str()) {
            let scopes = ApiScopes::parse(claims.scope.as_deref().unwrap_or_default());
            let client = self
                .client_itself(claims.sub, claims.org_id, scopes)
                .await?;
            return Ok(client.map(|client| Introspection::Token {
                claims: Box::new(claims),
                holder: Holder::Client(client),
            }));
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
            Some(org) => match active_in(&profile, org, is_multi_factor(&claims.amr)) {
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
            client: claims.client_id.clone(),
            scopes: claims.scope.as_deref().map(ApiScopes::parse),
            actor: claims.act.as_ref().map(|a| a.sub.clone()),
            dpop: claims.cnf.as_ref().map(|c| c.jkt.clone()),
        };
        Ok(Some(Introspection::Token {
            claims: Box::new(claims),
            holder: Holder::Person(identity),
        }))
    }
}
