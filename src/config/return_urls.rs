//! `GATEHOUSE_ALLOWED_RETURN_URLS`: where `/sign-in?return_to=` may send a user after signing in.
//! An open redirect on a sign-in page is a phishing tool (a link to the real sign-in page that
//! lands the user on a look-alike), so only what the operator listed is followed.

use url::Url;

use super::values::{Setting, SettingsError};

/// The allowed return URLs: each an origin (`https://app.example.com`: any URL of that origin) or
/// a prefix (`https://app.example.com/dashboard`: that path and what lies below it, by whole
/// segments).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReturnUrls(Vec<Url>);

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
        Ok(ReturnUrls(entries))
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
        let allowed = self.0.iter().any(|entry| {
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
