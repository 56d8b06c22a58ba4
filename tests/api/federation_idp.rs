//! Upstream identity providers for the federation tests (docs/api.md §14), and a browser to walk
//! their redirects:
//!
//! - `Upstream`: panva's oidc-provider (tests/browser/upstream-idp.mjs), a provider no one here
//!   wrote, with accounts set at runtime;
//! - `HostileIdp`: a provider in Rust whose token endpoint answers as the test's `Scenario` says
//!   (good, foreign key, wrong audience, expired, wrong nonce, unknown then rotated key, never
//!   answering…), so each refusal of the relying party can be provoked;
//! - `Browser::browse`: follows a redirect chain with a small cookie jar, posting the upstream's
//!   login form when it meets it, so an API test can go start → provider → callback → finish.

pub mod browse;
pub mod hostile;

use std::io::BufRead as _;
use std::os::unix::process::CommandExt as _;
use std::process::{Child, Command, Stdio};

use gatehouse::upstream::ProviderConfig;
use serde_json::{Value, json};
use url::Url;

pub use browse::Browser;
pub use hostile::{HOSTILE_SUBJECT, HostileIdp, Scenario};

use crate::browser::{BROWSER_DIR, node_ready, packages_ready};

/// A client registered at an upstream.
#[derive(Clone, Debug, serde::Serialize)]
pub struct UpstreamClient {
    pub client_id: String,
    pub client_secret: String,
    pub redirect_uris: Vec<String>,
}

/// A provider's configuration as the providers file would give it.
pub fn provider_config(id: &str, issuer: &str, client: &UpstreamClient) -> ProviderConfig {
    ProviderConfig {
        id: id.to_owned(),
        name: format!("{id} sign-in"),
        issuer: Url::parse(issuer).unwrap(),
        client_id: client.client_id.clone(),
        client_secret: client.client_secret.clone().into(),
        scopes: vec!["openid".into(), "email".into(), "profile".into()],
        domains: Vec::new(),
        org: None,
        signup: false,
        trust_second_factor: false,
    }
}

/// Writes a providers file into `dir` with one provider for `client` at `issuer`, over the lines
/// `extra` (`signup = true`, `domains = […]`); its path, for `identity_providers`.
pub fn write_providers_file(
    dir: &tempfile::TempDir,
    (id, name): (&str, &str),
    issuer: &str,
    client: &UpstreamClient,
    extra: &str,
) -> String {
    let path = dir.path().join("providers.toml");
    let text = format!(
        "[[provider]]\nid = \"{id}\"\nname = \"{name}\"\nissuer = \"{issuer}\"\n\
         client_id = \"{}\"\nclient_secret = \"{}\"\n{extra}\n",
        client.client_id, client.client_secret
    );
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_owned()
}

/// How long a start of upstream-idp.mjs may take to print its line (it takes well under a second).
const START_WAIT: std::time::Duration = std::time::Duration::from_secs(20);

/// oidc-provider on a loopback port, killed when dropped.
pub struct Upstream {
    pub issuer: String,
    child: Child,
    http: reqwest::Client,
    _stderr: tempfile::NamedTempFile,
}

impl Drop for Upstream {
    fn drop(&mut self) {
        crate::helpers::kill_group(&mut self.child);
    }
}

impl Upstream {
    /// The upstream with these clients; `None` (a skip outside CI, a failure in it) without node
    /// or the oidc-provider package.
    pub async fn start(clients: &[UpstreamClient]) -> Option<Upstream> {
        Upstream::start_with(clients, false).await
    }

    /// With `id_token_claims`, email and name travel in the ID token too (else in userinfo only).
    pub async fn start_with(clients: &[UpstreamClient], id_token_claims: bool) -> Option<Upstream> {
        if !node_ready() || !packages_ready(&["oidc-provider"]) {
            return None;
        }
        // Node has been seen (1 run in ~20, on a loaded machine) to stall before it listens, with
        // no error: a start that prints nothing within START_WAIT is killed and made again, so
        // the test fails with what it printed rather than hanging the suite.
        let mut attempt = 0;
        let (child, line, stderr) = loop {
            attempt += 1;
            let port = crate::helpers::free_port();
            let stderr = tempfile::NamedTempFile::new().unwrap();
            let mut child = Command::new("node")
                .arg("upstream-idp.mjs")
                .current_dir(BROWSER_DIR)
                .env("PORT", port.to_string())
                .env("CLIENTS", serde_json::to_string(clients).unwrap())
                .env("ID_TOKEN_CLAIMS", if id_token_claims { "1" } else { "0" })
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(stderr.reopen().unwrap())
                .process_group(0)
                .spawn()
                .expect("node runs");
            let stdout = child.stdout.take().unwrap();
            // The line it prints once it listens; an empty read means it died first. The rest is
            // drained: oidc-provider prints notices, and a write to a closed pipe would kill it.
            let reading = tokio::task::spawn_blocking(move || {
                let mut reader = std::io::BufReader::new(stdout);
                let mut line = String::new();
                let read = reader.read_line(&mut line).map(|_| line);
                std::thread::spawn(move || std::io::copy(&mut reader, &mut std::io::sink()));
                read
            });
            match tokio::time::timeout(START_WAIT, reading).await {
                Ok(read) => break (child, read.unwrap().unwrap_or_default(), stderr),
                Err(_) if attempt < 3 => {
                    crate::helpers::kill_group(&mut child);
                }
                Err(_) => {
                    crate::helpers::kill_group(&mut child);
                    panic!(
                        "upstream-idp.mjs printed nothing in {START_WAIT:?}, {attempt} times:\n{}",
                        std::fs::read_to_string(stderr.path()).unwrap_or_default()
                    );
                }
            }
        };
        let printed: Value = serde_json::from_str(line.trim()).unwrap_or_else(|_| {
            panic!(
                "upstream-idp.mjs did not start: {line:?}\n{}",
                std::fs::read_to_string(stderr.path()).unwrap_or_default()
            )
        });
        Some(Upstream {
            issuer: printed["issuer"].as_str().unwrap().to_owned(),
            child,
            http: reqwest::Client::new(),
            _stderr: stderr,
        })
    }

    /// Sets the account `id`: its claims (email, email_verified, name…) and the `amr` of its logins.
    pub async fn account(&self, id: &str, claims: Value, amr: &[&str]) {
        let response = self
            .http
            .put(format!("{}/control/accounts/{id}", self.issuer))
            .body(json!({ "claims": claims, "amr": amr }).to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 204);
    }
}
