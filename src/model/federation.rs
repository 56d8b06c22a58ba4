//! Identities at other OpenID providers linked to accounts, and the sign-ins through them under
//! way (docs/api.md §14).

use uuid::Uuid;

/// An identity at an upstream provider, linked to an account.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FederatedIdentity {
    /// The provider's `id` in the providers file.
    pub provider_id: String,
    /// The ID token's `sub`.
    pub subject: String,
    pub user_id: Uuid,
    /// The address as the provider last said.
    pub email: Option<String>,
    /// ms.
    pub linked_at: i64,
    /// ms; `None` before the first sign-in through it.
    pub last_used_at: Option<i64>,
}

/// A sign-in or link under way: what the callback needs to finish it, found by the hash of the
/// browser's binding cookie.
#[derive(Debug, Clone)]
pub struct FederationFlow {
    /// SHA-256 of the binding cookie's value.
    pub binding_hash: [u8; 32],
    pub provider_id: String,
    /// SHA-256 of the `state` sent to the provider.
    pub state_hash: [u8; 32],
    pub nonce: String,
    /// The PKCE verifier, sealed under the master key (context: `binding_hash`).
    pub sealed_verifier: Vec<u8>,
    pub return_to: String,
    pub purpose: FlowPurpose,
    /// A link or a re-authentication: the account and the session that started it.
    pub account: Option<(Uuid, Uuid)>,
    /// ms.
    pub expires_at: i64,
}

/// What a flow through a provider is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlowPurpose {
    SignIn,
    /// Link the identity to the account that began the flow.
    Link,
    /// Prove again, through the identity linked to its account, who holds the session that began
    /// the flow (docs/api.md §3's re-authentication).
    Reauthenticate,
}

impl FlowPurpose {
    pub fn as_str(self) -> &'static str {
        match self {
            FlowPurpose::SignIn => "sign_in",
            FlowPurpose::Link => "link",
            FlowPurpose::Reauthenticate => "reauthenticate",
        }
    }

    pub fn parse(stored: &str) -> Option<FlowPurpose> {
        [
            FlowPurpose::SignIn,
            FlowPurpose::Link,
            FlowPurpose::Reauthenticate,
        ]
        .into_iter()
        .find(|p| p.as_str() == stored)
    }
}

/// What linking an identity to an account found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Linked {
    Done,
    /// The identity is linked to another account.
    TakenByOther,
    /// This account has an identity at that provider already.
    ProviderTaken,
}

/// What unlinking found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unlinked {
    Done,
    /// No identity of the account at that provider.
    NotFound,
    /// It is the account's last way in: no password, no passkey, no other identity.
    LastWayIn,
}
