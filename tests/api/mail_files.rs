//! The `.eml` mailbox (no SMTP server set, a development setting): each mail is a file named
//! `TIME-kind-recipient.eml`, readable with `cat` (8bit bodies, a link on one line, durations in
//! words), and the log line of each names its recipient.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::helpers::{Backend, Instance, TestDatabase, both_backends};
use crate::instances::add_user;

both_backends!(mail_files_are_named_for_their_time_kind_and_recipient_and_read_plainly);

/// The `.eml` files in `dir` once there are `n`.
async fn wait_for_files(dir: &Path, n: usize) -> Vec<PathBuf> {
    let started = Instant::now();
    loop {
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
            .map(|e| e.filter_map(Result::ok).map(|e| e.path()).collect())
            .unwrap_or_default();
        if files.len() >= n {
            files.sort();
            return files;
        }
        assert!(started.elapsed() < Duration::from_secs(15), "{files:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn mail_files_are_named_for_their_time_kind_and_recipient_and_read_plainly(backend: Backend) {
    let db = TestDatabase::migrated(&backend).await;
    add_user(&db, "Ann.Lee+x@Example.com");
    let server = Instance::start(&db, &[("GATEHOUSE_PUBLIC_URL", "http://localhost:9")]);
    server
        .post(
            "/api/v1/auth/password/forgot",
            json!({ "email": "ann.lee+x@example.com" }),
        )
        .await;
    let files = wait_for_files(Path::new(&db.mail_dir()), 1).await;
    let name = files[0].file_name().unwrap().to_string_lossy().into_owned();
    let pattern = regex::Regex::new(r"^\d{8}T\d{6}\.\d{3}Z-reset-Ann\.Lee\+x@Example\.com\.eml$");
    assert!(pattern.unwrap().is_match(&name), "{name}");

    let text = std::fs::read_to_string(&files[0]).unwrap();
    assert!(text.contains("Content-Transfer-Encoding: 8bit"), "{text}");
    assert!(!text.contains("quoted-printable"), "{text}");
    assert!(text.contains("Someone (we hope you)"), "{text}");
    assert!(text.contains("within 1 hour:"), "{text}");
    // The link whole on a line of its own, as `cat` shows it.
    let link = text
        .lines()
        .find(|l| l.starts_with("http://localhost:9/reset-password?token="))
        .unwrap_or_else(|| panic!("no whole link in {text}"));
    let token = link.split("token=").nth(1).unwrap();
    assert!(
        token.len() >= 43 && !token.contains('='),
        "{token}: the token whole"
    );

    // The log names the recipient and the file (written after the file).
    let started = Instant::now();
    loop {
        let log = server.log.lock().unwrap().clone();
        if let Some(line) = log.iter().find(|l| l.contains("mail written")) {
            assert!(line.contains("Ann.Lee+x@Example.com"), "{line}");
            assert!(line.contains(&name), "{line}");
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(15), "{log:#?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
