//! The settings of browser sessions (docs/api.md §6b): the session cookie's name and domain, and
//! the origins whose single-page applications may call the API across origins (CORS).

use url::Url;

use super::SettingsArgs;
use super::source::Source;
use super::values::{Setting, SettingsError};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BrowserSettings {
    /// `GATEHOUSE_COOKIE_NAME`.
    pub cookie_name: String,
    /// `GATEHOUSE_COOKIE_DOMAIN`, lower-case, without a leading dot; `None`: a host-only cookie.
    pub cookie_domain: Option<String>,
    /// Whether the cookie is `Secure`: the public URL is https.
    pub cookie_secure: bool,
    /// `GATEHOUSE_CORS_ORIGINS`: exact origins (`https://app.example.com`), as browsers send them.
    pub cors_origins: Vec<String>,
}

/// The three settings, checked against the public URL: a cookie domain the public URL's host is
/// not under would be refused by every browser, so it stops the start instead.
pub(super) fn resolve(
    src: &Source,
    args: &SettingsArgs,
    public_url: &str,
) -> Result<BrowserSettings, SettingsError> {
    let pick = |key: &'static str, given: &Option<String>| src.pick(key, given);
    let public = Url::parse(public_url)
        .map_err(|_| Setting { key: "public_url" }.invalid(public_url, "is not a URL"))?;
    let cookie_secure = public.scheme() == "https";
    let setting = Setting { key: "cookie_name" };
    let cookie_name =
        pick("cookie_name", &args.cookie_name).unwrap_or_else(|| "gatehouse_session".to_owned());
    check_cookie_name(&setting, &cookie_name, cookie_secure)?;
    let setting = Setting {
        key: "cookie_domain",
    };
    let cookie_domain = match pick("cookie_domain", &args.cookie_domain) {
        Some(v) if !v.trim().is_empty() => Some(cookie_domain(&setting, &v, &public)?),
        _ => None,
    };
    if cookie_domain.is_some() && cookie_name.starts_with("__Host-") {
        return Err(setting.invalid(
            cookie_domain.as_deref().unwrap_or_default(),
            "cannot be set with a __Host- cookie name (such a cookie has no Domain)",
        ));
    }
    let setting = Setting {
        key: "cors_origins",
    };
    let cors_origins = match pick("cors_origins", &args.cors_origins) {
        Some(v) => cors_origins(&setting, &v)?,
        None => Vec::new(),
    };
    Ok(BrowserSettings {
        cookie_name,
        cookie_domain,
        cookie_secure,
        cors_origins,
    })
}

/// RFC 6265 §4.1.1: a cookie name is an RFC 7230 token. The `__Secure-` and `__Host-` prefixes
/// need a `Secure` cookie, which an http public URL does not give.
fn check_cookie_name(setting: &Setting, name: &str, secure: bool) -> Result<(), SettingsError> {
    let token = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
    if name.is_empty() || name.len() > 64 || !name.chars().all(token) {
        return Err(setting.invalid(name, "must be 1 to 64 letters, digits or !#$%&'*+-.^_`|~"));
    }
    if (name.starts_with("__Secure-") || name.starts_with("__Host-")) && !secure {
        return Err(setting.invalid(
            name,
            "needs an https GATEHOUSE_PUBLIC_URL (a Secure cookie)",
        ));
    }
    Ok(())
}

/// A domain name (not an address) that the public URL's host is, or is under.
fn cookie_domain(setting: &Setting, value: &str, public: &Url) -> Result<String, SettingsError> {
    let domain = value.trim().trim_start_matches('.').to_ascii_lowercase();
    let label_ok = |l: &str| {
        !l.is_empty()
            && l.len() <= 63
            && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    if domain.len() > 253
        || !domain.split('.').all(label_ok)
        || domain.parse::<std::net::IpAddr>().is_ok()
        || !domain.contains(|c: char| c.is_ascii_alphabetic())
    {
        return Err(setting.invalid(value, "must be a domain name, e.g. example.com"));
    }
    let host = public.host_str().unwrap_or_default().to_ascii_lowercase();
    if !host_under(&host, &domain) {
        return Err(setting.invalid(
            value,
            "must be GATEHOUSE_PUBLIC_URL's host or a domain above it (browsers refuse a cookie \
             for any other)",
        ));
    }
    Ok(domain)
}

/// Whether `host` is `domain` or a name under it (`app.example.com` under `example.com`; not
/// `badexample.com`).
pub fn host_under(host: &str, domain: &str) -> bool {
    host == domain
        || host
            .strip_suffix(domain)
            .is_some_and(|rest| rest.ends_with('.'))
}

/// Comma-separated exact origins: `scheme://host[:port]`, nothing else (no path, no `*`).
fn cors_origins(setting: &Setting, value: &str) -> Result<Vec<String>, SettingsError> {
    let mut origins = Vec::new();
    for raw in value.split(',').map(str::trim).filter(|v| !v.is_empty()) {
        let url = Url::parse(raw)
            .map_err(|_| setting.invalid(raw, "is not an origin (e.g. https://app.example.com)"))?;
        let origin = url.origin().ascii_serialization();
        if !matches!(url.scheme(), "http" | "https") || raw.trim_end_matches('/') != origin {
            return Err(setting.invalid(
                raw,
                "must be an exact origin: http(s)://host[:port], without path, user or wildcard",
            ));
        }
        if !origins.contains(&origin) {
            origins.push(origin);
        }
    }
    Ok(origins)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve_with(public: &str, args: SettingsArgs) -> Result<BrowserSettings, SettingsError> {
        resolve(&Source::empty(), &args, public)
    }

    #[test]
    fn defaults_are_a_host_only_cookie_and_no_cors() {
        let s = resolve_with("http://127.0.0.1:8080", SettingsArgs::default()).unwrap();
        assert_eq!(s.cookie_name, "gatehouse_session");
        assert_eq!(s.cookie_domain, None);
        assert!(!s.cookie_secure);
        assert!(s.cors_origins.is_empty());
        assert!(
            resolve_with("https://login.example.com", SettingsArgs::default())
                .unwrap()
                .cookie_secure
        );
    }

    #[test]
    fn the_cookie_domain_must_hold_the_public_host() {
        let domain = |d: &str| {
            resolve_with(
                "https://login.example.com",
                SettingsArgs {
                    cookie_domain: Some(d.into()),
                    ..Default::default()
                },
            )
        };
        assert_eq!(
            domain(".Example.com").unwrap().cookie_domain.as_deref(),
            Some("example.com")
        );
        assert!(domain("login.example.com").is_ok());
        for bad in [
            "ample.com",
            "other.org",
            "example.com/x",
            "127.0.0.1",
            "a..com",
        ] {
            let err = domain(bad).unwrap_err().0;
            assert!(err.contains("GATEHOUSE_COOKIE_DOMAIN"), "{err}");
        }
    }

    #[test]
    fn names_and_origins_are_checked() {
        let with = |args: SettingsArgs| resolve_with("http://login.example.com", args);
        for bad in ["", "a b", "a;b", "__Host-x", "__Secure-x"] {
            let err = with(SettingsArgs {
                cookie_name: Some(bad.into()),
                ..Default::default()
            })
            .unwrap_err()
            .0;
            assert!(err.contains("GATEHOUSE_COOKIE_NAME"), "{err}");
        }
        let s = with(SettingsArgs {
            cors_origins: Some("https://app.example.com, http://localhost:3000/".into()),
            ..Default::default()
        })
        .unwrap();
        assert_eq!(
            s.cors_origins,
            ["https://app.example.com", "http://localhost:3000"]
        );
        for bad in [
            "*",
            "https://app.example.com/x",
            "app.example.com",
            "ftp://a.b",
        ] {
            let err = with(SettingsArgs {
                cors_origins: Some(bad.into()),
                ..Default::default()
            })
            .unwrap_err()
            .0;
            assert!(err.contains("GATEHOUSE_CORS_ORIGINS"), "{err}");
        }
    }

    #[test]
    fn hosts_under_a_domain() {
        assert!(host_under("app.example.com", "example.com"));
        assert!(host_under("example.com", "example.com"));
        assert!(!host_under("badexample.com", "example.com"));
        assert!(!host_under("example.com.evil.org", "example.com"));
    }
}
