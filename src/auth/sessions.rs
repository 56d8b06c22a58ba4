//! Sessions once open: bearer calls, refresh-token rotation (with the grace window for racing
//! clients and reuse detection), the session list, logout and ending one session.

use super::core::Core;
use std::sync::Arc;

use uuid::Uuid;

use super::audit::{AuditEvent, Subject};
use super::tokens::RefreshClaims;
use crate::error::{Error, Result};
use crate::metrics::RefreshOutcome;
use crate::model::{
    ClientInfo, EndReason, LogoutScope, Principal, RefreshRecord, Session, SessionInfo, TokenSet,
    User,
};

/// A session whose refresh token was rotated: its next refresh record, and its account as now.
pub(crate) struct Renewed {
    pub session: Session,
    pub user: User,
    pub refresh: RefreshRecord,
}

/// Why a refresh gave no tokens: a replayed token (its session ended), or any other error.
enum Refused {
    ReuseDetected,
    Error(Error),
}

impl From<Error> for Refused {
    fn from(error: Error) -> Self {
        Refused::Error(error)
    }
}

/// The sessions of an account: access tokens checked, refresh tokens rotated, sessions listed and ended.
#[derive(Clone)]
pub struct Sessions {
    pub(crate) core: Arc<Core>,
}

impl Sessions {
    /// The caller of a bearer call: a valid access token whose session is not revoked, and, for a
    /// token naming an active organisation, whose holder is still its member. No database round
    /// trip: revocations and memberships are known in memory (`LiveSessions`, `Directory`); a
    /// token without an organisation does not even look the account up.
    pub async fn authenticate(&self, access_token: &str) -> Result<Principal> {
        if super::api_keys::is_api_key(access_token) {
            // Verified, so that a bad key is a 401 as a bad token is; its use is noted only by
            // the calls that accept it (`ApiKeys::authenticate`).
            return Ok(self.core.live_key(access_token).await?.principal());
        }
        let claims = self.core.tokens.verify_access_cached(access_token)?;
        // A client's token for itself names no person: it is for introspection and the services
        // that accept it, not for a person's calls.
        if claims.client_only || self.core.live.is_revoked(claims.sid) {
            return Err(Error::TokenInvalid);
        }
        let org = match claims.org {
            None => None,
            Some(org) => Some(
                (self.core)
                    .active_org(claims.sub, org, claims.multi_factor)
                    .await?,
            ),
        };
        self.core.live.used(claims.sid);
        Ok(Principal {
            user_id: claims.sub,
            session_id: claims.sid,
            api_key: None,
            multi_factor: claims.multi_factor,
            org,
            scopes: claims.scopes,
            dpop_jkt: claims.jkt,
        })
    }

    /// A DPoP proof (RFC 9449) for `request`, checked and its `jti` taken for good (`auth::dpop`).
    pub async fn dpop_proof(
        &self,
        proof: &str,
        request: &super::dpop::Request<'_>,
    ) -> Result<std::result::Result<super::dpop::Proof, super::dpop::BadProof>> {
        self.core.dpop_proof(proof, request).await
    }

    /// The DPoP key an access token is bound to (its `cnf.jkt`): `Some(None)` for a bearer
    /// token, `None` for a token that does not verify (the caller's own check refuses it).
    pub fn bound_key(&self, access_token: &str) -> Option<Option<std::sync::Arc<str>>> {
        (self.core.tokens.verify_access_cached(access_token).ok()).map(|v| v.jkt)
    }

    /// The caller of one of the person's own calls (the account, organisations, administration,
    /// the authorization call): `authenticate`, and a token a client was given is refused. Such a
    /// token is the person's consent to the scopes it names, for the business API; none of them
    /// reaches the account (a client must not list or end sessions, change mail or give itself
    /// consents).
    pub async fn authenticate_person(&self, access_token: &str) -> Result<Principal> {
        let who = self.authenticate(access_token).await?;
        // An API key has scopes too: it reaches the business API, never the account.
        if who.scopes.is_some() || who.api_key.is_some() {
            return Err(Error::ClientToken);
        }
        Ok(who)
    }

    /// Rotates a refresh token: the presented one is used up, a new one is returned.
    pub async fn refresh(&self, token: &str, client: &ClientInfo) -> Result<TokenSet> {
        let renewed = self.renew(token, client, None).await?;
        let org = self.core.kept_org(&renewed.session).await?;
        self.core.token_set(
            &renewed.user,
            &renewed.session.amr,
            org.as_ref(),
            &renewed.refresh,
        )
    }

    /// The rotation of §2 for the person's own sessions (`for_client: None`) and for a client's
    /// (docs/api.md §11: its refresh token works for that client only). Each refresh is counted
    /// once, by its outcome: a detected reuse is not also an invalid token.
    pub(crate) async fn renew(
        &self,
        token: &str,
        client: &ClientInfo,
        for_client: Option<Uuid>,
    ) -> Result<Renewed> {
        let result = self.rotate(token, client, for_client).await;
        let outcome = match &result {
            Ok((_, outcome)) => Some(*outcome),
            Err(Refused::ReuseDetected) => Some(RefreshOutcome::ReuseDetected),
            Err(Refused::Error(Error::RefreshTokenInvalid)) => Some(RefreshOutcome::Invalid),
            Err(Refused::Error(_)) => None,
        };
        if let Some(outcome) = outcome {
            self.core.metrics.refresh(outcome);
        }
        match result {
            Ok((renewed, _)) => Ok(renewed),
            Err(Refused::ReuseDetected) => Err(Error::RefreshTokenInvalid),
            Err(Refused::Error(error)) => Err(error),
        }
    }

    async fn rotate(
        &self,
        token: &str,
        client: &ClientInfo,
        for_client: Option<Uuid>,
    ) -> Result<(Renewed, RefreshOutcome), Refused> {
        let claims = self.core.tokens.verify_refresh(token)?;
        // Before anything is used up: a client's token at `/auth/refresh` (it would come back as
        // the person's own, unlimited by scope) or at another client is no token at all.
        if claims.client_id != for_client {
            return Err(Error::RefreshTokenInvalid.into());
        }
        let now = self.core.clock.now_ms();
        let next = RefreshRecord {
            jti: Uuid::new_v4(),
            session_id: claims.sid,
            issued_at: now,
            expires_at: now + self.core.settings.refresh_ttl.as_millis() as i64,
            consumed_at: None,
        };
        let (session, refresh, outcome) =
            match self.core.store.rotate_refresh(claims.jti, &next).await? {
                Some(session) => (session, next, RefreshOutcome::Rotated),
                None => {
                    let (session, current) = self.already_rotated(&claims, now, client).await?;
                    (session, current, RefreshOutcome::GraceReuse)
                }
            };
        if session.id != claims.sid
            || session.user_id != claims.sub
            || session.grant.as_ref().map(|g| g.client_id) != for_client
        {
            return Err(Error::RefreshTokenInvalid.into());
        }
        let user = self
            .core
            .store
            .user_by_id(session.user_id)
            .await?
            .ok_or(Error::RefreshTokenInvalid)?;
        if user.disabled {
            return Err(Error::RefreshTokenInvalid.into());
        }
        // Every way in: a session opened before the requirement was turned on (or before the
        // address was changed back to an unverified one) is not renewed either.
        self.core.require_verified(&user)?;
        Ok((
            Renewed {
                session,
                user,
                refresh,
            },
            outcome,
        ))
    }

    /// A refresh token that could not be rotated. If it was consumed within the grace window (a
    /// racing tab), its session's current token is the answer; if earlier, it was stolen or
    /// replayed, and the session ends. Anything else (expired, session revoked) is invalid.
    async fn already_rotated(
        &self,
        claims: &RefreshClaims,
        now: i64,
        client: &ClientInfo,
    ) -> Result<(Session, RefreshRecord), Refused> {
        let session = self
            .core
            .store
            .session(claims.sid)
            .await?
            .filter(|s| s.revoked_at.is_none() && s.user_id == claims.sub)
            .ok_or(Error::RefreshTokenInvalid)?;
        // A correctly signed token of a live session whose record is gone was consumed long ago:
        // housekeeping keeps consumed records only for the grace window and a margin.
        let consumed_at = match self.core.store.refresh_token(claims.jti).await? {
            Some(presented) if presented.session_id != session.id => {
                return Err(Error::RefreshTokenInvalid.into());
            }
            Some(presented) => Some(presented.consumed_at.ok_or(Error::RefreshTokenInvalid)?),
            None => None,
        };
        let grace = self.core.settings.reuse_grace.as_millis() as i64;
        if consumed_at.is_some_and(|at| now - at <= grace) {
            if let Some(current) = self.core.store.current_refresh_token(session.id).await? {
                return Ok((session, current));
            }
        }
        self.core
            .end_session(session.user_id, session.id, EndReason::RefreshReuse)
            .await?;
        self.core
            .audit(
                AuditEvent::RefreshReuseDetected,
                Subject::user(session.user_id)
                    .in_session(session.id)
                    .from(client),
            )
            .await;
        tracing::warn!(session = %session.id, user = %session.user_id, "refresh token reuse: session revoked");
        Err(Refused::ReuseDetected)
    }

    pub async fn logout(
        &self,
        who: &Principal,
        scope: LogoutScope,
        client: &ClientInfo,
    ) -> Result<u64> {
        let (user, session) = (who.user_id, who.session_id);
        let ended = match scope {
            LogoutScope::Current => u64::from(
                self.core
                    .end_session(user, session, EndReason::Logout)
                    .await?,
            ),
            LogoutScope::Others => {
                self.core
                    .end_sessions(user, Some(session), EndReason::Logout)
                    .await?
            }
            LogoutScope::All => {
                self.core
                    .end_sessions(user, None, EndReason::Logout)
                    .await?
            }
        };
        let event = AuditEvent::Logout {
            scope,
            sessions: ended,
        };
        self.core
            .audit(event, Subject::user(user).in_session(session).from(client))
            .await;
        Ok(ended)
    }

    /// The caller's live sessions, the most recently used first.
    pub async fn list(&self, who: &Principal) -> Result<Vec<SessionInfo>> {
        self.sessions_of(who.user_id, Some(who.session_id)).await
    }

    /// An account's live sessions, the most recently used first; `current` is the caller's.
    pub(crate) async fn sessions_of(
        &self,
        user_id: Uuid,
        current: Option<Uuid>,
    ) -> Result<Vec<SessionInfo>> {
        let now = self.core.clock.now_ms();
        let active = self.core.store.active_sessions(user_id, now).await?;
        // The clients' names (docs/api.md §11: a client's session is listed with it), each read
        // once; a client removed meanwhile has ended its sessions and is left out with them.
        let mut names: std::collections::HashMap<Uuid, Option<String>> = Default::default();
        let mut clients: Vec<Uuid> = active
            .iter()
            .filter_map(|s| s.grant.as_ref().map(|g| g.client_id))
            .collect();
        clients.sort_unstable();
        clients.dedup();
        for id in clients {
            let name = self.core.store.client(id).await?.map(|c| c.name);
            names.insert(id, name);
        }
        let mut sessions: Vec<SessionInfo> = active
            .into_iter()
            .filter(|s| {
                s.grant
                    .as_ref()
                    .is_none_or(|g| names.get(&g.client_id).is_some_and(Option::is_some))
            })
            .map(|s| SessionInfo {
                client: s.grant.as_ref().and_then(|g| {
                    let name = names.get(&g.client_id).cloned().flatten()?;
                    Some((g.client_id, name))
                }),
                // This instance may have seen a use that is not written yet.
                last_used_at: self
                    .core
                    .live
                    .unwritten_use(s.id)
                    .map_or(s.last_used_at, |at| at.max(s.last_used_at)),
                current: Some(s.id) == current,
                amr: s.amr,
                created_at: s.created_at,
                ip: s.ip,
                user_agent: s.user_agent,
                id: s.id,
            })
            .collect();
        sessions.sort_by(|a, b| b.last_used_at.cmp(&a.last_used_at).then(b.id.cmp(&a.id)));
        Ok(sessions)
    }

    /// Ends one of the caller's sessions (possibly the current one). Another user's session, or
    /// one that has ended already, is not found.
    pub async fn delete_session(
        &self,
        who: &Principal,
        session: Uuid,
        client: &ClientInfo,
    ) -> Result<()> {
        if !self
            .core
            .end_session(who.user_id, session, EndReason::Deleted)
            .await?
        {
            return Err(Error::NotFound);
        }
        let event = AuditEvent::SessionRevoked {
            by_session: who.session_id,
        };
        self.core
            .audit(
                event,
                Subject::user(who.user_id).in_session(session).from(client),
            )
            .await;
        Ok(())
    }
}
