//! What back-channel logout (docs/api.md §11) and consents keep: the notices waiting to be
//! delivered to clients, and the consents a person gave.

use uuid::Uuid;

/// An ended client session whose client is still to be told, as claimed by a delivery worker.
#[derive(Debug, Clone)]
pub struct PendingLogout {
    pub id: Uuid,
    pub client_id: Uuid,
    pub uri: String,
    /// The client's ID-token algorithm (`SigningAlg` name), which signs the logout token.
    pub alg: String,
    pub user_id: Uuid,
    pub session_id: Uuid,
    /// Attempts so far, this one included.
    pub attempts: i64,
    pub created_at: i64,
}

/// A person's consent to a third-party client, as the person sees it.
#[derive(Debug, Clone)]
pub struct ConsentInfo {
    pub client_id: Uuid,
    pub client_name: String,
    pub scopes: Vec<String>,
    pub granted_at: i64,
}
