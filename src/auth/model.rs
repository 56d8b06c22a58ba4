//! The entities and results of the authentication flows, as plain data: the store fills them, the
//! flows decide with them, and `http` turns the results into answers.

use std::net::IpAddr;

use uuid::Uuid;

/// An account.
#[derive(Debug, Clone)]
pub struct User {
    pub id: Uuid,
    /// As the user gave it (trimmed).
    pub email: String,
    /// Lower-cased: the login key.
    pub email_normalized: String,
    pub full_name: String,
    /// Argon2id PHC string.
    pub password_hash: String,
    pub disabled: bool,
    /// Sealed TOTP secret of enabled 2FA.
    pub totp_secret: Option<Vec<u8>>,
    /// Sealed secret handed out by setup and not yet confirmed.
    pub totp_pending: Option<Vec<u8>>,
    /// Moves on every change that must void logins in flight (password changed or set, account
    /// disabled): a session is opened only if it is still the value read when the check began.
    pub auth_epoch: i64,
    /// Until when the next second-factor code must wait, after wrong codes in a row (ms).
    pub second_factor_blocked_until: Option<i64>,
    /// Role names (docs/api.md §6), sorted.
    pub roles: Vec<String>,
    pub created_at: i64,
    /// Whether the address is known to reach the owner (a mailed link came back, or an operator
    /// made the account).
    pub email_verified: bool,
    /// When the account last signed in (ms); `None`: never.
    pub last_login_at: Option<i64>,
}

impl User {
    pub fn two_factor_enabled(&self) -> bool {
        self.totp_secret.is_some()
    }
}

/// An account as the administration API shows it.
#[derive(Debug, Clone)]
pub struct ManagedUser {
    pub user: User,
    /// How many passkeys it has.
    pub passkeys: i64,
}

/// A page of a list, and where the next one starts (`None`: this was the last).
#[derive(Debug, Clone)]
pub struct Page<T> {
    pub items: Vec<T>,
    pub next_cursor: Option<String>,
}

/// A login and everything issued for it.
#[derive(Debug, Clone)]
pub struct Session {
    pub id: Uuid,
    pub user_id: Uuid,
    /// Authentication methods of the login (RFC 8176 values), copied into each access token.
    pub amr: Vec<String>,
    pub ip: Option<String>,
    pub user_agent: Option<String>,
    pub created_at: i64,
    pub last_used_at: i64,
    pub revoked_at: Option<i64>,
}

/// A refresh token as recorded: enough to mint the same token again.
#[derive(Debug, Clone)]
pub struct RefreshRecord {
    pub jti: Uuid,
    pub session_id: Uuid,
    pub issued_at: i64,
    pub expires_at: i64,
    pub consumed_at: Option<i64>,
}

/// Where a request came from, recorded with the session it opens and in the audit trail.
#[derive(Debug, Clone, Default)]
pub struct ClientInfo {
    pub ip: Option<IpAddr>,
    pub user_agent: Option<String>,
}

/// Whether a login's authentication methods (RFC 8176) hold a second factor: two methods (a
/// password and a code, a passkey and its user verification), or `mfa` itself.
pub fn is_multi_factor(amr: &[String]) -> bool {
    amr.iter().any(|m| m == "mfa") || {
        let mut distinct: Vec<&str> = amr.iter().map(String::as_str).collect();
        distinct.sort_unstable();
        distinct.dedup();
        distinct.len() >= 2
    }
}

/// Who holds a live session, as a guarded service is told (forward-auth, introspection): the
/// account as it is now, not as it was when the token was issued.
#[derive(Debug, Clone)]
pub struct Identity {
    pub user_id: Uuid,
    pub session_id: Uuid,
    pub email: String,
    pub full_name: String,
    /// The current roles, sorted.
    pub roles: Vec<String>,
    /// The session's login had a second factor.
    pub multi_factor: bool,
}

/// The caller of a bearer call, from a verified access token of a live session.
#[derive(Debug, Clone)]
pub struct Principal {
    pub user_id: Uuid,
    pub session_id: Uuid,
}

/// The public face of an account, as it appears in a token set.
#[derive(Debug, Clone)]
pub struct UserSummary {
    pub id: Uuid,
    pub email: String,
    pub full_name: String,
}

impl From<&User> for UserSummary {
    fn from(u: &User) -> Self {
        UserSummary {
            id: u.id,
            email: u.email.clone(),
            full_name: u.full_name.clone(),
        }
    }
}

/// What a completed login or a refresh hands out.
#[derive(Debug, Clone)]
pub struct TokenSet {
    pub access_token: String,
    pub refresh_token: String,
    /// Seconds the access token lives.
    pub expires_in: i64,
    pub user: UserSummary,
    /// The session the tokens belong to (for the audit trail; not part of the answer).
    pub session_id: Uuid,
}

#[derive(Debug)]
pub enum LoginOutcome {
    Tokens(TokenSet),
    Challenge { temp_token: String },
}

/// Which second factor was accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Factor {
    Totp,
    RecoveryCode,
}

/// The caller's account as they see it.
#[derive(Debug, Clone)]
pub struct Account {
    pub id: Uuid,
    pub email: String,
    pub full_name: String,
    pub two_factor_enabled: bool,
    pub recovery_codes_remaining: i64,
    pub roles: Vec<String>,
    pub created_at: i64,
    pub email_verified: bool,
}

/// A pending TOTP secret, in the forms an authenticator app takes.
#[derive(Debug, Clone)]
pub struct TwoFactorSetup {
    pub secret_base32: String,
    pub otpauth_uri: String,
    pub qr_code_svg: String,
}

/// A session as its user sees it in the session list.
#[derive(Debug, Clone)]
pub struct SessionInfo {
    pub id: Uuid,
    pub created_at: i64,
    pub last_used_at: i64,
    pub ip: Option<String>,
    pub user_agent: Option<String>,
    /// Whether this is the session of the token making the call.
    pub current: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogoutScope {
    Current,
    Others,
    All,
}

impl LogoutScope {
    pub fn as_str(self) -> &'static str {
        match self {
            LogoutScope::Current => "current",
            LogoutScope::Others => "others",
            LogoutScope::All => "all",
        }
    }
}

/// Why sessions ended: the `reason` label of the revocation metric and the stored reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndReason {
    Logout,
    Deleted,
    PasswordChanged,
    RefreshReuse,
    AccountDisabled,
    PasswordSetByAdmin,
    PasswordReset,
    AccountDeleted,
    /// An operator turned the account's 2FA off (a lost authenticator).
    TwoFactorReset,
    /// An admin ended the account's sessions.
    EndedByAdmin,
}

impl EndReason {
    pub fn as_str(self) -> &'static str {
        match self {
            EndReason::Logout => "logout",
            EndReason::Deleted => "deleted",
            EndReason::PasswordChanged => "password_changed",
            EndReason::RefreshReuse => "refresh_reuse",
            EndReason::AccountDisabled => "account_disabled",
            EndReason::PasswordSetByAdmin => "password_set_by_admin",
            EndReason::PasswordReset => "password_reset",
            EndReason::AccountDeleted => "account_deleted",
            EndReason::TwoFactorReset => "two_factor_reset",
            EndReason::EndedByAdmin => "ended_by_admin",
        }
    }
}

/// A service registered to introspect tokens (`gatehouse clients add`).
#[derive(Debug, Clone)]
pub struct ApiClient {
    pub id: Uuid,
    pub name: String,
    /// Keyed hash of the secret (`Secrets::client_secret_hash`); the secret itself is shown once.
    pub secret_hash: Vec<u8>,
    pub created_at: i64,
}
