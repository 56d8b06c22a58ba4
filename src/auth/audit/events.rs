//! The audit trail's events, typed: each has its stored name and its detail, built here and
//! nowhere else, so the names and details listed in docs/api.md stay what the code writes.
//!
//! One file: every event beside its stored name and detail, so that a new event cannot miss
//! either (the matches are exhaustive).

use uuid::Uuid;

use crate::model::{Factor, LogoutScope};

pub use super::org_events::OrgEvent;

/// Who did an administrative action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Actor {
    /// The account's owner, through the API.
    Owner,
    /// An operator with the `gatehouse` command.
    Cli,
    /// An admin through the administration API (who: the event's `actor_id`).
    Admin,
}

impl Actor {
    /// The `via=` of an event's detail.
    pub(crate) fn via(self) -> &'static str {
        match self {
            Actor::Owner => "owner",
            Actor::Cli => "cli",
            Actor::Admin => "admin",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoginFailure {
    WrongPassword,
    /// The e-mail itself is not recorded: it may be a password typed in the wrong box.
    UnknownAccount,
    AccountDisabled,
}

/// How an account came to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    Cli,
    Registration,
    Admin,
    /// `gatehouse import --from SOURCE` (docs/api.md §15).
    Import(&'static str),
}

/// What an admin looked at (`admin.read`): reads of accounts and the trail are audited too.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AdminRead {
    Users,
    User,
    Sessions,
    Audit,
    /// Organisations, one, or its members.
    Orgs,
    /// The OAuth clients, or one.
    Clients,
    /// A person's API keys.
    ApiKeys,
    /// What acts for a person (docs/api.md §11).
    ConnectedApps,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuditEvent {
    LoginSucceeded,
    LoginFailed(LoginFailure),
    LoginChallenged,
    TwoFactorSucceeded(Factor),
    TwoFactorFailed,
    /// Wrong second-factor codes in a row made the account wait before the next one.
    TwoFactorLocked {
        failures: i64,
        wait_seconds: i64,
    },
    RecoveryCodeUsed,
    RefreshReuseDetected,
    Logout {
        scope: LogoutScope,
        sessions: u64,
    },
    SessionRevoked {
        by_session: Uuid,
    },
    PasswordChanged {
        by: Actor,
        sessions_ended: u64,
    },
    TwoFactorEnabled,
    TwoFactorDisabled {
        by: Actor,
    },
    RecoveryCodesRegenerated,
    UserCreated(Origin),
    UserDisabled {
        by: Actor,
        sessions_ended: u64,
    },
    UserEnabled {
        by: Actor,
    },
    /// An admin renamed the account.
    UserRenamed,
    /// An admin ended every session of the account.
    SessionsEnded {
        sessions_ended: u64,
    },
    /// An admin read accounts or the trail.
    AdminRead(AdminRead),
    /// The new active keys, `alg=kid` each (all three are rotated together).
    KeyRotated {
        kids: Vec<(String, String)>,
    },
    KeyRevoked {
        kid: String,
    },
    /// The account's roles were changed (`gatehouse user roles`).
    RolesChanged {
        by: Actor,
        added: Vec<String>,
        removed: Vec<String>,
    },
    ClientAdded {
        client: Uuid,
        by: Actor,
    },
    /// A client's registration was changed (the admin API).
    ClientChanged {
        client: Uuid,
        by: Actor,
    },
    ClientRemoved {
        client: Uuid,
        by: Actor,
    },
    /// A business API declared, changed or removed (docs/guide/resources.md).
    ResourceAdded {
        resource: String,
        by: Actor,
    },
    ResourceChanged {
        resource: String,
        by: Actor,
    },
    ResourceRemoved {
        resource: String,
        by: Actor,
    },
    /// A confidential client's secret replaced; the old one works until `previous_until` (ms).
    ClientSecretRotated {
        client: Uuid,
        by: Actor,
        previous_until: i64,
    },
    /// A client registered itself: at `POST /oauth2/register`, or by its metadata document.
    ClientRegistered {
        client: Uuid,
        /// `registered` or `metadata_document`.
        origin: &'static str,
    },
    /// An initial access token for dynamic client registration was made.
    RegistrationTokenIssued {
        by: Actor,
    },
    PasskeyAdded {
        passkey: Uuid,
    },
    PasskeyRemoved {
        passkey: Uuid,
    },
    /// A sign-in with a passkey alone.
    PasskeyLogin {
        passkey: Uuid,
    },
    /// A personal API key was made (docs/api.md §12).
    ApiKeyCreated {
        key: Uuid,
    },
    /// A personal API key was used from an address it had not been used from before.
    ApiKeyNewAddress {
        key: Uuid,
    },
    /// A personal API key was deleted, by its owner or an admin.
    ApiKeyDeleted {
        key: Uuid,
        by: Actor,
    },
    /// A passkey completed a password login's 2FA challenge.
    PasskeySecondFactor {
        passkey: Uuid,
    },
    /// The first proof of the account's address (a reset, a verification) removed the sign-in
    /// methods added before it.
    CredentialsRemoved {
        passkeys: u64,
        authenticator: bool,
        /// Identities at other providers (docs/api.md §14).
        identities: u64,
    },
    /// A passkey ceremony failed; `reason` is a fixed word, never client input.
    PasskeyFailed {
        reason: &'static str,
    },
    /// A passkey's counter did not move past the stored one: possibly a cloned authenticator.
    PasskeyCloneDetected {
        passkey: Uuid,
        stored: i64,
        /// The counter presented, when the check that refused it knew it.
        presented: Option<i64>,
    },
    /// A reset link was mailed (asked by the user, or by an admin: `by`).
    PasswordResetRequested {
        by: Actor,
    },
    /// A reset was asked for an account that had its share of reset mails this hour: no mail.
    PasswordResetThrottled,
    PasswordReset {
        sessions_ended: u64,
    },
    EmailVerificationSent,
    EmailVerified,
    EmailChangeRequested,
    EmailChanged,
    UserInvited {
        by: Actor,
    },
    InvitationAccepted,
    AccountDeleted {
        by: Actor,
        sessions_ended: u64,
    },
    /// A registration with an address in use (the address is not recorded).
    RegistrationRefused,
    /// The holder of a session proved again who they are (`method`: `pwd` or `otp`).
    Reauthenticated {
        method: &'static str,
    },
    /// A re-authentication's password or code was wrong (`wrong_password`, `wrong_code`).
    ReauthenticationFailed {
        wrong: &'static str,
    },
    /// A sign-in through another identity provider (docs/api.md §14) opened a session.
    FederatedLogin {
        provider: String,
    },
    /// A sign-in through another identity provider failed; `reason` is the error code the
    /// sign-in page is sent (`provider_invalid`, `account_exists`, …), never upstream text.
    FederatedLoginFailed {
        provider: String,
        reason: &'static str,
    },
    /// An account made by a sign-in through another identity provider.
    UserCreatedByProvider {
        provider: String,
    },
    /// An imported hash (or Argon2 of weaker parameters) replaced by the current Argon2id at a
    /// sign-in that matched it; `from` is the algorithm it had.
    PasswordRehashed {
        from: &'static str,
    },
    IdentityLinked {
        provider: String,
    },
    IdentityUnlinked {
        provider: String,
    },
    /// The person allowed a device's request (RFC 8628) on the device page.
    DeviceApproved {
        client: Uuid,
    },
    /// The person denied a device's request.
    DeviceDenied {
        client: Uuid,
    },
    /// A client exchanged a person's token for one that names it as their actor (RFC 8693);
    /// `depth`: the actors the new token names.
    TokenExchanged {
        client: Uuid,
        audience: String,
        depth: usize,
    },
    /// A connected application ended: its consent withdrawn and its sessions ended, by the person
    /// or an admin.
    AppDisconnected {
        client: Uuid,
        by: Actor,
        sessions_ended: u64,
    },
    /// Something that happened in an organisation (its id is the event's `org_id`).
    Org {
        org: Uuid,
        what: OrgEvent,
    },
}

impl AuditEvent {
    /// The stored, dotted name.
    pub fn name(&self) -> &'static str {
        use AuditEvent::*;
        match self {
            LoginSucceeded => "login.succeeded",
            LoginFailed(_) => "login.failed",
            LoginChallenged => "login.challenged",
            TwoFactorSucceeded(_) => "two_factor.succeeded",
            TwoFactorFailed => "two_factor.failed",
            TwoFactorLocked { .. } => "two_factor.locked",
            RecoveryCodeUsed => "recovery_code.used",
            RefreshReuseDetected => "refresh.reuse_detected",
            Logout { .. } => "logout",
            SessionRevoked { .. } => "session.revoked",
            PasswordChanged { .. } => "password.changed",
            TwoFactorEnabled => "two_factor.enabled",
            TwoFactorDisabled { .. } => "two_factor.disabled",
            RecoveryCodesRegenerated => "recovery_codes.regenerated",
            UserCreated(_) => "user.created",
            UserDisabled { .. } => "user.disabled",
            UserEnabled { .. } => "user.enabled",
            UserRenamed => "user.renamed",
            SessionsEnded { .. } => "user.sessions_ended",
            AdminRead(_) => "admin.read",
            KeyRotated { .. } => "key.rotated",
            KeyRevoked { .. } => "key.revoked",
            RolesChanged { .. } => "user.roles_changed",
            ClientAdded { .. } => "client.added",
            ClientChanged { .. } => "client.changed",
            ClientRemoved { .. } => "client.removed",
            ClientSecretRotated { .. } => "client.secret_rotated",
            ResourceAdded { .. } => "resource.added",
            ResourceChanged { .. } => "resource.changed",
            ResourceRemoved { .. } => "resource.removed",
            ClientRegistered { .. } => "client.registered",
            RegistrationTokenIssued { .. } => "client.registration_token_issued",
            PasskeyAdded { .. } => "passkey.added",
            PasskeyRemoved { .. } => "passkey.removed",
            ApiKeyCreated { .. } => "api_key.created",
            ApiKeyNewAddress { .. } => "api_key.new_address",
            ApiKeyDeleted { .. } => "api_key.deleted",
            PasskeyLogin { .. } => "login.succeeded",
            PasskeySecondFactor { .. } => "two_factor.succeeded",
            PasskeyFailed { .. } => "passkey.failed",
            CredentialsRemoved { .. } => "credentials.removed",
            PasskeyCloneDetected { .. } => "passkey.clone_detected",
            PasswordResetRequested { .. } => "password.reset_requested",
            PasswordResetThrottled => "password.reset_throttled",
            PasswordReset { .. } => "password.reset",
            EmailVerificationSent => "email.verification_sent",
            EmailVerified => "email.verified",
            EmailChangeRequested => "email.change_requested",
            EmailChanged => "email.changed",
            UserInvited { .. } => "user.invited",
            InvitationAccepted => "invitation.accepted",
            AccountDeleted { .. } => "user.deleted",
            RegistrationRefused => "registration.refused",
            Reauthenticated { .. } => "reauthentication.succeeded",
            ReauthenticationFailed { .. } => "reauthentication.failed",
            FederatedLogin { .. } => "login.succeeded",
            FederatedLoginFailed { .. } => "login.failed",
            UserCreatedByProvider { .. } => "user.created",
            PasswordRehashed { .. } => "password.rehashed",
            IdentityLinked { .. } => "identity.linked",
            IdentityUnlinked { .. } => "identity.unlinked",
            DeviceApproved { .. } => "oauth.device_approved",
            DeviceDenied { .. } => "oauth.device_denied",
            AppDisconnected { .. } => "client.disconnected",
            TokenExchanged { .. } => "oauth.token_exchanged",
            Org { what, .. } => what.name(),
        }
    }

    /// The short machine-readable detail; never a secret.
    pub fn detail(&self) -> Option<String> {
        use AuditEvent::*;
        Some(match self {
            LoginSucceeded => "pwd".into(),
            LoginFailed(LoginFailure::WrongPassword) => "wrong_password".into(),
            LoginFailed(LoginFailure::UnknownAccount) => "unknown_account".into(),
            LoginFailed(LoginFailure::AccountDisabled) => "account_disabled".into(),
            TwoFactorSucceeded(Factor::Totp) => "totp".into(),
            TwoFactorSucceeded(Factor::RecoveryCode) => "recovery_code".into(),
            TwoFactorLocked {
                failures,
                wait_seconds,
            } => format!("consecutive_failures={failures} wait={wait_seconds}s"),
            Logout { scope, sessions } => format!("scope={} sessions={sessions}", scope.as_str()),
            SessionRevoked { by_session } => format!("by_session={by_session}"),
            PasswordChanged {
                by: Actor::Owner,
                sessions_ended,
            } => format!("other_sessions_ended={sessions_ended}"),
            PasswordChanged { by, sessions_ended } => {
                format!("via={} sessions_ended={sessions_ended}", by.via())
            }
            TwoFactorDisabled { by: Actor::Owner } => return None,
            TwoFactorDisabled { by } => format!("via={} reset", by.via()),
            UserCreated(Origin::Cli) => "cli".into(),
            UserCreated(Origin::Registration) => "registration".into(),
            UserCreated(Origin::Admin) => "admin".into(),
            UserCreated(Origin::Import(source)) => format!("import from={source}"),
            UserDisabled { by, sessions_ended } => {
                format!("via={} sessions_ended={sessions_ended}", by.via())
            }
            UserEnabled { by } => format!("via={}", by.via()),
            UserRenamed => "via=admin".into(),
            SessionsEnded { sessions_ended } => {
                format!("via=admin sessions_ended={sessions_ended}")
            }
            AdminRead(what) => match what {
                self::AdminRead::Users => "users",
                self::AdminRead::User => "user",
                self::AdminRead::Sessions => "sessions",
                self::AdminRead::Audit => "audit",
                self::AdminRead::Orgs => "orgs",
                self::AdminRead::Clients => "clients",
                self::AdminRead::ApiKeys => "api_keys",
                self::AdminRead::ConnectedApps => "connected_apps",
            }
            .into(),
            KeyRotated { kids } => {
                let kids: Vec<String> = kids
                    .iter()
                    .map(|(alg, kid)| format!("{alg}={kid}"))
                    .collect();
                format!("{} via=cli", kids.join(" "))
            }
            KeyRevoked { kid } => format!("kid={kid} via=cli"),
            RolesChanged { by, added, removed } => format!(
                "via={} added={} removed={}",
                by.via(),
                added.join(","),
                removed.join(",")
            ),
            ClientAdded { client, by }
            | ClientChanged { client, by }
            | ClientRemoved { client, by } => format!("client={client} via={}", by.via()),
            ResourceAdded { resource, by }
            | ResourceChanged { resource, by }
            | ResourceRemoved { resource, by } => format!("resource={resource} via={}", by.via()),
            ClientSecretRotated {
                client,
                by,
                previous_until,
            } => format!(
                "client={client} via={} previous_until={}",
                by.via(),
                crate::clock::rfc3339(*previous_until)
            ),
            ClientRegistered { client, origin } => format!("client={client} origin={origin}"),
            DeviceApproved { client } | DeviceDenied { client } => format!("client={client}"),
            TokenExchanged {
                client,
                audience,
                depth,
            } => format!("client={client} aud={audience} actors={depth}"),
            AppDisconnected {
                client,
                by,
                sessions_ended,
            } => format!(
                "client={client} via={} sessions_ended={sessions_ended}",
                by.via()
            ),
            RegistrationTokenIssued { by } => format!("via={}", by.via()),
            PasskeyAdded { passkey } | PasskeyRemoved { passkey } => format!("passkey={passkey}"),
            ApiKeyCreated { key } | ApiKeyNewAddress { key } => format!("key={key}"),
            ApiKeyDeleted { key, by } => format!("key={key} via={}", by.via()),
            PasskeyLogin { passkey } | PasskeySecondFactor { passkey } => {
                format!("passkey passkey={passkey}")
            }
            PasskeyFailed { reason } => format!("reason={reason}"),
            CredentialsRemoved {
                passkeys,
                authenticator,
                identities: 0,
            } => format!("unproven_address passkeys={passkeys} authenticator={authenticator}"),
            CredentialsRemoved {
                passkeys,
                authenticator,
                identities,
            } => format!(
                "unproven_address passkeys={passkeys} authenticator={authenticator} identities={identities}"
            ),
            PasskeyCloneDetected {
                passkey,
                stored,
                presented: Some(presented),
            } => format!("passkey={passkey} stored_counter={stored} presented_counter={presented}"),
            PasskeyCloneDetected {
                passkey, stored, ..
            } => format!("passkey={passkey} stored_counter={stored}"),
            PasswordReset { sessions_ended } => format!("via=link sessions_ended={sessions_ended}"),
            UserInvited { by } => format!("via={}", by.via()),
            AccountDeleted { by, sessions_ended } => {
                format!("by={} sessions_ended={sessions_ended}", by.via())
            }
            PasswordResetRequested { by } if *by != Actor::Owner => format!("via={}", by.via()),
            RegistrationRefused => "email_taken".into(),
            Reauthenticated { method } => (*method).into(),
            ReauthenticationFailed { wrong } => (*wrong).into(),
            FederatedLogin { provider } => format!("fed provider={provider}"),
            FederatedLoginFailed { provider, reason } => {
                format!("fed provider={provider} reason={reason}")
            }
            UserCreatedByProvider { provider } => format!("provider provider={provider}"),
            PasswordRehashed { from } => format!("from={from}"),
            IdentityLinked { provider } | IdentityUnlinked { provider } => {
                format!("provider={provider}")
            }
            Org { what, .. } => return what.detail(),
            PasswordResetRequested { .. }
            | PasswordResetThrottled
            | EmailVerificationSent
            | EmailVerified
            | EmailChangeRequested
            | EmailChanged
            | InvitationAccepted => return None,
            LoginChallenged
            | TwoFactorFailed
            | RecoveryCodeUsed
            | RefreshReuseDetected
            | TwoFactorEnabled
            | RecoveryCodesRegenerated => return None,
        })
    }
}
