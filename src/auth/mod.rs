//! Authentication: passwords, tokens and their keys, TOTP, and the flows built from them. Each flow
//! is a type of its own, in the file of its name: `Login` (password and second factor), `Sessions`
//! (refresh, logout, the session list), `Accounts` (registration, profile, password, leaving),
//! `Addresses` (verification and address change), `TwoFactor` (enrolment), `Recovery`
//! (forgotten password), `Invitations`, `Passkeys`, `Guard` (who holds a token, for guarded
//! services), `BrowserSessions` (session cookies for guarded web applications), `Clients`
//! (introspection clients), `Orgs` (organisations), `Admin` and `Housekeeping`. What they share is
//! `Core`. They speak in domain terms (`model`); `http` turns them into calls and answers, `store`
//! keeps their data.

use std::sync::Arc;
use std::time::Duration;

use crate::clock::Clock;
use crate::crypto::Secrets;
use crate::mail::Mailer;
use crate::metrics::Metrics;
use crate::store::Store;

pub mod api_keys;
pub mod audit;
pub mod directory;
pub mod federation;
pub mod keys;
pub mod live;
pub mod oauth;
pub mod orgs;
pub mod passkeys;
pub mod password;
pub mod resources;
pub mod throttle;
pub mod tokens;
pub mod totp;

mod account;
pub mod admin;
mod browser;
mod clients;
mod core;
mod enrolment;
mod housekeeping;
mod identity;
mod invitation;
mod leaving;
mod login;
mod notices;
pub mod reauth;
mod recovery;
mod second_factor;
mod sessions;
mod verification;

pub use self::core::Core;
pub use account::Accounts;
pub use admin::Admin;
pub use api_keys::ApiKeys;
pub use browser::BrowserSessions;
pub use clients::{ClientChanges, ClientMetadata, Clients, NewClient, SECRET_OVERLAP_MAX_MS};
pub use enrolment::TwoFactor;
pub use federation::Federation;
pub use housekeeping::Housekeeping;
pub use identity::{Guard, Introspection};
pub use invitation::Invitations;
pub use login::Login;
pub use orgs::Orgs;
pub use passkeys::Passkeys;
pub use recovery::Recovery;
pub use resources::{ResourceChanges, ResourceInput, Resources};
pub use sessions::Sessions;
pub use verification::Addresses;

use audit::Auditor;
use directory::Directory;
use live::LiveSessions;
use password::PasswordHasher;
use throttle::Throttle;
use tokens::Tokens;

pub use crate::model::{LoginOutcome, LogoutScope};

/// Authentication methods (RFC 8176) recorded in a session's `amr`.
const AMR_PASSWORD: &str = "pwd";
const AMR_OTP: &str = "otp";
/// Signed in through another identity provider (docs/api.md §14): not an RFC 8176 value, which
/// has none for it; `mfa` joins it when the provider's own second factor is trusted.
const AMR_FEDERATED: &str = "fed";

pub struct AuthSettings {
    /// Throttling of login and 2FA attempts (`GATEHOUSE_RATE_LIMIT`).
    pub rate_limit: bool,
    /// Whether anyone may create an account (`GATEHOUSE_REGISTRATION`).
    pub registration_open: bool,
    /// How long audit events are kept.
    pub audit_retention: Duration,
    pub refresh_ttl: Duration,
    pub temp_ttl: Duration,
    pub reuse_grace: Duration,
    /// Mailed links: their lifetimes, and whether logins need a verified address.
    pub links: LinkSettings,
    /// Clients that register themselves (docs/api.md §12).
    pub client_registration: crate::config::ClientRegistration,
    /// Where people reach the service: the base of the redirect URI given to identity providers.
    pub public_url: String,
}

pub struct LinkSettings {
    pub reset_ttl: Duration,
    pub verify_ttl: Duration,
    pub invite_ttl: Duration,
    pub require_verified_email: bool,
}

/// The flows, built once over one `Core`: what `http` and the CLI call.
pub struct AuthService {
    pub login: Login,
    pub sessions: Sessions,
    pub accounts: Accounts,
    pub addresses: Addresses,
    pub two_factor: TwoFactor,
    pub recovery: Recovery,
    pub invitations: Invitations,
    pub orgs: Orgs,
    pub passkeys: Passkeys,
    pub guard: Guard,
    pub browser: BrowserSessions,
    pub clients: Clients,
    /// Personal API keys (docs/api.md §12).
    pub api_keys: ApiKeys,
    /// The business APIs tokens are issued for (docs/guide/resources.md).
    pub resources: Resources,
    /// Signing in with other identity providers (docs/api.md §14).
    pub federation: Federation,
    /// The OpenID provider's flows (docs/api.md §11).
    pub oauth: oauth::Provider,
    /// Revocation, end-session, consents (docs/api.md §11).
    pub logouts: oauth::logout::Logouts,
    pub admin: Admin,
    pub housekeeping: Housekeeping,
}

/// What every flow needs to build the service, from start-up.
pub struct AuthParts {
    pub store: Store,
    pub clock: Clock,
    pub tokens: Tokens,
    pub secrets: Arc<Secrets>,
    pub live: Arc<LiveSessions>,
    pub directory: Arc<Directory>,
    pub metrics: Arc<Metrics>,
    pub hasher: PasswordHasher,
    /// The relying party of passkeys (`services::relying_party`); `None`: passkeys are off.
    pub webauthn: Option<Arc<webauthn_rs::Webauthn>>,
    pub mailer: Arc<Mailer>,
    /// The identity providers of `GATEHOUSE_IDENTITY_PROVIDERS` (docs/api.md §14).
    pub providers: crate::federation::Providers,
    /// The business APIs and their scopes (docs/guide/resources.md).
    pub catalog: Arc<resources::CatalogCell>,
}

impl AuthService {
    pub fn new(parts: AuthParts, settings: AuthSettings) -> Self {
        let rate_limit = settings.rate_limit;
        let core = Arc::new(Core {
            throttle: Throttle::new(parts.store.clone(), parts.clock.clone(), rate_limit),
            auditor: Auditor::new(parts.store.clone(), parts.clock.clone()),
            mailer: parts.mailer,
            store: parts.store,
            clock: parts.clock,
            hasher: parts.hasher,
            tokens: parts.tokens,
            secrets: parts.secrets,
            live: parts.live,
            directory: parts.directory,
            metrics: parts.metrics,
            settings,
            webauthn: parts.webauthn,
            keys: Default::default(),
            providers: parts.providers,
            catalog: parts.catalog,
        });
        let login = Login { core: core.clone() };
        let sessions = Sessions { core: core.clone() };
        let addresses = Addresses { core: core.clone() };
        let accounts = Accounts {
            core: core.clone(),
            addresses: addresses.clone(),
        };
        let orgs = Orgs { core: core.clone() };
        let invitations = Invitations {
            core: core.clone(),
            orgs: orgs.clone(),
        };
        let recovery = Recovery::new(core.clone(), rate_limit);
        // One registry, so that a client removed or changed here is seen so at once by every
        // flow of this instance (the token endpoint, introspection, forward-auth).
        let clients = Clients::new(core.clone());
        let guard = Guard {
            core: core.clone(),
            clients: clients.clone(),
        };
        let browser = BrowserSessions::new(core.clone());
        AuthService {
            admin: Admin {
                core: core.clone(),
                accounts: accounts.clone(),
                invitations: invitations.clone(),
                recovery: recovery.clone(),
                sessions: sessions.clone(),
                guard: guard.clone(),
                orgs: orgs.clone(),
            },
            passkeys: Passkeys {
                core: core.clone(),
                login: login.clone(),
            },
            two_factor: TwoFactor { core: core.clone() },
            federation: Federation {
                core: core.clone(),
                login: login.clone(),
                browser: browser.clone(),
            },
            browser,
            oauth: oauth::Provider::new(core.clone(), clients.clone(), sessions.clone()),
            clients,
            api_keys: ApiKeys { core: core.clone() },
            resources: Resources { core: core.clone() },
            logouts: oauth::logout::Logouts { core: core.clone() },
            housekeeping: Housekeeping { core },
            login,
            sessions,
            accounts,
            addresses,
            invitations,
            orgs,
            recovery,
            guard,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{Email, FullName};
    use crate::error::Error;

    /// A service over the SQLite database in `dir` (under one master key), hashing with `hasher`.
    async fn service(dir: &tempfile::TempDir, hasher: PasswordHasher) -> AuthService {
        let url = format!("sqlite://{}", dir.path().join("t.db").display());
        let store = Store::connect(&url).await.unwrap();
        store.migrate().await.unwrap();
        let clock = Clock::system();
        let secrets = Arc::new(Secrets::new(&crate::config::MasterKey::new([7; 32])));
        let keyring = Arc::new(
            keys::Keyring::load(
                store.clone(),
                secrets.clone(),
                clock.clone(),
                Duration::from_secs(60),
                vec![crate::crypto::SigningAlg::EdDsa],
            )
            .await
            .unwrap(),
        );
        let live = Arc::new(
            LiveSessions::load(&store, clock.clone(), Duration::from_secs(60))
                .await
                .unwrap(),
        );
        let metrics = Arc::new(Metrics::new());
        let store_for_catalog = store.clone();
        AuthService::new(
            AuthParts {
                tokens: Tokens::new(
                    keyring,
                    clock.clone(),
                    "i",
                    "a",
                    Duration::from_secs(60),
                    crate::crypto::SigningAlg::EdDsa,
                ),
                directory: Arc::new(Directory::new(store.clone(), clock.clone())),
                store,
                clock,
                live,
                mailer: Arc::new(Mailer::for_tests(secrets.clone(), metrics.clone())),
                secrets,
                metrics,
                hasher,
                webauthn: None,
                providers: crate::federation::Providers::none(),
                catalog: Arc::new(
                    resources::CatalogCell::load(
                        &store_for_catalog,
                        vec![crate::model::Resource::contacts_example()],
                    )
                    .await
                    .unwrap(),
                ),
            },
            AuthSettings {
                rate_limit: true,
                registration_open: false,
                audit_retention: Duration::from_secs(60),
                refresh_ttl: Duration::from_secs(600),
                temp_ttl: Duration::from_secs(60),
                reuse_grace: Duration::from_secs(10),
                links: LinkSettings {
                    reset_ttl: Duration::from_secs(3600),
                    verify_ttl: Duration::from_secs(3600),
                    invite_ttl: Duration::from_secs(3600),
                    require_verified_email: false,
                },
                client_registration: Default::default(),
                public_url: "http://localhost".into(),
            },
        )
    }

    /// A re-check that is shed (the hashing queue is full) is no failure of the account: it must
    /// not use up the account's allowance, or a login flood would lock the owner out.
    #[tokio::test]
    async fn a_shed_recheck_costs_the_account_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let normal = service(&dir, PasswordHasher::new(Arc::new(Metrics::new()))).await;
        let email = Email::parse("sue@example.com").unwrap();
        let user = normal
            .admin
            .add_user(
                audit::Operator::Cli,
                &email,
                &FullName::parse("Sue").unwrap(),
                &[],
                Some("correct horse battery staple".into()),
            )
            .await
            .unwrap();
        let shedding = service(
            &dir,
            PasswordHasher::shedding_everything(Arc::new(Metrics::new())),
        )
        .await;
        let user = shedding
            .login
            .core
            .store
            .user_by_id(user.id)
            .await
            .unwrap()
            .unwrap();
        // More sheds than the account has failures to spend.
        for _ in 0..throttle::ACCOUNT_FAILURES {
            let shed = shedding
                .login
                .core
                .recheck_password(&user, "correct horse battery staple".into())
                .await;
            assert!(matches!(shed, Err(Error::Overloaded { .. })), "{shed:?}");
        }
        normal
            .login
            .core
            .recheck_password(&user, "correct horse battery staple".into())
            .await
            .expect("the allowance is whole");
    }
}
