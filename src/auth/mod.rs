//! Authentication: passwords, tokens and their keys, TOTP, and the flows built from them. Each flow
//! is a type of its own, in the file of its name: `Login` (password and second factor), `Sessions`
//! (refresh, logout, the session list), `Accounts` (registration, profile, password, leaving),
//! `Addresses` (verification and address change), `TwoFactor` (enrolment), `Recovery`
//! (forgotten password), `Invitations`, `Passkeys`, `Guard` (who holds a token, for guarded
//! services), `BrowserSessions` (session cookies for guarded web applications), `Admin` and
//! `Housekeeping`. What they share is `Core`, built from `AuthParts`; `crate::flows` builds every
//! flow over one. They speak in domain terms (`model`); `http` turns them into calls and answers,
//! `store` keeps their data.

use std::sync::Arc;
use std::time::Duration;

use crate::clock::Clock;
use crate::crypto::Secrets;
use crate::mail::Mailer;
use crate::metrics::Metrics;
use crate::store::Store;

pub mod api_keys;
pub mod audit;
pub mod directory;
pub mod keys;
pub mod live;
pub mod passkeys;
pub mod password;
pub mod resources;
pub mod throttle;
pub mod tokens;
pub mod totp;

mod account;
pub(crate) mod browser;
mod core;
mod enrolment;
mod housekeeping;
mod invitation;
mod leaving;
mod login;
pub(crate) mod notices;
pub mod reauth;
pub(crate) mod recovery;
mod second_factor;
mod sessions;
mod verification;

pub use self::core::Core;
pub use account::Accounts;
pub use api_keys::ApiKeys;
pub use browser::BrowserSessions;
pub use enrolment::TwoFactor;
pub use housekeeping::Housekeeping;
pub use invitation::Invitations;
pub use login::Login;
pub use passkeys::Passkeys;
pub use recovery::Recovery;
pub use resources::{ResourceChanges, ResourceInput, Resources};
pub use sessions::Sessions;
pub use verification::Addresses;

use directory::Directory;
use live::LiveSessions;
use password::PasswordHasher;
use tokens::Tokens;

pub use crate::model::{LoginOutcome, LogoutScope};

/// Authentication methods (RFC 8176) recorded in a session's `amr`.
pub(crate) const AMR_PASSWORD: &str = "pwd";
const AMR_OTP: &str = "otp";
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
    pub catalog: Arc<resources::CatalogCell>,
}
