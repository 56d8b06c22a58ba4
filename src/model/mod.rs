//! The data the service keeps and decides with, as plain types: the store reads and writes them, the
//! flows (`auth`, `crm`, `mail`) decide with them, and `http` turns them into answers. A leaf: it
//! depends on nothing of the crate, so every floor above can share it.

pub mod api_keys;
pub mod clients;
pub mod contacts;
pub mod federation;
pub mod holder;
pub mod logouts;
pub mod mail;
pub mod oauth;
pub mod orgs;
pub mod passkeys;
pub mod resources;
pub mod sessions;
pub mod users;

pub use api_keys::{ApiKey, KeyIdentity, NewApiKey};
pub use clients::{Client, ClientOrigin, ClientType, GrantType};
pub use federation::{FederatedIdentity, FederationFlow, FlowPurpose, Linked, Unlinked};
pub use holder::{ClientIdentity, Holder};
pub use resources::{Catalog, Resource, ResourceOrigin, ResourceScope};
pub use sessions::{
    ApiScopes, ClientGrant, ClientInfo, CookieSession, EndReason, Factor, Identity, LoginOutcome,
    LogoutScope, Principal, RefreshRecord, Session, SessionInfo, TokenSet, is_multi_factor,
};
pub use users::{
    Account, AddressProof, ManagedUser, SignInMethods, TwoFactorSetup, User, UserSummary,
};

/// A page of a list, and where the next one starts (`None`: this was the last).
#[derive(Debug, Clone)]
pub struct Page<T> {
    pub items: Vec<T>,
    pub next_cursor: Option<String>,
}
