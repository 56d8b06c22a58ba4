//! What the OpenID provider's flows keep (docs/api.md §11): authorization codes, consents and
//! device authorizations.

use uuid::Uuid;

/// An authorization code as recorded (its value is known only by its SHA-256): what it was
/// issued for, and so what its exchange must match.
#[derive(Debug, Clone)]
pub struct AuthorizationCode {
    pub client_id: Uuid,
    pub user_id: Uuid,
    /// The person's own session that authorized.
    pub parent_id: Uuid,
    pub redirect_uri: String,
    /// The PKCE S256 challenge (base64url of the verifier's SHA-256).
    pub code_challenge: String,
    pub scope: Vec<String>,
    pub nonce: Option<String>,
    /// The RFC 8707 resource asked for, if any.
    pub audience: Option<String>,
    pub amr: Vec<String>,
    /// When the person authenticated (ms).
    pub auth_time: i64,
    pub expires_at: i64,
    /// The organisation the authorization acts in (docs/api.md §13), if any.
    pub org_id: Option<Uuid>,
}

/// What a person allowed a third-party client: the scopes, and the organisation they chose (a
/// remembered consent authorizes in it again).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Consent {
    pub scopes: Vec<String>,
    pub org_id: Option<Uuid>,
}

/// What the single use of a code found.
#[derive(Debug, Clone)]
pub enum Redemption {
    /// The code's first use: it is used up now, its exchange begins `session_id`.
    First(AuthorizationCode),
    /// The code was used before; its first use began this session (if it got that far).
    Replayed {
        session_id: Option<Uuid>,
        user_id: Uuid,
    },
    /// Unknown or expired.
    Unknown,
}

/// A device authorization (RFC 8628) waiting for the person: what the client asked for.
#[derive(Debug, Clone)]
pub struct DeviceRequest {
    pub client_id: Uuid,
    pub scope: Vec<String>,
    /// The RFC 8707 resource asked for, if any.
    pub audience: Option<String>,
    pub created_at: i64,
    pub expires_at: i64,
    /// The least time between two polls (ms).
    pub interval_ms: i64,
}

/// The person's answer on the device page.
#[derive(Debug, Clone)]
pub enum DeviceDecision {
    /// Allowed, by the person's own session `parent_id` (how it signed in, and when), acting in
    /// `org_id`.
    Approved {
        user_id: Uuid,
        parent_id: Uuid,
        amr: Vec<String>,
        auth_time: i64,
        org_id: Option<Uuid>,
    },
    Denied,
}

/// Where a device authorization stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceStatus {
    Pending,
    Approved,
    Denied,
}

impl DeviceStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            DeviceStatus::Pending => "pending",
            DeviceStatus::Approved => "approved",
            DeviceStatus::Denied => "denied",
        }
    }

    pub fn parse(text: &str) -> Option<DeviceStatus> {
        [
            DeviceStatus::Pending,
            DeviceStatus::Approved,
            DeviceStatus::Denied,
        ]
        .into_iter()
        .find(|s| s.as_str() == text)
    }
}

/// What a client's poll found (RFC 8628 §3.4), the poll counted.
#[derive(Debug, Clone)]
pub struct DevicePoll {
    pub status: DeviceStatus,
    /// The poll came before the interval had passed since the one before (the interval has grown
    /// by 5 s for it).
    pub early: bool,
    pub expires_at: i64,
    /// Collected already: when, and the session its collection began.
    pub used: Option<(i64, Option<Uuid>)>,
    pub user_id: Option<Uuid>,
}
