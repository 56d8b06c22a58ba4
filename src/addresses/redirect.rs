//! Which URIs a client may be sent back to (docs/api.md §11): the rules a registered URI must meet,
//! and how a presented one is matched against the registered ones. Pure functions: the registry
//! checks with them, the authorization and logout flows match with them.

use std::net::{Ipv4Addr, Ipv6Addr};

use url::{Host, Url};

/// Longest URI kept, in bytes.
pub const URI_MAX: usize = 2_000;

/// How a registered URI may be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UriUse {
    /// A redirect or post-logout redirect URI, followed by the person's browser: https, http on a
    /// loopback host, or a private-use scheme of a native app (RFC 8252 §7.1).
    Browser,
    /// A back-channel logout URI, called by the server: https, or http on a loopback host.
    Server,
}

/// Checks a URI to register; `Err` says why, in words a `VALIDATION_ERROR` can carry.
pub fn check(uri: &str, usage: UriUse) -> Result<(), String> {
    if uri.is_empty() || uri.len() > URI_MAX {
        return Err(format!("must be 1 to {URI_MAX} bytes"));
    }
    // Stored space-separated, and compared as given: nothing the parser would quietly drop.
    if uri.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("must not contain spaces or control characters".into());
    }
    let url = Url::parse(uri).map_err(|_| "must be an absolute URI".to_owned())?;
    if url.fragment().is_some() {
        return Err("must not have a fragment".into());
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err("must not carry a user name or password".into());
    }
    match url.scheme() {
        "https" if url.host().is_some() => Ok(()),
        "http" if is_loopback_host(&url) => Ok(()),
        "http" => Err("may be http only on 127.0.0.1, [::1] or localhost; else https".into()),
        scheme if usage == UriUse::Browser && scheme.contains('.') => Ok(()),
        _ if usage == UriUse::Browser => Err(
            "must be https, http on a loopback host, or a private-use scheme with a dot \
             (com.example.app:/callback)"
                .into(),
        ),
        _ => Err("must be https, or http on a loopback host".into()),
    }
}

fn is_loopback_host(url: &Url) -> bool {
    match url.host() {
        Some(Host::Ipv4(ip)) => ip == Ipv4Addr::LOCALHOST,
        Some(Host::Ipv6(ip)) => ip == Ipv6Addr::LOCALHOST,
        Some(Host::Domain(name)) => name == "localhost",
        None => false,
    }
}

/// Whether `presented` is one of `registered`: the same string (RFC 9700 §4.1.3: no normalising,
/// no prefix), or, for a registered `http://127.0.0.1…` or `http://[::1]…`, the same string but
/// for the port, which a native app picks when it starts listening (RFC 8252 §7.3). `localhost`
/// is matched exactly: RFC 8252 §8.3 advises against it (it may resolve elsewhere), so it earns
/// no port freedom.
pub fn allows(registered: &[String], presented: &str) -> bool {
    if registered.iter().any(|r| r == presented) {
        return true;
    }
    let Some(presented) = without_loopback_port(presented) else {
        return false;
    };
    registered
        .iter()
        .filter_map(|r| without_loopback_port(r))
        .any(|r| r == presented)
}

/// `http://127.0.0.1[:port]REST` or `http://[::1][:port]REST` as (host prefix, REST), REST empty
/// or starting with `/` or `?`; `None` for anything else. Spelt exactly so: a user name, another
/// spelling of the address or an upper-case scheme is not a loopback redirect.
fn without_loopback_port(uri: &str) -> Option<(&str, &str)> {
    let prefix = ["http://127.0.0.1", "http://[::1]"]
        .into_iter()
        .find(|p| uri.starts_with(p))?;
    let mut rest = &uri[prefix.len()..];
    if let Some(after) = rest.strip_prefix(':') {
        let digits = after.bytes().take_while(u8::is_ascii_digit).count();
        let port = after[..digits].parse::<u16>().ok()?;
        if port == 0 {
            return None;
        }
        rest = &after[digits..];
    }
    if !(rest.is_empty() || rest.starts_with('/') || rest.starts_with('?')) {
        return None;
    }
    Some((prefix, rest))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allowed(registered: &[&str], presented: &str) -> bool {
        let registered: Vec<String> = registered.iter().map(|s| (*s).to_owned()).collect();
        allows(&registered, presented)
    }

    #[test]
    fn redirects_match_exactly() {
        let app = ["https://app.example.com/callback"];
        assert!(allowed(&app, "https://app.example.com/callback"));
        for other in [
            "https://app.example.com/callback/",
            "https://app.example.com/callback?x=1",
            "https://app.example.com/callback#x",
            "https://app.example.com/Callback",
            "https://APP.example.com/callback",
            "https://app.example.com:443/callback",
            "https://app.example.com/callbackx",
            "https://app.example.com/",
            "http://app.example.com/callback",
            "https://app.example.com.evil.com/callback",
            "https://evil@app.example.com/callback",
            "",
        ] {
            assert!(!allowed(&app, other), "{other}");
        }
        // The query is part of the string too.
        let with_query = ["https://app.example.com/cb?tenant=a"];
        assert!(allowed(&with_query, "https://app.example.com/cb?tenant=a"));
        assert!(!allowed(&with_query, "https://app.example.com/cb?tenant=b"));
        assert!(!allowed(&with_query, "https://app.example.com/cb"));
    }

    #[test]
    fn loopback_ip_redirects_match_on_any_port_and_only_the_port_differs() {
        let v4 = ["http://127.0.0.1/callback"];
        for ok in [
            "http://127.0.0.1/callback",
            "http://127.0.0.1:49152/callback",
            "http://127.0.0.1:8080/callback",
        ] {
            assert!(allowed(&v4, ok), "{ok}");
        }
        let with_port = ["http://127.0.0.1:3000/callback"];
        assert!(allowed(&with_port, "http://127.0.0.1:51000/callback"));
        assert!(allowed(&with_port, "http://127.0.0.1/callback"));
        let v6 = ["http://[::1]:8000/cb?x=1"];
        assert!(allowed(&v6, "http://[::1]:1234/cb?x=1"));
        for bad in [
            "http://127.0.0.1:8080/callback/",
            "http://127.0.0.1:8080/other",
            "http://127.0.0.1:8080/callback?x=1",
            "http://127.0.0.1:0/callback",
            "http://127.0.0.1:99999/callback",
            "http://127.0.0.1:/callback",
            "http://127.0.0.1:80@evil.com/callback",
            "http://127.0.0.1@evil.com/callback",
            "http://user@127.0.0.1:8080/callback",
            "http://127.0.0.2:8080/callback",
            "http://127.1:8080/callback",
            "https://127.0.0.1:8080/callback",
            "HTTP://127.0.0.1:8080/callback",
            "http://[::1]:8080/callback",
            "http://localhost:8080/callback",
        ] {
            assert!(!allowed(&v4, bad), "{bad}");
        }
        assert!(!allowed(&v6, "http://[::1]:1234/cb?x=2"));
        assert!(!allowed(&v6, "http://127.0.0.1:8000/cb?x=1"));
    }

    #[test]
    fn localhost_is_matched_exactly() {
        let local = ["http://localhost:3000/callback"];
        assert!(allowed(&local, "http://localhost:3000/callback"));
        assert!(!allowed(&local, "http://localhost:3001/callback"));
        assert!(!allowed(&local, "http://localhost/callback"));
    }

    #[test]
    fn private_use_schemes_match_exactly() {
        let native = ["com.example.app:/oauth2redirect"];
        assert!(allowed(&native, "com.example.app:/oauth2redirect"));
        assert!(!allowed(&native, "com.example.app:/oauth2redirect/x"));
        assert!(!allowed(&native, "com.example.evil:/oauth2redirect"));
    }

    #[test]
    fn registered_uris_follow_the_rules() {
        for ok in [
            "https://app.example.com/callback",
            "https://app.example.com/cb?tenant=a",
            "https://app.example.com:8443/cb",
            "http://127.0.0.1/callback",
            "http://127.0.0.1:8080/callback",
            "http://[::1]:8080/callback",
            "http://localhost:3000/callback",
            "com.example.app:/oauth2redirect",
            "com.example.app://callback",
        ] {
            assert_eq!(check(ok, UriUse::Browser), Ok(()), "{ok}");
        }
        for bad in [
            "",
            "/callback",
            "callback",
            "app.example.com/callback",
            "https://app.example.com/callback#frag",
            "https://app.example.com/callback#",
            "https://user:pw@app.example.com/callback",
            "https://user@app.example.com/callback",
            "http://app.example.com/callback",
            "http://10.0.0.1/callback",
            "http://127.0.0.2/callback",
            "javascript:alert(1)",
            "data:text/html,hi",
            "file:///etc/passwd",
            "myapp:/callback",
            "https://app.example.com/call back",
            " https://app.example.com/callback",
            "https://app.example.com/callback\n",
        ] {
            assert!(check(bad, UriUse::Browser).is_err(), "{bad:?}");
        }
        assert!(
            check(
                &format!("https://a.example/{}", "x".repeat(URI_MAX)),
                UriUse::Browser
            )
            .is_err()
        );
        // A server-to-server URI has no private-use scheme.
        assert_eq!(
            check("https://app.example.com/logout", UriUse::Server),
            Ok(())
        );
        assert_eq!(
            check("http://127.0.0.1:9000/logout", UriUse::Server),
            Ok(())
        );
        assert!(check("com.example.app:/logout", UriUse::Server).is_err());
        assert!(check("http://app.example.com/logout", UriUse::Server).is_err());
    }
}
