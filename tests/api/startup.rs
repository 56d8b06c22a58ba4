//! What a starting server says (issue 30): where the pages are, why passkeys and the OpenID
//! provider are off and what turns them on, and, before the first account, the command that makes
//! the first admin; the command works as printed.

use crate::helpers::{Backend, Instance, PASSWORD, TestDatabase, both_backends};

both_backends!(the_start_names_the_pages_passkeys_and_the_first_admin_command);

fn logged(instance: &Instance, needle: &str) -> Option<String> {
    let log = instance.log.lock().unwrap();
    log.iter().find(|l| l.contains(needle)).cloned()
}

async fn the_start_names_the_pages_passkeys_and_the_first_admin_command(backend: Backend) {
    let db = TestDatabase::migrated(&backend).await;
    // The default public URL is the listen address, an IP: passkeys are off.
    let mut first = Instance::start(&db, &[]);
    let pages = logged(&first, "pages at http://127.0.0.1:").expect("the pages' URL");
    assert!(pages.contains("/sign-in"), "{pages}");
    let passkeys = logged(&first, "passkeys are off").expect("why passkeys are off");
    for needle in [
        "WARN",
        "IP address",
        "GATEHOUSE_PUBLIC_URL",
        "GATEHOUSE_WEBAUTHN_RP_ID",
    ] {
        assert!(passkeys.contains(needle), "{passkeys} should say {needle}");
    }
    // The issuer is `gatehouse`, not a URL: the OpenID provider is off, and the line says why.
    let provider = logged(&first, "OpenID provider off").expect("why the provider is off");
    for needle in ["(gatehouse)", "GATEHOUSE_PUBLIC_URL", "GATEHOUSE_ISSUER"] {
        assert!(provider.contains(needle), "{provider} should say {needle}");
    }
    let hint = logged(&first, "no accounts yet").expect("the first admin's command");
    first.stop();

    // The command as printed, with the placeholders filled in.
    let start = hint.find("`gatehouse ").unwrap() + "`gatehouse ".len();
    let command = &hint[start..start + hint[start..].find('`').unwrap()];
    assert_eq!(
        command,
        "user add --email you@example.com --name \"Your Name\" --role admin --password-stdin"
    );
    let output = db.cli(
        &[
            "user",
            "add",
            "--email",
            "you@example.com",
            "--name",
            "Your Name",
            "--role",
            "admin",
            "--password-stdin",
        ],
        Some(&format!("{PASSWORD}\n")),
    );
    assert!(output.status.success(), "{output:?}");
    let listed = db.cli(&["user", "roles", "you@example.com"], None);
    assert_eq!(String::from_utf8_lossy(&listed.stdout).trim(), "admin");

    // With an account and a public URL with a domain: no hint, passkeys on.
    let second = Instance::start(&db, &[("GATEHOUSE_PUBLIC_URL", "http://localhost:9")]);
    assert!(logged(&second, "pages at http://localhost:9/sign-in").is_some());
    let on = logged(&second, "passkeys on").expect("passkeys on");
    assert!(on.contains("relying party localhost"), "{on}");
    assert!(logged(&second, "OpenID provider on: issuer http://localhost:9").is_some());
    second.login("you@example.com", PASSWORD).await.data(200);
    assert!(logged(&second, "no accounts yet").is_none());
}
