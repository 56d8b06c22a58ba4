//! A browser for API tests: redirects followed by hand, a small cookie jar, and the upstream's
//! login form posted when met.

use std::collections::HashMap;
use std::time::Duration;

use url::Url;

/// Where a walk ended: the last URL and, when it was fetched, its answer.
#[derive(Debug)]
pub struct Landing {
    pub url: Url,
    /// `None` when the walk stopped before fetching `url` (`Browser::stop_at`).
    pub status: Option<u16>,
    pub body: String,
    /// Every URL fetched, in order.
    pub visited: Vec<Url>,
}

/// A browser for API tests: no script, redirects followed by hand, a cookie jar per host
/// (name, value and path; enough for Gatehouse and oidc-provider).
pub struct Browser {
    http: reqwest::Client,
    jar: HashMap<String, Vec<(String, String, String)>>,
    /// The account to sign in as at an upstream's login form; `None`: press Cancel.
    pub login: Option<String>,
    stop_at: Option<String>,
}

impl Browser {
    pub fn new(login: Option<&str>) -> Browser {
        Browser {
            http: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                // A connection per request, as the servers met here (node's among them) may
                // close a kept-alive one as the next request goes out: a reset, not a test result.
                .pool_max_idle_per_host(0)
                .timeout(Duration::from_secs(15))
                .build()
                .unwrap(),
            jar: HashMap::new(),
            login: login.map(str::to_owned),
            stop_at: None,
        }
    }

    /// The walk ends, unfetched, at the first URL starting with `prefix` (e.g. a redirect URI that
    /// nothing serves).
    pub fn stop_at(mut self, prefix: &str) -> Browser {
        self.stop_at = Some(prefix.to_owned());
        self
    }

    /// The `Cookie` header this browser would send to `url`.
    pub fn cookie_header(&self, url: &Url) -> Option<String> {
        let cookies = self.jar.get(url.host_str()?)?;
        let sent: Vec<String> = cookies
            .iter()
            .filter(|(_, _, path)| url.path().starts_with(path.as_str()))
            .map(|(name, value, _)| format!("{name}={value}"))
            .collect();
        (!sent.is_empty()).then(|| sent.join("; "))
    }

    /// The value of the cookie `name` for `url`'s host, if held.
    #[allow(dead_code)] // for the flow's tests, which read Gatehouse's cookies
    pub fn cookie(&self, url: &Url, name: &str) -> Option<String> {
        let cookies = self.jar.get(url.host_str()?)?;
        cookies
            .iter()
            .find(|(n, _, _)| n == name)
            .map(|(_, v, _)| v.clone())
    }

    fn keep(&mut self, url: &Url, headers: &reqwest::header::HeaderMap) {
        let Some(host) = url.host_str() else { return };
        let cookies = self.jar.entry(host.to_owned()).or_default();
        for set in headers.get_all(reqwest::header::SET_COOKIE) {
            let Ok(set) = set.to_str() else { continue };
            let mut parts = set.split(';').map(str::trim);
            let Some((name, value)) = parts.next().and_then(|p| p.split_once('=')) else {
                continue;
            };
            let mut path = "/".to_owned();
            let mut gone = value.is_empty();
            for attribute in parts {
                let (key, val) = attribute.split_once('=').unwrap_or((attribute, ""));
                match key.to_ascii_lowercase().as_str() {
                    "path" => path = val.to_owned(),
                    "max-age" => gone |= val.trim().starts_with('-') || val.trim() == "0",
                    "expires" => gone |= val.contains("1970"),
                    _ => {}
                }
            }
            cookies.retain(|(n, _, p)| !(n == name && *p == path));
            if !gone {
                cookies.push((name.to_owned(), value.to_owned(), path));
            }
        }
    }

    /// One request with the jar's cookies; the jar keeps what the answer sets.
    pub async fn request(
        &mut self,
        method: reqwest::Method,
        url: &Url,
        form: Option<&[(&str, &str)]>,
    ) -> reqwest::Response {
        let mut request = self.http.request(method, url.clone());
        if let Some(cookie) = self.cookie_header(url) {
            request = request.header(reqwest::header::COOKIE, cookie);
        }
        if let Some(form) = form {
            let body = form_urlencoded::Serializer::new(String::new())
                .extend_pairs(form)
                .finish();
            request = request
                .header(
                    reqwest::header::CONTENT_TYPE,
                    "application/x-www-form-urlencoded",
                )
                .body(body);
        }
        let response = request.send().await.unwrap();
        self.keep(url, response.headers());
        response
    }

    /// Follows redirects from `start`, posting an upstream's login form (as `login`, any
    /// password; or its Cancel button when `login` is `None`) when a page holds one; ends at the
    /// first answer that is neither a redirect nor such a page, or at `stop_at`.
    pub async fn browse(&mut self, start: &str) -> Landing {
        let mut url = Url::parse(start).unwrap();
        let mut visited = Vec::new();
        let mut form: Option<Vec<(String, String)>> = None;
        for _ in 0..20 {
            if self
                .stop_at
                .as_deref()
                .is_some_and(|p| url.as_str().starts_with(p))
            {
                return Landing {
                    url,
                    status: None,
                    body: String::new(),
                    visited,
                };
            }
            let pairs: Option<Vec<(&str, &str)>> = form
                .as_ref()
                .map(|f| f.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect());
            let method = if form.is_some() {
                reqwest::Method::POST
            } else {
                reqwest::Method::GET
            };
            let response = self.request(method, &url, pairs.as_deref()).await;
            visited.push(url.clone());
            form = None;
            let status = response.status();
            if status.is_redirection() {
                let location = response.headers()[reqwest::header::LOCATION]
                    .to_str()
                    .unwrap();
                url = url.join(location).unwrap();
                continue;
            }
            let body = response.text().await.unwrap();
            if let Some((action, fields)) = self.login_form(&body) {
                url = url.join(&action).unwrap();
                form = Some(fields);
                continue;
            }
            return Landing {
                url,
                status: Some(status.as_u16()),
                body,
                visited,
            };
        }
        panic!("more than 20 redirects: {visited:?}");
    }

    /// The upstream login form's target and fields, when `page` is that form.
    fn login_form(&self, page: &str) -> Option<(String, Vec<(String, String)>)> {
        let pattern = regex::Regex::new(r#"action="(/interaction/[^"]+)/login""#).unwrap();
        let base = pattern.captures(page)?.get(1)?.as_str().to_owned();
        Some(match &self.login {
            Some(login) => (
                format!("{base}/login"),
                vec![
                    ("login".into(), login.clone()),
                    ("password".into(), "any".into()),
                ],
            ),
            None => (format!("{base}/abort"), Vec::new()),
        })
    }
}
