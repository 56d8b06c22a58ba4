//! The public address of the service and the WebAuthn relying party derived from it
//! (`GATEHOUSE_PUBLIC_URL`, `GATEHOUSE_WEBAUTHN_RP_ID`, `GATEHOUSE_WEBAUTHN_ORIGINS`): checked here at
//! start, so a relying-party id that no origin can use stops the program with one line instead of
//! failing every ceremony later.

use url::{Host, Url};

use super::values::{Setting, SettingsError};

/// The relying party passkeys are bound to: the registrable domain of the pages, and the origins
/// (`scheme://host[:port]`) whose pages may run a ceremony.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RelyingParty {
    pub id: String,
    pub origins: Vec<String>,
}

/// `GATEHOUSE_PUBLIC_URL`: an `http` or `https` URL with a host, without query or fragment; kept
/// without its trailing slash so that paths can be appended to it.
pub(super) fn parse_public_url(setting: &Setting, value: &str) -> Result<String, SettingsError> {
    let url = web_url(value).map_err(|reason| setting.invalid(value, reason))?;
    if url.query().is_some() || url.fragment().is_some() {
        return Err(setting.invalid(value, "must not have a query or a fragment"));
    }
    Ok(url.as_str().trim_end_matches('/').to_owned())
}

fn web_url(value: &str) -> Result<Url, &'static str> {
    let url =
        Url::parse(value.trim()).map_err(|_| "is not a URL (e.g. https://login.example.com)")?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err("must be an http:// or https:// URL");
    }
    if url.host().is_none() {
        return Err("must name a host");
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err("must not carry a user name or password");
    }
    Ok(url)
}

/// The relying party from the three settings. Without an explicit id, it is the public URL's
/// host; when that is an IP address (the default `http://<listen address>`), passkeys are off
/// (`None`): browsers accept no IP address as a relying-party id.
pub(super) fn relying_party(
    public_url: &str,
    rp_id: Option<String>,
    origins: Option<String>,
) -> Result<Option<RelyingParty>, SettingsError> {
    let id_setting = Setting {
        key: "webauthn_rp_id",
    };
    let origins_setting = Setting {
        key: "webauthn_origins",
    };
    let public = Url::parse(public_url)
        .map_err(|_| Setting { key: "public_url" }.invalid(public_url, "is not a URL"))?;
    let id = match rp_id.filter(|v| !v.trim().is_empty()) {
        Some(id) => {
            let id = id.trim().to_ascii_lowercase();
            domain(&id).map_err(|reason| id_setting.invalid(&id, reason))?;
            id
        }
        None => match public.host() {
            Some(Host::Domain(host)) => host.to_ascii_lowercase(),
            _ if origins.is_some() => {
                return Err(id_setting.invalid(
                    "",
                    "is required when GATEHOUSE_PUBLIC_URL's host is an IP address",
                ));
            }
            _ => return Ok(None),
        },
    };
    let origins: Vec<String> = match origins.filter(|v| !v.trim().is_empty()) {
        Some(list) => list
            .split(',')
            .map(|o| origin(&origins_setting, o.trim()))
            .collect::<Result<_, _>>()?,
        None => vec![public.origin().ascii_serialization()],
    };
    for o in &origins {
        let host = Url::parse(o)
            .ok()
            .and_then(|u| u.host_str().map(str::to_owned))
            .unwrap_or_default();
        if host != id && !host.ends_with(&format!(".{id}")) {
            return Err(SettingsError(format!(
                "invalid setting GATEHOUSE_WEBAUTHN_ORIGINS (--webauthn-origins / webauthn_origins): \
                 the origin {o} is not within the relying-party id {id} \
                 (GATEHOUSE_WEBAUTHN_RP_ID): its host must be {id} or end in .{id}"
            )));
        }
    }
    Ok(Some(RelyingParty { id, origins }))
}

/// One origin: a URL of scheme, host and optional port, nothing after them.
fn origin(setting: &Setting, value: &str) -> Result<String, SettingsError> {
    let url = web_url(value).map_err(|reason| setting.invalid(value, reason))?;
    if url.path() != "/" || url.query().is_some() || url.fragment().is_some() {
        return Err(setting.invalid(value, "must be an origin: scheme, host and port, no path"));
    }
    if !matches!(url.host(), Some(Host::Domain(_))) {
        return Err(setting.invalid(value, "must name a domain, not an IP address"));
    }
    Ok(url.origin().ascii_serialization())
}

/// A domain name as a relying-party id: no scheme, port, path or IP address.
fn domain(id: &str) -> Result<(), &'static str> {
    let labels_ok = id.split('.').all(|label| {
        !label.is_empty()
            && label.len() <= 63
            && label
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-')
            && !label.starts_with('-')
            && !label.ends_with('-')
    });
    if id.is_empty() || id.len() > 253 || !labels_ok {
        return Err("must be a domain name such as example.com (no scheme, port or path)");
    }
    if id.parse::<std::net::IpAddr>().is_ok() || id.bytes().all(|b| b.is_ascii_digit() || b == b'.')
    {
        return Err("must be a domain name, not an IP address");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rp(
        public: &str,
        id: Option<&str>,
        origins: Option<&str>,
    ) -> Result<Option<RelyingParty>, String> {
        relying_party(public, id.map(Into::into), origins.map(Into::into)).map_err(|e| e.0)
    }

    #[test]
    fn the_public_url_gives_the_defaults() {
        assert_eq!(
            rp("https://login.example.com", None, None).unwrap(),
            Some(RelyingParty {
                id: "login.example.com".into(),
                origins: vec!["https://login.example.com".into()],
            })
        );
        // The default public URL names an IP address: no passkeys, and no error.
        assert_eq!(rp("http://127.0.0.1:8080", None, None).unwrap(), None);
        let err = rp("http://127.0.0.1:8080", None, Some("https://a.example.com")).unwrap_err();
        assert!(err.contains("GATEHOUSE_WEBAUTHN_RP_ID"), "{err}");
    }

    #[test]
    fn origins_must_lie_within_the_relying_party_id() {
        let ok = rp(
            "https://api.example.com",
            Some("Example.com"),
            Some("https://example.com, https://app.example.com:8443"),
        )
        .unwrap()
        .unwrap();
        assert_eq!(ok.id, "example.com");
        assert_eq!(
            ok.origins,
            ["https://example.com", "https://app.example.com:8443"]
        );
        let err = rp(
            "https://api.example.com",
            Some("example.com"),
            Some("https://evil.com"),
        )
        .unwrap_err();
        assert!(err.contains("https://evil.com is not within the relying-party id example.com"));
        assert!(!err.contains('\n'));
        // A look-alike suffix is not a subdomain.
        assert!(
            rp(
                "https://x.com",
                Some("example.com"),
                Some("https://badexample.com")
            )
            .is_err()
        );
        // The default origin (the public URL's) must lie within an explicit id too.
        assert!(rp("https://api.other.com", Some("example.com"), None).is_err());
    }

    #[test]
    fn bad_values_name_their_setting() {
        for (public, id, origins, named) in [
            (
                "https://a.example.com",
                Some("https://example.com"),
                None,
                "GATEHOUSE_WEBAUTHN_RP_ID",
            ),
            (
                "https://a.example.com",
                Some("10.0.0.1"),
                None,
                "GATEHOUSE_WEBAUTHN_RP_ID",
            ),
            (
                "https://a.example.com",
                None,
                Some("a.example.com"),
                "GATEHOUSE_WEBAUTHN_ORIGINS",
            ),
            (
                "https://a.example.com",
                None,
                Some("https://a.example.com/app"),
                "GATEHOUSE_WEBAUTHN_ORIGINS",
            ),
            (
                "https://a.example.com",
                None,
                Some("ftp://a.example.com"),
                "GATEHOUSE_WEBAUTHN_ORIGINS",
            ),
        ] {
            let err = rp(public, id, origins).unwrap_err();
            assert!(err.contains(named), "{err}");
        }
        let s = Setting { key: "public_url" };
        assert!(parse_public_url(&s, "login.example.com").is_err());
        assert!(parse_public_url(&s, "https://x.example.com/?a=b").is_err());
        assert_eq!(
            parse_public_url(&s, "https://x.example.com/auth/").unwrap(),
            "https://x.example.com/auth"
        );
    }
}
