//! The OpenID Connect provider's domain (docs/api.md §11): what its flows share, over `Core`,
//! without HTTP or SQL. `Provider` is the flows: the authorization (`authorize`), the token
//! endpoint's grants (`grants`), and the claims of ID tokens and userinfo (`claims`).

mod authorize;
mod claims;
mod code_exchange;
mod errors;
mod grants;
mod org_choice;
mod pkce;
pub mod scopes;

use std::sync::Arc;

use super::{Clients, Core, Sessions};

pub use authorize::{Authorization, AuthorizeRequest, Person};
pub use claims::UserInfoError;
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
