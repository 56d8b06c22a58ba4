//! Authentication: the accounts, how their owners prove who they are, and the sessions that
//! follows. Each flow is a type of its own, in the file of its name: `Login` (password and second
//! factor), `Sessions` (refresh, logout, the session list), `Accounts` (registration, profile,
//! password, leaving), `Addresses` (verification and address change), `TwoFactor` (enrolment),
//! `Recovery` (forgotten password), `Invitations` (an operator's), `Passkeys`, `ApiKeys`,
//! `BrowserSessions` (session cookies for guarded web applications), `Resources` (the operator's
//! APIs) and `Housekeeping`. What they share is `Core` (`core.rs`: the parts, the settings, the
//! steps more than one flow takes). They speak in domain terms (`model`); `store` keeps their data.
//!
//! This is the bottom of the flows: it imports none of the contexts that stand on it (`provider`,
//! `guard`, `orgs`, `federation`, `admin`), which `crate::flows` wires together over one `Core`.
//! Inside, the flows import `core` and the parts below it, never this file, which only lists them.

pub mod api_keys;
pub mod audit;
pub mod catalog;
pub mod directory;
pub mod dpop;
pub mod key_cache;
pub mod keys;
pub mod live;
pub mod passkeys;
pub mod password;
pub mod resources;
pub mod throttle;
pub mod tokens;
pub mod totp;

pub(crate) mod account;
pub(crate) mod browser;
pub(crate) mod core;
mod enrolment;
mod housekeeping;
mod invitation;
mod leaving;
pub(crate) mod login;
pub(crate) mod notices;
pub mod reauth;
pub(crate) mod recovery;
mod second_factor;
mod sessions;
pub(crate) mod verification;

pub(crate) use self::core::{AMR_FEDERATED, AMR_PASSWORD};
pub use self::core::{AuthParts, AuthSettings, Core, LinkSettings};
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

pub use crate::model::{LoginOutcome, LogoutScope};
