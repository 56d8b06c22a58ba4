//! Where `/sign-in?return_to=` may send a user after signing in (docs/api.md §6b): the public
//! URL's host, a host under `GATEHOUSE_COOKIE_DOMAIN`, and what `GATEHOUSE_ALLOWED_RETURN_URLS`
//! lists. An open redirect on a sign-in page is a phishing tool (a link to the real sign-in page
//! that lands the user on a look-alike), so nothing else is followed.

use url::Url;

use super::values::{Setting, SettingsError};

/// The allowed return URLs: each an origin (`https://app.example.com`: any URL of that origin) or
/// a prefix (`https://app.example.com/dashboard`: that path and what lies below it, by whole
/// segments).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReturnUrls {
    listed: Vec<Url>,
    /// The public URL's host: any of its URLs (http or https, any port).
    public_host: Option<String>,
    /// `GATEHOUSE_COOKIE_DOMAIN`: any URL of a host under it.
    cookie_domain: Option<String>,
}

impl ReturnUrls {
    /// Comma-separated entries; an empty value allows none.
    pub(super) fn parse(setting: &Setting, value: &str) -> Result<ReturnUrls, SettingsError> {
        let mut entries = Vec::new();
        for raw in value.split(',').map(str::trim).filter(|v| !v.is_empty()) {
            let url = Url::parse(raw)
                .map_err(|_| setting.invalid(raw, "is not a URL (e.g. https://app.example.com)"))?;
            if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
                return Err(setting.invalid(raw, "must be an http:// or https:// URL with a host"));
            }
            if !url.username().is_empty() || url.password().is_some() {
                return Err(setting.invalid(raw, "must not carry a user name or password"));
            }
            if url.query().is_some() || url.fragment().is_some() {
                return Err(setting.invalid(raw, "must not have a query or a fragment"));
            }
            entries.push(url);
        }
        Ok(ReturnUrls {
            listed: entries,
            public_host: None,
            cookie_domain: None,
        })
    }

    /// These, and any URL of the public URL's host or of a host under the cookie domain.
    pub fn with_hosts(mut self, public_url: &str, cookie_domain: Option<&str>) -> ReturnUrls {
        self.public_host = Url::parse(public_url)
            .ok()
            .and_then(|u| u.host_str().map(str::to_ascii_lowercase));
        self.cookie_domain = cookie_domain.map(str::to_ascii_lowercase);
        self
    }

    /// `candidate`, normalised, when an entry allows it; `None` otherwise. Compared as parsed
    /// URLs, never as strings: `https://app.example.com.evil.com` does not start an allowed
    /// origin, and `/dashboard/../admin` is judged as `/admin`.
    pub fn allow(&self, candidate: &str) -> Option<String> {
        // Control characters and backslashes are read differently by browsers and parsers.
        if candidate.len() > 2048 || candidate.chars().any(|c| c.is_control() || c == '\\') {
            return None;
        }
        let url = Url::parse(candidate).ok()?;
        if !url.username().is_empty() || url.password().is_some() {
            return None;
        }
        if !matches!(url.scheme(), "http" | "https") {
            return None;
        }
        let host = url.host_str().map(str::to_ascii_lowercase);
        let own_host = host.is_some()
            && (host == self.public_host
                || self
                    .cookie_domain
                    .as_deref()
                    .zip(host.as_deref())
                    .is_some_and(|(domain, host)| super::host_under(host, domain)));
        let allowed = own_host
            || self.listed.iter().any(|entry| {
                if entry.origin() != url.origin() {
                    return false;
                }
                let prefix = entry.path().trim_end_matches('/');
                let path = url.path();
                prefix.is_empty()
                    || path == prefix
                    || path
                        .strip_prefix(prefix)
                        .is_some_and(|rest| rest.starts_with('/'))
            });
        allowed.then(|| url.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn urls(value: &str) -> ReturnUrls {
        ReturnUrls::parse(
            &Setting {
                key: "allowed_return_urls",
            },
            value,
        )
        .unwrap()
    }

    #[test]
    fn origins_allow_their_whole_site_and_nothing_else() {
        let allowed = urls("https://app.example.com, http://localhost:3000");
        assert_eq!(
            allowed.allow("https://app.example.com/x?y=1#z").as_deref(),
            Some("https://app.example.com/x?y=1#z")
        );
        assert!(allowed.allow("http://localhost:3000/").is_some());
        for refused in [
            "https://app.example.com.evil.com/",
            "http://app.example.com/",
            "https://app.example.com:444/",
            "https://evil.com/?https://app.example.com",
            "https://user@app.example.com/",
            "//app.example.com/",
            "/account",
            "javascript:alert(1)",
            "https://app.example.com\\@evil.com/",
            "https://app.example.com/\n",
            "",
        ] {
            assert_eq!(allowed.allow(refused), None, "{refused}");
        }
    }

    #[test]
    fn prefixes_allow_whole_segments_below_them() {
        let allowed = urls("https://app.example.com/dashboard/");
        assert!(allowed.allow("https://app.example.com/dashboard").is_some());
        assert!(
            allowed
                .allow("https://app.example.com/dashboard/a/b")
                .is_some()
        );
        assert!(
            allowed
                .allow("https://app.example.com/dashboards")
                .is_none()
        );
        assert!(allowed.allow("https://app.example.com/").is_none());
        assert!(
            allowed
                .allow("https://app.example.com/dashboard/../admin")
                .is_none()
        );
        assert_eq!(urls("").allow("https://app.example.com/"), None);
    }

    #[test]
    fn the_public_host_and_hosts_under_the_cookie_domain_are_allowed() {
        let allowed = urls("https://partner.org")
            .with_hosts("https://login.example.com", Some("example.com"));
        for ok in [
            "https://login.example.com/account",
            "https://app.example.com/x?y=1",
            "http://grafana.example.com:3000/",
            "https://example.com/",
            "https://partner.org/z",
        ] {
            assert!(allowed.allow(ok).is_some(), "{ok}");
        }
        for refused in [
            "https://evil.org/",
            "https://badexample.com/",
            "https://example.com.evil.org/",
            "https://user@app.example.com/",
            "javascript://app.example.com/%0aalert(1)",
            "ftp://app.example.com/",
        ] {
            assert_eq!(allowed.allow(refused), None, "{refused}");
        }
        let host_only = ReturnUrls::default().with_hosts("http://127.0.0.1:8080", None);
        assert!(host_only.allow("http://127.0.0.1:8080/account").is_some());
        assert!(host_only.allow("http://localhost:8080/").is_none());
    }

    #[test]
    fn bad_entries_name_the_setting() {
        let setting = Setting {
            key: "allowed_return_urls",
        };
        for bad in [
            "app.example.com",
            "ftp://app.example.com",
            "https://a:b@app.example.com",
            "https://app.example.com/?q",
        ] {
            let err = ReturnUrls::parse(&setting, bad).unwrap_err().0;
            assert!(err.contains("GATEHOUSE_ALLOWED_RETURN_URLS"), "{err}");
        }
    }
}
