//! Passkeys and their ceremonies as plain data: what the store keeps and the flows decide with.

use uuid::Uuid;

/// A registered passkey.
#[derive(Debug, Clone)]
pub struct StoredPasskey {
    pub id: Uuid,
    pub user_id: Uuid,
    /// The authenticator's credential id.
    pub credential_id: Vec<u8>,
    pub name: String,
    /// webauthn-rs's `Passkey`, serialised (public key, counter, backup flags).
    pub credential: String,
    pub sign_count: i64,
    pub backup_eligible: bool,
    pub backup_state: bool,
    pub created_at: i64,
    pub last_used_at: Option<i64>,
}

/// What a use of a passkey changed: written only if the counter moved forward (or both are 0).
#[derive(Debug, Clone)]
pub struct PasskeyUse<'a> {
    pub id: Uuid,
    pub credential: &'a str,
    pub sign_count: i64,
    pub backup_eligible: bool,
    pub backup_state: bool,
    pub at: i64,
}

/// Which ceremony: it decides how the finish goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CeremonyKind {
    /// A signed-in user adding a passkey.
    Register,
    /// Sign-in with an e-mail: the account's passkeys are listed to the authenticator.
    Login,
    /// Sign-in without an e-mail: the authenticator names the account (its user handle).
    Discoverable,
    /// The second factor of a password login's 2FA challenge.
    SecondFactor,
    /// A signed-in user opening the re-authentication window of their session.
    Reauthenticate,
}

impl CeremonyKind {
    pub fn as_str(self) -> &'static str {
        match self {
            CeremonyKind::Register => "register",
            CeremonyKind::Login => "login",
            CeremonyKind::Discoverable => "discoverable",
            CeremonyKind::SecondFactor => "second_factor",
            CeremonyKind::Reauthenticate => "reauthenticate",
        }
    }

    pub fn parse(s: &str) -> Option<CeremonyKind> {
        [
            CeremonyKind::Register,
            CeremonyKind::Login,
            CeremonyKind::Discoverable,
            CeremonyKind::SecondFactor,
            CeremonyKind::Reauthenticate,
        ]
        .into_iter()
        .find(|k| k.as_str() == s)
    }
}

/// A ceremony begun, as stored until a finish takes it.
#[derive(Debug, Clone)]
pub struct Ceremony {
    pub id: Uuid,
    pub kind: CeremonyKind,
    pub user_id: Option<Uuid>,
    pub temp_token_hash: Option<Vec<u8>>,
    /// webauthn-rs's ceremony state, serialised.
    pub state: String,
    pub expires_at: i64,
}
