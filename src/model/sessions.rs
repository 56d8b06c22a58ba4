//! Sessions and what they hand out: logins, refresh records, token sets, and who holds a token.

use std::net::IpAddr;

use uuid::Uuid;

use super::users::UserSummary;

/// A login and everything issued for it.
#[derive(Debug, Clone)]
pub struct Session {
    pub id: Uuid,
    pub user_id: Uuid,
    /// Authentication methods of the login (RFC 8176 values), copied into each access token.
    pub amr: Vec<String>,
    pub ip: Option<String>,
    pub user_agent: Option<String>,
    pub created_at: i64,
    pub last_used_at: i64,
    pub revoked_at: Option<i64>,
    /// The active organisation (docs/api.md §13), kept by refresh while the person is a member.
    pub org_id: Option<Uuid>,
    /// What a client was given (docs/api.md §11); `None`: the person's own sign-in.
    pub grant: Option<ClientGrant>,
}

/// A session begun by an authorization of a client (docs/api.md §11): whose it is, what it may
/// do, and what its ID tokens say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientGrant {
    pub client_id: Uuid,
    /// The granted scopes, in the order they were asked.
    pub scope: Vec<String>,
    /// The person's own session the authorization was given from.
    pub parent_id: Option<Uuid>,
    /// When the person authenticated (ms): the ID token's `auth_time`.
    pub auth_time: i64,
    /// The RFC 8707 resource the tokens are for; `None`: `GATEHOUSE_AUDIENCE`.
    pub audience: Option<String>,
}

impl ClientGrant {
    /// The scopes as RFC 6749 §3.3 writes them: space-separated.
    pub fn scope_string(&self) -> String {
        self.scope.join(" ")
    }

    pub fn has_scope(&self, scope: &str) -> bool {
        self.scope.iter().any(|s| s == scope)
    }
}

/// The session of a browser cookie (docs/api.md §6b), with what decides whether it counts.
#[derive(Debug, Clone)]
pub struct CookieSession {
    pub session_id: Uuid,
    pub user_id: Uuid,
    pub amr: Vec<String>,
    /// When the session lapses (its refresh token's expiry; refreshing slides it).
    pub expires_at: i64,
    pub revoked_at: Option<i64>,
}

/// A refresh token as recorded: enough to mint the same token again.
#[derive(Debug, Clone)]
pub struct RefreshRecord {
    pub jti: Uuid,
    pub session_id: Uuid,
    pub issued_at: i64,
    pub expires_at: i64,
    pub consumed_at: Option<i64>,
}

/// Where a request came from, recorded with the session it opens and in the audit trail.
#[derive(Debug, Clone, Default)]
pub struct ClientInfo {
    pub ip: Option<IpAddr>,
    pub user_agent: Option<String>,
}

/// Whether a login's authentication methods (RFC 8176) hold a second factor: two methods (a
/// password and a code, a passkey and its user verification), or `mfa` itself.
pub fn is_multi_factor(amr: &[String]) -> bool {
    amr.iter().any(|m| m == "mfa") || {
        let mut distinct: Vec<&str> = amr.iter().map(String::as_str).collect();
        distinct.sort_unstable();
        distinct.dedup();
        distinct.len() >= 2
    }
}

/// Who holds a live session, as a guarded service is told (forward-auth, introspection): the
/// account as it is now, not as it was when the token was issued.
#[derive(Debug, Clone)]
pub struct Identity {
    pub user_id: Uuid,
    pub session_id: Uuid,
    pub email: String,
    /// Whether the address is known to reach the owner (a mailed link came back, or an operator
    /// made the account): anyone may register any address while registration is open.
    pub email_verified: bool,
    pub full_name: String,
    /// The current roles, sorted.
    pub roles: Vec<String>,
    /// The session's login had a second factor.
    pub multi_factor: bool,
    /// The token's active organisation, with the holder's roles in it now.
    pub org: Option<super::orgs::ActiveOrg>,
    /// The client the person's token was given to (docs/api.md §11), its `client_id` (a UUID,
    /// or a metadata document's URL, §12); `None` for the person's own sign-in and for a session
    /// cookie.
    pub client: Option<String>,
    /// What that client's token may do (its `scope`); `None`: the person's own sign-in, not
    /// limited.
    pub scopes: Option<ApiScopes>,
    /// The client that acts for the person with a token exchanged for theirs (RFC 8693 `act`);
    /// `None` for any other token.
    pub actor: Option<String>,
    /// The DPoP key the token is bound to (RFC 9449), proved for the request; `None` for a bearer
    /// token and a session cookie.
    pub dpop: Option<String>,
}

/// The caller of a bearer call, from a verified access token of a live session.
#[derive(Debug, Clone)]
pub struct Principal {
    pub user_id: Uuid,
    /// The token's session. For an API key (docs/api.md §12), which has none, the key's id:
    /// no call that reads the session accepts a key (`Sessions::authenticate_person`).
    pub session_id: Uuid,
    /// The personal API key making the call; `None` for an access token.
    pub api_key: Option<Uuid>,
    /// The session's login had a second factor.
    pub multi_factor: bool,
    /// The token's active organisation, its membership checked live (`Guard::active_org`).
    pub org: Option<super::orgs::ActiveOrg>,
    /// What a client's token may do at the business API; `None`: a token without a `scope`
    /// claim (the person's own sign-in), not limited.
    pub scopes: Option<ApiScopes>,
    /// The DPoP key the token is bound to (its `cnf.jkt`, RFC 9449); `None` for a bearer token
    /// and an API key. The caller's request must carry a proof by it (`http::dpop`).
    pub dpop_jkt: Option<std::sync::Arc<str>>,
}

/// The scopes a client's token or an API key carries (docs/api.md §11 "Scopes", §12): what it may
/// do at the business APIs, the operator's own and the contacts example. The `scope` text as
/// issued (RFC 6749 §3.3: space-separated), shared: a verified token is cloned on every call.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ApiScopes(std::sync::Arc<str>);

impl ApiScopes {
    pub const CONTACTS_READ: &'static str = super::resources::CONTACTS_READ;
    pub const CONTACTS_WRITE: &'static str = super::resources::CONTACTS_WRITE;

    /// From a token's `scope` claim or a key's stored scopes (space-separated).
    pub fn parse(scope: &str) -> ApiScopes {
        ApiScopes(scope.into())
    }

    /// Whether `scope` is held.
    pub fn has(&self, scope: &str) -> bool {
        self.0.split(' ').any(|s| s == scope)
    }

    /// The scopes held, as RFC 6749 §3.3 writes them (space-separated, as issued).
    pub fn scope_string(&self) -> String {
        self.0.to_string()
    }

    /// The scopes held, in the order written.
    pub fn names(&self) -> Vec<&str> {
        self.0.split(' ').filter(|s| !s.is_empty()).collect()
    }
}

impl Principal {
    /// Whether the caller's token allows a business call that needs `scope`.
    pub fn allows(&self, scope: &str) -> bool {
        self.scopes.as_ref().is_none_or(|s| s.has(scope))
    }

    /// Whose contacts the caller works with: their active organisation's, else their own.
    pub fn collection(&self) -> super::orgs::Collection {
        match &self.org {
            Some(org) => super::orgs::Collection::Org(org.id),
            None => super::orgs::Collection::Personal(self.user_id),
        }
    }
}

/// What a completed login or a refresh hands out.
#[derive(Debug, Clone)]
pub struct TokenSet {
    pub access_token: String,
    pub refresh_token: String,
    /// Seconds the access token lives.
    pub expires_in: i64,
    pub user: UserSummary,
    /// The session the tokens belong to (for the audit trail; not part of the answer).
    pub session_id: Uuid,
}

#[derive(Debug)]
pub enum LoginOutcome {
    Tokens(TokenSet),
    Challenge { temp_token: String },
}

/// Which second factor was accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Factor {
    Totp,
    RecoveryCode,
}

/// A session as its user sees it in the session list.
#[derive(Debug, Clone)]
pub struct SessionInfo {
    pub id: Uuid,
    pub created_at: i64,
    pub last_used_at: i64,
    pub ip: Option<String>,
    pub user_agent: Option<String>,
    /// Whether this is the session of the token making the call.
    pub current: bool,
    /// The client the session was given to (docs/api.md §11): its id and name; `None` for the
    /// person's own sign-in.
    pub client: Option<(Uuid, String)>,
    /// How it was signed in (RFC 8176 `amr`: `pwd`, `otp`, `hwk`, `fed`, …): what tells two
    /// sessions of one browser apart.
    pub amr: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogoutScope {
    Current,
    Others,
    All,
}

impl LogoutScope {
    pub fn as_str(self) -> &'static str {
        match self {
            LogoutScope::Current => "current",
            LogoutScope::Others => "others",
            LogoutScope::All => "all",
        }
    }
}

/// Why sessions ended: the `reason` label of the revocation metric and the stored reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndReason {
    Logout,
    Deleted,
    PasswordChanged,
    RefreshReuse,
    AccountDisabled,
    PasswordSetByAdmin,
    PasswordReset,
    AccountDeleted,
    /// An operator turned the account's 2FA off (a lost authenticator).
    TwoFactorReset,
    /// An admin ended the account's sessions.
    EndedByAdmin,
    /// The authorization code that began the session was used again (RFC 6749 §4.1.2).
    CodeReplayed,
    /// A client revoked its token (RFC 7009).
    Revoked,
    /// The person withdrew their consent to the client.
    ConsentWithdrawn,
    /// The client was removed from the registry.
    ClientRemoved,
}

impl EndReason {
    pub fn as_str(self) -> &'static str {
        match self {
            EndReason::Logout => "logout",
            EndReason::Deleted => "deleted",
            EndReason::PasswordChanged => "password_changed",
            EndReason::RefreshReuse => "refresh_reuse",
            EndReason::AccountDisabled => "account_disabled",
            EndReason::PasswordSetByAdmin => "password_set_by_admin",
            EndReason::PasswordReset => "password_reset",
            EndReason::AccountDeleted => "account_deleted",
            EndReason::TwoFactorReset => "two_factor_reset",
            EndReason::EndedByAdmin => "ended_by_admin",
            EndReason::CodeReplayed => "code_replayed",
            EndReason::Revoked => "revoked",
            EndReason::ConsentWithdrawn => "consent_withdrawn",
            EndReason::ClientRemoved => "client_removed",
        }
    }
}
