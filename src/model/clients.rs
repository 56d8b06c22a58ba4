//! The clients of Gatehouse's OAuth 2.0 / OpenID Connect provider (docs/api.md §11): one registry
//! for relying parties that sign people in and for the services that introspect tokens (§6), which
//! are its confidential clients.

use std::fmt;

use uuid::Uuid;

// The JWS algorithm names are a leaf of the crate like this module: sharing the type keeps one
// spelling of `RS256` for the keys, the registry and discovery.
pub use crate::crypto::SigningAlg;

/// RFC 6749 §2.1. A public client (a SPA, a mobile app) cannot keep a secret: it has none, and
/// never gets `client_credentials` nor introspection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ClientType {
    Confidential,
    Public,
}

impl ClientType {
    pub fn as_str(self) -> &'static str {
        match self {
            ClientType::Confidential => "confidential",
            ClientType::Public => "public",
        }
    }

    pub fn parse(name: &str) -> Option<ClientType> {
        match name {
            "confidential" => Some(ClientType::Confidential),
            "public" => Some(ClientType::Public),
            _ => None,
        }
    }
}

/// The grants a client may use at the token endpoint, by their RFC 6749 names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum GrantType {
    AuthorizationCode,
    RefreshToken,
    ClientCredentials,
    /// RFC 8628: `urn:ietf:params:oauth:grant-type:device_code`.
    DeviceCode,
    /// RFC 8693: `urn:ietf:params:oauth:grant-type:token-exchange` (confidential clients only).
    TokenExchange,
}

impl GrantType {
    /// Every grant, in the order discovery lists them.
    pub const ALL: [GrantType; 5] = [
        GrantType::AuthorizationCode,
        GrantType::RefreshToken,
        GrantType::ClientCredentials,
        GrantType::DeviceCode,
        GrantType::TokenExchange,
    ];

    /// A client registered without grants has these (docs/api.md §11).
    pub const DEFAULT: [GrantType; 2] = [GrantType::AuthorizationCode, GrantType::RefreshToken];

    pub fn as_str(self) -> &'static str {
        match self {
            GrantType::AuthorizationCode => "authorization_code",
            GrantType::RefreshToken => "refresh_token",
            GrantType::ClientCredentials => "client_credentials",
            GrantType::DeviceCode => "urn:ietf:params:oauth:grant-type:device_code",
            GrantType::TokenExchange => "urn:ietf:params:oauth:grant-type:token-exchange",
        }
    }

    /// Exactly the RFC names (case-sensitive, as at the token endpoint).
    pub fn parse(name: &str) -> Option<GrantType> {
        GrantType::ALL.into_iter().find(|g| g.as_str() == name)
    }
}

impl fmt::Display for GrantType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a client came to be registered (docs/api.md §12).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientOrigin {
    /// By an operator: `gatehouse clients add` or the admin API.
    Operator,
    /// By itself, at `POST /oauth2/register` (RFC 7591).
    Registered,
    /// By the document it serves at `url`, which is its `client_id`; believed until
    /// `fresh_until` (ms), then fetched again.
    MetadataDocument { url: String, fresh_until: i64 },
}

impl ClientOrigin {
    pub fn as_str(&self) -> &'static str {
        match self {
            ClientOrigin::Operator => "operator",
            ClientOrigin::Registered => "registered",
            ClientOrigin::MetadataDocument { .. } => "metadata_document",
        }
    }
}

/// A registered client. Built only by the registry (`provider::Clients`), which checks every field;
/// the store reads back what it wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Client {
    pub id: Uuid,
    pub name: String,
    pub client_type: ClientType,
    /// First-party clients (the team's own apps) skip the consent page.
    pub first_party: bool,
    /// Keyed hash of the secret (`Secrets::client_secret_hash`), shown once; empty for a public
    /// client, which no presented secret can match.
    pub secret_hash: Vec<u8>,
    /// Absolute URIs, compared by `allows_redirect`.
    pub redirect_uris: Vec<String>,
    pub post_logout_redirect_uris: Vec<String>,
    pub grant_types: Vec<GrantType>,
    /// From `provider::scopes::SUPPORTED`.
    pub scopes: Vec<String>,
    pub backchannel_logout_uri: Option<String>,
    /// How its ID tokens (and logout tokens) are signed.
    pub id_token_alg: SigningAlg,
    pub created_at: i64,
    /// The organisation the client belongs to (docs/api.md §13): its client-credentials tokens
    /// name it, and people authorizing it act in it. Set at registration, never changed.
    pub org_id: Option<Uuid>,
    /// Last change (ms); every instance reads a client again within `CLIENT_CACHE_MS`.
    pub updated_at: i64,
    pub origin: ClientOrigin,
    /// A resource server the operator lets introspect tokens (RFC 7662, docs/api.md §6): only a
    /// confidential client an operator registered with this flag, never one that registered
    /// itself.
    pub introspection: bool,
    /// The secret before the last rotation, still good until the time (ms) beside it: a relying
    /// party is given the new one without an outage (docs/api.md §11).
    pub previous_secret: Option<(Vec<u8>, i64)>,
    /// Must use PKCE. Always for a public client; an operator may let a confidential one off (a
    /// legacy relying party), whose authorizations must then carry `nonce` for `openid`.
    pub pkce_required: bool,
    /// Must prove a DPoP key at the token endpoint (RFC 9449 §5.2): every token it gets is bound.
    pub dpop_required: bool,
}

impl Client {
    /// The `client_id` the client knows itself by: its document's URL for a metadata-document
    /// client (ID tokens' `aud` must be it), else its id.
    pub fn client_id(&self) -> String {
        match &self.origin {
            ClientOrigin::MetadataDocument { url, .. } => url.clone(),
            _ => self.id.to_string(),
        }
    }

    /// Whether `uri` is one of the client's redirect URIs: exactly (RFC 9700 §4.1.3), or a
    /// registered loopback `http://127.0.0.1` / `http://[::1]` URI on another port (RFC 8252 §7.3).
    pub fn allows_redirect(&self, uri: &str) -> bool {
        crate::addresses::redirect::allows(&self.redirect_uris, uri)
    }

    /// Whether `uri` is one of the client's post-logout redirect URIs (same rules).
    pub fn allows_post_logout_redirect(&self, uri: &str) -> bool {
        crate::addresses::redirect::allows(&self.post_logout_redirect_uris, uri)
    }

    pub fn has_grant(&self, grant: GrantType) -> bool {
        self.grant_types.contains(&grant)
    }

    /// Registered by no operator: by itself (RFC 7591) or by the document it serves. Anyone can
    /// make such a client with any redirect URI, so Gatehouse's origin never sends a browser to
    /// one of its URIs on the client's word alone (docs/api.md §11).
    pub fn self_registered(&self) -> bool {
        self.origin != ClientOrigin::Operator
    }

    pub fn is_public(&self) -> bool {
        self.client_type == ClientType::Public
    }

    /// Whether the client is registered for `scope`.
    pub fn allows_scope(&self, scope: &str) -> bool {
        self.scopes.iter().any(|s| s == scope)
    }
}
