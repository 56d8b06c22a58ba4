//! The OpenID Connect provider's domain (docs/api.md §11): what its flows share, over `Core`,
//! without HTTP or SQL. `Provider` is the flows: the authorization (`authorize`), the token
//! endpoint's grants (`grants`), and the claims of ID tokens and userinfo (`claims`).

mod authorize;
mod claims;
mod grants;
mod org_choice;
mod pkce;
pub mod scopes;

use std::sync::Arc;

use super::{Clients, Core, Sessions};
use crate::error::Error;

pub use authorize::{Authorization, AuthorizeRequest, Person};
pub use claims::UserInfoError;
pub use grants::TokenRequest;

/// An OAuth error answer (RFC 6749 §4.1.2.1 and §5.2): its code and a sentence for developers.
#[derive(Debug)]
pub enum OAuthFailure {
    Refused {
        error: &'static str,
        description: String,
    },
    /// Not the client's doing (the database, a bug): the endpoint's own error answer.
    Failed(Error),
}

impl OAuthFailure {
    pub fn refused(error: &'static str, description: impl Into<String>) -> Self {
        OAuthFailure::Refused {
            error,
            description: description.into(),
        }
    }
}

impl From<Error> for OAuthFailure {
    fn from(error: Error) -> Self {
        OAuthFailure::Failed(error)
    }
}

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
