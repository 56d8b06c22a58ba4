//! The client library as an application team uses it (clients/js/README.md): packed with npm,
//! installed from the tarball in a fresh folder, imported, and its TypeScript declarations
//! compiled against a typed example; and on a page of the application served with Gatehouse on
//! one origin by the real nginx recipe (docs/recipes/nginx-one-origin.conf), in Chromium, calling
//! the application's API across two tabs as the access token expires.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::{HeaderMap, Uri};
use axum::response::{Html, IntoResponse, Json, Redirect, Response};
use gatehouse::config::SettingsArgs;
use serde_json::{Value, json};

use super::{BROWSER_DIR, CHROMIUM, browser_ready, node, node_ready};
use crate::helpers::{
    Backend, PASSWORD, both_backends, claims, free_port, installed_or_skipped, spawn_app_with,
};
use crate::proxies::{Kind, installed, nginx_command};

both_backends!(an_app_page_on_gatehouses_origin_fetches_its_api_refreshing_once_across_tabs);

const LIBRARY_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/clients/js");
const TSC: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/browser/node_modules/typescript/bin/tsc"
);

/// Runs `command`; → whether it succeeded, and everything it printed.
fn output(command: &mut Command) -> (bool, String) {
    let out = command.output().expect("the command runs");
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), printed)
}

/// Runs `command`, failing with what it printed unless it succeeds; → its stdout.
fn succeeds(command: &mut Command) -> String {
    let out = command.output().expect("the command runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{command:?} failed:\n{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// npm, never asking the registry (the package has no dependencies) nor writing outside `dir`'s
/// temporary cache.
fn npm(dir: &Path) -> Command {
    let mut command = Command::new("npm");
    command
        .current_dir(dir)
        .env("npm_config_update_notifier", "false")
        .env("npm_config_audit", "false")
        .env("npm_config_fund", "false")
        .env("npm_config_cache", dir.join(".npm-cache"));
    command
}

/// `npm pack` → a fresh folder's `npm install ./gatehouse-client-x.y.z.tgz` (offline) → `import`
/// in Node → `tsc --noEmit` (strict) of the typed example that uses every member
/// (test-support/example.ts), which must pass, and of a file of mistakes (test-support/misuse.ts),
/// which tsc must refuse on each line marked `error`, and on no other.
#[test]
fn the_library_packs_installs_imports_and_type_checks() {
    let npm_found = Command::new("npm")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    let missing: Vec<&str> = [
        (!npm_found).then_some("npm"),
        (!Path::new(TSC).exists())
            .then_some("tests/browser/node_modules/typescript (npm ci --prefix tests/browser)"),
    ]
    .into_iter()
    .flatten()
    .collect();
    if !node_ready() || !installed_or_skipped(&missing, "a client library test") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();

    let packed = succeeds(
        npm(dir.path())
            .current_dir(LIBRARY_DIR)
            .args(["pack", "--json", "--pack-destination"])
            .arg(dir.path()),
    );
    let packed: Value = serde_json::from_str(&packed).expect("npm pack --json");
    let tarball = packed[0]["filename"].as_str().unwrap().to_owned();
    let library: Value = serde_json::from_str(
        &std::fs::read_to_string(Path::new(LIBRARY_DIR).join("package.json")).unwrap(),
    )
    .unwrap();
    let expected = format!(
        "gatehouse-client-{}.tgz",
        library["version"].as_str().unwrap()
    );
    assert_eq!(tarball, expected);
    let files: BTreeSet<&str> = packed[0]["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        files,
        BTreeSet::from([
            "README.md",
            "gatehouse.d.ts",
            "gatehouse.js",
            "package.json"
        ]),
        "the library, its types and its README; no tests"
    );

    // A team's application in a folder of its own.
    let app = dir.path().join("app");
    std::fs::create_dir(&app).unwrap();
    let manifest = r#"{"name": "orders-app", "private": true, "type": "module"}"#;
    std::fs::write(app.join("package.json"), manifest).unwrap();
    succeeds(npm(&app).args(["install", "--offline", &format!("../{tarball}")]));
    let installed = app.join("node_modules/@gatehouse/client");
    assert_eq!(
        std::fs::read(installed.join("gatehouse.js")).unwrap(),
        std::fs::read(Path::new(LIBRARY_DIR).join("gatehouse.js")).unwrap(),
        "the installed library is the repository's"
    );

    let imported = succeeds(Command::new("node").current_dir(&app).args([
        "--input-type=module",
        "-e",
        "import { Gatehouse, GatehouseError } from '@gatehouse/client';\n\
         const gh = new Gatehouse({ baseUrl: 'https://auth.example.com', storage: null });\n\
         const error = await gh.getAccessToken().catch((e) => e);\n\
         console.log(JSON.stringify({ signedIn: gh.signedIn, typed: error instanceof GatehouseError, code: error.code }));",
    ]));
    assert_eq!(
        serde_json::from_str::<Value>(imported.trim()).unwrap(),
        json!({ "signedIn": false, "typed": true, "code": "NOT_SIGNED_IN" })
    );

    // TypeScript, strict, resolving the package as a consumer does (package.json `exports`).
    for file in ["example.ts", "misuse.ts"] {
        std::fs::copy(
            Path::new(LIBRARY_DIR).join("test-support").join(file),
            app.join(file),
        )
        .unwrap();
    }
    let tsconfig = |file: &str| {
        json!({
            "compilerOptions": {
                "strict": true, "noEmit": true, "target": "ES2022", "module": "NodeNext",
                "moduleResolution": "NodeNext", "lib": ["ES2022", "DOM", "DOM.Iterable"],
                "types": [], "skipLibCheck": false
            },
            "files": [file]
        })
        .to_string()
    };
    std::fs::write(app.join("tsconfig.json"), tsconfig("example.ts")).unwrap();
    std::fs::write(app.join("tsconfig.misuse.json"), tsconfig("misuse.ts")).unwrap();
    let tsc = |config: &str| {
        output(
            Command::new("node")
                .current_dir(&app)
                .args([TSC, "--pretty", "false", "-p", config]),
        )
    };
    let (ok, printed) = tsc("tsconfig.json");
    assert!(ok, "the typed example compiles:\n{printed}");

    let (ok, printed) = tsc("tsconfig.misuse.json");
    assert!(!ok, "tsc accepted the mistakes");
    let refused: BTreeSet<usize> = printed
        .lines()
        .filter_map(|l| l.strip_prefix("misuse.ts("))
        .map(|l| l.split(',').next().unwrap().parse().unwrap())
        .collect();
    let marked: BTreeSet<usize> = std::fs::read_to_string(app.join("misuse.ts"))
        .unwrap()
        .lines()
        .enumerate()
        .filter(|(_, l)| l.contains("// error"))
        .map(|(i, _)| i + 1)
        .collect();
    assert_eq!(refused, marked, "tsc said:\n{printed}");
}

/// What the application's server received.
#[derive(Clone, Debug)]
struct Seen {
    path: String,
    authorization: Option<String>,
    remote_user: Option<String>,
    /// Through nginx (which adds X-Forwarded-For), or straight to the application's own address.
    via_proxy: bool,
}

/// The team's application: the client README's page at `/`, its API answering plain JSON at
/// `/api/orders` (naming the caller nginx heard of from Gatehouse), a redirect to its own address
/// (another origin than nginx's) at `/api/away`, and anything else answered with a word.
struct App {
    addr: SocketAddr,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl App {
    async fn start() -> App {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let record = seen.clone();
        let page = readme_page();
        let router = axum::Router::new().fallback(move |uri: Uri, headers: HeaderMap| {
            let header = |name: &str| {
                headers
                    .get(name)
                    .map(|v| v.to_str().unwrap_or_default().to_owned())
            };
            record.lock().unwrap().push(Seen {
                path: uri.path().to_owned(),
                authorization: header("authorization"),
                remote_user: header("remote-user"),
                via_proxy: header("x-forwarded-for").is_some(),
            });
            let answer: Response = match uri.path() {
                "/" => Html(page.clone()).into_response(),
                "/api/orders" => {
                    Json(json!([{ "id": 1, "owner": header("remote-email") }])).into_response()
                }
                "/api/away" => {
                    Redirect::temporary(&format!("http://{addr}/landing")).into_response()
                }
                _ => "landed".into_response(),
            };
            async move { answer }
        });
        tokio::spawn(async move { axum::serve(listener, router).await });
        App { addr, seen }
    }

    fn seen(&self, path: &str) -> Vec<Seen> {
        let seen = self.seen.lock().unwrap();
        seen.iter().filter(|s| s.path == path).cloned().collect()
    }
}

/// The client README's "five lines" page, as it stands there.
fn readme_page() -> String {
    let readme = include_str!("../../../clients/js/README.md");
    let (_, rest) = readme
        .split_once("<!-- one-origin-page -->\n```html\n")
        .expect("the README marks its page");
    rest.split_once("```").unwrap().0.to_owned()
}

/// nginx with the one-origin recipe, stopped when dropped.
struct Nginx {
    child: Child,
    _dir: tempfile::TempDir,
}

impl Drop for Nginx {
    fn drop(&mut self) {
        crate::helpers::kill_group(&mut self.child);
    }
}

impl Nginx {
    async fn start(port: u16, gatehouse: &str, app: SocketAddr) -> Nginx {
        let dir = tempfile::tempdir().unwrap();
        let recipe = include_str!("../../../docs/recipes/nginx-one-origin.conf")
            .replace("127.0.0.1:8080", gatehouse)
            .replace("127.0.0.1:3000", &app.to_string());
        let child = nginx_command(dir.path(), &recipe, port)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .expect("nginx starts");
        let nginx = Nginx { child, _dir: dir };
        for _ in 0..200 {
            if tokio::net::TcpStream::connect(("127.0.0.1", port))
                .await
                .is_ok()
            {
                return nginx;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("nginx did not listen on {port}");
    }
}

/// tests/browser/one-origin.mjs: the README's page behind the recipe sends the browser to sign in
/// and back, then calls the application's API; two tabs call it at once after the 2 s access
/// token expired for them and the service, then after it expired for the service only: one
/// refresh POST each time, as the scenario counts and the service's refresh tokens confirm. Here:
/// every call that reached the API carried a bearer of the account that nginx had Gatehouse
/// check (Remote-User), the expired ones never reached it, and the application's own address
/// (another origin) got no token, asked for or redirected to.
async fn an_app_page_on_gatehouses_origin_fetches_its_api_refreshing_once_across_tabs(
    backend: Backend,
) {
    if !browser_ready() || !installed(Kind::Nginx) {
        return;
    }
    let port = free_port();
    let origin = format!("http://localhost:{port}");
    let gatehouse = spawn_app_with(
        backend,
        SettingsArgs {
            public_url: Some(origin.clone()),
            allowed_return_urls: Some(origin.clone()),
            trusted_proxies: Some("127.0.0.1/32".into()),
            access_token_ttl: Some("2s".into()),
            ..SettingsArgs::default()
        },
    )
    .await;
    let user = gatehouse.create_user("ann@example.com", PASSWORD).await;
    let app = App::start().await;
    let address = gatehouse.address.trim_start_matches("http://").to_owned();
    let _nginx = Nginx::start(port, &address, app.addr).await;

    let env = [
        ("GATEHOUSE_URL", origin.clone()),
        ("GATEHOUSE_EMAIL", "ann@example.com".to_owned()),
        ("GATEHOUSE_PASSWORD", PASSWORD.to_owned()),
        ("GATEHOUSE_APP_DIRECT", format!("http://{}", app.addr)),
        ("CHROMIUM", CHROMIUM.to_owned()),
    ];
    let env = env.map(|(k, v)| (k.to_owned(), v)).to_vec();
    let printed = node(BROWSER_DIR, &["one-origin.mjs"], env).await;

    // Every refresh the browser made rotated the session once: the login's refresh token and
    // one per refresh (a second rotation in a round would have issued one more).
    let refreshes: i64 = printed
        .lines()
        .find_map(|l| l.strip_prefix("refresh POSTs: "))
        .expect("the scenario's count")
        .trim()
        .parse()
        .unwrap();
    let issued: i64 = gatehouse
        .scalar("SELECT COUNT(*) FROM refresh_tokens")
        .await;
    assert_eq!(issued, 1 + refreshes, "{printed}");
    assert!(refreshes >= 2, "a refresh in each round: {printed}");

    // The API: two page loads and two calls in each of the two rounds reached it, all through
    // nginx with Gatehouse's word on the caller; the expired token never did (nginx said 401).
    let calls = app.seen("/api/orders");
    assert_eq!(calls.len(), 6, "{calls:#?}");
    let mut tokens = BTreeSet::new();
    for call in &calls {
        assert!(call.via_proxy, "{call:?}");
        assert_eq!(call.remote_user.as_deref(), Some(user.to_string().as_str()));
        let bearer = call.authorization.as_deref().unwrap();
        let token = bearer.strip_prefix("Bearer ").expect("a bearer token");
        assert_eq!(claims(token)["sub"], user.to_string());
        tokens.insert(token.to_owned());
    }
    assert!(tokens.len() >= 3, "a new access token in each round");

    // The application's own address: the redirect led there without the token, and nothing
    // else came straight to it.
    let away = app.seen("/api/away");
    assert_eq!(away.len(), 1);
    assert!(away[0].via_proxy && away[0].remote_user.is_some());
    let landed = app.seen("/landing");
    assert!(!landed.is_empty(), "the redirect was followed");
    for request in &landed {
        assert!(!request.via_proxy);
        assert_eq!(request.authorization, None, "{request:?}");
    }
    let straight: Vec<Seen> = app
        .seen
        .lock()
        .unwrap()
        .iter()
        .filter(|s| !s.via_proxy && s.path != "/landing")
        .cloned()
        .collect();
    assert!(straight.is_empty(), "{straight:#?}");
}
