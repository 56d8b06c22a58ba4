//! Authentication: passwords, tokens and their keys, TOTP, and the flows built from them. The
//! flows live one per file (`login`, `sessions`, `enrolment`, `account`, `admin`,
//! `housekeeping`) as methods of `AuthService`; what they share is here. They speak in domain
//! terms (`model`); `http` turns them into calls and answers, `store` keeps their data.

use std::sync::Arc;
use std::time::Duration;

use secrecy::SecretString;
use uuid::Uuid;

use crate::clock::Clock;
use crate::error::{Error, Result};
use crate::mail::Mailer;
use crate::metrics::Metrics;
use crate::store::Store;
use crate::store::sessions::NewSession;

pub mod audit;
pub mod directory;
pub mod live;
pub mod passkeys;
pub mod password;
pub mod throttle;
pub mod tokens;
pub mod totp;

mod account;
pub mod admin;
mod clients;
mod enrolment;
mod housekeeping;
mod identity;
mod invitation;
mod leaving;
mod login;
mod notices;
mod recovery;
mod second_factor;
mod sessions;
mod verification;

use crate::crypto::Secrets;
use crate::model::{ClientInfo, EndReason, Principal, RefreshRecord, TokenSet, User, UserSummary};
use audit::{AuditEvent, Auditor};
use directory::Directory;
use live::LiveSessions;
use password::{PasswordHasher, Verdict};
use throttle::Throttle;
use tokens::Tokens;

pub use crate::model::{LoginOutcome, LogoutScope};

/// Authentication methods (RFC 8176) recorded in a session's `amr`.
const AMR_PASSWORD: &str = "pwd";
const AMR_OTP: &str = "otp";

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
}

pub struct LinkSettings {
    pub reset_ttl: Duration,
    pub verify_ttl: Duration,
    pub invite_ttl: Duration,
    pub require_verified_email: bool,
}

pub struct AuthService {
    store: Store,
    clock: Clock,
    hasher: PasswordHasher,
    tokens: Tokens,
    secrets: Arc<Secrets>,
    live: Arc<LiveSessions>,
    directory: Arc<Directory>,
    known_clients: clients::KnownClients,
    throttle: Throttle,
    metrics: Arc<Metrics>,
    auditor: Auditor,
    settings: AuthSettings,
    /// The relying party of passkeys; `None` when passkeys are off.
    webauthn: Option<Arc<webauthn_rs::Webauthn>>,
    mailer: Arc<Mailer>,
    /// Forgotten-password requests being handled off their request's path.
    resets: recovery::ResetDesk,
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
}

impl AuthService {
    pub fn new(parts: AuthParts, settings: AuthSettings) -> Self {
        AuthService {
            throttle: Throttle::new(
                parts.store.clone(),
                parts.clock.clone(),
                settings.rate_limit,
            ),
            auditor: Auditor::new(parts.store.clone(), parts.clock.clone()),
            resets: recovery::ResetDesk::new(settings.rate_limit),
            mailer: parts.mailer,
            store: parts.store,
            clock: parts.clock,
            hasher: parts.hasher,
            tokens: parts.tokens,
            secrets: parts.secrets,
            live: parts.live,
            directory: parts.directory,
            known_clients: Default::default(),
            metrics: parts.metrics,
            settings,
            webauthn: parts.webauthn,
        }
    }

    async fn audit(
        &self,
        event: AuditEvent,
        user_id: Option<Uuid>,
        session_id: Option<Uuid>,
        client: Option<&ClientInfo>,
    ) {
        self.auditor
            .record(event, user_id, session_id, client)
            .await;
    }

    /// The caller's account. A session outliving its user cannot happen (ON DELETE CASCADE);
    /// were it to, the token is as good as invalid.
    async fn user(&self, who: &Principal) -> Result<User> {
        self.store
            .user_by_id(who.user_id)
            .await?
            .ok_or(Error::TokenInvalid)
    }

    /// A bearer call's re-check of the password, within the account's allowance of failures (a
    /// stolen access token must not make a password oracle).
    async fn recheck_password(&self, user: &User, password: SecretString) -> Result<()> {
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
    async fn open_session(
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
            })
            .await?;
        if !opened {
            return Ok(None);
        }
        self.token_set(user, &amr, &refresh).map(Some)
    }

    fn token_set(&self, user: &User, amr: &[String], refresh: &RefreshRecord) -> Result<TokenSet> {
        Ok(TokenSet {
            access_token: self.tokens.access(
                user.id,
                refresh.session_id,
                amr,
                &user.roles,
                self.clock.now_seconds(),
            )?,
            refresh_token: self.tokens.refresh(
                user.id,
                refresh.session_id,
                refresh.jti,
                refresh.issued_at,
                refresh.expires_at,
            )?,
            expires_in: self.tokens.access_ttl_seconds(),
            user: UserSummary::from(user),
            session_id: refresh.session_id,
        })
    }

    /// Revokes one session of a user; false if it is not theirs or no longer active.
    async fn end_session(&self, user_id: Uuid, session: Uuid, reason: EndReason) -> Result<bool> {
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
    async fn end_sessions(
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
    fn ended(&self, sessions: &[Uuid], at: i64, reason: EndReason) {
        self.live.revoked(sessions, at);
        self.metrics.revoked(reason.as_str(), sessions.len() as u64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{Email, FullName};

    /// A service over the SQLite database in `dir` (under one master key), hashing with `hasher`.
    async fn service(dir: &tempfile::TempDir, hasher: PasswordHasher) -> AuthService {
        let url = format!("sqlite://{}", dir.path().join("t.db").display());
        let store = Store::connect(&url).await.unwrap();
        store.migrate().await.unwrap();
        let clock = Clock::system();
        let secrets = Arc::new(Secrets::new(&crate::config::MasterKey::new([7; 32])));
        let keyring = Arc::new(
            tokens::Keyring::load(
                store.clone(),
                secrets.clone(),
                clock.clone(),
                Duration::from_secs(60),
            )
            .await
            .unwrap(),
        );
        let live = Arc::new(
            LiveSessions::load(&store, clock.clone(), Duration::from_secs(60))
                .await
                .unwrap(),
        );
        let metrics = Arc::new(Metrics::new());
        AuthService::new(
            AuthParts {
                tokens: Tokens::new(keyring, clock.clone(), "i", "a", Duration::from_secs(60)),
                directory: Arc::new(Directory::new(store.clone(), clock.clone())),
                store,
                clock,
                live,
                mailer: Arc::new(Mailer::for_tests(secrets.clone(), metrics.clone())),
                secrets,
                metrics,
                hasher,
                webauthn: None,
            },
            AuthSettings {
                rate_limit: true,
                registration_open: false,
                audit_retention: Duration::from_secs(60),
                refresh_ttl: Duration::from_secs(600),
                temp_ttl: Duration::from_secs(60),
                reuse_grace: Duration::from_secs(10),
                links: LinkSettings {
                    reset_ttl: Duration::from_secs(3600),
                    verify_ttl: Duration::from_secs(3600),
                    invite_ttl: Duration::from_secs(3600),
                    require_verified_email: false,
                },
            },
        )
    }

    /// A re-check that is shed (the hashing queue is full) is no failure of the account: it must
    /// not use up the account's allowance, or a login flood would lock the owner out.
    #[tokio::test]
    async fn a_shed_recheck_costs_the_account_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let normal = service(&dir, PasswordHasher::new(Arc::new(Metrics::new()))).await;
        let email = Email::parse("sue@example.com").unwrap();
        let user = normal
            .add_user(
                admin::Operator::Cli,
                &email,
                &FullName::parse("Sue").unwrap(),
                &[],
                Some("correct horse battery staple".into()),
            )
            .await
            .unwrap();
        let shedding = service(
            &dir,
            PasswordHasher::shedding_everything(Arc::new(Metrics::new())),
        )
        .await;
        let user = shedding.store.user_by_id(user.id).await.unwrap().unwrap();
        // More sheds than the account has failures to spend.
        for _ in 0..throttle::ACCOUNT_FAILURES {
            let shed = shedding
                .recheck_password(&user, "correct horse battery staple".into())
                .await;
            assert!(matches!(shed, Err(Error::Overloaded { .. })), "{shed:?}");
        }
        normal
            .recheck_password(&user, "correct horse battery staple".into())
            .await
            .expect("the allowance is whole");
    }
}
