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
}
