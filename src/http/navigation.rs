//! Sending a browser to sign in (docs/api.md §6b): whether a request that forward-auth is asked
//! about is a person's navigation (GET or HEAD, its `Accept` preferring HTML), its original URL,
//! and where to send it: `<public URL>/sign-in?return_to=<original URL>`.

use axum::http::HeaderMap;
use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};

/// The query parameter that tells the sign-in page a rule asks for a second factor: the session
/// the browser has lacks it, so the page signs in again instead of going straight back.
pub const SECOND_FACTOR: &str = "second_factor=required";

/// Whether the original request was a browser's navigation: GET or HEAD, and an `Accept` that
/// prefers `text/html` (a browser's `text/html,…,*/*;q=0.8`; not `fetch`'s `*/*`, not an API
/// client's `application/json`).
pub fn is_navigation(method: &str, accept: Option<&str>) -> bool {
    let navigating = method.eq_ignore_ascii_case("GET") || method.eq_ignore_ascii_case("HEAD");
    navigating && accept.is_some_and(prefers_html)
}

/// `text/html` (or `application/xhtml+xml`) is named with a quality above 0 and no other type
/// is given a higher one.
fn prefers_html(accept: &str) -> bool {
    let mut html = 0.0_f32;
    let mut others = 0.0_f32;
    for range in accept.split(',') {
        let mut parts = range.split(';');
        let kind = parts.next().unwrap_or("").trim().to_ascii_lowercase();
        let mut quality = 1.0_f32;
        for param in parts {
            if let Some((name, value)) = param.split_once('=') {
                if name.trim().eq_ignore_ascii_case("q") {
                    quality = value.trim().parse().unwrap_or(0.0);
                }
            }
        }
        if kind == "text/html" || kind == "application/xhtml+xml" {
            html = html.max(quality);
        } else {
            others = others.max(quality);
        }
    }
    html > 0.0 && html >= others
}

/// Where a browser is sent to sign in, coming back to `original` afterwards (the sign-in page
/// checks it against the `return_to` rules); with `second_factor`, to sign in again with one.
pub fn sign_in_url(public_url: &str, original: &str, second_factor: bool) -> String {
    let mut url = format!(
        "{public_url}/sign-in?return_to={}",
        utf8_percent_encode(original, NON_ALPHANUMERIC)
    );
    if second_factor {
        url.push('&');
        url.push_str(SECOND_FACTOR);
    }
    url
}

/// Caddy and Traefik: `X-Forwarded-Proto://X-Forwarded-Host` + `X-Forwarded-Uri` (with its
/// query). Without a proto, the public URL's scheme.
pub fn forwarded_url(headers: &HeaderMap, public_url: &str) -> Option<String> {
    let host = single(headers, "x-forwarded-host")?;
    let uri = single(headers, "x-forwarded-uri")?;
    let proto = match single(headers, "x-forwarded-proto") {
        Some(p) if p.eq_ignore_ascii_case("http") || p.eq_ignore_ascii_case("https") => p,
        Some(_) => return None,
        None if public_url.starts_with("https:") => "https",
        None => "http",
    };
    if host.is_empty() || !uri.starts_with('/') {
        return None;
    }
    Some(format!("{}://{host}{uri}", proto.to_ascii_lowercase()))
}

/// The value of a header given exactly once, as text; a repeated header could be read two ways.
pub fn single<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    let mut values = headers.get_all(name).iter();
    let value = values.next()?;
    if values.next().is_some() {
        return None;
    }
    value.to_str().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn browsers_navigating_prefer_html() {
        let chromium = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,\
                        image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7";
        let firefox = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";
        for accept in [chromium, firefox, "TEXT/HTML"] {
            assert!(is_navigation("GET", Some(accept)), "{accept}");
            assert!(is_navigation("head", Some(accept)), "{accept}");
        }
        assert!(!is_navigation("POST", Some(firefox)));
        for accept in [
            "*/*",
            "application/json",
            "application/json, text/html;q=0.5",
            "text/html;q=0",
            "",
        ] {
            assert!(!is_navigation("GET", Some(accept)), "{accept}");
        }
        assert!(!is_navigation("GET", None));
    }

    #[test]
    fn the_original_url_is_percent_encoded_whole() {
        assert_eq!(
            sign_in_url(
                "https://login.example.com",
                "https://app.example.com/a?b=1&c=2",
                false
            ),
            "https://login.example.com/sign-in?return_to=https%3A%2F%2Fapp%2Eexample%2Ecom%2Fa%3Fb%3D1%26c%3D2"
        );
        assert!(sign_in_url("http://h", "http://a/", true).ends_with("&second_factor=required"));
    }
}
