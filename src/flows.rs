//! The flows of `auth`, `provider`, `federation` and `orgs`, built once over one `auth::Core`:
//! what `http` and the CLI call. This is the one place that knows every flow; a new flow is a
//! field here and a line in `AuthService::new`, and nothing below imports this file.

use std::sync::Arc;

use crate::admin::Admin;
use crate::auth::{
    Accounts, Addresses, ApiKeys, AuthParts, AuthSettings, BrowserSessions, Core, Housekeeping,
    Invitations, Login, Passkeys, Recovery, Resources, Sessions, TwoFactor,
};
use crate::federation::Federation;
use crate::guard::Guard;
use crate::orgs::Orgs;
use crate::provider::{self, Clients};

/// The flows, built once over one `Core`: what `http` and the CLI call.
pub struct AuthService {
    pub login: Login,
    pub sessions: Sessions,
    pub accounts: Accounts,
    pub addresses: Addresses,
    pub two_factor: TwoFactor,
    pub recovery: Recovery,
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
    pub oauth: provider::Provider,
    /// Revocation, end-session, consents (docs/api.md §11).
    pub logouts: provider::logout::Logouts,
    pub admin: Admin,
    pub housekeeping: Housekeeping,
}

impl AuthService {
    pub fn new(parts: AuthParts, settings: AuthSettings) -> Self {
        let rate_limit = settings.rate_limit;
        let core = Arc::new(Core::new(parts, settings));
        let login = Login { core: core.clone() };
        let sessions = Sessions { core: core.clone() };
        let addresses = Addresses { core: core.clone() };
        let accounts = Accounts {
            core: core.clone(),
            addresses: addresses.clone(),
        };
        let invitations = Invitations { core: core.clone() };
        let orgs = Orgs {
            core: core.clone(),
            invitations: invitations.clone(),
        };
        let recovery = Recovery::new(core.clone(), rate_limit);
        // One registry, so that a client removed or changed here is seen so at once by every
        // flow of this instance (the token endpoint, introspection, forward-auth).
        let clients = Clients::new(core.clone());
        let browser = BrowserSessions::new(core.clone());
        let guard = Guard {
            core: core.clone(),
            clients: clients.clone(),
            browser: browser.clone(),
        };
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
            oauth: provider::Provider::new(core.clone(), clients.clone(), sessions.clone()),
            clients,
            api_keys: ApiKeys { core: core.clone() },
            resources: Resources { core: core.clone() },
            logouts: provider::logout::Logouts { core: core.clone() },
            housekeeping: Housekeeping { core },
            login,
            sessions,
            accounts,
            addresses,
            orgs,
            recovery,
            guard,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::auth::directory::Directory;
    use crate::auth::live::LiveSessions;
    use crate::auth::password::PasswordHasher;
    use crate::auth::tokens::Tokens;
    use crate::auth::{LinkSettings, audit, catalog, keys, throttle};
    use crate::clock::Clock;
    use crate::crypto::Secrets;
    use crate::domain::{Email, FullName};
    use crate::error::Error;
    use crate::mail::Mailer;
    use crate::metrics::Metrics;
    use crate::store::Store;

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
                providers: crate::upstream::Providers::none(),
                catalog: Arc::new(
                    catalog::CatalogCell::load(
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

    /// The contexts of the flows and what each may import of the others (the table in
    /// docs/guide/contributing.md, "Layout"): every import points down, so none closes a circle;
    /// and none of them names `axum`, `sqlx` or `utoipa`.
    /// Read from the source, comments left out; a context is a folder or a file of `src/`.
    #[test]
    fn each_context_imports_only_what_it_stands_on() {
        const STANDS_ON: &[(&str, &[&str])] = &[
            ("admin", &["orgs", "guard", "auth"]),
            ("orgs", &["provider", "auth"]),
            ("guard", &["provider", "auth"]),
            ("provider", &["auth"]),
            ("federation", &["auth", "upstream"]),
            ("import", &["auth"]),
            ("auth", &["upstream"]),
            ("upstream", &[]),
        ];
        let contexts: Vec<&str> = STANDS_ON.iter().map(|(c, _)| *c).chain(["flows"]).collect();
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        for (context, allowed) in STANDS_ON {
            let mut files = Vec::new();
            let dir = src.join(context);
            if dir.is_dir() {
                rust_files(&dir, &mut files);
            } else {
                files.push(src.join(format!("{context}.rs")));
            }
            assert!(
                !files.is_empty() && files[0].exists(),
                "{context}: no source"
            );
            for file in files {
                let text = std::fs::read_to_string(&file).unwrap();
                for (n, line) in text.lines().enumerate() {
                    let code = line.split("//").next().unwrap_or_default();
                    // The flows know neither HTTP as a server nor SQL.
                    for layer in ["axum::", "sqlx::", "utoipa::"] {
                        assert!(
                            !code.contains(layer),
                            "{}:{}: {context} uses {layer}: {line}",
                            file.display(),
                            n + 1
                        );
                    }
                    for used in contexts.iter().filter(|c| {
                        code.contains(&format!("crate::{c}::"))
                            || code.contains(&format!("crate::{c};"))
                    }) {
                        assert!(
                            used == context || allowed.contains(used),
                            "{}:{}: {context} imports {used}, which stands above it: {line}",
                            file.display(),
                            n + 1
                        );
                    }
                }
            }
        }
    }

    fn rust_files(dir: &std::path::Path, into: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                rust_files(&path, into);
            } else if path.extension().is_some_and(|e| e == "rs") {
                into.push(path);
            }
        }
        into.sort();
    }
}
