//! Browser sessions (docs/api.md §6b) through the API: the session cookie's attributes, where it
//! counts (forward-auth, auth-request) and where it never does (anything that changes
//! something), its end with its session on every instance, the 302 to sign in for a browser's
//! navigation, `two_factor` rules for cookie sessions, `return_to`'s limits and CORS.
//! `browser.rs` runs the same with real Chromium, nginx and Caddy.

use gatehouse::config::SettingsArgs;
use reqwest::header::HeaderMap;
use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::guard::{AUTH_REQUEST, FORWARD_AUTH, two_factor_token, with_rules, within};
use crate::helpers::{Backend, PASSWORD, SPREAD_DEADLINE, TestApp, both_backends, spawn_app_with};

both_backends!(
    the_cookie_is_set_with_its_attributes_and_stored_hashed,
    the_cookie_ends_with_logout_password_change_and_disable,
    a_logout_on_one_instance_ends_the_cookie_on_another,
    the_cookie_alone_changes_nothing,
    browsers_are_sent_to_sign_in_and_api_clients_refused,
    two_factor_rules_send_cookie_sessions_to_sign_in_again,
    return_to_goes_to_the_site_and_nowhere_else,
    cors_answers_listed_origins_only_and_never_with_credentials,
    a_request_has_few_cookies_of_the_name_tried,
);

const PUBLIC_URL: &str = "https://login.example.test";
const NAVIGATION: &str = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";

/// The site of these tests: Gatehouse at login.example.test, its cookie for the whole of
/// example.test, trusting the loopback proxy.
fn site() -> SettingsArgs {
    SettingsArgs {
        public_url: Some(PUBLIC_URL.into()),
        cookie_domain: Some("example.test".into()),
        trusted_proxies: Some("127.0.0.1/32".into()),
        ..Default::default()
    }
}

/// A client that follows no redirect: the 302s are what is tested.
fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// Status and headers of an answer.
struct Seen {
    status: StatusCode,
    headers: HeaderMap,
}

impl Seen {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

async fn send(request: reqwest::RequestBuilder) -> Seen {
    let response = request.send().await.unwrap();
    Seen {
        status: response.status(),
        headers: response.headers().clone(),
    }
}

/// `POST /auth/browser-session` with `token`: the `Set-Cookie` header's text.
async fn browser_session(app: &TestApp, token: &str) -> String {
    let answer = app
        .call(
            Method::POST,
            "/api/v1/auth/browser-session",
            Some(token),
            None,
        )
        .await;
    assert_eq!(answer.data(200), &json!({}));
    answer.header("set-cookie").expect("Set-Cookie").to_owned()
}

/// `name=value` of a `Set-Cookie` text, ready for a `Cookie` header.
fn pair(set_cookie: &str) -> String {
    set_cookie.split(';').next().unwrap().trim().to_owned()
}

/// Forward-auth asked by a (trusted) proxy for a browser's GET of `uri` on app.example.test, with
/// only `cookie`.
async fn forward_auth(app: &TestApp, cookie: Option<&str>, accept: &str, uri: &str) -> Seen {
    let mut request = client()
        .get(app.url(FORWARD_AUTH))
        .header("x-forwarded-method", "GET")
        .header("x-forwarded-proto", "https")
        .header("x-forwarded-host", "app.example.test")
        .header("x-forwarded-uri", uri)
        .header("accept", accept);
    if let Some(cookie) = cookie {
        request = request.header("cookie", cookie);
    }
    send(request).await
}

/// Whether forward-auth lets the holder of `cookie` through.
async fn admitted(app: &TestApp, cookie: &str) -> bool {
    let seen = forward_auth(app, Some(cookie), "application/json", "/").await;
    match seen.status {
        StatusCode::OK => true,
        StatusCode::UNAUTHORIZED => false,
        other => panic!("forward-auth answered {other}"),
    }
}

async fn signed_in(app: &TestApp, email: &str) -> (String, String) {
    app.create_user(email, PASSWORD).await;
    let token = app.login(email, PASSWORD).await.data(200)["accessToken"]
        .as_str()
        .unwrap()
        .to_owned();
    let cookie = pair(&browser_session(app, &token).await);
    (token, cookie)
}

async fn the_cookie_is_set_with_its_attributes_and_stored_hashed(backend: Backend) {
    let app = spawn_app_with(backend.clone(), site()).await;
    app.create_user("ann@example.com", PASSWORD).await;
    let token = app.login("ann@example.com", PASSWORD).await.data(200)["accessToken"]
        .as_str()
        .unwrap()
        .to_owned();
    let set = browser_session(&app, &token).await;
    let mut parts = set.split(';').map(str::trim);
    let (name, value) = parts.next().unwrap().split_once('=').unwrap();
    assert_eq!(name, "gatehouse_session");
    // 256 random bits and a 128-bit tag, base64url: opaque, not a JWT.
    assert_eq!(value.len(), 64, "{set}");
    assert!(!value.contains('.'));
    let attributes: Vec<&str> = parts.collect();
    for wanted in [
        "HttpOnly",
        "SameSite=Lax",
        "Secure",
        "Path=/",
        "Domain=example.test",
    ] {
        assert!(attributes.contains(&wanted), "{wanted} in {set}");
    }
    // The session's own lifetime: the refresh token's 30 days.
    let max_age: i64 = attributes
        .iter()
        .find_map(|a| a.strip_prefix("Max-Age="))
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        (30 * 86_400 - 60..=30 * 86_400).contains(&max_age),
        "{max_age}"
    );
    // Only its SHA-256 is kept.
    let stored: i64 = app.scalar("SELECT COUNT(*) FROM browser_cookies").await;
    assert_eq!(stored, 1);
    let hashes: i64 = app
        .scalar("SELECT COUNT(*) FROM browser_cookies WHERE LENGTH(token_hash) = 32")
        .await;
    assert_eq!(hashes, 1);

    // It counts at forward-auth, as its session's holder.
    let me = app.get("/api/v1/auth/me", &token).await;
    let seen = forward_auth(&app, Some(&pair(&set)), NAVIGATION, "/").await;
    assert_eq!(seen.status, StatusCode::OK);
    assert_eq!(seen.header("remote-user"), me.data(200)["id"].as_str());
    assert_eq!(seen.header("remote-email"), Some("ann@example.com"));
    // Among other cookies, and after one of the same name that is not (a sibling host's).
    let mixed = format!("theme=dark; gatehouse_session=forged; {}", pair(&set));
    assert!(admitted(&app, &mixed).await);
    assert!(!admitted(&app, "gatehouse_session=forged").await);
    assert!(!admitted(&app, &format!("gatehouse_session={}x", &value[..42])).await);

    // Without the settings: host-only, not Secure (an http public URL).
    let plain = spawn_app_with(backend, SettingsArgs::default()).await;
    let (token, _) = {
        plain.create_user("bob@example.com", PASSWORD).await;
        let t = plain.login("bob@example.com", PASSWORD).await.data(200)["accessToken"]
            .as_str()
            .unwrap()
            .to_owned();
        (t, ())
    };
    let set = browser_session(&plain, &token).await;
    assert!(!set.contains("Secure") && !set.contains("Domain"), "{set}");
    assert!(
        set.contains("HttpOnly") && set.contains("SameSite=Lax"),
        "{set}"
    );
}

async fn the_cookie_ends_with_logout_password_change_and_disable(backend: Backend) {
    let app = spawn_app_with(backend, site()).await;
    // Logout: the answer clears the cookie, and the session's cookie is refused at once.
    let (token, cookie) = signed_in(&app, "ann@example.com").await;
    assert!(admitted(&app, &cookie).await);
    let logout = app
        .call(Method::POST, "/api/v1/auth/logout", Some(&token), None)
        .await;
    logout.data(200);
    let cleared = logout.header("set-cookie").expect("the cookie is cleared");
    assert!(cleared.starts_with("gatehouse_session=;"), "{cleared}");
    assert!(cleared.contains("Max-Age=0") && cleared.contains("Domain=example.test"));
    assert!(!admitted(&app, &cookie).await);

    // A password change ends the other sessions' cookies; the changing session keeps its own.
    let (first, first_cookie) = signed_in(&app, "bob@example.com").await;
    let second = app.login("bob@example.com", PASSWORD).await.data(200)["accessToken"]
        .as_str()
        .unwrap()
        .to_owned();
    let second_cookie = pair(&browser_session(&app, &second).await);
    assert!(admitted(&app, &second_cookie).await);
    app.call(
        Method::POST,
        "/api/v1/auth/password",
        Some(&first),
        Some(json!({"currentPassword": PASSWORD, "newPassword": "another long passphrase 9"})),
    )
    .await
    .data(200);
    assert!(!admitted(&app, &second_cookie).await);
    assert!(admitted(&app, &first_cookie).await);

    // Disabled by the CLI (another process): refused within the revocation delay.
    let (_, cookie) = signed_in(&app, "cid@example.com").await;
    assert!(admitted(&app, &cookie).await);
    let output = app.cli(&["user", "disable", "cid@example.com"], None);
    assert!(output.status.success(), "{output:?}");
    let took = within(SPREAD_DEADLINE, || async { !admitted(&app, &cookie).await }).await;
    eprintln!("a disabled account's cookie was refused after {took:?}");
}

async fn a_logout_on_one_instance_ends_the_cookie_on_another(backend: Backend) {
    let app = spawn_app_with(backend, site()).await;
    let other = app.twin_with(site()).await;
    let (token, cookie) = signed_in(&app, "ann@example.com").await;
    // The other instance reads the cookie's session (and remembers it).
    assert!(admitted(&other, &cookie).await);
    app.call(Method::POST, "/api/v1/auth/logout", Some(&token), None)
        .await
        .data(200);
    let took = within(SPREAD_DEADLINE, || async {
        !admitted(&other, &cookie).await
    })
    .await;
    eprintln!("the other instance refused the cookie after {took:?}");
}

/// No call that changes anything takes the cookie in place of a bearer token: a cross-site form
/// POST or `fetch` carrying only the cookie is refused and changes nothing.
async fn the_cookie_alone_changes_nothing(backend: Backend) {
    let app = spawn_app_with(backend, site()).await;
    let (token, cookie) = signed_in(&app, "ann@example.com").await;
    let post = |path: &str, body: Option<&str>, kind: &str| {
        let mut request = client()
            .post(app.url(path))
            .header("cookie", &cookie)
            .header("origin", "https://evil.example")
            .header("content-type", kind);
        if let Some(body) = body {
            request = request.body(body.to_owned());
        }
        request
    };
    let form = "application/x-www-form-urlencoded";
    for (path, body, kind) in [
        ("/api/v1/auth/logout", Some("scope=all"), form),
        (
            "/api/v1/auth/logout",
            Some(r#"{"scope":"all"}"#),
            "application/json",
        ),
        (
            "/api/v1/auth/password",
            Some(r#"{"currentPassword":"x","newPassword":"evil passphrase 123"}"#),
            "text/plain",
        ),
        ("/api/v1/auth/browser-session", None, form),
        ("/api/v1/auth/2fa/setup", Some("password=x"), form),
    ] {
        let seen = send(post(path, body, kind)).await;
        assert!(
            seen.status == StatusCode::UNAUTHORIZED,
            "{path}: {}",
            seen.status
        );
    }
    let delete = client()
        .delete(app.url("/api/v1/auth/me"))
        .header("cookie", &cookie)
        .header("content-type", "application/json")
        .body(format!(r#"{{"password":"{PASSWORD}"}}"#));
    assert_eq!(send(delete).await.status, StatusCode::UNAUTHORIZED);
    let end = client()
        .delete(app.url("/api/v1/auth/sessions/00000000-0000-0000-0000-000000000000"))
        .header("cookie", &cookie);
    assert_eq!(send(end).await.status, StatusCode::UNAUTHORIZED);
    // Nothing changed: the account and its session live, with its one cookie.
    app.get("/api/v1/auth/me", &token).await.data(200);
    assert!(admitted(&app, &cookie).await);
    let sessions: i64 = app
        .scalar("SELECT COUNT(*) FROM sessions WHERE revoked_at IS NULL")
        .await;
    assert_eq!(sessions, 1);
    let cookies: i64 = app.scalar("SELECT COUNT(*) FROM browser_cookies").await;
    assert_eq!(cookies, 1);
}

async fn browsers_are_sent_to_sign_in_and_api_clients_refused(backend: Backend) {
    let app = spawn_app_with(backend, site()).await;
    // A browser navigating: 302 to sign in, coming back to the original URL with its query.
    let seen = forward_auth(&app, None, NAVIGATION, "/orders?id=7&x=%2F").await;
    assert_eq!(seen.status, StatusCode::FOUND);
    assert_eq!(
        seen.header("location"),
        Some(
            "https://login.example.test/sign-in?return_to=https%3A%2F%2Fapp%2Eexample%2Etest%2Forders%3Fid%3D7%26x%3D%252F"
        )
    );
    // HEAD too; a cookie that is not valid is no cookie.
    let head = client()
        .get(app.url(FORWARD_AUTH))
        .header("x-forwarded-method", "HEAD")
        .header("x-forwarded-host", "app.example.test")
        .header("x-forwarded-uri", "/")
        .header("cookie", "gatehouse_session=nothing")
        .header("accept", NAVIGATION);
    assert_eq!(send(head).await.status, StatusCode::FOUND);
    // API clients (fetch's */*, JSON) and anything but GET and HEAD: 401.
    for accept in [
        "*/*",
        "application/json",
        "application/json, text/html;q=0.5",
    ] {
        let seen = forward_auth(&app, None, accept, "/").await;
        assert_eq!(seen.status, StatusCode::UNAUTHORIZED, "{accept}");
        assert_eq!(seen.header("location"), None);
    }
    let post = client()
        .get(app.url(FORWARD_AUTH))
        .header("x-forwarded-method", "POST")
        .header("x-forwarded-host", "app.example.test")
        .header("x-forwarded-uri", "/")
        .header("accept", NAVIGATION);
    assert_eq!(send(post).await.status, StatusCode::UNAUTHORIZED);
    // nginx's auth_request cannot pass a 302 on: 401, with the sign-in URL for its recipe.
    let nginx = |accept: &'static str| {
        client()
            .get(app.url(AUTH_REQUEST))
            .header("x-original-method", "GET")
            .header("x-original-url", "https://app.example.test/a?b=1")
            .header("accept", accept)
    };
    let seen = send(nginx(NAVIGATION)).await;
    assert_eq!(seen.status, StatusCode::UNAUTHORIZED);
    assert_eq!(
        seen.header("location"),
        Some(
            "https://login.example.test/sign-in?return_to=https%3A%2F%2Fapp%2Eexample%2Etest%2Fa%3Fb%3D1"
        )
    );
    let seen = send(nginx("application/json")).await;
    assert_eq!(seen.status, StatusCode::UNAUTHORIZED);
    assert_eq!(seen.header("location"), None);
    // An untrusted peer's description is not believed: no redirect built from it.
    let untrusted = spawn_app_with(
        Backend::Sqlite,
        SettingsArgs {
            trusted_proxies: None,
            ..site()
        },
    )
    .await;
    let seen = forward_auth(&untrusted, None, NAVIGATION, "/").await;
    assert_eq!(seen.status, StatusCode::UNAUTHORIZED);
    // A valid cookie passes.
    let (_, cookie) = signed_in(&app, "ann@example.com").await;
    let seen = forward_auth(&app, Some(&cookie), NAVIGATION, "/orders").await;
    assert_eq!(seen.status, StatusCode::OK);
    let seen = send(nginx(NAVIGATION).header("cookie", &cookie)).await;
    assert_eq!(seen.status, StatusCode::OK);
}

async fn two_factor_rules_send_cookie_sessions_to_sign_in_again(backend: Backend) {
    let (mut args, _dir) = with_rules("[[rule]]\npaths = [\"/secure\"]\npolicy = \"two_factor\"");
    args.public_url = site().public_url;
    args.cookie_domain = site().cookie_domain;
    let app = spawn_app_with(backend, args).await;
    let (token, password_only) = signed_in(&app, "ann@example.com").await;
    // A browser: sent to sign in again, with the second factor.
    let seen = forward_auth(&app, Some(&password_only), NAVIGATION, "/secure").await;
    assert_eq!(seen.status, StatusCode::FOUND);
    let location = seen.header("location").unwrap();
    assert!(
        location.starts_with("https://login.example.test/sign-in?return_to=")
            && location.ends_with("&second_factor=required"),
        "{location}"
    );
    // An API client: 403, as for any rule that denies.
    let seen = forward_auth(&app, Some(&password_only), "application/json", "/secure").await;
    assert_eq!(seen.status, StatusCode::FORBIDDEN);
    // nginx: 401 (with the sign-in URL for a browser).
    let nginx = client()
        .get(app.url(AUTH_REQUEST))
        .header("x-original-method", "GET")
        .header("x-original-url", "https://app.example.test/secure")
        .header("accept", NAVIGATION)
        .header("cookie", &password_only);
    let seen = send(nginx).await;
    assert_eq!(seen.status, StatusCode::UNAUTHORIZED);
    assert!(
        seen.header("location")
            .unwrap()
            .ends_with("&second_factor=required")
    );
    // Elsewhere the password-only cookie is enough.
    assert_eq!(
        forward_auth(&app, Some(&password_only), NAVIGATION, "/open")
            .await
            .status,
        StatusCode::OK
    );
    // Signed in again with the second factor: admitted.
    let strong = two_factor_token(&app, &token, "ann@example.com").await;
    let strong_cookie = pair(&browser_session(&app, &strong).await);
    let seen = forward_auth(&app, Some(&strong_cookie), NAVIGATION, "/secure").await;
    assert_eq!(seen.status, StatusCode::OK);
}

/// `return_to` goes to the public URL's host, a host under the cookie domain, or a listed URL;
/// anything else lands on /account.
async fn return_to_goes_to_the_site_and_nowhere_else(backend: Backend) {
    let app = spawn_app_with(
        backend,
        SettingsArgs {
            allowed_return_urls: Some("https://partner.example.org".into()),
            ..site()
        },
    )
    .await;
    for (given, lands) in [
        (
            "https://app.example.test/orders",
            "https://app.example.test/orders",
        ),
        (
            "http://grafana.example.test:3000/d/x",
            "http://grafana.example.test:3000/d/x",
        ),
        (
            "https://login.example.test/account",
            "https://login.example.test/account",
        ),
        (
            "https://partner.example.org/y",
            "https://partner.example.org/y",
        ),
        ("https://evil.example/", "/account"),
        ("https://example.test.evil.example/", "/account"),
        ("https://badexample.test/", "/account"),
        ("https://ann@app.example.test/", "/account"),
        ("javascript://app.example.test/%0aalert(1)", "/account"),
    ] {
        let path = format!(
            "/sign-in?return_to={}",
            percent_encoding::utf8_percent_encode(given, percent_encoding::NON_ALPHANUMERIC)
        );
        let body = app
            .client
            .get(app.url(&path))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        let at = body.find("data-return-to=\"").unwrap() + 16;
        let raw = &body[at..];
        let target = raw[..raw.find('"').unwrap()]
            .replace("&#x2f;", "/")
            .replace("&amp;", "&");
        assert_eq!(target, lands, "{given}");
    }
    // Sent to sign in again for a second factor, the page says so.
    let body = app
        .client
        .get(app.url("/sign-in?return_to=https%3A%2F%2Fapp.example.test%2F&second_factor=required"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(body.contains("id=\"second-factor-notice\""));
}

async fn cors_answers_listed_origins_only_and_never_with_credentials(backend: Backend) {
    let app = spawn_app_with(
        backend.clone(),
        SettingsArgs {
            cors_origins: Some("https://spa.example.test".into()),
            ..site()
        },
    )
    .await;
    let listed = "https://spa.example.test";
    let preflight = |origin: &str, path: &str| {
        client()
            .request(Method::OPTIONS, app.url(path))
            .header("origin", origin)
            .header("access-control-request-method", "POST")
            .header(
                "access-control-request-headers",
                "authorization, content-type",
            )
    };
    let vary_origin = |seen: &Seen| {
        seen.headers
            .get_all("vary")
            .iter()
            .any(|v| v.to_str().unwrap().to_ascii_lowercase().contains("origin"))
    };
    let seen = send(preflight(listed, "/api/v1/auth/logout")).await;
    assert!(seen.status.is_success(), "{}", seen.status);
    assert_eq!(seen.header("access-control-allow-origin"), Some(listed));
    let methods = seen.header("access-control-allow-methods").unwrap();
    assert!(methods.contains("POST"), "{methods}");
    let headers = seen
        .header("access-control-allow-headers")
        .unwrap()
        .to_ascii_lowercase();
    assert!(headers.contains("authorization") && headers.contains("content-type"));
    assert_eq!(seen.header("access-control-allow-credentials"), None);
    assert!(vary_origin(&seen));
    // Another origin's preflight: no permission.
    for origin in [
        "https://evil.example",
        "https://spa.example.test.evil.example",
        "null",
    ] {
        let seen = send(preflight(origin, "/api/v1/auth/logout")).await;
        assert_eq!(seen.header("access-control-allow-origin"), None, "{origin}");
        assert!(!seen.status.is_success(), "{origin}: {}", seen.status);
    }
    // Answers, errors included, carry the origin and Vary; never credentials.
    let (token, _) = signed_in(&app, "ann@example.com").await;
    for (path, token) in [
        ("/api/v1/auth/me", Some(token.as_str())),
        ("/api/v1/auth/me", None),
        ("/api/v1/nowhere", None),
        ("/.well-known/jwks.json", None),
    ] {
        let mut request = client().get(app.url(path)).header("origin", listed);
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        let seen = send(request).await;
        assert_eq!(
            seen.header("access-control-allow-origin"),
            Some(listed),
            "{path}"
        );
        assert_eq!(
            seen.header("access-control-allow-credentials"),
            None,
            "{path}"
        );
        assert!(vary_origin(&seen), "{path}");
        let other = send(
            client()
                .get(app.url(path))
                .header("origin", "https://evil.example"),
        )
        .await;
        assert_eq!(other.header("access-control-allow-origin"), None, "{path}");
        assert!(vary_origin(&other), "{path}");
    }
    // A single-page application finishes the code flow from its own origin (docs/api.md §6b):
    // the token endpoint, userinfo and revocation answer it too, errors included.
    for path in ["/oauth2/token", "/oauth2/userinfo", "/oauth2/revoke"] {
        let seen = send(preflight(listed, path)).await;
        assert!(seen.status.is_success(), "{path}: {}", seen.status);
        assert_eq!(
            seen.header("access-control-allow-origin"),
            Some(listed),
            "{path}"
        );
        let seen = send(preflight("https://evil.example", path)).await;
        assert_eq!(seen.header("access-control-allow-origin"), None, "{path}");
    }
    let refused = send(
        client()
            .post(app.url("/oauth2/token"))
            .header("origin", listed)
            .form(&[("grant_type", "authorization_code"), ("code", "x")]),
    )
    .await;
    assert!(refused.status.is_client_error(), "{}", refused.status);
    assert_eq!(refused.header("access-control-allow-origin"), Some(listed));
    let userinfo = send(
        client()
            .get(app.url("/oauth2/userinfo"))
            .header("origin", listed)
            .bearer_auth(&token),
    )
    .await;
    assert_eq!(userinfo.header("access-control-allow-origin"), Some(listed));
    // Not the pages, not without the setting.
    let page = send(client().get(app.url("/sign-in")).header("origin", listed)).await;
    assert_eq!(page.header("access-control-allow-origin"), None);
    let closed = spawn_app_with(backend, SettingsArgs::default()).await;
    let seen = send(
        client()
            .request(Method::OPTIONS, closed.url("/api/v1/auth/login"))
            .header("origin", listed)
            .header("access-control-request-method", "POST"),
    )
    .await;
    assert_eq!(seen.header("access-control-allow-origin"), None);
}

/// A sibling host may have set a cookie of the same name or two, and the live one is found behind
/// them; a request with many is not searched to the end (each is work Gatehouse would do for it).
async fn a_request_has_few_cookies_of_the_name_tried(backend: Backend) {
    let app = spawn_app_with(backend, site()).await;
    let (_, cookie) = signed_in(&app, "ann@example.com").await;
    let (name, _) = cookie.split_once('=').unwrap();
    let tossed = |n: usize| {
        let made_up = format!("{name}={}", "A".repeat(64));
        let mut all = vec![made_up; n];
        all.push(cookie.clone());
        all.join("; ")
    };
    assert!(admitted(&app, &tossed(2)).await, "behind two others");
    assert!(admitted(&app, &tossed(7)).await, "the eighth is tried");
    assert!(!admitted(&app, &tossed(8)).await, "the ninth is not");
}
