//! The host a proxy says a request was for (docs/api.md §6), read strictly: `host[:port]` and
//! nothing else, or the request is refused. A rule judges a host; the upstream serves whatever its
//! own parser makes of the same text. Any character that some parser takes as the end of the host
//! or the start of something else (`/ ? # @ \`, whitespace, `%`, a second `:`) would let the two
//! disagree (`app.example.com?` once judged the path as `/`; `a.corp@pub` was judged as `pub`), so
//! no such text is read at all, rather than read one of the ways it could be.

use std::fmt;
use std::net::Ipv6Addr;

/// Why a host was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadHost(pub &'static str);

impl fmt::Display for BadHost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

/// The host of an authority `host[:port]`, lower-case, without its port or the trailing dot of
/// a fully qualified name. `host` is a name of dot-separated labels of letters, digits, `-` and
/// `_` (an RFC 3986 reg-name without its percent-escapes and sub-delimiters, which no host name
/// needs), an IPv4 address, or an IPv6 literal in brackets; `port` is 1 to 5 digits, at most
/// 65535. No user information (`user@`), no second port, nothing else.
pub fn authority_host(authority: &str) -> Result<String, BadHost> {
    let (host, port) = if let Some(rest) = authority.strip_prefix('[') {
        let (literal, after) = rest
            .split_once(']')
            .ok_or(BadHost("an IPv6 literal without its ]"))?;
        literal
            .parse::<Ipv6Addr>()
            .map_err(|_| BadHost("not an IPv6 address within [ ]"))?;
        let port = match after {
            "" => None,
            _ => Some(
                after
                    .strip_prefix(':')
                    .ok_or(BadHost("something other than a port after ]"))?,
            ),
        };
        (&authority[..literal.len() + 2], port)
    } else {
        match authority.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        }
    };
    if let Some(port) = port {
        let digits =
            !port.is_empty() && port.len() <= 5 && port.bytes().all(|b| b.is_ascii_digit());
        if !digits || port.parse::<u32>().map_or(true, |p| p > 65_535) {
            return Err(BadHost("the port is not a number up to 65535"));
        }
    }
    if host.starts_with('[') {
        return Ok(host.to_ascii_lowercase());
    }
    let name = host.strip_suffix('.').unwrap_or(host);
    if name.is_empty() {
        return Err(BadHost("no host"));
    }
    for label in name.split('.') {
        if label.is_empty() {
            return Err(BadHost("an empty label in the host"));
        }
        if !label
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            return Err(BadHost(
                "the host holds a character no host name has (only letters, digits, - _ and .)",
            ));
        }
    }
    Ok(name.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_lose_port_case_and_trailing_dot() {
        for (authority, host) in [
            ("Example.COM:8080", "example.com"),
            ("example.com.", "example.com"),
            ("example.com.:443", "example.com"),
            ("[::1]:8080", "[::1]"),
            ("[2001:DB8::1]", "[2001:db8::1]"),
            ("10.0.0.1:80", "10.0.0.1"),
            ("my_service", "my_service"),
            ("a:65535", "a"),
        ] {
            assert_eq!(
                authority_host(authority).as_deref(),
                Ok(host),
                "{authority}"
            );
        }
    }

    #[test]
    fn anything_but_host_and_port_is_refused() {
        for bad in [
            "",
            ".",
            ":80",
            "a b",
            " a",
            "a\t",
            "a/b",
            "a\\b",
            "a?",
            "a?x=/y",
            "x#",
            "a#b",
            "user@host",
            "a.corp.example.com@pub.example.com",
            "a..b",
            ".a",
            "a%2eb",
            "a:",
            "a:x",
            "a:+80",
            "a:-1",
            "a:80:81",
            "a:123456",
            "a:65536",
            "[::1",
            "[::1]x",
            "[::1]:",
            "[::1]:x",
            "[v1.x]",
            "[fe80::1%25eth0]",
            "::1",
            "a,b",
            "a;b",
            "a~b",
            "zoë.example",
        ] {
            assert!(authority_host(bad).is_err(), "{bad:?}");
        }
    }
}
