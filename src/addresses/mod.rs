//! Address and URL policy, in one place for every check and every fetch: which hosts are this
//! machine (loopback), which addresses are publicly routable (what a fetch of a stranger's URL may
//! reach: `fetch`), and which URIs a client may be sent back to (`redirect`). Pure functions, no
//! I/O.

pub mod redirect;

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use url::{Host, Url};

/// Whether `url`'s host is this machine: 127.0.0.0/8, ::1 or `localhost` (which the URL parser
/// has lower-cased). What allows plain http to an issuer, an endpoint or a back-channel URI.
pub fn is_loopback(url: &Url) -> bool {
    match url.host() {
        Some(Host::Ipv4(ip)) => ip.is_loopback(),
        Some(Host::Ipv6(ip)) => ip.is_loopback(),
        Some(Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        None => false,
    }
}

/// https, or http to this machine (`is_loopback`).
pub fn https_or_loopback(url: &Url) -> bool {
    match url.scheme() {
        "https" => true,
        "http" => is_loopback(url),
        _ => false,
    }
}

/// Whether `text` names a service: an absolute http(s) URL with a host, without credentials, a
/// query or a fragment. What an issuer must be for the OpenID provider to be on (docs/api.md §11)
/// and what a resource indicator must be (RFC 8707 §2).
pub fn is_service_url(text: &str) -> bool {
    Url::parse(text).is_ok_and(|url| {
        matches!(url.scheme(), "http" | "https")
            && url.host().is_some()
            && url.username().is_empty()
            && url.password().is_none()
            && url.query().is_none()
            && url.fragment().is_none()
    })
}

/// A loopback address, in either family or as IPv4 in IPv6 (`::ffff:127.0.0.1`).
pub fn is_loopback_ip(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_loopback(),
        IpAddr::V6(v6) => {
            v6.is_loopback() || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
    }
}

/// A globally routable unicast address (IANA special-purpose registries, both families).
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    !(a == 0 // "this network", 0.0.0.0
        || a == 10
        || a == 127
        || (a == 100 && (64..128).contains(&b)) // CGNAT 100.64/10
        || (a == 169 && b == 254) // link-local (cloud metadata services live here)
        || (a == 172 && (16..32).contains(&b))
        || (a == 192 && b == 168)
        || (a == 192 && b == 0 && c == 0) // IETF protocol assignments
        || (a == 192 && b == 0 && c == 2) // documentation
        || (a == 192 && b == 88 && c == 99) // 6to4 relay anycast
        || (a == 198 && (18..20).contains(&b)) // benchmarking
        || (a == 198 && b == 51 && c == 100)
        || (a == 203 && b == 0 && c == 113)
        || a >= 224) // multicast, reserved, broadcast
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    let s = ip.segments();
    // IPv4 carried in IPv6: judged by the IPv4 address it names.
    if let Some(v4) = ip.to_ipv4_mapped() {
        return is_public_v4(v4);
    }
    let embedded = |hi: u16, lo: u16| Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo));
    if s[0] == 0x64 && s[1] == 0xff9b && s[2..6] == [0, 0, 0, 0] {
        return is_public_v4(embedded(s[6], s[7])); // NAT64 64:ff9b::/96
    }
    if s[0] == 0x2002 {
        return is_public_v4(embedded(s[1], s[2])); // 6to4
    }
    !(ip.is_unspecified()
        || ip.is_loopback()
        || s[0..6] == [0, 0, 0, 0, 0, 0] // IPv4-compatible (deprecated)
        || (s[0] == 0x64 && s[1] == 0xff9b && s[2] == 1) // local-use NAT64 64:ff9b:1::/48
        || (s[0] == 0x100 && s[1..4] == [0, 0, 0]) // discard-only 100::/64
        || (s[0] == 0x2001 && s[1] < 0x200) // IETF protocol assignments, Teredo (2001::/23)
        || (s[0] == 0x2001 && s[1] == 0xdb8) // documentation
        || (s[0] & 0xfe00) == 0xfc00 // unique-local fc00::/7
        || (s[0] & 0xffc0) == 0xfe80 // link-local fe80::/10
        || (s[0] & 0xffc0) == 0xfec0 // site-local (deprecated) fec0::/10
        || (s[0] & 0xff00) == 0xff00) // multicast
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn only_public_addresses() {
        for public in [
            "93.184.215.14",
            "8.8.8.8",
            "2606:4700::1111",
            "2a00:1450::1",
        ] {
            assert!(is_public(ip(public)), "{public}");
        }
        for private in [
            "0.0.0.0",
            "10.0.0.1",
            "127.0.0.1",
            "127.1.2.3",
            "100.64.0.1",
            "100.127.255.254",
            "169.254.169.254",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "192.0.0.8",
            "192.0.2.1",
            "198.18.0.1",
            "198.51.100.7",
            "203.0.113.9",
            "224.0.0.1",
            "239.255.255.250",
            "240.0.0.1",
            "255.255.255.255",
            "::",
            "::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "::ffff:169.254.169.254",
            "::127.0.0.1",
            "64:ff9b::a00:1",
            "64:ff9b:1::1",
            "2002:a00:1::1",
            "2001::1",
            "2001:db8::1",
            "fc00::1",
            "fd12:3456::1",
            "fe80::1",
            "fec0::1",
            "ff02::1",
            "100::1",
        ] {
            assert!(!is_public(ip(private)), "{private}");
        }
        // Public IPv4 in IPv6 forms stays public.
        assert!(is_public(ip("::ffff:8.8.8.8")));
        assert!(is_public(ip("64:ff9b::808:808")));
    }

    #[test]
    fn loopback_hosts() {
        let url = |u: &str| Url::parse(u).unwrap();
        for local in [
            "http://127.0.0.1/",
            "http://127.9.9.9:80/",
            "http://[::1]/",
            "http://LOCALHOST/",
        ] {
            assert!(is_loopback(&url(local)), "{local}");
            assert!(https_or_loopback(&url(local)), "{local}");
        }
        for other in [
            "http://10.0.0.1/",
            "http://localhost.evil.example/",
            "http://[::2]/",
        ] {
            assert!(!is_loopback(&url(other)), "{other}");
            assert!(!https_or_loopback(&url(other)), "{other}");
        }
        assert!(https_or_loopback(&url("https://example.com/")));
        assert!(!https_or_loopback(&url("ftp://localhost/")));
        assert!(is_loopback_ip(ip("::ffff:127.0.0.1")));
        assert!(is_service_url("https://api.example.com/v1"));
        for not_a_service in [
            "api.example.com",
            "ftp://api.example.com",
            "https://user@api.example.com",
            "https://api.example.com/?q",
            "https://api.example.com/#f",
        ] {
            assert!(!is_service_url(not_a_service), "{not_a_service}");
        }
    }
}
