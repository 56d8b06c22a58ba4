//! The relying-party libraries of docs/guide/compatibility.md that are web applications' own:
//! passport-openidconnect and Auth.js in Express (tests/browser/passport-rp.mjs, authjs-rp.mjs),
//! Authlib in Flask and mozilla-django-oidc in Django (tests/python/authlib_rp.py, django_rp.py),
//! each run as its own server with the chapter's settings and driven as a browser drives it: the
//! application's sign-in link, Gatehouse's authorization (the page's own call), the application's
//! callback, the application's page saying who is signed in. Against a client whose PKCE is
//! optional (a legacy relying party's) and one whose PKCE is required (the default), where a
//! library that sends none fails with Gatehouse's words. And Authlib's requests client as a
//! command-line tool and an agent (tests/python/authlib_agent.py): the device grant and token
//! exchange.

use std::collections::BTreeMap;
use std::net::TcpStream;
use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use reqwest::{StatusCode, header};
use url::Url;

use super::{Provider, Registered, add_client, authorize, person_token, provider};
use crate::browser::{BROWSER_DIR, node_ready, packages_ready};
use crate::helpers::{Backend, PASSWORD, both_backends, free_port, installed_or_skipped};

both_backends!(
    passport_openidconnect_signs_in_where_pkce_is_optional,
    mozilla_django_oidc_signs_in_with_its_defaults_where_pkce_is_optional,
    authlib_signs_in_with_pkce_and_without,
    authlib_signs_a_tool_in_and_its_agent_acts_for_the_person,
    authjs_signs_in_with_its_defaults,
);

const PYTHON_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/python");
const PEOPLE: &str = "ann@example.com";

/// What Gatehouse tells a client that sent no PKCE where it is required, and one that sent
/// neither PKCE nor a nonce where it is optional.
const PKCE_REQUIRED: &str = "code_challenge is required (PKCE with S256)";
const NONCE_REQUIRED: &str =
    "without PKCE (code_challenge), an OpenID request with a nonce is required";

/// passport-openidconnect 0.1.2 sends no PKCE: with `nonce: true` it signs in where PKCE is
/// optional; without the nonce Gatehouse refuses it, and where PKCE is required too, each time
/// with words the application shows.
async fn passport_openidconnect_signs_in_where_pkce_is_optional(backend: Backend) {
    if !node_ready() || !packages_ready(&["passport-openidconnect", "express-session"]) {
        return;
    }
    let gatehouse = Gatehouse::start(backend).await;
    let (legacy, careful) = gatehouse.clients("Express app", "/callback");

    let start = Start::Link("/login");
    let site = |client, env| RelyingParty::node("passport-rp.mjs", &gatehouse, client, env);

    let page = gatehouse.sign_in(&site(&legacy, &[]), start).await;
    assert_eq!(page, format!("Signed in as {PEOPLE}"));

    let without_nonce = site(&legacy, &[("RP_NONCE", "0")]);
    let page = gatehouse
        .refused(&without_nonce, start, NONCE_REQUIRED)
        .await;
    assert_eq!(
        page,
        format!("Sign-in failed: invalid_request: {NONCE_REQUIRED}")
    );
    drop(without_nonce);

    let page = gatehouse
        .refused(&site(&careful, &[]), start, PKCE_REQUIRED)
        .await;
    assert_eq!(
        page,
        format!("Sign-in failed: invalid_request: {PKCE_REQUIRED}")
    );
}

/// mozilla-django-oidc 5.0.2 with the settings every provider needs (endpoints, RS256 and the JWK
/// Set) and its defaults otherwise (a nonce, no PKCE): signed in where PKCE is optional; where it
/// is required, refused (the library says nothing: the person is back on the site, not signed
/// in), and signed in once the site sets OIDC_USE_PKCE.
async fn mozilla_django_oidc_signs_in_with_its_defaults_where_pkce_is_optional(backend: Backend) {
    if !python_ready() {
        return;
    }
    let gatehouse = Gatehouse::start(backend).await;
    let (legacy, careful) = gatehouse.clients("Django site", "/oidc/callback/");
    let start = Start::Link("/oidc/authenticate/");

    let site = |client, env| RelyingParty::python("django_rp.py", &gatehouse, client, env);

    let page = gatehouse.sign_in(&site(&legacy, &[]), start).await;
    assert_eq!(page, format!("Signed in as {PEOPLE}"));

    let page = gatehouse
        .refused(&site(&careful, &[]), start, PKCE_REQUIRED)
        .await;
    assert_eq!(page, "Not signed in");

    let with_pkce = site(&careful, &[("GATEHOUSE_PKCE", "1")]);
    let page = gatehouse.sign_in(&with_pkce, start).await;
    assert_eq!(page, format!("Signed in as {PEOPLE}"));
}

/// Authlib 1.6 sends a nonce but no PKCE unless `code_challenge_method` is set: signed in where
/// PKCE is optional without it, and where it is required with it; refused, in Gatehouse's
/// words, where it is required and not set.
async fn authlib_signs_in_with_pkce_and_without(backend: Backend) {
    if !python_ready() {
        return;
    }
    let gatehouse = Gatehouse::start(backend).await;
    let (legacy, careful) = gatehouse.clients("Flask app", "/callback");
    let start = Start::Link("/login");

    let site = |client, env| RelyingParty::python("authlib_rp.py", &gatehouse, client, env);

    let page = gatehouse.sign_in(&site(&legacy, &[]), start).await;
    assert_eq!(page, format!("Signed in as {PEOPLE}"));

    let page = gatehouse
        .sign_in(&site(&careful, &[("GATEHOUSE_PKCE", "1")]), start)
        .await;
    assert_eq!(page, format!("Signed in as {PEOPLE}"));

    let page = gatehouse
        .refused(&site(&careful, &[]), start, PKCE_REQUIRED)
        .await;
    assert_eq!(
        page,
        format!("Sign-in failed: invalid_request: {PKCE_REQUIRED}")
    );
}

/// Authlib's requests client as a command-line tool (the device grant, its `authorization_pending`
/// as authlib's OAuthError, then the tokens) and as an agent that exchanges the tool's token for
/// one naming it (`act`), calls the business API with it, and is refused a wider scope
/// (tests/python/authlib_agent.py).
async fn authlib_signs_a_tool_in_and_its_agent_acts_for_the_person(backend: Backend) {
    if !python_ready() {
        return;
    }
    let gatehouse = Gatehouse::start(backend).await;
    let app = &gatehouse.provider.app;
    let scopes = [
        "--scope",
        "openid",
        "--scope",
        "contacts:read",
        "--scope",
        "offline_access",
    ];
    let mut tool = vec![
        "--public",
        "--grant",
        "urn:ietf:params:oauth:grant-type:device_code",
    ];
    tool.extend_from_slice(&scopes);
    let tool = add_client(app, "Acme CLI", &tool);
    let mut agent = vec!["--grant", "urn:ietf:params:oauth:grant-type:token-exchange"];
    agent.extend_from_slice(&scopes);
    let agent = add_client(app, "Trip planner", &agent);
    let env = [
        ("GATEHOUSE_URL", gatehouse.provider.issuer.clone()),
        ("GATEHOUSE_EMAIL", PEOPLE.to_owned()),
        ("GATEHOUSE_PASSWORD", PASSWORD.to_owned()),
        ("TOOL_ID", tool.id),
        ("AGENT_ID", agent.id),
        ("AGENT_SECRET", agent.secret.unwrap()),
    ];
    let output = tokio::task::spawn_blocking(move || {
        std::process::Command::new(format!("{PYTHON_DIR}/.venv/bin/python"))
            .arg("authlib_agent.py")
            .current_dir(PYTHON_DIR)
            .envs(env)
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "{printed}");
    assert!(printed.contains("authlib agent: ok"), "{printed}");
}

/// Auth.js (@auth/express) with a generic OpenID provider and its defaults (discovery, PKCE):
/// signed in where PKCE is required, from its own sign-in form.
async fn authjs_signs_in_with_its_defaults(backend: Backend) {
    if !node_ready() || !packages_ready(&["@auth/express"]) {
        return;
    }
    let gatehouse = Gatehouse::start(backend).await;
    let (_, careful) = gatehouse.clients("Auth.js app", "/auth/callback/gatehouse");
    let site = RelyingParty::node("authjs-rp.mjs", &gatehouse, &careful, &[]);
    let page = gatehouse.sign_in(&site, Start::AuthJs).await;
    assert_eq!(page, format!("Signed in as {PEOPLE}"));
}

/// Whether tests/python/.venv holds the pinned libraries (`.ci/run` makes it); a skip outside
/// CI, a failure in it.
fn python_ready() -> bool {
    let found = Path::new(PYTHON_DIR).join(".venv/bin/python").exists();
    installed_or_skipped(
        if found {
            &[]
        } else {
            &[
                "tests/python/.venv (python3 -m venv tests/python/.venv && tests/python/.venv/bin/pip install -r tests/python/requirements.txt)",
            ]
        },
        "a test of a Python relying party",
    )
}

/// The provider with one person, whose first-party token gives consent as the page would.
struct Gatehouse {
    provider: Provider,
    person: String,
}

/// How a person starts signing in at an application.
#[derive(Clone, Copy)]
enum Start {
    /// A link to the application's path, which sends the browser to Gatehouse.
    Link(&'static str),
    /// Auth.js's sign-in form: its CSRF token, then a POST.
    AuthJs,
}

impl Gatehouse {
    async fn start(backend: Backend) -> Self {
        let provider = provider(backend, "127.0.0.1").await;
        provider.app.create_user(PEOPLE, PASSWORD).await;
        let person = person_token(&provider.app.http, PEOPLE, PASSWORD).await;
        Gatehouse { provider, person }
    }

    /// Two confidential clients named after the application for one callback path on a port
    /// picked here (`RelyingParty` listens on it): the first with PKCE optional, the second with
    /// the default, PKCE required.
    fn clients(&self, name: &str, callback: &str) -> (Client, Client) {
        let make = |name: String, pkce: &str| {
            let port = free_port();
            let redirect = format!("http://127.0.0.1:{port}{callback}");
            let registered = add_client(
                &self.provider.app,
                &name,
                &["--redirect-uri", &redirect, "--pkce", pkce],
            );
            Client {
                name,
                port,
                registered,
            }
        };
        (
            make(format!("Legacy {name}"), "optional"),
            make(format!("Careful {name}"), "required"),
        )
    }

    /// The person signs in at `site`: its link sends them to Gatehouse, consent is given, its
    /// callback is followed to its page, whose text is returned.
    async fn sign_in(&self, site: &RelyingParty<'_>, start: Start) -> String {
        let mut browser = Browser::new(site, &self.provider.issuer);
        let to_gatehouse = browser.start(start).await;
        let back = authorize(
            &self.provider.app.http,
            &self.person,
            &to_gatehouse,
            &site.client.name,
        )
        .await;
        browser.follow(&back).await
    }

    /// `site` sends the person to Gatehouse, which sends them straight back with
    /// `invalid_request` and `description` (before anyone signs in: the request is the client's
    /// mistake); the text of the page the application then shows is returned.
    async fn refused(&self, site: &RelyingParty<'_>, start: Start, description: &str) -> String {
        let mut browser = Browser::new(site, &self.provider.issuer);
        let to_gatehouse = browser.start(start).await;
        let answer = (browser.http.get(to_gatehouse.as_str()).send().await).unwrap();
        assert!(
            answer.status().is_redirection(),
            "Gatehouse answered {} to {to_gatehouse}",
            answer.status()
        );
        let back = location(&answer);
        let query: BTreeMap<String, String> = Url::parse(&back)
            .unwrap()
            .query_pairs()
            .into_owned()
            .collect();
        assert_eq!(
            query.get("error").map(String::as_str),
            Some("invalid_request"),
            "{back}"
        );
        assert_eq!(
            query.get("error_description").map(String::as_str),
            Some(description)
        );
        assert_eq!(query.get("iss"), Some(&self.provider.issuer), "RFC 9207");
        browser.follow(&back).await
    }
}

/// A client as registered for a relying party, and the port its callback is on.
struct Client {
    name: String,
    port: u16,
    registered: Registered,
}

/// A relying party's web server, stopped when dropped.
struct RelyingParty<'c> {
    child: Child,
    base: String,
    client: &'c Client,
    _log: tempfile::NamedTempFile,
    _data: tempfile::TempDir,
}

impl Drop for RelyingParty<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("--- the relying party printed:\n{}", self.printed());
        }
        crate::helpers::kill_group(&mut self.child);
    }
}

impl<'c> RelyingParty<'c> {
    fn node(script: &str, gatehouse: &Gatehouse, client: &'c Client, env: &[(&str, &str)]) -> Self {
        Self::run("node", BROWSER_DIR, script, gatehouse, client, env)
    }

    fn python(
        script: &str,
        gatehouse: &Gatehouse,
        client: &'c Client,
        env: &[(&str, &str)],
    ) -> Self {
        let python = format!("{PYTHON_DIR}/.venv/bin/python");
        Self::run(&python, PYTHON_DIR, script, gatehouse, client, env)
    }

    /// Starts `program script` in `dir` on the client's port and waits until it listens.
    fn run(
        program: &str,
        dir: &str,
        script: &str,
        gatehouse: &Gatehouse,
        client: &'c Client,
        env: &[(&str, &str)],
    ) -> Self {
        assert!(
            TcpStream::connect(("127.0.0.1", client.port)).is_err(),
            "port {} is still taken: drop the last relying party of this client first",
            client.port
        );
        let log = tempfile::NamedTempFile::new().unwrap();
        let data = tempfile::tempdir().unwrap();
        let child = Command::new(program)
            .arg(script)
            .current_dir(dir)
            .env("GATEHOUSE_URL", &gatehouse.provider.issuer)
            .env("RP_PORT", client.port.to_string())
            .env("RP_CLIENT_ID", &client.registered.id)
            .env(
                "RP_CLIENT_SECRET",
                client.registered.secret.as_deref().unwrap(),
            )
            .env("RP_DATA", data.path())
            .envs(env.iter().copied())
            .stdout(Stdio::null())
            .stderr(log.reopen().unwrap())
            .process_group(0)
            .spawn()
            .unwrap_or_else(|e| panic!("{program} {script}: {e}"));
        let mut site = RelyingParty {
            child,
            base: format!("http://127.0.0.1:{}", client.port),
            client,
            _log: log,
            _data: data,
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        while TcpStream::connect(("127.0.0.1", client.port)).is_err() {
            let exited = site.child.try_wait().unwrap();
            if exited.is_some() || Instant::now() > deadline {
                panic!("{script} did not start ({exited:?}):\n{}", site.printed());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        site
    }

    /// What the server wrote to its standard error.
    fn printed(&self) -> String {
        std::fs::read_to_string(self._log.path()).unwrap_or_default()
    }
}

/// A browser at one application: its cookies, redirects followed by hand (those to Gatehouse
/// are the test's to take).
struct Browser<'s> {
    http: reqwest::Client,
    site: &'s RelyingParty<'s>,
    issuer: &'s str,
    cookies: BTreeMap<String, String>,
}

impl<'s> Browser<'s> {
    fn new(site: &'s RelyingParty<'s>, issuer: &'s str) -> Self {
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap();
        Browser {
            http,
            site,
            issuer,
            cookies: BTreeMap::new(),
        }
    }

    /// Sends the request with the application's cookies and keeps those it sets.
    async fn send(&mut self, request: reqwest::RequestBuilder) -> reqwest::Response {
        let cookie = (self.cookies.iter())
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join("; ");
        let answer = request.header(header::COOKIE, cookie).send().await.unwrap();
        for set in answer.headers().get_all(header::SET_COOKIE) {
            let pair = set.to_str().unwrap().split(';').next().unwrap();
            let (name, value) = pair.split_once('=').unwrap();
            self.cookies
                .insert(name.trim().to_owned(), value.trim().to_owned());
        }
        answer
    }

    /// The person starts signing in; returns the authorization URL the application sent them to.
    async fn start(&mut self, start: Start) -> Url {
        let base = self.site.base.clone();
        let answer = match start {
            Start::Link(path) => self.send(self.http.get(format!("{base}{path}"))).await,
            Start::AuthJs => {
                let csrf = self.send(self.http.get(format!("{base}/auth/csrf"))).await;
                let csrf: serde_json::Value = csrf.json().await.unwrap();
                let token = csrf["csrfToken"].as_str().unwrap().to_owned();
                let form = [("csrfToken", token.as_str()), ("callbackUrl", "/")];
                let post = self
                    .http
                    .post(format!("{base}/auth/signin/gatehouse"))
                    .form(&form);
                self.send(post).await
            }
        };
        assert!(
            answer.status().is_redirection(),
            "the sign-in link answered {}:\n{}",
            answer.status(),
            self.site.printed()
        );
        let to = Url::parse(&location(&answer)).unwrap();
        assert!(
            (to.as_str()).starts_with(&format!("{}/oauth2/authorize?", self.issuer)),
            "sent to {to}"
        );
        to
    }

    /// Follows `url` and the application's redirects to a page; returns its text.
    async fn follow(&mut self, url: &str) -> String {
        let mut url = url.to_owned();
        for _ in 0..5 {
            let answer = self.send(self.http.get(&url)).await;
            if answer.status().is_redirection() {
                url = Url::parse(&url)
                    .unwrap()
                    .join(&location(&answer))
                    .unwrap()
                    .into();
                assert!(url.starts_with(&self.site.base), "sent away to {url}");
                continue;
            }
            let status = answer.status();
            let text = answer.text().await.unwrap();
            assert!(
                status == StatusCode::OK || status == StatusCode::BAD_REQUEST,
                "{url}: {status} {text}\n{}",
                self.site.printed()
            );
            return text;
        }
        panic!("too many redirects at {url}");
    }
}

fn location(answer: &reqwest::Response) -> String {
    answer.headers()[header::LOCATION]
        .to_str()
        .unwrap()
        .to_owned()
}
