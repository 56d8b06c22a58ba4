//! Real reverse proxies in front of Gatehouse (docs/api.md §6, README "Guarding other services"):
//! Debian's nginx with `auth_request` and Debian's Caddy with `forward_auth`, each started by the
//! test on a loopback port with the README's recipe, in front of an upstream the test owns that
//! records the headers it receives. Without the proxy binary these tests say so and pass, unless
//! `CI` is set (`.ci/run` installs both).

use std::net::SocketAddr;
use std::os::unix::process::CommandExt as _;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use gatehouse::config::SettingsArgs;
use reqwest::StatusCode;

use crate::guard::{two_factor_token, within};
use crate::helpers::{
    Backend, Http, Instance, PASSWORD, SPREAD_DEADLINE, TestDatabase, both_backends, claims,
    installed_or_skipped, spawn_app_with,
};
use crate::instances::add_user;
use crate::upstream::Upstream;

both_backends!(
    nginx_lets_through_live_sessions_only,
    caddy_lets_through_live_sessions_only,
    nginx_in_front_of_one_instance_sees_revocations_made_on_another,
    caddy_in_front_of_one_instance_sees_revocations_made_on_another,
);

#[derive(Clone, Copy, Debug)]
pub(crate) enum Kind {
    Nginx,
    Caddy,
}

const RULES: &str = r#"
[[rule]]
paths = ["/admin"]
policy = "roles"
roles = ["admin"]

[[rule]]
paths = ["/secure"]
policy = "two_factor"
"#;

/// A proxy process with the README's recipe.
pub(crate) struct Proxy {
    child: Child,
    http: Http,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        crate::helpers::kill_group(&mut self.child);
    }
}

pub(crate) fn installed(kind: Kind) -> bool {
    let binary = match kind {
        Kind::Nginx => "nginx",
        Kind::Caddy => "caddy",
    };
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {binary}")])
        .output()
        .is_ok_and(|o| o.status.success());
    let package = format!("{binary} (apt-get install {binary})");
    let missing: Vec<&str> = (!found).then_some(package.as_str()).into_iter().collect();
    installed_or_skipped(&missing, &format!("a test that runs {binary}"))
}

impl Proxy {
    /// Starts the proxy on a free loopback port, asking `gatehouse` (host:port) before passing
    /// requests to `upstream`.
    pub(crate) async fn start(kind: Kind, gatehouse: &str, upstream: SocketAddr) -> Proxy {
        let dir = tempfile::tempdir().unwrap();
        let port = crate::helpers::free_port();
        let mut command = match kind {
            Kind::Nginx => {
                let recipe = include_str!("../../docs/recipes/nginx.conf")
                    .replace("127.0.0.1:8080", gatehouse)
                    .replace("127.0.0.1:3000", &upstream.to_string());
                nginx_command(dir.path(), &recipe, port)
            }
            Kind::Caddy => {
                let recipe = include_str!("../../docs/recipes/Caddyfile")
                    .replace("127.0.0.1:8080", gatehouse)
                    .replace("127.0.0.1:3000", &upstream.to_string())
                    .replace("app.example.com", &format!("http://:{port}"));
                // The test's own global options: no admin endpoint (parallel tests would share
                // its port), no certificates, state in the test's folder.
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
        let proxy = Proxy {
            child,
            http: Http::new(format!("http://127.0.0.1:{port}")),
            port,
            _dir: dir,
        };
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

    /// GET `path` through the proxy with `token` and extra client headers.
    pub(crate) async fn get(
        &self,
        path: &str,
        token: Option<&str>,
        headers: &[(&str, &str)],
    ) -> StatusCode {
        let mut request = self.http.client.get(self.http.url(path));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        request.send().await.unwrap().status()
    }

    /// Sends `GET target` with the raw `host` and `headers` lines, byte for byte as given (no
    /// client library would send most of what the attack tests send), and returns the status.
    pub(crate) async fn raw(&self, target: &str, host: &str, headers: &[&str]) -> u16 {
        use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
        let mut head = format!("GET {target} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n");
        for line in headers {
            head.push_str(line);
            head.push_str("\r\n");
        }
        head.push_str("\r\n");
        let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", self.port))
            .await
            .unwrap();
        stream.write_all(head.as_bytes()).await.unwrap();
        let mut answer = Vec::new();
        tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut answer))
            .await
            .expect("the proxy answers")
            .unwrap();
        let answer = String::from_utf8_lossy(&answer);
        answer
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("no status line for {target} {host}: {answer:?}"))
    }
}

/// Debian's nginx in the foreground with `server_block` (a recipe's, its `listen 80;` made
/// `127.0.0.1:port`) as its only server, its configuration, pid, log and temporary files in `dir`.
pub(crate) fn nginx_command(dir: &std::path::Path, server_block: &str, port: u16) -> Command {
    // nginx's workers run as nobody and read their temporary folders below this one.
    #[cfg(unix)]
    std::fs::set_permissions(dir, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let d = dir.display();
    let server_block = server_block.replace("listen 80;", &format!("listen 127.0.0.1:{port};"));
    let conf = format!(
        "worker_processes 1;\npid {d}/nginx.pid;\nerror_log {d}/error.log;\n\
         events {{ worker_connections 64; }}\n\
         http {{\n access_log off;\n client_body_temp_path {d}/body;\n\
         proxy_temp_path {d}/proxy;\n fastcgi_temp_path {d}/fastcgi;\n\
         uwsgi_temp_path {d}/uwsgi;\n scgi_temp_path {d}/scgi;\n{server_block}\n}}\n"
    );
    std::fs::write(dir.join("nginx.conf"), conf).unwrap();
    let mut c = Command::new("nginx");
    c.args(["-p", &d.to_string(), "-e", &format!("{d}/error.log")])
        .args(["-c", &format!("{d}/nginx.conf"), "-g", "daemon off;"]);
    c
}

pub(crate) fn rules_file(dir: &tempfile::TempDir, rules: &str) -> String {
    let path = dir.path().join("rules.toml");
    std::fs::write(&path, rules).unwrap();
    path.display().to_string()
}

async fn nginx_lets_through_live_sessions_only(backend: Backend) {
    lets_through_live_sessions_only(Kind::Nginx, backend).await
}

async fn caddy_lets_through_live_sessions_only(backend: Backend) {
    lets_through_live_sessions_only(Kind::Caddy, backend).await
}

async fn lets_through_live_sessions_only(kind: Kind, backend: Backend) {
    if !installed(kind) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let app = spawn_app_with(
        backend,
        SettingsArgs {
            trusted_proxies: Some("127.0.0.1/32".into()),
            access_rules: Some(rules_file(&dir, RULES)),
            ..Default::default()
        },
    )
    .await;
    let upstream = Upstream::start().await;
    let gatehouse = app.address.trim_start_matches("http://").to_owned();
    let proxy = Proxy::start(kind, &gatehouse, upstream.addr).await;
    let (token, refresh) = app.logged_in_user("ann@example.com").await;
    let c = claims(&token);

    // No, bad and misplaced credentials: 401 at the proxy, and the upstream is never asked.
    assert_eq!(proxy.get("/hello", None, &[]).await, 401);
    assert_eq!(proxy.get("/hello", Some("garbage"), &[]).await, 401);
    assert_eq!(proxy.get("/hello", Some(&refresh), &[]).await, 401);
    let query = format!("/hello?access_token={token}");
    assert_eq!(proxy.get(&query, None, &[]).await, 401);
    assert_eq!(upstream.requests(), 0);

    // A live session passes, and the upstream learns who it is from the proxy, never from the
    // client: the client's own Remote-* headers do not arrive as sent.
    let forged = [
        ("remote-user", "someone-else"),
        ("remote-email", "boss@example.com"),
        ("remote-groups", "admin"),
        ("remote-name", "Boss"),
    ];
    assert_eq!(proxy.get("/hello", Some(&token), &forged).await, 200);
    let remote = upstream.last().remote;
    let one = |name: &str| -> Option<&str> {
        let values = remote.get(name)?;
        assert_eq!(values.len(), 1, "{name}: {values:?}");
        Some(values[0].as_str())
    };
    assert_eq!(one("remote-user"), c["sub"].as_str());
    assert_eq!(one("remote-email"), Some("ann@example.com"));
    assert_eq!(one("remote-name"), Some("Test User"));
    assert_eq!(one("remote-session"), c["sid"].as_str());
    // No roles: the header is empty or absent, never the client's "admin".
    assert!(one("remote-groups").unwrap_or("").is_empty(), "{remote:?}");

    // A rule for a path prefix with a role: 403, whatever the other convention's headers say.
    assert_eq!(proxy.get("/admin/users", Some(&token), &[]).await, 403);
    let steer = [
        ("x-original-url", "http://127.0.0.1/open"),
        ("x-original-method", "GET"),
        ("x-forwarded-uri", "/open"),
        ("x-forwarded-method", "GET"),
        ("x-forwarded-host", "open.example.com"),
    ];
    assert_eq!(proxy.get("/admin/users", Some(&token), &steer).await, 403);
    let output = app.cli(
        &["user", "roles", "ann@example.com", "--add", "admin"],
        None,
    );
    assert!(output.status.success());
    within(SPREAD_DEADLINE, || async {
        proxy.get("/admin/users", Some(&token), &[]).await == 200
    })
    .await;
    assert_eq!(
        upstream.last().remote["remote-groups"],
        ["admin".to_owned()]
    );

    // A two_factor rule: 403 without a second factor, 200 with one.
    assert_eq!(proxy.get("/secure/report", Some(&token), &[]).await, 403);
    let strong = two_factor_token(&app, &token, "ann@example.com").await;
    assert_eq!(proxy.get("/secure/report", Some(&strong), &[]).await, 200);

    // Expired: 401 at the proxy.
    app.clock().advance(Duration::from_secs(86_400 + 6));
    let before = upstream.requests();
    assert_eq!(proxy.get("/hello", Some(&strong), &[]).await, 401);
    assert_eq!(upstream.requests(), before);
}

async fn nginx_in_front_of_one_instance_sees_revocations_made_on_another(backend: Backend) {
    revocations_reach_the_proxy(Kind::Nginx, backend).await
}

async fn caddy_in_front_of_one_instance_sees_revocations_made_on_another(backend: Backend) {
    revocations_reach_the_proxy(Kind::Caddy, backend).await
}

async fn revocations_reach_the_proxy(kind: Kind, backend: Backend) {
    if !installed(kind) {
        return;
    }
    let db = TestDatabase::migrated(&backend).await;
    let dir = tempfile::tempdir().unwrap();
    let rules = rules_file(&dir, RULES);
    for email in ["ann@example.com", "bob@example.com"] {
        add_user(&db, email);
        assert!(
            db.cli(&["user", "roles", email, "--add", "admin"], None)
                .status
                .success()
        );
    }
    let env = [
        ("GATEHOUSE_TRUSTED_PROXIES", "127.0.0.1/32"),
        ("GATEHOUSE_ACCESS_RULES", rules.as_str()),
    ];
    let (a, b) = (Instance::start(&db, &env), Instance::start(&db, &env));
    let upstream = Upstream::start().await;
    let proxy = Proxy::start(kind, b.address.trim_start_matches("http://"), upstream.addr).await;
    let login = |email: &'static str| {
        let a = &a;
        async move {
            a.login(email, PASSWORD).await.data(200)["accessToken"]
                .as_str()
                .unwrap()
                .to_owned()
        }
    };

    // Role removal on the database (the CLI): the proxy in front of B refuses within 2 s.
    let ann = login("ann@example.com").await;
    assert_eq!(proxy.get("/admin", Some(&ann), &[]).await, 200);
    let removed = db.cli(
        &["user", "roles", "ann@example.com", "--remove", "admin"],
        None,
    );
    assert!(removed.status.success());
    let took = within(SPREAD_DEADLINE, || async {
        proxy.get("/admin", Some(&ann), &[]).await == 403
    })
    .await;
    eprintln!("{kind:?}: role removal reached the proxy after {took:?}");

    // Logout on A: refused through the proxy in front of B within 2 s.
    assert_eq!(proxy.get("/hello", Some(&ann), &[]).await, 200);
    a.call(
        reqwest::Method::POST,
        "/api/v1/auth/logout",
        Some(&ann),
        None,
    )
    .await
    .data(200);
    let took = within(SPREAD_DEADLINE, || async {
        proxy.get("/hello", Some(&ann), &[]).await == 401
    })
    .await;
    eprintln!("{kind:?}: logout on A reached the proxy of B after {took:?}");

    // Disabling the account: the same.
    let bob = login("bob@example.com").await;
    assert_eq!(proxy.get("/admin", Some(&bob), &[]).await, 200);
    assert!(
        db.cli(&["user", "disable", "bob@example.com"], None)
            .status
            .success()
    );
    within(SPREAD_DEADLINE, || async {
        proxy.get("/admin", Some(&bob), &[]).await == 401
    })
    .await;
}
