//! Housekeeping's purge of invitations: an organisation's (§13) and a client registration
//! token (§12) are deleted once expired, and nothing live goes with them.

use reqwest::Method;
use serde_json::json;

use crate::helpers::{Backend, PASSWORD, both_backends};
use crate::orgs::{create_org, invite};
use crate::smtp::{SmtpServer, app_with_smtp};

both_backends!(expired_invitations_are_purged_and_live_ones_kept,);

async fn expired_invitations_are_purged_and_live_ones_kept(backend: Backend) {
    let smtp = SmtpServer::start();
    let args = gatehouse::config::SettingsArgs {
        oauth_registration: Some("token".into()),
        ..Default::default()
    };
    let app = app_with_smtp(backend, &smtp, args).await;
    let (owner, _) = app.logged_in_user("owner@example.com").await;
    let org = create_org(&app, &owner, "acme").await;
    invite(&app, &smtp, &org, &owner, "old@example.com", &["member"]).await;
    let made = app.cli(&["clients", "registration-token", "--ttl", "1h"], None);
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );

    // Eight days on, both are past their time (7 days, 1 hour); a new invitation is not.
    app.clock()
        .advance(std::time::Duration::from_secs(8 * 86_400));
    let owner = app.login("owner@example.com", PASSWORD).await.data(200)["accessToken"]
        .as_str()
        .unwrap()
        .to_owned();
    let fresh = invite(&app, &smtp, &org, &owner, "new@example.com", &["member"]).await;
    let purged = app.handle.housekeep().await.unwrap();
    assert_eq!(purged.invitations, 2);
    let left: i64 = app.scalar("SELECT COUNT(*) FROM org_invitations").await;
    assert_eq!(left, 1);
    let tokens: i64 = app
        .scalar("SELECT COUNT(*) FROM client_registration_tokens")
        .await;
    assert_eq!(tokens, 0);

    // The live invitation still works.
    let (newcomer, _) = app.logged_in_user("new@example.com").await;
    let joined = app
        .call(
            Method::POST,
            "/api/v1/orgs/invitations/accept",
            Some(&newcomer),
            Some(json!({ "token": fresh })),
        )
        .await;
    assert_eq!(joined.data(200)["id"], json!(org));
}
