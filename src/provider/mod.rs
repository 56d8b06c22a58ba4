//! The OpenID provider (docs/api.md §11–§12), without HTTP or SQL: the registry of clients
//! (`clients`: added by operators, registered by themselves, or read from a metadata document),
//! the authorization (`authorize`), the token endpoint's grants (`grants`, `code_exchange`), the
//! claims of ID tokens and userinfo (`claims`), revocation and logout (`logout`), and the protocol's
//! errors (`errors`), the device grant (`device`), delegation by token exchange (`exchange`), and
//! what acts for a person (`connected`). DPoP goes here.
//!
//! It stands on `auth` (the shared `Core`, sessions, tokens, the audit trail) and is called by
//! `flows`, `http` and the CLI; nothing in `auth` calls it.

mod authorize;
mod claims;
pub mod clients;
mod code_exchange;
mod connected;
mod device;
mod errors;
mod exchange;
mod grants;
mod org_choice;
mod pkce;
pub mod scopes;

use std::sync::Arc;

use crate::auth::{Core, Sessions};

pub use authorize::{Authorization, AuthorizeRequest, Person};
pub use claims::UserInfoError;
pub use clients::{ClientChanges, ClientMetadata, Clients, NewClient, SECRET_OVERLAP_MAX_MS};
pub use connected::ConnectedApp;
pub use device::DeviceAnswer;
pub use errors::{OAuthError, OAuthFailure, Refusal};
pub use grants::TokenRequest;

/// The provider's flows.
#[derive(Clone)]
pub struct Provider {
    pub(super) core: Arc<Core>,
    pub(super) clients: Clients,
    pub(super) sessions: Sessions,
}

impl Provider {
    pub(crate) fn new(core: Arc<Core>, clients: Clients, sessions: Sessions) -> Self {
        Provider {
            core,
            clients,
            sessions,
        }
    }
}
pub mod logout;
