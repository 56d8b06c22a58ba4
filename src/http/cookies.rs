//! The session cookie on the wire (docs/api.md §6b): `Set-Cookie` to set and to clear it, and the
//! values a request's `Cookie` headers give it.

use axum::http::{HeaderMap, HeaderValue, header};

use crate::config::BrowserSettings;

/// `Set-Cookie` for a new cookie living `max_age` seconds.
pub fn set_cookie(settings: &BrowserSettings, value: &str, max_age: i64) -> HeaderValue {
    attributes(settings, value, max_age.max(0))
}

/// `Set-Cookie` that makes the browser forget the cookie (same name, domain and path).
pub fn clear_cookie(settings: &BrowserSettings) -> HeaderValue {
    attributes(settings, "", 0)
}

fn attributes(settings: &BrowserSettings, value: &str, max_age: i64) -> HeaderValue {
    let domain = settings.cookie_domain.as_deref();
    header(
        &settings.cookie_name,
        value,
        max_age,
        settings.cookie_secure,
        domain,
    )
}

/// `Set-Cookie` for one of the service's cookies: `Path=/`, `HttpOnly`, `SameSite=Lax`, `Secure`
/// when the public URL is https, `Domain` when given.
fn header(
    name: &str,
    value: &str,
    max_age: i64,
    secure: bool,
    domain: Option<&str>,
) -> HeaderValue {
    let mut text = format!("{name}={value}; Path=/; Max-Age={max_age}; HttpOnly; SameSite=Lax");
    if secure {
        text.push_str("; Secure");
    }
    if let Some(domain) = domain {
        text.push_str("; Domain=");
        text.push_str(domain);
    }
    // The name and domain were checked when the settings were read, the value is base64url (a
    // tagged token) or empty: a failure here is no cookie, which clears nothing and sets nothing.
    HeaderValue::from_str(&text).unwrap_or(HeaderValue::from_static("gatehouse=; Max-Age=0"))
}

/// The cookie that binds a sign-in or link through another identity provider to the browser that
/// began it, then carries the finished sign-in to the pages (docs/api.md §14).
pub const FEDERATION_COOKIE: &str = "gatehouse_federation";

/// `Set-Cookie` for the federation cookie (`max_age` seconds; 0 clears it). Host-only (no
/// `Domain`): no sibling application under the cookie domain ever sees it.
pub fn federation_cookie(settings: &BrowserSettings, value: &str, max_age: i64) -> HeaderValue {
    header(
        FEDERATION_COOKIE,
        value,
        max_age.max(0),
        settings.cookie_secure,
        None,
    )
}

/// Every value the request's `Cookie` headers give the cookie named `name`, in order (a sibling
/// host under the cookie domain may have set one of the same name).
pub fn cookie_values<'a>(headers: &'a HeaderMap, name: &str) -> Vec<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .filter(|(n, _)| *n == name)
        .map(|(_, v)| v.trim().trim_matches('"'))
        .filter(|v| !v.is_empty())
        .collect()
}

/// The request's `Cookie` headers as one, without any cookie named `name` (every copy: a
/// sibling application can make the browser send its own of that name beside the real one) nor
/// the federation cookie. What a proxy passes on to an application (docs/api.md §6b: nginx's
/// `auth_request_set` from auth-request's `Gatehouse-Cookie`), so that no application ever reads
/// a cookie it could replay as the person. Hand-written rather than a cookie crate's parser:
/// each pair is kept byte for byte as the browser sent it, and nothing but the names is read.
pub fn other_cookies(headers: &HeaderMap, name: &str) -> HeaderValue {
    let ours = |pair: &[u8]| {
        let pair_name = pair.split(|b| *b == b'=').next().unwrap_or_default();
        let pair_name = pair_name.trim_ascii();
        pair_name == name.as_bytes() || pair_name == FEDERATION_COOKIE.as_bytes()
    };
    let mut kept: Vec<u8> = Vec::new();
    let pairs = headers
        .get_all(header::COOKIE)
        .iter()
        .flat_map(|v| v.as_bytes().split(|b| *b == b';'))
        .map(<[u8]>::trim_ascii)
        .filter(|pair| !pair.is_empty() && !ours(pair));
    for pair in pairs {
        if !kept.is_empty() {
            kept.extend_from_slice(b"; ");
        }
        kept.extend_from_slice(pair);
    }
    // Made of a received header's bytes and "; ": valid wherever those were.
    HeaderValue::from_bytes(&kept).unwrap_or(HeaderValue::from_static(""))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(secure: bool, domain: Option<&str>) -> BrowserSettings {
        BrowserSettings {
            cookie_name: "gh".into(),
            cookie_domain: domain.map(str::to_owned),
            cookie_secure: secure,
            cors_origins: Vec::new(),
        }
    }

    #[test]
    fn attributes_follow_the_settings() {
        assert_eq!(
            set_cookie(&settings(false, None), "v", 60),
            "gh=v; Path=/; Max-Age=60; HttpOnly; SameSite=Lax"
        );
        assert_eq!(
            clear_cookie(&settings(true, Some("example.com"))),
            "gh=; Path=/; Max-Age=0; HttpOnly; SameSite=Lax; Secure; Domain=example.com"
        );
    }

    #[test]
    fn the_federation_cookie_is_host_only() {
        assert_eq!(
            federation_cookie(&settings(true, Some("example.com")), "v", 600),
            "gatehouse_federation=v; Path=/; Max-Age=600; HttpOnly; SameSite=Lax; Secure"
        );
    }

    #[test]
    fn values_are_read_from_every_cookie_header() {
        let mut headers = HeaderMap::new();
        headers.append(header::COOKIE, HeaderValue::from_static("a=1; gh=x; ghx=2"));
        headers.append(header::COOKIE, HeaderValue::from_static("gh=y;gh="));
        assert_eq!(cookie_values(&headers, "gh"), ["x", "y"]);
        assert!(cookie_values(&HeaderMap::new(), "gh").is_empty());
    }

    #[test]
    fn other_cookies_keep_everything_but_every_copy_of_ours() {
        let mut headers = HeaderMap::new();
        headers.append(
            header::COOKIE,
            HeaderValue::from_static("gh=junk; theme=dark;gh=real ;  ghx=2; x=a=b"),
        );
        headers.append(
            header::COOKIE,
            HeaderValue::from_static("gatehouse_federation=f; lang=en; gh"),
        );
        assert_eq!(
            other_cookies(&headers, "gh"),
            "theme=dark; ghx=2; x=a=b; lang=en"
        );
        let mut only = HeaderMap::new();
        only.append(header::COOKIE, HeaderValue::from_static(" gh=a; gh=b "));
        assert_eq!(other_cookies(&only, "gh"), "");
        assert_eq!(other_cookies(&HeaderMap::new(), "gh"), "");
    }
}
