//! Browser sessions (docs/api.md §6b): a cookie bound to a session, for the guarded web
//! applications a person browses to. Its value is 256 random bits, kept only as a SHA-256; it
//! counts while its session does, so whatever ends the session (logout, revocation, a password
//! change, a disabled account) ends the cookie, on every instance within `live::SYNC_INTERVAL`.
//! The value carries a tag of the master key's (`Secrets::tagged_token`): a made-up cookie is
//! refused before any lookup, so forward-auth cannot be made to query the database per request.
//!
//! Forward-auth asks on every request, so a cookie's session is read from the database once and
//! then remembered for at most `REMEMBER_MS`: a revocation made meanwhile is in the instance's
//! deny-list (`LiveSessions`), which keeps revocations at least that long, so a remembered cookie
//! is refused as soon as the revocation is known.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use super::core::Core;
use super::live::{read, write};
use crate::crypto::sha256;
use crate::error::{Error, Result};
use crate::model::{Identity, Principal, is_multi_factor};

/// How long a cookie's session, once read, is remembered (at most the deny-list's horizon).
const REMEMBER_MS: i64 = 30_000;
/// Cookies remembered at most (~100 bytes each); past that the table starts over.
const CAPACITY: usize = 100_000;
/// What a cookie's tag is for: a cursor or another service value never passes as a cookie.
const SCOPE: &[u8] = b"browser-session-cookie/v1";

/// A new cookie: its value (never stored) and how long it may live, in seconds.
#[derive(Debug)]
pub struct IssuedCookie {
    pub value: String,
    pub max_age: i64,
}

#[derive(Clone, Copy)]
struct Remembered {
    session_id: uuid::Uuid,
    user_id: uuid::Uuid,
    multi_factor: bool,
    /// When the session lapses, as last read.
    expires_at: i64,
    /// When this entry must be read again.
    until: i64,
}

/// Session cookies: issued for a live session, and who holds one.
#[derive(Clone)]
pub struct BrowserSessions {
    pub(crate) core: Arc<Core>,
    remembered: Arc<RwLock<HashMap<[u8; 32], Remembered>>>,
}

impl BrowserSessions {
    pub(crate) fn new(core: Arc<Core>) -> Self {
        BrowserSessions {
            core,
            remembered: Arc::default(),
        }
    }

    /// A cookie for the caller's session (`POST /auth/browser-session`), living as long as the
    /// session may: until its refresh token lapses.
    pub async fn issue(&self, who: &Principal) -> Result<IssuedCookie> {
        self.issue_for(who.session_id).await
    }

    /// A cookie for `session` (a sign-in through another provider: docs/api.md §14).
    pub(crate) async fn issue_for(&self, session: uuid::Uuid) -> Result<IssuedCookie> {
        let value = self.core.secrets.tagged_token(SCOPE);
        let now = self.core.clock.now_ms();
        let expires_at = self
            .core
            .store
            .insert_cookie(&sha256(value.as_bytes()), session, now)
            .await?
            // Revoked on another instance a moment ago (not yet known here), or lapsed.
            .ok_or(Error::TokenInvalid)?;
        Ok(IssuedCookie {
            value,
            max_age: (expires_at - now) / 1000,
        })
    }

    /// The holder of a live session's cookie, as `Guard::identify` says of an access token;
    /// `TokenInvalid` for anything else (unknown, ended, lapsed, a disabled or deleted account).
    pub async fn identify(&self, value: &str) -> Result<Identity> {
        if !self.core.secrets.checks_token(SCOPE, value) {
            return Err(Error::TokenInvalid);
        }
        let hash = sha256(value.as_bytes());
        let now = self.core.clock.now_ms();
        let known = read(&self.remembered)
            .get(&hash)
            .copied()
            .filter(|r| now < r.until);
        let session = match known {
            Some(session) => session,
            None => self.read_session(hash, now).await?,
        };
        if now >= session.expires_at || self.core.live.is_revoked(session.session_id) {
            return Err(Error::TokenInvalid);
        }
        let profile = self
            .core
            .directory
            .profile(session.user_id)
            .await?
            .filter(|p| !p.disabled)
            .ok_or(Error::TokenInvalid)?;
        self.core.live.used(session.session_id);
        Ok(Identity {
            user_id: session.user_id,
            session_id: session.session_id,
            email: profile.email.clone(),
            email_verified: profile.email_verified,
            full_name: profile.full_name.clone(),
            roles: profile.roles.clone(),
            multi_factor: session.multi_factor,
            // An active organisation is a token's (§13, `POST /auth/org`); a cookie names the
            // session alone, so forward-auth sends an empty `Remote-Org` for it.
            org: None,
            client: None,
            scopes: None,
            actor: None,
            dpop: None,
        })
    }

    async fn read_session(&self, hash: [u8; 32], now: i64) -> Result<Remembered> {
        let found = self
            .core
            .store
            .cookie_session(&hash)
            .await?
            .filter(|s| s.revoked_at.is_none() && s.expires_at > now)
            .ok_or(Error::TokenInvalid)?;
        let remember = REMEMBER_MS.min(self.core.live.horizon_ms());
        let session = Remembered {
            session_id: found.session_id,
            user_id: found.user_id,
            multi_factor: is_multi_factor(&found.amr),
            expires_at: found.expires_at,
            until: (now + remember).min(found.expires_at),
        };
        let mut remembered = write(&self.remembered);
        if remembered.len() >= CAPACITY {
            remembered.retain(|_, r| now < r.until);
            if remembered.len() >= CAPACITY {
                remembered.clear();
            }
        }
        remembered.insert(hash, session);
        Ok(session)
    }
}
