//! Debian's Apache with mod_auth_openidc (OpenID Certified) as the relying party, with the recipe
//! docs/recipes/apache-mod-auth-openidc.conf itself (its names, ports, paths and the client's
//! credentials replaced), in front of an upstream that records what it receives, driven by
//! Chromium: tests/browser/apache-oidc.mjs. Apache runs as a process of the test on a loopback
//! port, its ServerRoot, configuration, logs and caches in a temporary folder.
//!
//! Gatehouse is `http://localhost:G` (its issuer), Apache `http://127.0.0.1:A`: two hosts, so that
//! neither's cookies reach the other, and both resolvable by Apache's own HTTP client.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::HeaderMap;
use axum::response::Html;

use super::{add_client, provider};
use crate::browser::{BROWSER_DIR, CHROMIUM, browser_ready, node};
use crate::helpers::{Backend, PASSWORD, both_backends, free_port, installed_or_skipped};

both_backends!(apache_mod_auth_openidc_signs_in_and_back_channel_logout_ends_its_session);

const APACHE: &str = "/usr/sbin/apache2";
const MODULES: &str = "/usr/lib/apache2/modules";

/// Whether Debian's apache2 and its mod_auth_openidc are here.
fn apache_ready() -> bool {
    let missing: Vec<&str> = [
        (!Path::new(APACHE).exists()).then_some("apache2 (apt-get install apache2)"),
        (!Path::new(MODULES).join("mod_auth_openidc.so").exists())
            .then_some("mod_auth_openidc (apt-get install libapache2-mod-auth-openidc)"),
    ]
    .into_iter()
    .flatten()
    .collect();
    installed_or_skipped(&missing, "the Apache relying-party test")
}

/// A request's headers, names lower-cased, each value received.
type Headers = BTreeMap<String, Vec<String>>;

/// The application behind Apache: a page naming the person mod_auth_openidc says it serves, and
/// every request's headers.
struct Upstream {
    addr: SocketAddr,
    seen: Arc<Mutex<Vec<Headers>>>,
}

impl Upstream {
    async fn start() -> Upstream {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let record = seen.clone();
        let router = axum::Router::new().fallback(move |headers: HeaderMap| {
            let mut all = Headers::new();
            for (name, value) in &headers {
                let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
                all.entry(name.as_str().to_owned()).or_default().push(value);
            }
            let one = |name: &str| {
                all.get(name)
                    .and_then(|v| v.first())
                    .cloned()
                    .unwrap_or_default()
            };
            let page = format!(
                "<!doctype html><title>Team wiki</title><h1>Team wiki</h1>\
                 <p id=\"sub\">{}</p><p id=\"email\">{}</p>",
                html_escape(&one("oidc_claim_sub")),
                html_escape(&one("oidc_claim_email")),
            );
            record.lock().unwrap().push(all);
            async move { Html(page) }
        });
        tokio::spawn(async move { axum::serve(listener, router).await });
        Upstream { addr, seen }
    }

    fn seen(&self) -> Vec<Headers> {
        self.seen.lock().unwrap().clone()
    }
}

fn html_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Apache in the foreground, stopped when dropped; its error log is printed on failure.
struct Apache {
    child: Child,
    dir: tempfile::TempDir,
}

impl Drop for Apache {
    fn drop(&mut self) {
        crate::helpers::kill_group(&mut self.child);
    }
}

/// What the test puts in the recipe's place: names, ports, paths and the client's credentials.
struct Recipe<'a> {
    issuer: &'a str,
    port: u16,
    upstream: SocketAddr,
    client_id: &'a str,
    client_secret: &'a str,
}

impl Apache {
    async fn start(recipe: Recipe<'_>) -> Apache {
        let dir = tempfile::tempdir().unwrap();
        // Apache's children run as nobody when started as root, and read below this folder.
        #[cfg(unix)]
        std::fs::set_permissions(
            dir.path(),
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )
        .unwrap();
        let d = dir.path().display().to_string();
        let passphrase = dir.path().join("oidc-passphrase");
        std::fs::write(&passphrase, format!("{}\n", uuid::Uuid::new_v4().simple())).unwrap();
        let app = format!("http://127.0.0.1:{}", recipe.port);
        let site = include_str!("../../../docs/recipes/apache-mod-auth-openidc.conf")
            .replace("https://login.example.com", recipe.issuer)
            .replace("https://app.example.com", &app)
            .replace("ServerName app.example.com", "ServerName 127.0.0.1")
            .replace(
                "<VirtualHost *:80>",
                &format!("<VirtualHost 127.0.0.1:{}>", recipe.port),
            )
            .replace("127.0.0.1:3000", &recipe.upstream.to_string())
            .replace("CLIENT_ID", recipe.client_id)
            .replace("CLIENT_SECRET", recipe.client_secret)
            .replace(
                "/etc/apache2/oidc-passphrase",
                &passphrase.display().to_string(),
            );
        let modules = [
            ("mpm_event_module", "mod_mpm_event.so"),
            ("authn_core_module", "mod_authn_core.so"),
            ("authz_core_module", "mod_authz_core.so"),
            ("authz_user_module", "mod_authz_user.so"),
            ("proxy_module", "mod_proxy.so"),
            ("proxy_http_module", "mod_proxy_http.so"),
            ("auth_openidc_module", "mod_auth_openidc.so"),
        ]
        .map(|(name, file)| format!("LoadModule {name} {MODULES}/{file}\n"))
        .concat();
        // Debian's own configuration (envvars, sites, the service) is not read at all.
        let root = running_as_root();
        let user = if root {
            "User nobody\nGroup nogroup\n"
        } else {
            ""
        };
        let conf = format!(
            "ServerRoot {d}\nDefaultRuntimeDir {d}\nPidFile {d}/apache2.pid\nMutex file:{d} default\n\
             ServerName 127.0.0.1\nListen 127.0.0.1:{port}\n{user}\
             ErrorLog {d}/error.log\nLogLevel warn auth_openidc:info\n\
             StartServers 1\nServerLimit 1\nThreadsPerChild 16\nMaxRequestWorkers 16\nMinSpareThreads 1\nMaxSpareThreads 16\n\
             {modules}\n{site}\n",
            port = recipe.port,
        );
        std::fs::write(dir.path().join("apache2.conf"), conf).unwrap();
        let check = Command::new(APACHE)
            .args(["-d", &d, "-f", &format!("{d}/apache2.conf"), "-t"])
            .output()
            .unwrap();
        assert!(
            check.status.success(),
            "apache2 -t: {}",
            String::from_utf8_lossy(&check.stderr)
        );
        let child = Command::new(APACHE)
            .args(["-d", &d, "-f", &format!("{d}/apache2.conf"), "-DFOREGROUND"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .expect("apache2 starts");
        let apache = Apache { child, dir };
        for _ in 0..200 {
            if tokio::net::TcpStream::connect(("127.0.0.1", recipe.port))
                .await
                .is_ok()
            {
                return apache;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("Apache did not listen: {}", apache.log());
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("error.log")).unwrap_or_default()
    }
}

fn running_as_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// tests/browser/apache-oidc.mjs: an unauthenticated visit through Apache is sent to Gatehouse,
/// signs in, consents, and reaches the upstream with the person's claims (a forged claim header
/// of the visitor's does not arrive); withdrawing the consent at Gatehouse ends the Apache session
/// within 5 s by back-channel logout (the next visit asks consent again), and so does signing out
/// everywhere (the next visit asks to sign in again).
async fn apache_mod_auth_openidc_signs_in_and_back_channel_logout_ends_its_session(
    backend: Backend,
) {
    if !apache_ready() || !browser_ready() {
        return;
    }
    let provider = provider(backend, "localhost").await;
    let app = &provider.app;
    let user = app.create_user("ann@example.com", PASSWORD).await;
    let upstream = Upstream::start().await;
    let port = free_port();
    let site = format!("http://127.0.0.1:{port}");
    let client = add_client(
        app,
        "Team wiki",
        &[
            "--redirect-uri",
            &format!("{site}/oidc/callback"),
            "--backchannel-logout-uri",
            &format!("{site}/oidc/callback?logout=backchannel"),
            "--post-logout-redirect-uri",
            &format!("{site}/"),
        ],
    );
    let apache = Apache::start(Recipe {
        issuer: &provider.issuer,
        port,
        upstream: upstream.addr,
        client_id: &client.id,
        client_secret: client.secret.as_deref().unwrap(),
    })
    .await;
    let env = [
        ("GATEHOUSE_URL", provider.issuer.clone()),
        ("GATEHOUSE_EMAIL", "ann@example.com".to_owned()),
        ("GATEHOUSE_PASSWORD", PASSWORD.to_owned()),
        ("GATEHOUSE_USER_ID", user.to_string()),
        ("GATEHOUSE_CLIENT_ID", client.id.clone()),
        ("APP", site.clone()),
        ("CHROMIUM", CHROMIUM.to_owned()),
    ];
    let env = env.map(|(k, v)| (k.to_owned(), v)).to_vec();
    let scenario = tokio::spawn(async move { node(BROWSER_DIR, &["apache-oidc.mjs"], env).await });
    let printed = match scenario.await {
        Ok(printed) => printed,
        Err(panic) => panic!("{panic:?}\n--- Apache's error log:\n{}", apache.log()),
    };
    eprintln!("{printed}");

    // Every request that reached the application carried the person's claims, from
    // mod_auth_openidc alone: the visitor's forged OIDC_CLAIM_email never arrived.
    let seen = upstream.seen();
    assert!(seen.len() >= 3, "{seen:#?}");
    for headers in &seen {
        let one = |name: &str| -> Option<&str> {
            let values = headers.get(name)?;
            assert_eq!(values.len(), 1, "{name}: {values:?}");
            Some(values[0].as_str())
        };
        assert_eq!(one("oidc_claim_sub"), Some(user.to_string().as_str()));
        assert_eq!(one("oidc_claim_email"), Some("ann@example.com"));
        assert_eq!(one("oidc_claim_name"), Some("Test User"));
        assert_eq!(one("oidc_claim_iss"), Some(provider.issuer.as_str()));
        assert_eq!(one("oidc_claim_aud"), Some(client.id.as_str()));
    }
}
