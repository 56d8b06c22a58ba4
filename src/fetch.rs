//! Fetching a document at a URL a stranger chose (docs/api.md §12: client ID metadata documents).
//! Anyone can make Gatehouse send this request, so it is built to be useless as a weapon:
//!
//! - https only, with no user name or password in the URL, no proxy (a proxy would connect where
//!   it likes), and no redirects (a redirect is a second URL nobody checked);
//! - only public addresses: a name is resolved once, by `PublicOnly`, which refuses it whole if
//!   any of its addresses is private, loopback, link-local, unique-local, CGNAT, multicast,
//!   reserved, unspecified, or an IPv4-in-IPv6 form of one; the connection goes to exactly the
//!   addresses checked, so a name that resolves differently a moment later (DNS rebinding) gains
//!   nothing. An address in the URL itself is checked the same way;
//! - 5 s for the whole exchange (slow servers), at most 5 KiB read (bigger answers are cut off and
//!   refused, whatever their Content-Length says);
//! - at most `IN_FLIGHT` fetches at once on an instance, so that slow servers cannot hold its
//!   connections.
//!
//! The tests' switch (`SettingsArgs::oauth_client_metadata_insecure_loopback`, set in code, never
//! by an operator) also allows http, and loopback addresses, and nothing else.

use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use tokio::sync::Semaphore;
use url::{Host, Url};

use crate::addresses;

/// The whole exchange, from connecting to the last byte.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(5);
/// The most bytes of a document read.
pub const MAX_DOCUMENT: usize = 5 * 1024;
/// Fetches at once on one instance; more are refused until one ends.
const IN_FLIGHT: usize = 16;

/// A fetched document: its bytes and how long its `Cache-Control` lets it be believed (`None`:
/// it says nothing; `Some(ZERO)`: `no-store` or `no-cache`).
#[derive(Debug)]
pub struct Fetched {
    pub body: Vec<u8>,
    pub max_age: Option<Duration>,
}

/// Fetches documents, safely.
pub struct Fetcher {
    /// Built at the first fetch: a client loads the system's root certificates into OpenSSL
    /// (about 1 MiB), which an instance whose clients never use metadata documents never needs.
    client: OnceLock<Option<reqwest::Client>>,
    insecure_loopback: bool,
    in_flight: Semaphore,
}

impl Fetcher {
    pub fn new(insecure_loopback: bool) -> Fetcher {
        Fetcher {
            client: OnceLock::new(),
            insecure_loopback,
            in_flight: Semaphore::new(IN_FLIGHT),
        }
    }

    fn client(&self) -> Option<&reqwest::Client> {
        let insecure_loopback = self.insecure_loopback;
        self.client
            .get_or_init(|| build_client(insecure_loopback))
            .as_ref()
    }

    /// The document at `url`, or why not, in words a developer can act on.
    pub async fn fetch(&self, url: &Url) -> Result<Fetched, String> {
        self.check_url(url)?;
        let Some(client) = self.client() else {
            return Err("documents cannot be fetched now".into());
        };
        let Ok(_permit) = self.in_flight.try_acquire() else {
            return Err("too many documents are being fetched: try again shortly".into());
        };
        match tokio::time::timeout(FETCH_TIMEOUT, get(client, url)).await {
            Ok(fetched) => fetched,
            Err(_) => Err(format!(
                "it did not answer within {} s",
                FETCH_TIMEOUT.as_secs()
            )),
        }
    }

    /// What can be known from the URL alone.
    fn check_url(&self, url: &Url) -> Result<(), String> {
        if !url.username().is_empty() || url.password().is_some() {
            return Err("the URL must not carry a user name or password".into());
        }
        if url.host().is_none() {
            return Err("the URL has no host".into());
        }
        match url.scheme() {
            "https" => {}
            "http" if self.insecure_loopback && addresses::is_loopback(url) => {}
            _ => return Err("the URL must be https".into()),
        }
        // An address in the URL is connected to without resolving: check it here.
        let literal = match url.host() {
            Some(Host::Ipv4(ip)) => Some(IpAddr::V4(ip)),
            Some(Host::Ipv6(ip)) => Some(IpAddr::V6(ip)),
            _ => None,
        };
        if let Some(ip) = literal {
            if !allowed(ip, self.insecure_loopback) {
                return Err(format!("{ip} is not a public address"));
            }
        }
        Ok(())
    }
}

/// The client of `Fetcher`: no redirects, no proxy, bounded in time, public addresses only.
fn build_client(insecure_loopback: bool) -> Option<reqwest::Client> {
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .timeout(FETCH_TIMEOUT)
        .connect_timeout(FETCH_TIMEOUT)
        .user_agent(concat!("Gatehouse/", env!("CARGO_PKG_VERSION")))
        .dns_resolver(Arc::new(PublicOnly { insecure_loopback }))
        .build();
    match client {
        Ok(client) => Some(client),
        Err(error) => {
            tracing::error!(error = %error, "the HTTP client for metadata documents cannot be built");
            None
        }
    }
}

async fn get(client: &reqwest::Client, url: &Url) -> Result<Fetched, String> {
    let mut response = client
        .get(url.clone())
        .header(reqwest::header::ACCEPT, "application/json")
        .send()
        .await
        .map_err(|e| describe(&e))?;
    let status = response.status();
    if status.is_redirection() {
        return Err(format!("it answered {status}: redirects are not followed"));
    }
    if status != reqwest::StatusCode::OK {
        return Err(format!("it answered {status}, not 200"));
    }
    if response
        .content_length()
        .is_some_and(|n| n > MAX_DOCUMENT as u64)
    {
        return Err(format!("it is larger than {MAX_DOCUMENT} bytes"));
    }
    let max_age = response
        .headers()
        .get(reqwest::header::CACHE_CONTROL)
        .and_then(|v| v.to_str().ok())
        .and_then(cache_max_age);
    let mut body = Vec::new();
    // Read piece by piece and stop past the limit: a server that lies about its length (or
    // sends none) cannot make us hold more than one piece beyond it.
    while let Some(chunk) = response.chunk().await.map_err(|e| describe(&e))? {
        body.extend_from_slice(&chunk);
        if body.len() > MAX_DOCUMENT {
            return Err(format!("it is larger than {MAX_DOCUMENT} bytes"));
        }
    }
    Ok(Fetched { body, max_age })
}

/// A reqwest error in a sentence, with the resolver's refusal when that was the cause.
fn describe(error: &reqwest::Error) -> String {
    let mut source: Option<&dyn std::error::Error> = Some(error);
    while let Some(e) = source {
        if let Some(refused) = e.downcast_ref::<NotPublic>() {
            return refused.to_string();
        }
        source = e.source();
    }
    if error.is_timeout() {
        format!("it did not answer within {} s", FETCH_TIMEOUT.as_secs())
    } else if error.is_connect() {
        "it cannot be reached".into()
    } else {
        "it could not be read".into()
    }
}

/// `max-age` of a `Cache-Control` value; zero for `no-store` or `no-cache`; `None` without either.
fn cache_max_age(value: &str) -> Option<Duration> {
    let mut max_age = None;
    for directive in value.split(',').map(str::trim) {
        let lower = directive.to_ascii_lowercase();
        if lower == "no-store" || lower == "no-cache" {
            return Some(Duration::ZERO);
        }
        if let Some(seconds) = lower.strip_prefix("max-age=") {
            max_age = seconds
                .trim_matches('"')
                .parse::<u64>()
                .ok()
                .map(Duration::from_secs);
        }
    }
    max_age
}

/// The resolver of the fetcher's client: a name with any address that is not public is refused.
struct PublicOnly {
    insecure_loopback: bool,
}

/// The resolver's refusal, found again in reqwest's error chain by `describe`.
#[derive(Debug)]
struct NotPublic(String);

impl std::fmt::Display for NotPublic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} resolves to an address that is not public", self.0)
    }
}

impl std::error::Error for NotPublic {}

impl Resolve for PublicOnly {
    fn resolve(&self, name: Name) -> Resolving {
        let insecure_loopback = self.insecure_loopback;
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let found: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            if found.is_empty() {
                return Err(Box::new(NotPublic(host)) as Box<dyn std::error::Error + Send + Sync>);
            }
            // All or nothing: a name with one private address among public ones could be
            // connected to the private one.
            if found.iter().any(|a| !allowed(a.ip(), insecure_loopback)) {
                return Err(Box::new(NotPublic(host)) as Box<dyn std::error::Error + Send + Sync>);
            }
            Ok(Box::new(found.into_iter()) as Addrs)
        })
    }
}

/// Whether the fetcher may connect to `ip`: a public unicast address, or loopback when allowed.
pub fn allowed(ip: IpAddr, loopback_too: bool) -> bool {
    if addresses::is_loopback_ip(ip) {
        return loopback_too;
    }
    addresses::is_public(ip)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn loopback_only_with_the_test_switch_and_nothing_else() {
        assert!(allowed(ip("127.0.0.1"), true));
        assert!(allowed(ip("::1"), true));
        assert!(allowed(ip("::ffff:127.0.0.1"), true));
        for still_refused in ["10.0.0.1", "169.254.169.254", "fe80::1", "0.0.0.0", "::"] {
            assert!(!allowed(ip(still_refused), true), "{still_refused}");
        }
    }

    #[test]
    fn urls_refused_before_any_request() {
        let strict = Fetcher::new(false);
        let loose = Fetcher::new(true);
        let url = |u: &str| Url::parse(u).unwrap();
        for bad in [
            "http://client.example.com/meta.json",
            "https://user:pw@client.example.com/meta.json",
            "https://10.0.0.1/meta.json",
            "https://169.254.169.254/latest/meta-data",
            "https://[::1]/meta.json",
            "https://[::ffff:a00:1]/meta.json",
            "https://0x7f.1/meta.json",
            "ftp://client.example.com/meta.json",
        ] {
            assert!(strict.check_url(&url(bad)).is_err(), "{bad}");
        }
        assert!(
            strict
                .check_url(&url("https://client.example.com/m"))
                .is_ok()
        );
        assert!(loose.check_url(&url("http://127.0.0.1:8080/m")).is_ok());
        assert!(loose.check_url(&url("http://10.0.0.1/m")).is_err());
        assert!(
            loose
                .check_url(&url("http://client.example.com/m"))
                .is_err()
        );
    }

    #[test]
    fn cache_control() {
        assert_eq!(cache_max_age("max-age=60"), Some(Duration::from_secs(60)));
        assert_eq!(
            cache_max_age("public, Max-Age=\"3600\""),
            Some(Duration::from_secs(3600))
        );
        assert_eq!(cache_max_age("no-store, max-age=60"), Some(Duration::ZERO));
        assert_eq!(cache_max_age("no-cache"), Some(Duration::ZERO));
        assert_eq!(cache_max_age("public"), None);
    }
}
