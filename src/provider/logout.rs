//! Ending what clients hold (docs/api.md §11): RFC 7009 revocation, RP-initiated logout
//! (end-session), consents withdrawn, and a client's removal. Each only ends sessions; the clients
//! are told by the back-channel logout worker (`crate::backchannel`), which finds every ended
//! client session by itself, whatever ended it.

use std::sync::Arc;

use uuid::Uuid;

use crate::auth::Core;
use crate::auth::tokens::IdTokenHint;
use crate::error::{Error, Result};
use crate::model::logouts::ConsentInfo;
use crate::model::{Client, EndReason, Principal};

/// Ended client sessions queued per sweep while a client is removed.
const SWEEP: i64 = 500;
/// What an end-session confirmation's tag is for: no other tagged value passes as one.
const CONFIRM: &[u8] = b"end-session-confirmation/v1";

/// Who is signing out at `end-session`: the session of the browser's cookie, if any.
#[derive(Debug, Clone, Copy)]
pub struct BrowserPerson {
    pub user_id: Uuid,
    pub session_id: Uuid,
}

#[derive(Clone)]
pub struct Logouts {
    pub(crate) core: Arc<Core>,
}

impl Logouts {
    /// RFC 7009: a refresh or an access token of `client` ends its session; the client's token
    /// for itself ends alone (it has no session), on every instance within `live::SYNC_INTERVAL`.
    /// Anything else (a token of another client or of the person's own sign-in, an unknown or
    /// malformed one) changes nothing, and the caller answers 200 all the same (§2.2).
    pub async fn revoke(&self, client: &Client, token: &str) -> Result<bool> {
        if let Some((owner, sid, until)) = self.core.tokens.client_token(token) {
            if owner != client.id {
                return Ok(false);
            }
            let now = self.core.clock.now_ms();
            self.core.store.revoke_token(sid, now, until).await?;
            self.core.live.revoked(&[sid], now);
            return Ok(true);
        }
        let Some((user, sid)) = self.core.tokens.session_of(token) else {
            return Ok(false);
        };
        let Some(session) = self.core.store.session(sid).await? else {
            return Ok(false);
        };
        let theirs = session.user_id == user
            && session.grant.as_ref().map(|g| g.client_id) == Some(client.id);
        if !theirs {
            return Ok(false);
        }
        self.core.end_session(user, sid, EndReason::Revoked).await
    }

    /// The `id_token_hint` of an end-session request, if it is an ID token this issuer signed
    /// (expired or not).
    pub fn hint(&self, id_token: &str) -> Option<IdTokenHint> {
        self.core.tokens.id_token_hint(id_token)
    }

    /// The value an end-session confirmation form posts back: a tag of the master key's over the
    /// browser's session, so that no other site can make a browser post a valid one (CSRF).
    pub fn confirmation(&self, person: BrowserPerson) -> String {
        self.core
            .secrets
            .cursor(&[CONFIRM], person.session_id.as_bytes())
    }

    /// Whether `value` is `confirmation` of this browser's session.
    pub fn confirmed(&self, person: BrowserPerson, value: &str) -> bool {
        self.core
            .secrets
            .open_cursor(&[CONFIRM], value)
            .is_ok_and(|key| key == person.session_id.as_bytes())
    }

    /// Ends the person's Gatehouse session and every client session begun from it: the
    /// browser's (when it is the hint's person, or there is no hint: the person confirmed), and
    /// the one the hint's client session was begun from. Returns how many sessions ended.
    pub async fn end_session(
        &self,
        browser: Option<BrowserPerson>,
        hint: Option<&IdTokenHint>,
    ) -> Result<u64> {
        let mut roots: Vec<(Uuid, Uuid)> = Vec::new();
        if let Some(person) = browser {
            if hint.is_none_or(|h| h.sub == person.user_id) {
                roots.push((person.user_id, person.session_id));
            }
        }
        if let Some((hint, sid)) = hint.and_then(|h| h.sid.map(|sid| (h, sid))) {
            let session = self.core.store.session(sid).await?;
            if let Some(session) = session.filter(|s| s.user_id == hint.sub) {
                // The client session goes with its parent; one without a parent alone.
                let root = session.grant.as_ref().and_then(|g| g.parent_id);
                roots.push((hint.sub, root.unwrap_or(sid)));
                roots.push((hint.sub, sid));
            }
        }
        roots.sort_unstable();
        roots.dedup();
        let now = self.core.clock.now_ms();
        let mut ended = Vec::new();
        for (user, root) in roots {
            let reason = EndReason::Logout.as_str();
            ended.extend(
                self.core
                    .store
                    .revoke_session_tree(user, root, reason, now)
                    .await?,
            );
        }
        self.core.ended(&ended, now, EndReason::Logout);
        Ok(ended.len() as u64)
    }

    /// The caller's consents to third-party clients.
    pub async fn consents(&self, who: &Principal) -> Result<Vec<ConsentInfo>> {
        self.core.store.consents_of(who.user_id).await
    }

    /// Withdraws the caller's consent to a client and ends every session (and so every token)
    /// the client holds for them. `NotFound` without such a consent.
    pub async fn withdraw(&self, who: &Principal, client: Uuid) -> Result<Uuid> {
        let now = self.core.clock.now_ms();
        let reason = EndReason::ConsentWithdrawn;
        let ended = self
            .core
            .store
            .withdraw_consent(who.user_id, client, reason.as_str(), now)
            .await?
            .ok_or(Error::NotFound)?;
        self.core.ended(&ended, now, reason);
        Ok(client)
    }

    /// Before a client is removed: ends every session it holds, and queues their back-channel
    /// logouts now, while the client's URI can still be read (the notices then go out after it
    /// is gone).
    pub async fn end_client(&self, client: Uuid) -> Result<u64> {
        let now = self.core.clock.now_ms();
        let reason = EndReason::ClientRemoved;
        let ended: Vec<Uuid> = self
            .core
            .store
            .revoke_client_sessions(client, None, reason.as_str(), now)
            .await?
            .into_iter()
            .map(|(session, _)| session)
            .collect();
        self.core.ended(&ended, now, reason);
        while self.core.store.sweep_logouts(now, SWEEP).await? > 0 {}
        Ok(ended.len() as u64)
    }
}
