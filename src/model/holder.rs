//! Who holds a live access token, as a guarded service is told (forward-auth, introspection): a
//! person, or a client holding a token for itself (`client_credentials`, docs/api.md §12), which
//! names no person and so has no e-mail, roles, session or second factor, or a person's API key
//! (§12), which speaks for its owner within its scopes but belongs to no session.

use uuid::Uuid;

use super::{Identity, KeyIdentity};

#[derive(Debug, Clone)]
pub enum Holder {
    /// The person's own sign-in, a session cookie, or a client acting for the person.
    Person(Identity),
    /// A client for itself.
    Client(ClientIdentity),
    /// A person's API key.
    Key(KeyIdentity),
}

/// A client holding a token for itself, as registered now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientIdentity {
    pub client_id: Uuid,
    /// The organisation the token names (a client bound to one, issue 27); `None` without one.
    pub org_id: Option<Uuid>,
    /// The token's scopes.
    pub scopes: super::ApiScopes,
    /// The DPoP key its token is bound to (RFC 9449), proved for the request; `None`: bearer.
    pub dpop: Option<String>,
}

impl Holder {
    /// Whether the credential holds any of `scopes`: a client's token or an API key by its
    /// `scope`; the person's own sign-in holds every one.
    pub fn holds_any(&self, scopes: &[String]) -> bool {
        let held = match self {
            Holder::Person(who) => match &who.scopes {
                None => return true,
                Some(held) => held,
            },
            Holder::Client(client) => &client.scopes,
            Holder::Key(key) => &key.scopes,
        };
        scopes.iter().any(|s| held.has(s))
    }

    /// `Remote-User`: the person's id, or the client's.
    pub fn subject(&self) -> Uuid {
        match self {
            Holder::Person(who) => who.user_id,
            Holder::Client(client) => client.client_id,
            Holder::Key(key) => key.user_id,
        }
    }

    /// The client the token was issued to (`Remote-Client`): the client itself, or the client a
    /// person's token was given to; `None` for the person's own sign-in.
    pub fn client(&self) -> Option<String> {
        match self {
            Holder::Person(who) => who.client.clone(),
            Holder::Client(client) => Some(client.client_id.to_string()),
            Holder::Key(_) => None,
        }
    }
}
