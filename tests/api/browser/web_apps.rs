//! Web applications people browse to, guarded by real nginx and real Caddy with the recipes for
//! them (docs/recipes/nginx-web-apps.conf, docs/recipes/Caddyfile-web-apps), signed in once for
//! the whole site by the session cookie (docs/api.md §6b), in Chromium. Two applications on two
//! subdomains of one site (`app.example.test`, `grafana.example.test`), Gatehouse's pages on a
//! third (`login.example.test`), all mapped to 127.0.0.1 by Chromium's `--host-resolver-rules`.

use std::net::SocketAddr;
use std::os::unix::process::CommandExt as _;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::header::SET_COOKIE;
use axum::http::{HeaderMap, Uri};
use axum::response::{Html, IntoResponse as _};
use gatehouse::config::SettingsArgs;

use super::{BROWSER_DIR, CHROMIUM, browser_ready, node};
use crate::helpers::{Backend, PASSWORD, both_backends, free_port, spawn_app_with};
use crate::proxies::{Kind, installed, nginx_command};

both_backends!(browsed_applications_sign_in_once_for_the_site_behind_nginx_and_caddy);

/// What an application received: its path, `Remote-User` and the `Cookie` header.
#[derive(Clone, Debug)]
struct Seen {
    path: String,
    remote_user: Option<String>,
    cookie: Option<String>,
}

/// A browsed application: an HTML page naming itself and the user the proxy said it serves. It is
/// hostile too: `/deep/plant` sets a cookie of Gatehouse's name on `/deep`, which the browser then
/// sends before the real one on every `/deep/…` request (RFC 6265 §5.4: longer paths first), to
/// make a proxy that removes only the first such cookie hand it the real one.
struct App {
    addr: SocketAddr,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl App {
    async fn start(name: &'static str) -> App {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let record = seen.clone();
        let router = axum::Router::new().fallback(move |uri: Uri, headers: HeaderMap| {
            let header = |name: &str| {
                headers
                    .get(name)
                    .map(|v| v.to_str().unwrap_or_default().to_owned())
            };
            let user = header("remote-user");
            record.lock().unwrap().push(Seen {
                path: uri.path().to_owned(),
                remote_user: user.clone(),
                cookie: header("cookie"),
            });
            let user = user.unwrap_or_else(|| "nobody".into());
            let plant = uri.path() == "/deep/plant";
            async move {
                let page = Html(format!(
                    "<!doctype html><title>{name}</title><h1>{name}</h1><p id=\"user\">{user}</p>"
                ));
                let planted = "gatehouse_session=junk; Path=/deep; Domain=example.test";
                match plant {
                    true => ([(SET_COOKIE, planted)], page).into_response(),
                    false => page.into_response(),
                }
            }
        });
        tokio::spawn(async move { axum::serve(listener, router).await });
        App { addr, seen }
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

/// The proxy with its web-applications recipe on `port`, stopped when dropped.
struct Proxy {
    child: Child,
    _dir: tempfile::TempDir,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        crate::helpers::kill_group(&mut self.child);
    }
}

impl Proxy {
    async fn start(kind: Kind, port: u16, gatehouse: &str, a: SocketAddr, b: SocketAddr) -> Proxy {
        let dir = tempfile::tempdir().unwrap();
        let mut command = match kind {
            Kind::Nginx => {
                let recipe = include_str!("../../../docs/recipes/nginx-web-apps.conf")
                    .replace("127.0.0.1:8080", gatehouse)
                    .replace("127.0.0.1:3000", &a.to_string())
                    .replace("127.0.0.1:3001", &b.to_string())
                    .replace(".example.com", ".example.test")
                    // The test's port is not the scheme's: the original URL must name it.
                    .replace(
                        "$scheme://$host$request_uri",
                        &format!("$scheme://$host:{port}$request_uri"),
                    );
                nginx_command(dir.path(), &recipe, port)
            }
            Kind::Caddy => {
                let recipe = include_str!("../../../docs/recipes/Caddyfile-web-apps")
                    .replace("127.0.0.1:8080", gatehouse)
                    .replace("127.0.0.1:3000", &a.to_string())
                    .replace("127.0.0.1:3001", &b.to_string())
                    .replace(
                        "app.example.com {",
                        &format!("http://app.example.test:{port} {{"),
                    )
                    .replace(
                        "grafana.example.com {",
                        &format!("http://grafana.example.test:{port} {{"),
                    );
                let conf = format!("{{\n\tadmin off\n\tauto_https off\n}}\n\n{recipe}");
                std::fs::write(dir.path().join("Caddyfile"), conf).unwrap();
                let mut c = Command::new("caddy");
                c.args(["run", "--adapter", "caddyfile", "--config"])
                    .arg(dir.path().join("Caddyfile"))
                    .env("HOME", dir.path())
                    .env("XDG_CONFIG_HOME", dir.path())
                    .env("XDG_DATA_HOME", dir.path());
                c
            }
        };
        let child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .expect("the proxy starts");
        let proxy = Proxy { child, _dir: dir };
        for _ in 0..200 {
            if tokio::net::TcpStream::connect(("127.0.0.1", port))
                .await
                .is_ok()
            {
                return proxy;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("{kind:?} did not listen on {port}");
    }
}

/// tests/browser/web-apps.mjs behind each proxy, for an account of its own: app A sends the
/// browser to sign in and it comes back signed in; app B needs no second sign-in; a `two_factor`
/// rule on B's `/secure` sends the password-only session to sign in again with its second factor;
/// signing out on the account page ends the session for both (its cookie, replayed, is refused
/// within 2 s); a foreign `return_to` lands on /account. Here: the applications saw the user in
/// `Remote-User`, and never Gatehouse's cookie, not even behind a planted one of its name
/// (issue 38: nginx's recipe passed the real one on after a planted one).
async fn browsed_applications_sign_in_once_for_the_site_behind_nginx_and_caddy(backend: Backend) {
    if !browser_ready() || !installed(Kind::Nginx) || !installed(Kind::Caddy) {
        return;
    }
    let gatehouse_port = free_port();
    let rules_dir = tempfile::tempdir().unwrap();
    let rules = rules_dir.path().join("rules.toml");
    std::fs::write(
        &rules,
        "[[rule]]\npaths = [\"/secure\"]\npolicy = \"two_factor\"\n\
         [[rule]]\nname = \"admin area\"\npaths = [\"/admin\"]\npolicy = \"roles\"\nroles = [\"admin\"]\n",
    )
    .unwrap();
    let login = format!("http://login.example.test:{gatehouse_port}");
    let gatehouse = spawn_app_with(
        backend,
        SettingsArgs {
            listen: Some(format!("127.0.0.1:{gatehouse_port}")),
            public_url: Some(login.clone()),
            cookie_domain: Some("example.test".into()),
            trusted_proxies: Some("127.0.0.1/32".into()),
            access_rules: Some(rules.display().to_string()),
            ..SettingsArgs::default()
        },
    )
    .await;
    let address = gatehouse.address.trim_start_matches("http://").to_owned();
    for (kind, email) in [
        (Kind::Nginx, "ann@example.com"),
        (Kind::Caddy, "bob@example.com"),
    ] {
        let user = gatehouse.create_user(email, PASSWORD).await;
        let (a, b) = (App::start("App A").await, App::start("App B").await);
        let port = free_port();
        let _proxy = Proxy::start(kind, port, &address, a.addr, b.addr).await;
        let env = [
            ("GATEHOUSE_URL", login.clone()),
            ("GATEHOUSE_EMAIL", email.to_owned()),
            ("GATEHOUSE_PASSWORD", PASSWORD.to_owned()),
            ("GATEHOUSE_USER_ID", user.to_string()),
            ("APP_A", format!("http://app.example.test:{port}")),
            ("APP_B", format!("http://grafana.example.test:{port}")),
            ("CHROMIUM", CHROMIUM.to_owned()),
        ];
        let env = env.map(|(k, v)| (k.to_owned(), v)).to_vec();
        let printed = node(BROWSER_DIR, &["web-apps.mjs"], env).await;
        eprintln!("{kind:?}: {printed}");
        // The password-only session ended when the second factor replaced it, the next one at the
        // sign-out: only the last sign-in's is live.
        let live: i64 = gatehouse
            .scalar(&format!(
                "SELECT COUNT(*) FROM sessions s JOIN users u ON u.id = s.user_id \
                 WHERE u.email_normalized = '{email}' AND s.revoked_at IS NULL"
            ))
            .await;
        assert_eq!(live, 1, "{kind:?}: {printed}");
        let deep = a.seen();
        assert!(
            deep.iter().any(|s| s.path == "/deep/look"
                && s.remote_user.as_deref() == Some(user.to_string().as_str())),
            "{kind:?}: the planted cookie's page was reached signed in: {deep:?}"
        );
        for (name, app) in [("A", &a), ("B", &b)] {
            let seen = app.seen();
            assert!(
                seen.iter()
                    .any(|s| s.remote_user.as_deref() == Some(user.to_string().as_str())),
                "{kind:?}: app {name} saw the user: {seen:?}"
            );
            for s in &seen {
                let cookie = s.cookie.as_deref().unwrap_or("");
                assert!(
                    !cookie.contains("gatehouse_session") && cookie.contains("theme=dark"),
                    "{kind:?}: app {name} got Gatehouse's cookie, or not its own: {s:?}"
                );
            }
        }
    }
}
