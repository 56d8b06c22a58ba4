//! The pages (docs/api.md §10) in a real browser: Debian's Chromium, headless, driven by the
//! node scripts of tests/browser (playwright-core) against a served app, one browser per
//! scenario; and the client library's own Node tests against a served app. Without Chromium or
//! tests/browser/node_modules the tests say so and pass, unless `CI` is set (`.ci/run` installs
//! both).
//!
//! The browser reaches the app as `http://localhost:PORT`, its public URL: WebAuthn allows plain
//! HTTP only on localhost, and the mailed links point there.

use std::path::Path;
use std::process::Command;

use gatehouse::config::SettingsArgs;

use crate::helpers::{
    Backend, PASSWORD, TestApp, base32_decode, both_backends, installed_or_skipped, spawn_app_with,
};
use crate::smtp::SmtpServer;

mod federation;
mod library;
mod web_apps;

both_backends!(
    the_account_page_switches_and_manages_organisations,
    the_account_page_lists_and_removes_connected_applications,
    the_account_page_makes_shows_once_and_deletes_api_keys,
    organisation_invitations_land_on_their_page,
    signing_in_with_and_without_two_factor,
    pages_fit_a_phone_and_work_by_keyboard,
    mailed_links_land_on_their_pages,
    registration_waits_for_the_verified_address_when_required,
    the_account_page_changes_and_deletes_the_account,
    the_account_page_asks_for_the_password_once,
    passkeys_are_added_and_sign_in,
    sessions_end_from_another_browser_and_two_tabs_rotate_once,
    the_client_library_passes_its_tests,
    the_docs_page_works_under_its_csp,
    the_authorization_page_signs_in_asks_consent_and_returns_a_code,
    the_device_page_connects_a_command_line_tool,
);

pub(crate) const BROWSER_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/browser");
pub(crate) const CHROMIUM: &str = "/usr/bin/chromium";

/// Whether Chromium and playwright-core are here; without them, a skip outside CI, a failure in it.
pub(crate) fn browser_ready() -> bool {
    let missing: Vec<&str> = [
        (!Path::new(CHROMIUM).exists()).then_some("chromium (apt-get install chromium)"),
        (!Path::new(BROWSER_DIR)
            .join("node_modules/playwright-core")
            .exists())
        .then_some("tests/browser/node_modules (npm ci --prefix tests/browser)"),
    ]
    .into_iter()
    .flatten()
    .collect();
    node_ready() && installed_or_skipped(&missing, "a browser test")
}

pub(crate) fn node_ready() -> bool {
    let found = Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    installed_or_skipped(if found { &[] } else { &["node"] }, "a browser test")
}

/// Whether these npm packages of tests/browser are installed (`npm ci --prefix tests/browser`);
/// without them, a skip outside CI, a failure in it.
pub(crate) fn packages_ready(packages: &[&str]) -> bool {
    let missing: Vec<String> = packages
        .iter()
        .filter(|p| !Path::new(BROWSER_DIR).join("node_modules").join(p).exists())
        .map(|p| format!("{p} (npm ci --prefix tests/browser)"))
        .collect();
    let missing: Vec<&str> = missing.iter().map(String::as_str).collect();
    installed_or_skipped(&missing, "a test of a relying party")
}

/// An app the browser reaches at `url` (`http://localhost:PORT`), its public URL, passkeys'
/// origin and the one allowed return URL.
pub(crate) struct Site {
    pub(crate) app: TestApp,
    pub(crate) url: String,
}

async fn site(backend: Backend, args: SettingsArgs) -> Site {
    site_at(backend, crate::helpers::free_port(), args).await
}

/// `site` on `port`, for a test that must know its URL before the app starts (to register it
/// with an identity provider).
pub(crate) async fn site_at(backend: Backend, port: u16, args: SettingsArgs) -> Site {
    let url = format!("http://localhost:{port}");
    let app = spawn_app_with(
        backend,
        SettingsArgs {
            listen: Some(format!("127.0.0.1:{port}")),
            public_url: Some(url.clone()),
            allowed_return_urls: Some(url.clone()),
            ..args
        },
    )
    .await;
    Site { app, url }
}

/// Runs `node ARGS` in `dir` with `env` (off the runtime's threads: the app serves meanwhile) and
/// fails with everything it printed.
pub(crate) async fn node(dir: &str, args: &[&str], env: Vec<(String, String)>) -> String {
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    let dir = dir.to_owned();
    let output = tokio::task::spawn_blocking(move || {
        Command::new("node")
            .args(&args)
            .current_dir(&dir)
            .envs(env)
            .output()
            .expect("node runs")
    })
    .await
    .unwrap();
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        output.status.success(),
        "the browser scenario failed:\n{printed}"
    );
    printed
}

/// Runs the scenario `tests/browser/NAME.mjs` against `site` for the account `email`.
async fn scenario(site: &Site, name: &str, email: &str, extra: &[(&str, String)]) -> String {
    let mut env = vec![
        ("GATEHOUSE_URL".to_owned(), site.url.clone()),
        ("GATEHOUSE_EMAIL".to_owned(), email.to_owned()),
        ("GATEHOUSE_PASSWORD".to_owned(), PASSWORD.to_owned()),
        ("CHROMIUM".to_owned(), CHROMIUM.to_owned()),
    ];
    env.extend(extra.iter().map(|(k, v)| (k.to_string(), v.clone())));
    node(BROWSER_DIR, &[&format!("{name}.mjs")], env).await
}

/// A new account with 2FA on, enabled through the API: its TOTP secret (base32) and recovery
/// codes. The enabling code is the previous step's, so the current one is free for the page.
async fn two_factor_user(app: &TestApp, email: &str) -> (String, Vec<String>) {
    let (access, _) = app.logged_in_user(email).await;
    let setup = app.setup_two_factor(&access).await;
    let secret = setup.data(200)["secret"].as_str().unwrap().to_owned();
    let (codes, _) = app
        .enable_with_previous_code(&access, &base32_decode(&secret))
        .await;
    (secret, codes)
}

/// Password sign-in, a wrong password, TOTP enrolment from the page's secret and QR code, a wrong
/// code, a right one, a recovery code, and an allowed return_to.
async fn signing_in_with_and_without_two_factor(backend: Backend) {
    if !browser_ready() {
        return;
    }
    let site = site(backend, SettingsArgs::default()).await;
    site.app.create_user("ann@example.com", PASSWORD).await;
    scenario(&site, "sign-in", "ann@example.com", &[]).await;
    assert_eq!(site.app.audit_count("two_factor.enabled", None).await, 1);
    assert_eq!(site.app.audit_count("recovery_code.used", None).await, 1);
}

/// Every page at 360 px: no overflow, every input labelled, nothing refused by the CSP; and a
/// sign-in with the keyboard alone.
async fn pages_fit_a_phone_and_work_by_keyboard(backend: Backend) {
    if !browser_ready() {
        return;
    }
    let site = site(
        backend,
        SettingsArgs {
            registration: Some("open".into()),
            ..SettingsArgs::default()
        },
    )
    .await;
    site.app.create_user("ann@example.com", PASSWORD).await;
    scenario(&site, "layout", "ann@example.com", &[]).await;
}

/// Forgotten password and reset, registration and verification, an invitation: each mail read
/// from the real SMTP server, its link opened in the browser.
async fn mailed_links_land_on_their_pages(backend: Backend) {
    if !browser_ready() {
        return;
    }
    let smtp = SmtpServer::start();
    let site = site(
        backend,
        SettingsArgs {
            smtp_url: Some(smtp.url()),
            registration: Some("open".into()),
            mail_retry_max: Some("1s".into()),
            ..SettingsArgs::default()
        },
    )
    .await;
    site.app.create_user("ann@example.com", PASSWORD).await;
    // The CLI queues the invitation; the served app's worker delivers it.
    let invited = site
        .app
        .db
        .command()
        .env("GATEHOUSE_PUBLIC_URL", &site.url)
        .args([
            "user",
            "invite",
            "--email",
            "Ivy@Example.com",
            "--name",
            "Ivy",
        ])
        .output()
        .unwrap();
    assert!(
        invited.status.success(),
        "{}",
        String::from_utf8_lossy(&invited.stderr)
    );
    scenario(
        &site,
        "mail",
        "ann@example.com",
        &[
            ("GATEHOUSE_MAILDIR", smtp.maildir().display().to_string()),
            ("GATEHOUSE_INVITED_EMAIL", "Ivy@Example.com".into()),
        ],
    )
    .await;
    for event in ["password.reset", "email.verified", "invitation.accepted"] {
        assert_eq!(site.app.audit_count(event, None).await, 1, "{event}");
    }
}

/// An organisation's invitations through `/accept-invitation` (docs/api.md §13): an existing
/// account joins signed in (another account is refused), a new address makes its account.
async fn organisation_invitations_land_on_their_page(backend: Backend) {
    if !browser_ready() {
        return;
    }
    let smtp = SmtpServer::start();
    let site = site(
        backend,
        SettingsArgs {
            smtp_url: Some(smtp.url()),
            mail_retry_max: Some("1s".into()),
            ..SettingsArgs::default()
        },
    )
    .await;
    let app = &site.app;
    let (owner, _) = app.logged_in_user("owner@example.com").await;
    app.create_user("ann@example.com", PASSWORD).await;
    app.create_user("sam@example.com", PASSWORD).await;
    let org = crate::orgs::create_org(app, &owner, "acme").await;
    for (email, roles) in [
        ("ann@example.com", ["member"]),
        ("nora@example.com", ["admin"]),
    ] {
        let invited = app
            .call(
                reqwest::Method::POST,
                &format!("/api/v1/orgs/{org}/invitations"),
                Some(&owner),
                Some(serde_json::json!({ "email": email, "roles": roles })),
            )
            .await;
        invited.data(201);
    }
    scenario(
        &site,
        "org-invitation",
        "ann@example.com",
        &[
            ("GATEHOUSE_MAILDIR", smtp.maildir().display().to_string()),
            ("GATEHOUSE_NEW_EMAIL", "nora@example.com".into()),
            ("GATEHOUSE_STRANGER_EMAIL", "sam@example.com".into()),
        ],
    )
    .await;
    let members = app
        .get(&format!("/api/v1/orgs/{org}/members"), &owner)
        .await;
    let mut found: Vec<(String, String)> = members.data(200)["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["email"].as_str().unwrap().to_owned(),
                m["fullName"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    found.sort();
    assert_eq!(
        found,
        [
            ("ann@example.com".to_owned(), "Test User".to_owned()),
            ("nora@example.com".to_owned(), "Nora Newcomer".to_owned()),
            ("owner@example.com".to_owned(), "Test User".to_owned()),
        ]
    );
}

/// The account page's organisations: create, switch, invite and withdraw, the last owner kept.
async fn the_account_page_switches_and_manages_organisations(backend: Backend) {
    if !browser_ready() {
        return;
    }
    let site = site(backend, SettingsArgs::default()).await;
    site.app.create_user("ann@example.com", PASSWORD).await;
    scenario(&site, "orgs", "ann@example.com", &[]).await;
    for (event, n) in [
        ("org.created", 1),
        ("org.switched", 1),
        ("org.invited", 1),
        ("org.invitation_deleted", 1),
    ] {
        assert_eq!(site.app.audit_count(event, None).await, n, "{event}");
    }
    let pending: i64 = site
        .app
        .scalar("SELECT COUNT(*) FROM org_invitations")
        .await;
    assert_eq!(pending, 0);
}

/// docs/api.md §11: the account page's connected applications, one removed; its consent and its
/// session end.
async fn the_account_page_lists_and_removes_connected_applications(backend: Backend) {
    if !browser_ready() {
        return;
    }
    let site = site(backend, SettingsArgs::default()).await;
    let user = site.app.create_user("ann@example.com", PASSWORD).await;
    let output = site.app.cli(&["clients", "add", "Notes", "--json"], None);
    assert!(output.status.success());
    let out: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let client = uuid::Uuid::parse_str(out["clientId"].as_str().unwrap()).unwrap();
    let sqlite = site.app.db.url.starts_with("sqlite:");
    let literal = |id: uuid::Uuid| {
        if sqlite {
            format!("x'{}'", id.simple())
        } else {
            format!("'{id}'")
        }
    };
    site.app
        .execute(&format!(
            "INSERT INTO oauth_consents (user_id, client_id, scopes, granted_at) \
             VALUES ({}, {}, 'openid contacts:read', 1700000000000)",
            literal(user),
            literal(client),
        ))
        .await;
    scenario(&site, "apps", "ann@example.com", &[]).await;
    let left: i64 = site.app.scalar("SELECT COUNT(*) FROM oauth_consents").await;
    assert_eq!(left, 0);
}

/// API keys on the account page (docs/api.md §12): made (the password confirmed once), shown
/// once, listed by prefix, deleted (tests/browser/keys.mjs).
async fn the_account_page_makes_shows_once_and_deletes_api_keys(backend: Backend) {
    if !browser_ready() {
        return;
    }
    let site = site(backend, SettingsArgs::default()).await;
    site.app.create_user("ann@example.com", PASSWORD).await;
    scenario(&site, "keys", "ann@example.com", &[]).await;
    let left: i64 = site.app.scalar("SELECT COUNT(*) FROM api_keys").await;
    assert_eq!(left, 0);
}

/// With verified addresses required, registration leads to the mailed link, not into the account.
async fn registration_waits_for_the_verified_address_when_required(backend: Backend) {
    if !browser_ready() {
        return;
    }
    let smtp = SmtpServer::start();
    let site = site(
        backend,
        SettingsArgs {
            smtp_url: Some(smtp.url()),
            registration: Some("open".into()),
            require_verified_email: Some("on".into()),
            mail_retry_max: Some("1s".into()),
            ..SettingsArgs::default()
        },
    )
    .await;
    scenario(
        &site,
        "verified-only",
        "newcomer@example.com",
        &[("GATEHOUSE_MAILDIR", smtp.maildir().display().to_string())],
    )
    .await;
}

/// The account page's password change, address change (through the mailed link), new recovery
/// codes, 2FA off and deletion, for an account with 2FA and a session elsewhere.
async fn the_account_page_changes_and_deletes_the_account(backend: Backend) {
    if !browser_ready() {
        return;
    }
    let smtp = SmtpServer::start();
    let site = site(
        backend,
        SettingsArgs {
            smtp_url: Some(smtp.url()),
            mail_retry_max: Some("1s".into()),
            ..SettingsArgs::default()
        },
    )
    .await;
    let (secret, codes) = two_factor_user(&site.app, "ann@example.com").await;
    scenario(
        &site,
        "account",
        "ann@example.com",
        &[
            ("GATEHOUSE_MAILDIR", smtp.maildir().display().to_string()),
            ("GATEHOUSE_TOTP_SECRET", secret.clone()),
            ("GATEHOUSE_RECOVERY_CODES", codes.join(",")),
        ],
    )
    .await;
    for event in [
        "password.changed",
        "email.changed",
        "recovery_codes.regenerated",
        "two_factor.disabled",
        "user.deleted",
    ] {
        assert_eq!(site.app.audit_count(event, None).await, 1, "{event}");
    }
}

/// The account page's one password prompt: the password changed and 2FA turned on after a single
/// re-authentication (docs/api.md §3), a cancelled prompt changing nothing.
async fn the_account_page_asks_for_the_password_once(backend: Backend) {
    if !browser_ready() {
        return;
    }
    let site = site(backend, SettingsArgs::default()).await;
    site.app.create_user("ann@example.com", PASSWORD).await;
    scenario(&site, "reauth", "ann@example.com", &[]).await;
    for (event, detail) in [
        ("reauthentication.succeeded", Some("pwd")),
        ("password.changed", None),
        ("two_factor.enabled", None),
    ] {
        let n = site.app.audit_count(event, detail).await;
        assert_eq!(n, 1, "{event}");
    }
}

/// A passkey added on the account page with Chromium's virtual authenticator (for an account
/// with 2FA), renamed, used as the second factor after the password, then alone without an
/// address, and removed.
async fn passkeys_are_added_and_sign_in(backend: Backend) {
    if !browser_ready() {
        return;
    }
    let site = site(backend, SettingsArgs::default()).await;
    let (secret, _) = two_factor_user(&site.app, "ann@example.com").await;
    scenario(
        &site,
        "passkeys",
        "ann@example.com",
        &[("GATEHOUSE_TOTP_SECRET", secret)],
    )
    .await;
    for event in ["login.succeeded", "two_factor.succeeded"] {
        let n = site.app.audit_count(event, Some("passkey")).await;
        assert_eq!(n, 1, "{event} with a passkey");
    }
    let n = site
        .app
        .audit_count("reauthentication.succeeded", Some("hwk"))
        .await;
    assert_eq!(n, 1, "re-authenticated with the passkey");
}

/// One browser signs another out; two tabs refresh at once and the session rotates once.
async fn sessions_end_from_another_browser_and_two_tabs_rotate_once(backend: Backend) {
    if !browser_ready() {
        return;
    }
    let site = site(backend, SettingsArgs::default()).await;
    site.app.create_user("ann@example.com", PASSWORD).await;
    let printed = scenario(&site, "sessions", "ann@example.com", &[]).await;
    // Two sign-ins (phone, laptop) issued a refresh token each; the two tabs' refresh, one more.
    // A second rotation would have issued a fourth (a racing presentation within the reuse grace
    // is answered with the current token, without issuing one).
    let issued: i64 = site
        .app
        .scalar(
            "SELECT COUNT(*) FROM refresh_tokens WHERE session_id IN \
             (SELECT s.id FROM sessions s JOIN users u ON u.id = s.user_id \
              WHERE u.email_normalized = 'ann@example.com')",
        )
        .await;
    assert_eq!(issued, 3, "{printed}");
    let live: i64 = site
        .app
        .scalar("SELECT COUNT(*) FROM sessions WHERE revoked_at IS NULL")
        .await;
    assert_eq!(live, 0, "signed out everywhere");
}

/// The client library's tests (clients/js/test, Node's test runner) against a served app.
async fn the_client_library_passes_its_tests(backend: Backend) {
    if !node_ready() {
        return;
    }
    // The library's stated contract (clients/js/package.json): open registration, access tokens
    // of 2 s (to reach expiry and refresh), no throttling (some 40 accounts from one address).
    let site = site(
        backend,
        SettingsArgs {
            registration: Some("open".into()),
            access_token_ttl: Some("2s".into()),
            rate_limit: Some("off".into()),
            ..SettingsArgs::default()
        },
    )
    .await;
    let root = env!("CARGO_MANIFEST_DIR");
    let printed = node(
        root,
        &["--test", "clients/js/test/"],
        vec![
            ("GATEHOUSE_URL".into(), site.url.clone()),
            // The served app's .eml outbox (no SMTP): the mailed links' tests read it.
            ("GATEHOUSE_MAIL_DIR".into(), site.app.db.mail_dir()),
        ],
    )
    .await;
    // The runner's summary: every test passed, and only the invitation's is skipped (against a
    // served app it needs the CLI; the pages' invitation is followed in mailed_links_…).
    assert!(printed.contains("# fail 0"), "{printed}");
    assert!(!printed.contains("# pass 0"), "{printed}");
    assert!(printed.contains("# skipped 1"), "{printed}");
}

/// Swagger UI, served on the tokens' origin, works under the CSP of its own.
async fn the_docs_page_works_under_its_csp(backend: Backend) {
    if !browser_ready() {
        return;
    }
    let docs = SettingsArgs {
        docs: Some("on".into()),
        ..SettingsArgs::default()
    };
    let site = site(backend, docs).await;
    scenario(&site, "docs", "nobody@example.com", &[]).await;
}

/// The OpenID provider's authorization page (docs/api.md §11), at desktop and phone width: sign in
/// for the client, consent with its name and the scopes in words, back to the redirect URI with a
/// code; a first-party client skips consent. A member of an organisation finds it chosen on the
/// consent screen and the client's token names it (docs/api.md §13). "Not you?" signs the
/// browser out and back in for the same request.
async fn the_authorization_page_signs_in_asks_consent_and_returns_a_code(backend: Backend) {
    if !browser_ready() {
        return;
    }
    let site = site(backend, SettingsArgs::default()).await;
    let client =
        |name: &str, flags: &[&str]| crate::oauth_helpers::add_client(&site.app, name, flags);
    let third = client("Acme Reports", &[]);
    let first = client("Team Dashboard", &["--first-party"]).id;
    let (ada, _) = site.app.logged_in_user("ada@example.com").await;
    let org = crate::orgs::create_org(&site.app, &ada, "acme").await;
    site.app.create_user("bo@example.com", PASSWORD).await;
    scenario(
        &site,
        "oauth",
        "ada@example.com",
        &[
            ("GATEHOUSE_EMAIL_PHONE", "bo@example.com".to_owned()),
            ("GATEHOUSE_CLIENT_THIRD", third.id),
            ("GATEHOUSE_CLIENT_THIRD_SECRET", third.secret.unwrap()),
            ("GATEHOUSE_CLIENT_FIRST", first),
            ("GATEHOUSE_ORG_ID", org),
        ],
    )
    .await;
}

/// The device page at phone width (tests/browser/device.mjs): a command-line tool's link signs
/// the person in and back, a mistyped code is said to be wrong, the right one names the tool and
/// what it asks, and "Allow" gives the tool its tokens at its next poll.
async fn the_device_page_connects_a_command_line_tool(backend: Backend) {
    if !browser_ready() {
        return;
    }
    let site = site(backend, SettingsArgs::default()).await;
    let tool = crate::oauth_helpers::add_client(
        &site.app,
        "Acme CLI",
        &[
            "--public",
            "--grant",
            "urn:ietf:params:oauth:grant-type:device_code",
            "--grant",
            "refresh_token",
            "--scope",
            "openid",
            "--scope",
            "offline_access",
        ],
    );
    site.app.create_user("ada@example.com", PASSWORD).await;
    scenario(
        &site,
        "device",
        "ada@example.com",
        &[("GATEHOUSE_DEVICE_CLIENT", tool.id)],
    )
    .await;
}
