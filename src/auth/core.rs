//! What every flow shares: the service's parts (store, clock, tokens, hasher, …) and the few steps
//! more than one flow takes (open a session, end sessions, re-check a password, write the audit
//! trail). Each flow (`Login`, `Sessions`, `Recovery`, …) holds it behind an `Arc`; the steps that
//! send mail are in `notices`, those that check a second factor in `second_factor`.

use std::sync::Arc;
use std::time::Duration;

use secrecy::SecretString;
use uuid::Uuid;

use super::audit::Operator;
use super::audit::{AuditEvent, Auditor, Subject};
use super::directory::Directory;
use super::live::LiveSessions;
use super::password::{PasswordHasher, Verdict};
use super::throttle::Throttle;
use super::tokens::Tokens;
use crate::clock::Clock;
use crate::crypto::Secrets;
use crate::error::{Error, Result};
use crate::mail::Mailer;
use crate::metrics::Metrics;
use crate::model::orgs::Membership;
use crate::model::{
    AddressProof, ClientInfo, EndReason, Principal, RefreshRecord, TokenSet, User, UserSummary,
};
use crate::store::Store;
use crate::store::sessions::NewSession;

/// Authentication methods (RFC 8176) recorded in a session's `amr`.
pub(crate) const AMR_PASSWORD: &str = "pwd";
pub(crate) const AMR_OTP: &str = "otp";
/// Signed in through another identity provider (docs/api.md §14): not an RFC 8176 value, which
/// has none for it; `mfa` joins it when the provider's own second factor is trusted.
pub(crate) const AMR_FEDERATED: &str = "fed";

pub struct AuthSettings {
    /// Throttling of login and 2FA attempts (`GATEHOUSE_RATE_LIMIT`).
    pub rate_limit: bool,
    /// Whether anyone may create an account (`GATEHOUSE_REGISTRATION`).
    pub registration_open: bool,
    /// How long audit events are kept.
    pub audit_retention: Duration,
    pub refresh_ttl: Duration,
    pub temp_ttl: Duration,
    pub reuse_grace: Duration,
    /// Mailed links: their lifetimes, and whether logins need a verified address.
    pub links: LinkSettings,
    /// Clients that register themselves (docs/api.md §12).
    pub client_registration: crate::config::ClientRegistration,
    /// Where people reach the service: the base of the redirect URI given to identity providers.
    pub public_url: String,
}

pub struct LinkSettings {
    pub reset_ttl: Duration,
    pub verify_ttl: Duration,
    pub invite_ttl: Duration,
    pub require_verified_email: bool,
}

/// What every flow needs to build the service, from start-up.
pub struct AuthParts {
    pub store: Store,
    pub clock: Clock,
    pub tokens: Tokens,
    pub secrets: Arc<Secrets>,
    pub live: Arc<LiveSessions>,
    pub directory: Arc<Directory>,
    pub metrics: Arc<Metrics>,
    pub hasher: PasswordHasher,
    /// The relying party of passkeys (`services::relying_party`); `None`: passkeys are off.
    pub webauthn: Option<Arc<webauthn_rs::Webauthn>>,
    pub mailer: Arc<Mailer>,
    /// The identity providers of `GATEHOUSE_IDENTITY_PROVIDERS` (docs/api.md §14).
    pub providers: crate::upstream::Providers,
    /// The business APIs and their scopes (docs/guide/resources.md).
    pub catalog: Arc<super::catalog::CatalogCell>,
}

pub struct Core {
    pub(crate) store: Store,
    pub(crate) clock: Clock,
    pub(crate) hasher: PasswordHasher,
    pub(crate) tokens: Tokens,
    pub(crate) secrets: Arc<Secrets>,
    pub(crate) live: Arc<LiveSessions>,
    pub(crate) directory: Arc<Directory>,
    pub(crate) throttle: Throttle,
    pub(crate) metrics: Arc<Metrics>,
    pub(crate) auditor: Auditor,
    pub(crate) settings: AuthSettings,
    /// The relying party of passkeys; `None` when passkeys are off.
    pub(crate) webauthn: Option<Arc<webauthn_rs::Webauthn>>,
    pub(crate) mailer: Arc<Mailer>,
    /// API keys read lately, and their uses noted (docs/api.md §12).
    pub(crate) keys: super::key_cache::LiveKeys,
    /// The identity providers people may sign in with (docs/api.md §14).
    pub(crate) providers: crate::upstream::Providers,
    /// The business APIs and their scopes: the vocabulary every flow checks scopes against.
    pub(crate) catalog: Arc<super::catalog::CatalogCell>,
}

impl Core {
    /// The shared parts, from start-up: `flows::AuthService::new` builds every flow over one.
    pub fn new(parts: AuthParts, settings: AuthSettings) -> Core {
        Core {
            throttle: Throttle::new(
                parts.store.clone(),
                parts.clock.clone(),
                settings.rate_limit,
            ),
            auditor: Auditor::new(parts.store.clone(), parts.clock.clone()),
            mailer: parts.mailer,
            store: parts.store,
            clock: parts.clock,
            hasher: parts.hasher,
            tokens: parts.tokens,
            secrets: parts.secrets,
            live: parts.live,
            directory: parts.directory,
            metrics: parts.metrics,
            settings,
            webauthn: parts.webauthn,
            keys: Default::default(),
            providers: parts.providers,
            catalog: parts.catalog,
        }
    }

    pub(crate) async fn audit(&self, event: AuditEvent, subject: Subject<'_>) {
        self.auditor.record(event, subject).await;
    }

    /// `audit`, the answer not waiting for the row (`Auditor::record_in_background`).
    pub(crate) fn audit_in_background(&self, event: AuditEvent, subject: Subject<'_>) {
        self.auditor.record_in_background(event, subject);
    }

    /// The caller's account. A session outliving its user cannot happen (ON DELETE CASCADE);
    /// were it to, the token is as good as invalid.
    /// `GATEHOUSE_REQUIRE_VERIFIED_EMAIL=on`: no way in (password, passkey, refresh) opens or
    /// renews a session for an address that is not verified. Asked only once the credential
    /// proved itself, so that no one else learns the address is unverified.
    pub(crate) fn require_verified(&self, user: &User) -> Result<()> {
        if self.settings.links.require_verified_email && !user.email_verified {
            return Err(Error::EmailNotVerified);
        }
        Ok(())
    }

    /// Audits what a first proof of the account's address removed, if anything.
    pub(crate) async fn credentials_removed(
        &self,
        user: Uuid,
        proof: &AddressProof,
        client: &ClientInfo,
    ) {
        if proof.removed.is_empty() {
            return;
        }
        let event = AuditEvent::CredentialsRemoved {
            passkeys: proof.removed.passkeys.len() as u64,
            authenticator: proof.removed.authenticator,
            identities: proof.removed.identities.len() as u64,
        };
        self.audit(event, Subject::user(user).from(client)).await;
    }

    pub(crate) async fn user(&self, who: &Principal) -> Result<User> {
        self.store
            .user_by_id(who.user_id)
            .await?
            .ok_or(Error::TokenInvalid)
    }

    /// A bearer call's re-check of the password, within the account's allowance of failures (a
    /// stolen access token must not make a password oracle).
    pub(crate) async fn recheck_password(&self, user: &User, password: SecretString) -> Result<()> {
        let hash = user.password_hash.clone();
        let checked = self
            .throttle
            .within_allowance(&user.email_normalized, async {
                let verdict = self.hasher.verify(password, Some(hash)).await?;
                Ok(matches!(verdict, Verdict::Match { .. }).then_some(()))
            })
            .await?;
        checked.ok_or(Error::PasswordRecheckFailed)
    }

    /// Opens a session for `user` with its first tokens, unless the account was disabled or its
    /// password changed since `user` was read (the check began): `None` then.
    pub(crate) async fn open_session(
        &self,
        user: &User,
        amr: Vec<String>,
        client: &ClientInfo,
    ) -> Result<Option<TokenSet>> {
        let now = self.clock.now_ms();
        let session_id = Uuid::now_v7();
        let refresh = RefreshRecord {
            jti: Uuid::new_v4(),
            session_id,
            issued_at: now,
            expires_at: now + self.settings.refresh_ttl.as_millis() as i64,
            consumed_at: None,
        };
        let ip = client.ip.map(|ip| ip.to_string());
        let opened = self
            .store
            .insert_session(&NewSession {
                id: session_id,
                user_id: user.id,
                amr: &amr,
                ip: ip.as_deref(),
                user_agent: client.user_agent.as_deref(),
                refresh: &refresh,
                auth_epoch: user.auth_epoch,
                grant: None,
                org_id: None,
            })
            .await?;
        if !opened {
            return Ok(None);
        }
        self.token_set(user, &amr, None, &refresh).map(Some)
    }

    /// The tokens of a session; `org`: its active organisation, with the person's roles in it.
    pub(crate) fn token_set(
        &self,
        user: &User,
        amr: &[String],
        org: Option<&Membership>,
        refresh: &RefreshRecord,
    ) -> Result<TokenSet> {
        Ok(TokenSet {
            access_token: self.tokens.access(
                user.id,
                refresh.session_id,
                amr,
                &user.roles,
                org,
                self.clock.now_seconds(),
            )?,
            refresh_token: self.tokens.refresh(user.id, refresh, None, None)?,
            expires_in: self.tokens.access_ttl_seconds(),
            user: UserSummary::from(user),
            session_id: refresh.session_id,
        })
    }

    /// Revokes one session of a user; false if it is not theirs or no longer active.
    pub(crate) async fn end_session(
        &self,
        user_id: Uuid,
        session: Uuid,
        reason: EndReason,
    ) -> Result<bool> {
        let now = self.clock.now_ms();
        let ended = self
            .store
            .revoke_session(user_id, session, reason.as_str(), now)
            .await?;
        if ended {
            self.ended(&[session], now, reason);
        }
        Ok(ended)
    }

    /// Revokes every session of a user but `keep`; returns how many there were.
    pub(crate) async fn end_sessions(
        &self,
        user_id: Uuid,
        keep: Option<Uuid>,
        reason: EndReason,
    ) -> Result<u64> {
        let now = self.clock.now_ms();
        let ended = self
            .store
            .revoke_user_sessions(user_id, keep, reason.as_str(), now)
            .await?;
        self.ended(&ended, now, reason);
        Ok(ended.len() as u64)
    }

    /// Makes revocations committed to the database known here at once (elsewhere by polling).
    pub(crate) fn ended(&self, sessions: &[Uuid], at: i64, reason: EndReason) {
        self.live.revoked(sessions, at);
        self.metrics.revoked(reason.as_str(), sessions.len() as u64);
    }

    /// Records what an operator did to `target`: for an admin, with their id (`actor_id`), their
    /// session and where they called from.
    pub(crate) async fn audit_by(&self, op: Operator<'_>, event: AuditEvent, target: Option<Uuid>) {
        match op {
            Operator::Cli => self.audit(event, Subject::maybe_user(target)).await,
            Operator::Admin { who, client } => {
                let subject = Subject::maybe_user(target)
                    .in_session(who.session_id)
                    .by(who.user_id)
                    .from(client);
                self.audit(event, subject).await
            }
        }
    }
}
