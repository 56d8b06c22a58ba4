//! STAND-IN until the registry branch lands: its `Client` model and `Clients::find`.
#![allow(dead_code)]

use uuid::Uuid;

pub use crate::crypto::SigningAlg;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientType {
    Confidential,
    Public,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GrantType {
    AuthorizationCode,
    RefreshToken,
    ClientCredentials,
}

#[derive(Debug, Clone)]
pub struct Client {
    pub id: Uuid,
    pub name: String,
    pub client_type: ClientType,
    pub first_party: bool,
    pub secret_hash: Vec<u8>,
    pub redirect_uris: Vec<String>,
    pub post_logout_redirect_uris: Vec<String>,
    pub grant_types: Vec<GrantType>,
    pub scopes: Vec<String>,
    pub backchannel_logout_uri: Option<String>,
    pub id_token_alg: SigningAlg,
    pub created_at: i64,
    pub updated_at: i64,
}

impl Client {
    pub fn allows_redirect(&self, uri: &str) -> bool {
        self.redirect_uris.iter().any(|u| u == uri)
    }
    pub fn has_grant(&self, grant: GrantType) -> bool {
        self.grant_types.contains(&grant)
    }
    pub fn is_public(&self) -> bool {
        self.client_type == ClientType::Public
    }
    pub fn allows_scope(&self, scope: &str) -> bool {
        self.scopes.iter().any(|s| s == scope)
    }
}

pub async fn find(
    clients: &crate::auth::Clients,
    id: &str,
) -> crate::error::Result<Option<Client>> {
    clients.find(id).await
}

impl crate::auth::Clients {
    pub async fn find(&self, _id: &str) -> crate::error::Result<Option<Client>> {
        Ok(None)
    }

    pub async fn authenticate(
        &self,
        _id: &str,
        _secret: &str,
        _ip: Option<std::net::IpAddr>,
    ) -> crate::error::Result<Option<Client>> {
        Ok(None)
    }
}
