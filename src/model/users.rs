//! Accounts as the store keeps them and as their owners and admins see them.

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
    /// Argon2id PHC string; empty: the account has no password (made by another identity
    /// provider, docs/api.md §14).
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
    /// The identity provider whose word verified the address (the one that made the account);
    /// `None` when the account proved it itself (a mailed link) or an operator made it. A
    /// provider's word is good for that provider only (docs/guide/providers.md).
    pub email_verified_by: Option<String>,
}

impl User {
    pub fn two_factor_enabled(&self) -> bool {
        self.totp_secret.is_some()
    }
}

/// The sign-in methods an account has besides its password: what a first proof of its address
/// removes, and what the notices name. The one place a new kind of credential (API keys, linked
/// identities: docs/api.md §12, §14) is added, with its removal in `store::credentials`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SignInMethods {
    /// Passkeys: their names and when they were added (ms), oldest first.
    pub passkeys: Vec<(String, i64)>,
    /// A TOTP authenticator, with its recovery codes.
    pub authenticator: bool,
    /// Identities at other providers (docs/api.md §14): the providers' ids.
    pub identities: Vec<String>,
}

impl SignInMethods {
    pub fn is_empty(&self) -> bool {
        self.passkeys.is_empty() && !self.authenticator && self.identities.is_empty()
    }
}

/// What proving the account's address (a password reset, a verification link) did to its other
/// sign-in methods. An address that was never verified had shown no one that it reaches the owner:
/// whoever added a passkey or an authenticator then may have registered someone else's address,
/// so they are removed. Once the address was verified, they remain.
#[derive(Debug, Clone, Default)]
pub struct AddressProof {
    pub removed: SignInMethods,
    pub remaining: SignInMethods,
}

/// An account as the administration API shows it.
#[derive(Debug, Clone)]
pub struct ManagedUser {
    pub user: User,
    /// How many passkeys it has.
    pub passkeys: i64,
    /// Its identities at other providers (docs/api.md §14): (provider id, subject), by provider.
    pub identities: Vec<(String, String)>,
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
    /// Until when (ms) the asking session is re-authenticated, if it is now.
    pub reauthenticated_until: Option<i64>,
    /// False for an account made by another identity provider, until a password is set.
    pub has_password: bool,
}

/// A pending TOTP secret, in the forms an authenticator app takes.
#[derive(Debug, Clone)]
pub struct TwoFactorSetup {
    pub secret_base32: String,
    pub otpauth_uri: String,
    pub qr_code_svg: String,
}
