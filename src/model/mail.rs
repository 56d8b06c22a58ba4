//! Mail waiting in the outbox (docs/api.md §7), as the store keeps it.

use uuid::Uuid;

/// A mail rendered and sealed, as the outbox keeps it until it is delivered.
#[derive(Debug, Clone)]
pub struct OutboxMail {
    pub id: Uuid,
    pub recipient: String,
    /// The RFC 5322 message, sealed (`Mailer::open`).
    pub message: Vec<u8>,
    pub kind: &'static str,
    pub created_at: i64,
}

/// A mail taken from the outbox by a worker.
#[derive(Debug, Clone)]
pub struct PendingMail {
    pub id: Uuid,
    pub recipient: String,
    pub message: Vec<u8>,
    pub kind: String,
    /// Attempts so far, this one included.
    pub attempts: i64,
}
