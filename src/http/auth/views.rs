//! The answers of `/auth/…` as JSON (camelCase, with their OpenAPI schemas), made from the flows'
//! plain results.

use serde::Serialize;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::clock::rfc3339;
use crate::model::{Account, SessionInfo, TokenSet, TwoFactorSetup, UserSummary};

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UserView {
    pub id: Uuid,
    #[schema(example = "ada@example.com")]
    pub email: String,
    #[schema(example = "Ada Lovelace")]
    pub full_name: String,
}

impl From<UserSummary> for UserView {
    fn from(u: UserSummary) -> Self {
        UserView {
            id: u.id,
            email: u.email,
            full_name: u.full_name,
        }
    }
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = TokenSet)]
pub struct TokenSetView {
    /// Ed25519 JWT (`typ: at+jwt`) for `Authorization: Bearer`; verifiable with the JWK Set.
    #[schema(
        example = "eyJhbGciOiJFZERTQSIsImtpZCI6Ii4uLiIsInR5cCI6ImF0K2p3dCJ9.eyJzdWIiOiIuLi4ifQ.c2ln"
    )]
    pub access_token: String,
    /// For `POST /auth/refresh`, once; valid for the refresh-token lifetime (30 days by default)
    /// from now.
    #[schema(
        example = "eyJhbGciOiJFZERTQSIsImtpZCI6Ii4uLiIsInR5cCI6InJlZnJlc2grand0In0.eyJzaWQiOiIuLi4ifQ.c2ln"
    )]
    pub refresh_token: String,
    /// Seconds the access token lives.
    #[schema(example = 86400)]
    pub expires_in: i64,
    pub user: UserView,
}

impl From<TokenSet> for TokenSetView {
    fn from(t: TokenSet) -> Self {
        TokenSetView {
            access_token: t.access_token,
            refresh_token: t.refresh_token,
            expires_in: t.expires_in,
            user: t.user.into(),
        }
    }
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Me {
    pub id: Uuid,
    #[schema(example = "ada@example.com")]
    pub email: String,
    #[schema(example = "Ada Lovelace")]
    pub full_name: String,
    pub two_factor_enabled: bool,
    /// Unused recovery codes left (0 without 2FA).
    #[schema(example = 10)]
    pub recovery_codes_remaining: i64,
    /// The account's current roles (docs/api.md §6), sorted.
    #[schema(example = json!(["admin"]))]
    pub roles: Vec<String>,
    #[schema(format = DateTime, example = "2026-11-21T09:30:00.417Z")]
    pub created_at: String,
    /// Whether a link mailed to the address came back (or an operator made the account).
    pub email_verified: bool,
    /// Until when this session needs no password at the calls that re-check it
    /// (`POST /auth/reauthenticate`); `null` when it is not re-authenticated now.
    #[schema(format = DateTime, example = "2026-11-21T09:35:00.417Z")]
    pub reauthenticated_until: Option<String>,
    /// False for an account another identity provider made (docs/api.md §14) until its owner sets
    /// a password with the reset link: the calls that re-check the password cannot be given one.
    pub has_password: bool,
}

impl From<Account> for Me {
    fn from(a: Account) -> Self {
        Me {
            id: a.id,
            email: a.email,
            full_name: a.full_name,
            two_factor_enabled: a.two_factor_enabled,
            recovery_codes_remaining: a.recovery_codes_remaining,
            roles: a.roles,
            created_at: rfc3339(a.created_at),
            email_verified: a.email_verified,
            reauthenticated_until: a.reauthenticated_until.map(rfc3339),
            has_password: a.has_password,
        }
    }
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = TwoFactorSetup)]
pub struct TwoFactorSetupView {
    /// The TOTP secret, base32 (160 bits), for typing into an authenticator app.
    #[schema(example = "JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP")]
    pub secret: String,
    #[schema(
        example = "otpauth://totp/Gatehouse:ada@example.com?secret=JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP&issuer=Gatehouse&algorithm=SHA1&digits=6&period=30"
    )]
    pub otpauth_uri: String,
    /// The URI as a QR code, an SVG document.
    #[schema(example = "<svg xmlns=\"http://www.w3.org/2000/svg\" …</svg>")]
    pub qr_code_svg: String,
}

impl From<TwoFactorSetup> for TwoFactorSetupView {
    fn from(s: TwoFactorSetup) -> Self {
        TwoFactorSetupView {
            secret: s.secret_base32,
            otpauth_uri: s.otpauth_uri,
            qr_code_svg: s.qr_code_svg,
        }
    }
}

/// A session as its user sees it in the session list.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionView {
    pub id: Uuid,
    #[schema(format = DateTime, example = "2026-11-21T09:30:00.417Z")]
    pub created_at: String,
    /// The last refresh or bearer call (to within 15 s).
    #[schema(format = DateTime, example = "2026-11-21T10:02:13.052Z")]
    pub last_used_at: String,
    /// The client address at login.
    #[schema(example = "203.0.113.9")]
    pub ip: Option<String>,
    #[schema(example = "Mozilla/5.0 (X11; Linux x86_64)")]
    pub user_agent: Option<String>,
    /// How it was signed in (RFC 8176): `pwd` (a password), `otp` (a code), `hwk` and `user` (a
    /// passkey), `fed` (another identity provider), `mfa`.
    #[schema(example = json!(["pwd", "otp"]))]
    pub amr: Vec<String>,
    /// Whether this is the session of the token making the call.
    pub current: bool,
    /// The client the session was given to (docs/api.md §11: "sign in with Gatehouse");
    /// `null` for the person's own sign-ins. Ending it ends the client's tokens.
    pub client: Option<SessionClient>,
}

/// A client a session was given to.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionClient {
    #[schema(format = Uuid)]
    pub client_id: String,
    #[schema(example = "Grafana")]
    pub name: String,
}

impl From<SessionInfo> for SessionView {
    fn from(s: SessionInfo) -> Self {
        SessionView {
            id: s.id,
            created_at: rfc3339(s.created_at),
            last_used_at: rfc3339(s.last_used_at),
            ip: s.ip,
            user_agent: s.user_agent,
            amr: s.amr,
            current: s.current,
            client: s.client.map(|(id, name)| SessionClient {
                client_id: id.to_string(),
                name,
            }),
        }
    }
}

/// The id of what was deleted.
#[derive(Serialize, ToSchema)]
pub struct Deleted {
    pub id: Uuid,
}

/// `{}`: done, nothing to tell.
#[derive(Serialize, ToSchema)]
pub struct Done {}

/// A passkey as its owner sees it (docs/api.md §9).
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = Passkey)]
pub struct PasskeyView {
    pub id: Uuid,
    #[schema(example = "Laptop")]
    pub name: String,
    #[schema(format = DateTime, example = "2026-11-21T09:30:00.417Z")]
    pub created_at: String,
    /// The last sign-in with it; `null` before the first.
    #[schema(format = DateTime, example = "2026-11-22T08:01:45.200Z")]
    pub last_used_at: Option<String>,
}

impl From<crate::auth::passkeys::PasskeyInfo> for PasskeyView {
    fn from(p: crate::auth::passkeys::PasskeyInfo) -> Self {
        PasskeyView {
            id: p.id,
            name: p.name,
            created_at: rfc3339(p.created_at),
            last_used_at: p.last_used_at.map(rfc3339),
        }
    }
}

/// A passkey ceremony begun: hand `options` to the browser, then its answer and `ceremonyId` to
/// the matching `…/finish` within 5 minutes.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CeremonyView {
    pub ceremony_id: Uuid,
    /// The `publicKey` options of `navigator.credentials.create()` (registration) or `.get()`
    /// (sign-in) in WebAuthn's JSON form: binary members are base64url strings, as
    /// `PublicKeyCredential.parseCreationOptionsFromJSON()` / `parseRequestOptionsFromJSON()`
    /// take them.
    #[schema(value_type = Object, example = json!({"challenge": "rkTt3vCGbX0…", "rpId": "example.com", "allowCredentials": [], "userVerification": "required", "timeout": 300000}))]
    pub options: serde_json::Value,
}

impl From<crate::auth::passkeys::CeremonyStarted> for CeremonyView {
    fn from(c: crate::auth::passkeys::CeremonyStarted) -> Self {
        CeremonyView {
            ceremony_id: c.ceremony_id,
            options: c.options,
        }
    }
}
