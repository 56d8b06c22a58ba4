//! The authentication flows: login, the second factor, refresh, sessions, 2FA enrolment and
//! account administration. It speaks in domain terms; `http` turns them into calls and answers.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use secrecy::{ExposeSecret, SecretString};
use serde::Serialize;
use uuid::Uuid;

use super::crypto::{Secrets, random_token, sha256};
use super::live::LiveSessions;
use super::password::{PasswordHasher, Verdict, check_policy};
use super::throttle::Throttle;
use super::tokens::{RefreshClaims, Tokens};
use super::totp;
use crate::domain::{Email, FullName};
use crate::error::{Error, Result};
use crate::metrics::{LoginOutcome as LoginMetric, Metrics, RefreshOutcome, TwoFactorOutcome};
use crate::store::audit::NewEvent;
use crate::store::sessions::{NewSession, Purged, RefreshRow, SessionRow};
use crate::store::users::{NewUser, UserRow};
use crate::store::{Store, is_unique_violation, now_ms, rfc3339};

/// Wrong codes a two-factor challenge tolerates (API.md §2).
pub const MAX_CHALLENGE_ATTEMPTS: i64 = 5;

/// A consumed refresh-token record is kept this long past the grace window, so that a racing
/// refresh still finds it however slowly it arrives.
const CONSUMED_RECORD_MARGIN_MS: i64 = 60_000;

/// Where a request came from, recorded with the session it opens.
#[derive(Debug, Clone, Default)]
pub struct ClientInfo {
    pub ip: Option<IpAddr>,
    pub user_agent: Option<String>,
}

/// The caller of a bearer call, from a verified access token of a live session.
#[derive(Debug, Clone)]
pub struct Principal {
    pub user_id: Uuid,
    pub session_id: Uuid,
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UserView {
    pub id: Uuid,
    #[schema(example = "ada@example.com")]
    pub email: String,
    #[schema(example = "Ada Lovelace")]
    pub full_name: String,
}

impl From<&UserRow> for UserView {
    fn from(u: &UserRow) -> Self {
        UserView {
            id: u.id,
            email: u.email.clone(),
            full_name: u.full_name.clone(),
        }
    }
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TokenSet {
    /// Ed25519 JWT (`typ: at+jwt`) for `Authorization: Bearer`; verifiable with the JWK Set.
    #[schema(
        example = "eyJhbGciOiJFZERTQSIsImtpZCI6Ii4uLiIsInR5cCI6ImF0K2p3dCJ9.eyJzdWIiOiIuLi4ifQ.c2ln"
    )]
    pub access_token: String,
    /// For `POST /auth/refresh`, once; valid 30 days from now.
    #[schema(
        example = "eyJhbGciOiJFZERTQSIsImtpZCI6Ii4uLiIsInR5cCI6InJlZnJlc2grand0In0.eyJzaWQiOiIuLi4ifQ.c2ln"
    )]
    pub refresh_token: String,
    /// Seconds the access token lives.
    #[schema(example = 86400)]
    pub expires_in: i64,
    pub user: UserView,
    /// The session the tokens belong to (for the audit trail; not part of the answer).
    #[serde(skip)]
    #[schema(ignore)]
    pub session_id: Uuid,
}

#[derive(Debug)]
pub enum LoginOutcome {
    Tokens(TokenSet),
    Challenge { temp_token: String },
}

/// Which second factor was accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Factor {
    Totp,
    RecoveryCode,
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Me {
    pub id: Uuid,
    #[schema(example = "ada@example.com")]
    pub email: String,
    #[schema(example = "Ada Lovelace")]
    pub full_name: String,
    pub two_factor_enabled: bool,
    /// Unused recovery codes left (0 without 2FA).
    #[schema(example = 10)]
    pub recovery_codes_remaining: i64,
    #[schema(format = DateTime, example = "2026-11-21T09:30:00.417Z")]
    pub created_at: String,
}

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TwoFactorSetup {
    /// The TOTP secret, base32 (160 bits), for typing into an authenticator app.
    #[schema(example = "JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP")]
    pub secret: String,
    #[schema(
        example = "otpauth://totp/Gatehouse:ada@example.com?secret=JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP&issuer=Gatehouse&algorithm=SHA1&digits=6&period=30"
    )]
    pub otpauth_uri: String,
    /// The URI as a QR code, an SVG document.
    #[schema(example = "<svg xmlns=\"http://www.w3.org/2000/svg\" …</svg>")]
    pub qr_code_svg: String,
}

/// A session as its user sees it in the session list.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionView {
    pub id: Uuid,
    #[schema(format = DateTime, example = "2026-11-21T09:30:00.417Z")]
    pub created_at: String,
    /// The last refresh or bearer call (to within 15 s).
    #[schema(format = DateTime, example = "2026-11-21T10:02:13.052Z")]
    pub last_used_at: String,
    /// The client address at login.
    #[schema(example = "203.0.113.9")]
    pub ip: Option<String>,
    #[schema(example = "Mozilla/5.0 (X11; Linux x86_64)")]
    pub user_agent: Option<String>,
    /// Whether this is the session of the token making the call.
    pub current: bool,
    #[serde(skip)]
    last_used_ms: i64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogoutScope {
    Current,
    Others,
    All,
}

pub struct AuthSettings {
    /// Throttling of login and 2FA attempts (API.md: `GATEHOUSE_RATE_LIMIT`).
    pub rate_limit: bool,
    /// How long audit events are kept.
    pub audit_retention: Duration,
    pub refresh_ttl: Duration,
    pub temp_ttl: Duration,
    pub reuse_grace: Duration,
}

pub struct AuthService {
    store: Store,
    hasher: PasswordHasher,
    tokens: Tokens,
    secrets: Arc<Secrets>,
    live: Arc<LiveSessions>,
    throttle: Throttle,
    metrics: Arc<Metrics>,
    audit_retention_ms: i64,
    refresh_ttl_ms: i64,
    temp_ttl_ms: i64,
    grace_ms: i64,
}

const AMR_PASSWORD: &str = "pwd";
const AMR_OTP: &str = "otp";

impl AuthService {
    pub fn new(
        store: Store,
        tokens: Tokens,
        secrets: Arc<Secrets>,
        live: Arc<LiveSessions>,
        metrics: Arc<Metrics>,
        settings: AuthSettings,
    ) -> Self {
        AuthService {
            throttle: Throttle::new(store.clone(), settings.rate_limit),
            store,
            hasher: PasswordHasher::new(metrics.clone()),
            metrics,
            audit_retention_ms: settings.audit_retention.as_millis() as i64,
            tokens,
            secrets,
            live,
            refresh_ttl_ms: settings.refresh_ttl.as_millis() as i64,
            temp_ttl_ms: settings.temp_ttl.as_millis() as i64,
            grace_ms: settings.reuse_grace.as_millis() as i64,
        }
    }

    pub fn tokens(&self) -> &Tokens {
        &self.tokens
    }

    /// Password login. Unknown e-mail and wrong password are one answer, and cost one hash each.
    /// A disabled account is told so only after its password was right.
    pub async fn login(
        &self,
        email: &Email,
        password: SecretString,
        client: &ClientInfo,
    ) -> Result<LoginOutcome> {
        let result = self.login_attempt(email, password, client).await;
        let outcome = match &result {
            Ok(LoginOutcome::Tokens(_)) => Some(LoginMetric::Success),
            Ok(LoginOutcome::Challenge { .. }) => Some(LoginMetric::Challenge),
            Err(Error::InvalidCredentials) => Some(LoginMetric::BadCredentials),
            Err(Error::RateLimited { .. }) => Some(LoginMetric::Throttled),
            Err(Error::AccountDisabled) => Some(LoginMetric::Disabled),
            Err(Error::Overloaded { .. }) => Some(LoginMetric::Shed),
            Err(_) => None,
        };
        if let Some(outcome) = outcome {
            self.metrics.login(outcome);
        }
        result
    }

    async fn login_attempt(
        &self,
        email: &Email,
        password: SecretString,
        client: &ClientInfo,
    ) -> Result<LoginOutcome> {
        self.throttle.attempt_from(client.ip)?;
        let normalized = email.normalized();
        // Unknown e-mails are throttled like known ones: a 429 must not tell them apart.
        let slot = self.throttle.take_account_slot(&normalized).await?;
        let user = self.store.user_by_email(&normalized).await?;
        let stored = user.as_ref().map(|u| u.password_hash.clone());
        let candidate = SecretString::from(password.expose_secret());
        let verdict = match self.hasher.verify(password, stored).await {
            Ok(verdict) => verdict,
            // Shed before any check: not a failure of the account.
            Err(error) => {
                self.throttle.give_back(slot).await?;
                return Err(error);
            }
        };
        let (user, needs_rehash) = match (user, verdict) {
            (Some(user), Verdict::Match { needs_rehash }) => (user, needs_rehash),
            (user, _) => {
                // An unknown e-mail is not recorded: it may be a password typed in the wrong box.
                let (id, detail) = match &user {
                    Some(user) => (Some(user.id), "wrong_password"),
                    None => (None, "unknown_account"),
                };
                self.audit("login.failed", id, None, Some(client), Some(detail))
                    .await;
                return Err(Error::InvalidCredentials);
            }
        };
        self.throttle.give_back(slot).await?;
        if user.disabled {
            self.audit(
                "login.failed",
                Some(user.id),
                None,
                Some(client),
                Some("account_disabled"),
            )
            .await;
            return Err(Error::AccountDisabled);
        }
        if needs_rehash {
            self.upgrade_hash_later(&user, candidate);
        }
        if user.two_factor_enabled() {
            let temp_token = random_token();
            let expires_at = now_ms() + self.temp_ttl_ms;
            self.store
                .insert_challenge(&sha256(temp_token.as_bytes()), user.id, expires_at)
                .await?;
            self.audit("login.challenged", Some(user.id), None, Some(client), None)
                .await;
            return Ok(LoginOutcome::Challenge { temp_token });
        }
        let tokens = self
            .open_session(&user, vec![AMR_PASSWORD.into()], client)
            .await?;
        self.audit(
            "login.succeeded",
            Some(user.id),
            Some(tokens.session_id),
            Some(client),
            Some("pwd"),
        )
        .await;
        Ok(LoginOutcome::Tokens(tokens))
    }

    /// Re-hashes a password whose hash has weaker parameters than today's, off the request path.
    fn upgrade_hash_later(&self, user: &UserRow, password: SecretString) {
        let hasher = self.hasher.clone();
        let store = self.store.clone();
        let (id, old) = (user.id, user.password_hash.clone());
        tokio::spawn(async move {
            let result = async {
                let new = hasher.hash(password).await?;
                store.upgrade_password_hash(id, &old, &new).await?;
                Ok::<_, Error>(())
            };
            if let Err(error) = result.await {
                tracing::warn!(user = %id, error = %error, "password hash upgrade failed");
            }
        });
    }

    /// Completes a login that was answered with a challenge, with a TOTP code or a recovery code.
    pub async fn verify_second_factor(
        &self,
        temp_token: &str,
        code: &str,
        client: &ClientInfo,
    ) -> Result<TokenSet> {
        let result = self.second_factor_attempt(temp_token, code, client).await;
        let outcome = match &result {
            Ok(_) => Some(TwoFactorOutcome::Success),
            Err(Error::Invalid2faCode { .. }) => Some(TwoFactorOutcome::BadCode),
            Err(Error::TempTokenInvalid) => Some(TwoFactorOutcome::InvalidChallenge),
            Err(Error::RateLimited { .. }) => Some(TwoFactorOutcome::Throttled),
            Err(_) => None,
        };
        if let Some(outcome) = outcome {
            self.metrics.two_factor(outcome);
        }
        result
    }

    async fn second_factor_attempt(
        &self,
        temp_token: &str,
        code: &str,
        client: &ClientInfo,
    ) -> Result<TokenSet> {
        self.throttle.attempt_from(client.ip)?;
        let hash = sha256(temp_token.as_bytes());
        let now = now_ms();
        let (user_id, attempts) = self
            .store
            .take_challenge_attempt(&hash, MAX_CHALLENGE_ATTEMPTS, now)
            .await?
            .ok_or(Error::TempTokenInvalid)?;
        let user = self
            .store
            .user_by_id(user_id)
            .await?
            .ok_or(Error::TempTokenInvalid)?;
        if user.disabled {
            return Err(Error::AccountDisabled);
        }
        // 2FA may have been reset by an administrator since the challenge was made.
        let sealed = user.totp_secret.as_deref().ok_or(Error::TempTokenInvalid)?;
        // Challenges are cheap to get with the password: the account's allowance bounds how many
        // codes can be tried across all of them.
        let slot = self
            .throttle
            .take_account_slot(&user.email_normalized)
            .await?;
        let Some(factor) = self.check_second_factor(&user, sealed, code).await? else {
            self.audit("two_factor.failed", Some(user.id), None, Some(client), None)
                .await;
            let remaining = (MAX_CHALLENGE_ATTEMPTS - attempts).max(0) as u32;
            return Err(Error::Invalid2faCode {
                attempts_remaining: remaining,
            });
        };
        self.throttle.give_back(slot).await?;
        if !self.store.complete_challenge(&hash, now).await? {
            return Err(Error::TempTokenInvalid);
        }
        let tokens = self
            .open_session(&user, vec![AMR_PASSWORD.into(), AMR_OTP.into()], client)
            .await?;
        if factor == Factor::RecoveryCode {
            self.audit(
                "recovery_code.used",
                Some(user.id),
                None,
                Some(client),
                None,
            )
            .await;
        }
        let detail = match factor {
            Factor::Totp => "totp",
            Factor::RecoveryCode => "recovery_code",
        };
        self.audit(
            "two_factor.succeeded",
            Some(user.id),
            Some(tokens.session_id),
            Some(client),
            Some(detail),
        )
        .await;
        Ok(tokens)
    }

    /// Records a security event. A failure to record is logged, not answered: the event itself
    /// (a login, a logout) has happened.
    pub async fn audit(
        &self,
        event: &str,
        user_id: Option<Uuid>,
        session_id: Option<Uuid>,
        client: Option<&ClientInfo>,
        detail: Option<&str>,
    ) {
        let ip = client.and_then(|c| c.ip).map(|ip| ip.to_string());
        let recorded = self
            .store
            .insert_event(&NewEvent {
                at: now_ms(),
                event,
                user_id,
                session_id,
                ip: ip.as_deref(),
                user_agent: client.and_then(|c| c.user_agent.as_deref()),
                detail,
            })
            .await;
        if let Err(error) = recorded {
            tracing::warn!(event, error = %error, "cannot record an audit event");
        }
    }

    /// A TOTP code of a step newer than any used before, or an unused recovery code. Either is
    /// used up by being accepted.
    async fn check_second_factor(
        &self,
        user: &UserRow,
        sealed_secret: &[u8],
        code: &str,
    ) -> Result<Option<Factor>> {
        let code = code.trim();
        if code.len() == totp::DIGITS && code.bytes().all(|b| b.is_ascii_digit()) {
            let secret = self.open_secret(user, sealed_secret)?;
            let now = (now_ms() / 1000) as u64;
            let accepted = match totp::matching_step(&secret, code, now) {
                Some(step) => self.store.claim_totp_step(user.id, step as i64).await?,
                None => false,
            };
            return Ok(accepted.then_some(Factor::Totp));
        }
        match totp::normalize_recovery_code(code) {
            Some(normalized) => {
                let hash = self
                    .secrets
                    .recovery_code_hash(user.id.as_bytes(), &normalized);
                let used = self.store.use_recovery_code(user.id, &hash).await?;
                Ok(used.then_some(Factor::RecoveryCode))
            }
            None => Ok(None),
        }
    }

    fn open_secret(&self, user: &UserRow, sealed: &[u8]) -> Result<Vec<u8>> {
        self.secrets
            .open(user.id.as_bytes(), sealed)
            .map_err(Error::internal)
    }

    async fn open_session(
        &self,
        user: &UserRow,
        amr: Vec<String>,
        client: &ClientInfo,
    ) -> Result<TokenSet> {
        let now = now_ms();
        let session_id = Uuid::now_v7();
        let refresh = RefreshRow {
            jti: Uuid::new_v4(),
            session_id,
            issued_at: now,
            expires_at: now + self.refresh_ttl_ms,
            consumed_at: None,
        };
        let amr_text = amr.join(" ");
        let ip = client.ip.map(|ip| ip.to_string());
        self.store
            .insert_session(&NewSession {
                id: session_id,
                user_id: user.id,
                amr: &amr_text,
                ip: ip.as_deref(),
                user_agent: client.user_agent.as_deref(),
                refresh: &refresh,
            })
            .await?;
        self.token_set(user, &amr, &refresh)
    }

    fn token_set(&self, user: &UserRow, amr: &[String], refresh: &RefreshRow) -> Result<TokenSet> {
        let now = now_ms() / 1000;
        Ok(TokenSet {
            access_token: self.tokens.access(user.id, refresh.session_id, amr, now)?,
            refresh_token: self.tokens.refresh(
                user.id,
                refresh.session_id,
                refresh.jti,
                refresh.issued_at,
                refresh.expires_at,
            )?,
            expires_in: self.tokens.access_ttl_seconds(),
            user: UserView::from(user),
            session_id: refresh.session_id,
        })
    }

    /// Rotates a refresh token: the presented one is used up, a new one is returned.
    pub async fn refresh(&self, token: &str, client: &ClientInfo) -> Result<TokenSet> {
        let result = self.rotate(token, client).await;
        match &result {
            Ok((_, outcome)) => self.metrics.refresh(*outcome),
            Err(Error::RefreshTokenInvalid) => self.metrics.refresh(RefreshOutcome::Invalid),
            Err(_) => {}
        }
        result.map(|(tokens, _)| tokens)
    }

    async fn rotate(&self, token: &str, client: &ClientInfo) -> Result<(TokenSet, RefreshOutcome)> {
        let claims = self.tokens.verify_refresh(token)?;
        let now = now_ms();
        let next = RefreshRow {
            jti: Uuid::new_v4(),
            session_id: claims.sid,
            issued_at: now,
            expires_at: now + self.refresh_ttl_ms,
            consumed_at: None,
        };
        let (session, refresh, outcome) = match self.store.rotate_refresh(claims.jti, &next).await?
        {
            Some(session) => (session, next, RefreshOutcome::Rotated),
            None => {
                let (session, current) = self.already_rotated(&claims, now, client).await?;
                (session, current, RefreshOutcome::GraceReuse)
            }
        };
        if session.id != claims.sid || session.user_id != claims.sub {
            return Err(Error::RefreshTokenInvalid);
        }
        let user = self
            .store
            .user_by_id(session.user_id)
            .await?
            .ok_or(Error::RefreshTokenInvalid)?;
        if user.disabled {
            return Err(Error::RefreshTokenInvalid);
        }
        let amr: Vec<String> = session.amr.split_whitespace().map(str::to_owned).collect();
        Ok((self.token_set(&user, &amr, &refresh)?, outcome))
    }

    /// A refresh token that could not be rotated. If it was consumed within the grace window (a
    /// racing tab), its session's current token is the answer; if earlier, it was stolen or
    /// replayed, and the session ends. Anything else (expired, session revoked) is invalid.
    async fn already_rotated(
        &self,
        claims: &RefreshClaims,
        now: i64,
        client: &ClientInfo,
    ) -> Result<(SessionRow, RefreshRow)> {
        let session = self
            .store
            .session(claims.sid)
            .await?
            .filter(|s| s.revoked_at.is_none() && s.user_id == claims.sub)
            .ok_or(Error::RefreshTokenInvalid)?;
        // A correctly signed token of a live session whose record is gone was consumed long ago:
        // housekeeping keeps consumed records only for the grace window and a margin.
        let consumed_at = match self.store.refresh_token(claims.jti).await? {
            Some(presented) if presented.session_id != session.id => {
                return Err(Error::RefreshTokenInvalid);
            }
            Some(presented) => Some(presented.consumed_at.ok_or(Error::RefreshTokenInvalid)?),
            None => None,
        };
        if consumed_at.is_some_and(|at| now - at <= self.grace_ms) {
            if let Some(current) = self.store.current_refresh_token(session.id).await? {
                return Ok((session, current));
            }
        }
        self.end_session(session.user_id, session.id, "refresh_reuse")
            .await?;
        self.metrics.refresh(RefreshOutcome::ReuseDetected);
        self.audit(
            "refresh.reuse_detected",
            Some(session.user_id),
            Some(session.id),
            Some(client),
            None,
        )
        .await;
        tracing::warn!(session = %session.id, user = %session.user_id, "refresh token reuse: session revoked");
        Err(Error::RefreshTokenInvalid)
    }

    /// The caller of a bearer call: a valid access token whose session is not revoked. No database
    /// round trip: revocations are known in memory (`LiveSessions`).
    pub fn authenticate(&self, access_token: &str) -> Result<Principal> {
        let claims = self.tokens.verify_access_cached(access_token)?;
        if self.live.is_revoked(claims.sid) {
            return Err(Error::TokenInvalid);
        }
        self.live.used(claims.sid, now_ms());
        Ok(Principal {
            user_id: claims.sub,
            session_id: claims.sid,
        })
    }

    /// Revokes one session of a user; false if it is not theirs or no longer active.
    async fn end_session(
        &self,
        user_id: Uuid,
        session: Uuid,
        reason: &'static str,
    ) -> Result<bool> {
        let now = now_ms();
        let ended = self
            .store
            .revoke_session(user_id, session, reason, now)
            .await?;
        if ended {
            self.live.revoked(&[session], now);
            self.metrics.revoked(reason, 1);
        }
        Ok(ended)
    }

    /// Revokes every session of a user but `keep`; returns how many there were.
    async fn end_sessions(
        &self,
        user_id: Uuid,
        keep: Option<Uuid>,
        reason: &'static str,
    ) -> Result<u64> {
        let now = now_ms();
        let ended = self
            .store
            .revoke_user_sessions(user_id, keep, reason, now)
            .await?;
        self.live.revoked(&ended, now);
        self.metrics.revoked(reason, ended.len() as u64);
        Ok(ended.len() as u64)
    }

    pub async fn logout(
        &self,
        who: &Principal,
        scope: LogoutScope,
        client: &ClientInfo,
    ) -> Result<u64> {
        let (ended, scope) = match scope {
            LogoutScope::Current => (
                u64::from(
                    self.end_session(who.user_id, who.session_id, "logout")
                        .await?,
                ),
                "current",
            ),
            LogoutScope::Others => (
                self.end_sessions(who.user_id, Some(who.session_id), "logout")
                    .await?,
                "others",
            ),
            LogoutScope::All => (self.end_sessions(who.user_id, None, "logout").await?, "all"),
        };
        let detail = format!("scope={scope} sessions={ended}");
        self.audit(
            "logout",
            Some(who.user_id),
            Some(who.session_id),
            Some(client),
            Some(&detail),
        )
        .await;
        Ok(ended)
    }

    /// The caller's live sessions, the most recently used first.
    pub async fn sessions(&self, who: &Principal) -> Result<Vec<SessionView>> {
        let rows = self.store.active_sessions(who.user_id, now_ms()).await?;
        let mut views: Vec<SessionView> = rows
            .into_iter()
            .map(|row| {
                // This instance may have seen a use that is not written yet.
                let last_used = self
                    .live
                    .unwritten_use(row.id)
                    .map_or(row.last_used_at, |at| at.max(row.last_used_at));
                SessionView {
                    current: row.id == who.session_id,
                    created_at: rfc3339(row.created_at),
                    last_used_ms: last_used,
                    last_used_at: rfc3339(last_used),
                    ip: row.ip,
                    user_agent: row.user_agent,
                    id: row.id,
                }
            })
            .collect();
        views.sort_by(|a, b| b.last_used_ms.cmp(&a.last_used_ms).then(b.id.cmp(&a.id)));
        Ok(views)
    }

    /// Ends one of the caller's sessions (possibly the current one). Another user's session, or
    /// one that has ended already, is not found.
    pub async fn delete_session(
        &self,
        who: &Principal,
        session: Uuid,
        client: &ClientInfo,
    ) -> Result<()> {
        if !self.end_session(who.user_id, session, "deleted").await? {
            return Err(Error::NotFound);
        }
        let detail = format!("by_session={}", who.session_id);
        self.audit(
            "session.revoked",
            Some(who.user_id),
            Some(session),
            Some(client),
            Some(&detail),
        )
        .await;
        Ok(())
    }

    /// Changes the caller's password after checking the current one; every other session ends.
    pub async fn change_password(
        &self,
        who: &Principal,
        current: SecretString,
        new: SecretString,
        client: &ClientInfo,
    ) -> Result<u64> {
        check_policy(new.expose_secret())?;
        let user = self.user(who).await?;
        self.recheck_password(&user, current).await?;
        let hash = self.hasher.hash(new).await?;
        self.store.set_password_hash(user.id, &hash).await?;
        let ended = self
            .end_sessions(user.id, Some(who.session_id), "password_changed")
            .await?;
        let detail = format!("other_sessions_ended={ended}");
        self.audit(
            "password.changed",
            Some(user.id),
            Some(who.session_id),
            Some(client),
            Some(&detail),
        )
        .await;
        Ok(ended)
    }

    /// A bearer call's re-check of the password, within the account's allowance of failures (a
    /// stolen access token must not make a password oracle).
    async fn recheck_password(&self, user: &UserRow, password: SecretString) -> Result<()> {
        let slot = self
            .throttle
            .take_account_slot(&user.email_normalized)
            .await?;
        match self
            .hasher
            .verify(password, Some(user.password_hash.clone()))
            .await?
        {
            Verdict::Match { .. } => self.throttle.give_back(slot).await,
            _ => Err(Error::PasswordRecheckFailed),
        }
    }

    /// A bearer call's re-check of a TOTP or recovery code, within the account's allowance.
    async fn recheck_code(&self, user: &UserRow, sealed_secret: &[u8], code: &str) -> Result<()> {
        let slot = self
            .throttle
            .take_account_slot(&user.email_normalized)
            .await?;
        if self
            .check_second_factor(user, sealed_secret, code)
            .await?
            .is_some()
        {
            self.throttle.give_back(slot).await
        } else {
            Err(Error::CodeRecheckFailed)
        }
    }

    /// Turns the caller's 2FA off, after checking their password and a code (TOTP or recovery).
    pub async fn disable_two_factor(
        &self,
        who: &Principal,
        password: SecretString,
        code: &str,
        client: &ClientInfo,
    ) -> Result<()> {
        let user = self.user(who).await?;
        let sealed = user
            .totp_secret
            .as_deref()
            .ok_or(Error::TwoFactorNotEnabled)?;
        // The password first: a wrong one must not use up the recovery code sent with it.
        self.recheck_password(&user, password).await?;
        self.recheck_code(&user, sealed, code).await?;
        self.store.disable_totp(user.id).await?;
        self.audit(
            "two_factor.disabled",
            Some(user.id),
            Some(who.session_id),
            Some(client),
            None,
        )
        .await;
        Ok(())
    }

    /// A new set of recovery codes for the caller, after checking a code (TOTP or recovery); the
    /// old set is void.
    pub async fn new_recovery_codes(
        &self,
        who: &Principal,
        code: &str,
        client: &ClientInfo,
    ) -> Result<Vec<String>> {
        let user = self.user(who).await?;
        let sealed = user
            .totp_secret
            .as_deref()
            .ok_or(Error::TwoFactorNotEnabled)?;
        self.recheck_code(&user, sealed, code).await?;
        let (codes, hashes) = self.recovery_codes(&user);
        if !self.store.replace_recovery_codes(user.id, &hashes).await? {
            return Err(Error::TwoFactorNotEnabled);
        }
        self.audit(
            "recovery_codes.regenerated",
            Some(user.id),
            Some(who.session_id),
            Some(client),
            None,
        )
        .await;
        Ok(codes)
    }

    fn recovery_codes(&self, user: &UserRow) -> (Vec<String>, Vec<[u8; 32]>) {
        let codes = totp::generate_recovery_codes();
        let hashes = codes
            .iter()
            .filter_map(|c| totp::normalize_recovery_code(c))
            .map(|c| self.secrets.recovery_code_hash(user.id.as_bytes(), &c))
            .collect();
        (codes, hashes)
    }

    async fn user(&self, who: &Principal) -> Result<UserRow> {
        // A session outliving its user cannot happen (ON DELETE CASCADE); treat it as a bad token.
        self.store
            .user_by_id(who.user_id)
            .await?
            .ok_or(Error::TokenInvalid)
    }

    pub async fn me(&self, who: &Principal) -> Result<Me> {
        let user = self.user(who).await?;
        let remaining = self.store.recovery_codes_remaining(user.id).await?;
        Ok(Me {
            id: user.id,
            two_factor_enabled: user.two_factor_enabled(),
            recovery_codes_remaining: remaining,
            created_at: rfc3339(user.created_at),
            email: user.email,
            full_name: user.full_name,
        })
    }

    /// Makes a new TOTP secret, pending until `enable_two_factor` confirms a code from it. A
    /// second setup replaces the pending secret.
    pub async fn setup_two_factor(&self, who: &Principal) -> Result<TwoFactorSetup> {
        let user = self.user(who).await?;
        if user.two_factor_enabled() {
            return Err(Error::TwoFactorAlreadyEnabled);
        }
        let secret = totp::generate_secret();
        self.store
            .set_totp_pending(user.id, &self.secrets.seal(user.id.as_bytes(), &secret))
            .await?;
        let encoded = totp::base32(&secret);
        let otpauth_uri = totp::otpauth_uri(&encoded, &user.email);
        let qr_code_svg = totp::qr_svg(&otpauth_uri)
            .map_err(|e| Error::internal(anyhow::anyhow!("QR code: {e}")))?;
        Ok(TwoFactorSetup {
            secret: encoded,
            otpauth_uri,
            qr_code_svg,
        })
    }

    /// Confirms the pending secret with a code from it and turns 2FA on; returns the recovery
    /// codes, shown this once (only their keyed hashes are kept).
    pub async fn enable_two_factor(
        &self,
        who: &Principal,
        code: &str,
        client: &ClientInfo,
    ) -> Result<Vec<String>> {
        let user = self.user(who).await?;
        if user.two_factor_enabled() {
            return Err(Error::TwoFactorAlreadyEnabled);
        }
        let pending = user
            .totp_pending
            .as_deref()
            .ok_or(Error::TwoFactorNotSetUp)?;
        let secret = self.open_secret(&user, pending)?;
        let now = (now_ms() / 1000) as u64;
        let step =
            totp::matching_step(&secret, code.trim(), now).ok_or(Error::CodeRecheckFailed)?;
        let (codes, hashes) = self.recovery_codes(&user);
        // The accepted code's step is recorded as used, so it cannot also complete a login.
        if !self
            .store
            .enable_totp(user.id, pending, step as i64, &hashes)
            .await?
        {
            // Enabled or set up again by a concurrent request.
            return Err(Error::TwoFactorAlreadyEnabled);
        }
        self.audit(
            "two_factor.enabled",
            Some(user.id),
            Some(who.session_id),
            Some(client),
            None,
        )
        .await;
        Ok(codes)
    }

    /// Deletes what no request can need any more, as of `now`: sessions lapsed or revoked longer
    /// ago than any access token lives, refresh-token records consumed before the grace window
    /// (reuse of such a token is still detected: see `already_rotated`), expired challenges.
    pub async fn housekeep(&self, now: i64) -> Result<Purged> {
        let mut purged = self
            .store
            .purge(
                now,
                now - self.live.horizon_ms(),
                now - self.grace_ms - CONSUMED_RECORD_MARGIN_MS,
            )
            .await?;
        purged.throttles = self.throttle.housekeep(now).await?;
        purged.audit_events = self
            .store
            .purge_events(now - self.audit_retention_ms)
            .await?;
        Ok(purged)
    }

    /// Creates an account: `via` is `cli` (`user add`) or `registration` (with the client).
    pub async fn create_user(
        &self,
        email: &Email,
        name: &FullName,
        password: SecretString,
        via: &str,
        client: Option<&ClientInfo>,
    ) -> Result<UserRow> {
        check_policy(password.expose_secret())?;
        let hash = self.hasher.hash(password).await?;
        let id = Uuid::now_v7();
        let normalized = email.normalized();
        let inserted = self
            .store
            .insert_user(&NewUser {
                id,
                email: email.as_str(),
                email_normalized: &normalized,
                full_name: name.as_str(),
                password_hash: &hash,
            })
            .await;
        match inserted {
            Ok(()) => {}
            Err(e) if is_unique_violation(&e) => return Err(Error::EmailTaken),
            Err(e) => return Err(e.into()),
        }
        self.audit("user.created", Some(id), None, client, Some(via))
            .await;
        self.store
            .user_by_id(id)
            .await?
            .ok_or_else(|| Error::internal(anyhow::anyhow!("user vanished")))
    }

    pub async fn find_user(&self, email: &Email) -> Result<UserRow> {
        self.store
            .user_by_email(&email.normalized())
            .await?
            .ok_or(Error::NotFound)
    }

    /// Disables an account and ends all its sessions.
    pub async fn disable_user(&self, email: &Email) -> Result<u64> {
        let user = self.find_user(email).await?;
        self.store.set_disabled(user.id, true).await?;
        let ended = self.end_sessions(user.id, None, "account_disabled").await?;
        let detail = format!("via=cli sessions_ended={ended}");
        self.audit("user.disabled", Some(user.id), None, None, Some(&detail))
            .await;
        Ok(ended)
    }

    pub async fn enable_user(&self, email: &Email) -> Result<()> {
        let user = self.find_user(email).await?;
        self.store.set_disabled(user.id, false).await?;
        self.audit("user.enabled", Some(user.id), None, None, Some("via=cli"))
            .await;
        Ok(())
    }

    /// Sets a new password (administrator) and ends every session of the account.
    pub async fn set_password(&self, email: &Email, password: SecretString) -> Result<u64> {
        check_policy(password.expose_secret())?;
        let user = self.find_user(email).await?;
        let hash = self.hasher.hash(password).await?;
        self.store.set_password_hash(user.id, &hash).await?;
        let ended = self
            .end_sessions(user.id, None, "password_set_by_admin")
            .await?;
        let detail = format!("via=cli sessions_ended={ended}");
        self.audit("password.changed", Some(user.id), None, None, Some(&detail))
            .await;
        Ok(ended)
    }

    /// Turns 2FA off for an account that lost its authenticator (administrator).
    pub async fn reset_two_factor(&self, email: &Email) -> Result<()> {
        let user = self.find_user(email).await?;
        self.store.disable_totp(user.id).await?;
        self.audit(
            "two_factor.disabled",
            Some(user.id),
            None,
            None,
            Some("via=cli reset"),
        )
        .await;
        Ok(())
    }
}
