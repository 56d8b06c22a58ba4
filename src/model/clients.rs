//! Services registered to call Gatehouse as clients (introspection).

use uuid::Uuid;

/// A service registered to introspect tokens (`gatehouse clients add`).
#[derive(Debug, Clone)]
pub struct ApiClient {
    pub id: Uuid,
    pub name: String,
    /// Keyed hash of the secret (`Secrets::client_secret_hash`); the secret itself is shown once.
    pub secret_hash: Vec<u8>,
    pub created_at: i64,
}
