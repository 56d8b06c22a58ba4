//! What the OpenID provider's flows keep (docs/api.md §11): authorization codes and consents.

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
