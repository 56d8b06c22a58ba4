//! The one error type of the service's flows: every failure a caller can see has a variant here
//! with a stable machine code, so the HTTP layer maps errors to responses in exactly one place.
//! Failures of the HTTP exchange itself (bad JSON, a body too large or too slow, a wrong method)
//! are the HTTP layer's own (`http::error::RequestError`): no flow can meet them.

use std::collections::BTreeMap;

/// Field name → reason, reported under `details.fields` of a `VALIDATION_ERROR`.
pub type FieldErrors = BTreeMap<String, String>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("the request is not valid")]
    Validation(FieldErrors),
    #[error("{0}")]
    WeakPassword(PasswordProblem),
    #[error("the e-mail address or password is wrong")]
    InvalidCredentials,
    #[error("this call needs an access token: send Authorization: Bearer <token>")]
    Unauthenticated,
    #[error("the access token has expired: refresh it")]
    TokenExpired,
    #[error("the access token is not valid")]
    TokenInvalid,
    #[error("the second-factor code is wrong")]
    Invalid2faCode { attempts_remaining: u32 },
    #[error("the two-factor challenge is not valid: log in again")]
    TempTokenInvalid,
    #[error("the refresh token is not valid: log in again")]
    RefreshTokenInvalid,
    #[error("this account is disabled")]
    AccountDisabled,
    /// A bearer call re-checked the user's password and it was wrong (403, the token is fine).
    #[error("the password is wrong")]
    PasswordRecheckFailed,
    /// A bearer call re-checked a second-factor code and it was wrong (403, the token is fine).
    #[error("the second-factor code is wrong")]
    CodeRecheckFailed,
    #[error("self-registration is closed on this server")]
    RegistrationClosed,
    #[error("not found")]
    NotFound,
    #[error("an account with this e-mail address exists already")]
    EmailTaken,
    #[error("two-factor authentication is enabled already")]
    TwoFactorAlreadyEnabled,
    #[error("two-factor authentication is not enabled")]
    TwoFactorNotEnabled,
    #[error("there is no pending secret to confirm: set up two-factor authentication first")]
    TwoFactorNotSetUp,
    #[error("too many attempts: try again in {retry_after} seconds")]
    RateLimited { retry_after: u64 },
    #[error("the database cannot be reached")]
    Unavailable(#[source] anyhow::Error),
    /// More password checks are waiting than the server will queue (a login flood).
    #[error("the server is too busy: try again in {retry_after} seconds")]
    Overloaded { retry_after: u64 },
    #[error("internal error")]
    Internal(#[source] anyhow::Error),
    /// A passkey ceremony failed, whatever the reason (unknown, expired or used ceremony, bad
    /// signature, wrong origin, cloned authenticator): the reason is audited, never answered.
    #[error("the passkey could not be verified: start again")]
    PasskeyInvalid,
    /// A bearer call's passkey re-authentication failed (403: the token is fine, as with
    /// `PasswordRecheckFailed`); the reason is audited, never answered.
    #[error("the passkey could not be verified: start again")]
    PasskeyRecheckFailed,
    /// No relying party is configured (the public URL's host is an IP address).
    #[error("passkeys are not set up on this server")]
    PasskeysOff,
    /// A mailed token (reset, verification, invitation) unknown, expired, used or voided.
    #[error("this link is not valid: it has expired, was used, or a newer one was sent")]
    LinkInvalid,
    /// A right password for an account whose address is not verified, where that is required.
    #[error("confirm your e-mail address first: open the link mailed to you")]
    EmailNotVerified,
    /// An administration call by an account without the `admin` role; an organisation's call by
    /// a member whose roles do not allow it; an invitation accepted by another address.
    #[error("your roles do not allow this call")]
    Forbidden,
    /// A business call with a client's token whose `scope` lacks the call's (docs/api.md §11).
    #[error("this token's scopes do not allow this call: it needs {0}")]
    InsufficientScope(&'static str),
    /// One of the person's own calls (account, organisations, administration) with a token a
    /// client was given (docs/api.md §11 "Scopes") or a personal API key (§12).
    #[error(
        "a token given to a client, or an API key, reaches only the business API its scopes name; this call needs the person's own sign-in"
    )]
    ClientToken,
    /// An administration call by an admin whose session's login had no second factor.
    #[error(
        "this call needs a session signed in with a second factor: log in with 2FA or a passkey"
    )]
    TwoFactorRequired,
    /// An administration call that would lock the admin out, or that the account's state refuses.
    #[error("{0}")]
    Conflict(Conflict),
    /// A password sign-in or registration for an address under an identity provider's `domains`
    /// (docs/api.md §14): such addresses sign in through that provider (its id).
    #[error("addresses of this domain sign in through their organisation's identity provider")]
    SsoRequired { provider: String },
    /// An identity provider whose discovery is not done or that cannot be reached.
    #[error("the identity provider cannot be reached now: try again later")]
    ProviderUnavailable,
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The password policy's lengths, in characters (docs/api.md §5).
pub const PASSWORD_MIN: usize = 8;
pub const PASSWORD_MAX: usize = 256;

/// Why a new password breaks the policy (docs/api.md §5). The API document's examples are these
/// very messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PasswordProblem {
    #[error("the password must be at least {} characters long", PASSWORD_MIN)]
    TooShort,
    #[error("the password must be at most {} characters long", PASSWORD_MAX)]
    TooLong,
    #[error("this password is among the most common breached passwords: choose another")]
    Common,
}

/// Why a call conflicts with the state of things (409 `CONFLICT`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Conflict {
    /// An admin acting on their own account in a way that would shut them out of the API.
    #[error("an admin cannot {0} their own account: ask another admin")]
    OwnAccount(OwnAction),
    #[error("the account is disabled: enable it first")]
    AccountDisabled,
    /// An organisation's slug is another's (docs/api.md §13).
    #[error("this slug is in use by another organisation: choose another")]
    SlugTaken,
    /// A change that would leave an organisation without an owner.
    #[error("an organisation needs an owner: make another member owner first")]
    LastOwner,
    /// A person's 51st API key (docs/api.md §12).
    #[error("an account has at most 50 API keys: delete one first")]
    TooManyApiKeys,
    /// Linking an identity of a provider the account has one of already (docs/api.md §14).
    #[error("an identity at this provider is linked to your account already: unlink it first")]
    AlreadyLinked,
    /// Unlinking the account's last way in: no password, no passkey, no other identity.
    #[error("this is your account's only way to sign in: set a password or add a passkey first")]
    LastWayIn,
    /// A resource's id or audience is another's (docs/guide/resources.md).
    #[error("a resource with this id or audience exists already")]
    ResourceTaken,
    /// A change to a resource of the settings (the contacts example, `GATEHOUSE_RESOURCES`).
    #[error("this resource is declared in the settings: change it there")]
    ResourceInSettings,
}

/// What an admin may not do to their own account.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum OwnAction {
    #[error("disable")]
    Disable,
    #[error("remove the admin role from")]
    RemoveAdmin,
    #[error("reset the second factor of")]
    ResetSecondFactor,
    #[error("delete")]
    Delete,
}

impl Error {
    /// A `VALIDATION_ERROR` naming one field.
    pub fn field(name: &str, reason: impl Into<String>) -> Self {
        Error::Validation(BTreeMap::from([(name.to_owned(), reason.into())]))
    }

    pub fn internal(error: impl Into<anyhow::Error>) -> Self {
        Error::Internal(error.into())
    }
}

/// Collects the reasons a request is invalid, so one answer names every bad field.
#[derive(Debug, Default)]
pub struct Validator {
    fields: FieldErrors,
}

impl Validator {
    pub fn new() -> Self {
        Self::default()
    }

    /// Keeps the value of `result`, or records its error under `field`.
    pub fn check<T>(&mut self, field: &str, result: Result<T, String>) -> Option<T> {
        match result {
            Ok(value) => Some(value),
            Err(reason) => {
                self.fields.entry(field.to_owned()).or_insert(reason);
                None
            }
        }
    }

    /// The parsed value when every check passed; `value` is built from the `check` results, so it
    /// is `Some` exactly when no reason was recorded.
    pub fn finish<T>(self, value: Option<T>) -> Result<T> {
        if !self.fields.is_empty() {
            return Err(Error::Validation(self.fields));
        }
        value.ok_or_else(|| Error::internal(anyhow::anyhow!("a check failed without a reason")))
    }
}
