//! Request paths as access rules see them, and the path patterns of the rules (docs/api.md §6).
//!
//! A path is normalised as RFC 3986 §6.2.2 does before any rule looks at it: percent-encoded
//! unreserved characters are decoded (so `/%61dmin` is `/admin`), other escapes are upper-cased,
//! repeated `/` are merged and dot segments removed. A path that cannot be normalised so that every
//! upstream reads it the same way (an encoded `/`, a `..` above the root, a broken escape, a control
//! character raw or escaped, an escaped escape that an upstream decoding twice reads as another
//! character, a `\` or a `;`, raw or escaped, that some upstreams read as a separator) is
//! refused rather than guessed at: a rule must not be walked around by a spelling the upstream
//! reads differently.
//!
//! Patterns are matched by whole segments, as a prefix: `/api/admin` covers `/api/admin` and
//! `/api/admin/x`, not `/api/administrator`. In a pattern, `*` stands for any run of characters
//! within one segment and a `**` segment for any number of segments. Hand-written rather than
//! `globset`: that crate also reads `?`, `[…]` and `{a,b}` as syntax, which paths may hold
//! literally, and matches whole strings rather than segment prefixes.

use std::fmt;

/// A normalised request path: its segments, without empty ones.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NormalPath(Vec<String>);

/// Why a path was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadPath(pub &'static str);

impl fmt::Display for BadPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

impl NormalPath {
    /// Normalises the path of a request target; the query and fragment are not part of it.
    pub fn parse(target: &str) -> Result<NormalPath, BadPath> {
        let end = target.find(['?', '#']).unwrap_or(target.len());
        let path = &target[..end];
        if !path.starts_with('/') {
            return Err(BadPath("the path does not start with /"));
        }
        let mut segments: Vec<String> = Vec::new();
        for raw in path.split('/') {
            let segment = decode_unreserved(raw)?;
            match segment.as_str() {
                "" | "." => {}
                ".." => {
                    if segments.pop().is_none() {
                        return Err(BadPath("the path climbs above the root"));
                    }
                }
                _ => segments.push(segment),
            }
        }
        Ok(NormalPath(segments))
    }

    pub fn segments(&self) -> &[String] {
        &self.0
    }
}

impl fmt::Display for NormalPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return f.write_str("/");
        }
        for s in &self.0 {
            write!(f, "/{s}")?;
        }
        Ok(())
    }
}

/// Decodes the escapes of unreserved characters and upper-cases the others; an escaped `/` or a
/// broken escape is refused.
fn decode_unreserved(segment: &str) -> Result<String, BadPath> {
    let bytes = segment.as_bytes();
    let mut out = String::with_capacity(segment.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'%' {
            let c = segment[i..].chars().next().unwrap_or_default();
            if c.is_control() {
                return Err(BadPath("the path holds a control character"));
            }
            // Read as a separator by some upstreams: `\` as `/` (IIS, and browsers in URLs),
            // `;` as the start of path parameters (Tomcat, Jetty, Spring: `/admin;x` is `/admin`).
            if c == '\\' || c == ';' {
                return Err(BadPath(
                    "the path holds a \\ or a ;, which upstreams read differently",
                ));
            }
            out.push(c);
            i += c.len_utf8();
            continue;
        }
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok())
            .filter(|_| bytes[i + 1].is_ascii_hexdigit() && bytes[i + 2].is_ascii_hexdigit())
            .ok_or(BadPath("the path holds a broken percent-escape"))?;
        match hex {
            b'/' => return Err(BadPath("the path holds an encoded /")),
            b'\\' => return Err(BadPath("the path holds an encoded \\")),
            // Refused raw (above); an upstream that decodes before it splits off path
            // parameters reads `/admin%3Bx` as `/admin` too.
            b';' => return Err(BadPath("the path holds an encoded ;")),
            // `%00` ends a path for an upstream written in C; `%0A` splits a log line or header.
            b if b.is_ascii_control() => {
                return Err(BadPath("the path holds an encoded control character"));
            }
            // An escaped escape (`%2561` for `%61`): an upstream that decodes twice reads
            // `/intern%2561l` as `/internal`, which no rule would have seen.
            b'%' if bytes
                .get(i + 3..i + 5)
                .is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit)) =>
            {
                return Err(BadPath(
                    "the path holds an escaped escape (%25 and two hex digits)",
                ));
            }
            b if b.is_ascii_alphanumeric() || b"-._~".contains(&b) => out.push(b as char),
            b => out.push_str(&format!("%{b:02X}")),
        }
        i += 3;
    }
    Ok(out)
}

/// A rule's path pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathPattern(Vec<PatternSegment>);

#[derive(Debug, Clone, PartialEq, Eq)]
enum PatternSegment {
    /// `**`: any number of segments, none included.
    AnySegments,
    /// A segment, `*` standing for any run of characters within it.
    Glob(String),
}

impl PathPattern {
    pub fn parse(pattern: &str) -> Result<PathPattern, String> {
        if pattern.contains(['?', '#']) {
            return Err(format!("path {pattern:?} holds a query or fragment"));
        }
        for segment in pattern.split('/') {
            if segment.contains("**") && segment != "**" {
                return Err(format!(
                    "path {pattern:?} is not a valid glob: ** must be a whole segment"
                ));
            }
        }
        let normal = NormalPath::parse(pattern).map_err(|e| format!("path {pattern:?}: {e}"))?;
        Ok(PathPattern(
            normal
                .0
                .into_iter()
                .map(|s| match s.as_str() {
                    "**" => PatternSegment::AnySegments,
                    _ => PatternSegment::Glob(s),
                })
                .collect(),
        ))
    }

    /// Whether the pattern covers `path`: it matches the path's first segments, or all of them.
    pub fn covers(&self, path: &NormalPath) -> bool {
        covers(&self.0, &path.0)
    }
}

fn covers(pattern: &[PatternSegment], path: &[String]) -> bool {
    match pattern.split_first() {
        None => true,
        Some((PatternSegment::AnySegments, rest)) => {
            (0..=path.len()).any(|skip| covers(rest, &path[skip..]))
        }
        Some((PatternSegment::Glob(glob), rest)) => path
            .split_first()
            .is_some_and(|(first, tail)| glob_matches(glob, first) && covers(rest, tail)),
    }
}

/// `*` matches any run of characters (none included); everything else matches itself.
fn glob_matches(glob: &str, text: &str) -> bool {
    let mut parts = glob.split('*');
    let first = parts.next().unwrap_or_default();
    let Some(mut rest) = text.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else {
        return rest.is_empty();
    };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn norm(p: &str) -> String {
        NormalPath::parse(p).unwrap().to_string()
    }

    #[test]
    fn paths_are_normalised_as_rfc_3986_says() {
        assert_eq!(norm("/api/admin"), "/api/admin");
        assert_eq!(norm("/api/%61dmin?x=1#y"), "/api/admin");
        assert_eq!(norm("//api///admin/"), "/api/admin");
        assert_eq!(norm("/api/./x/../admin"), "/api/admin");
        assert_eq!(norm("/api/%2e%2E/api/admin"), "/api/admin");
        assert_eq!(norm("/a/%7e%5b"), "/a/~%5B");
        assert_eq!(norm("/100%25/%25zz"), "/100%25/%25zz");
        assert_eq!(norm("/"), "/");
        assert_eq!(norm("/a/.."), "/");
    }

    #[test]
    fn paths_that_cannot_be_read_one_way_are_refused() {
        for bad in [
            "/api%2Fadmin",
            "/api%2fadmin",
            "/..",
            "/a/../..",
            "/%2e%2e/x",
            "/a%zz",
            "/a%4",
            "/a%",
            "api",
            "",
            "*",
            "/a\u{7f}",
            "/api\\admin",
            "/api%5cadmin",
            "/api/admin;jsessionid=1",
            "/api;x/admin",
            "/api/admin%3Bjsessionid=1",
            "/api%3bx/admin",
            "/internal%00.txt",
            "/intern%2561l",
            "/public/%252e%252e/internal",
            "/a%0a",
            "/a%7F",
        ] {
            assert!(NormalPath::parse(bad).is_err(), "{bad:?}");
        }
    }

    fn covers(pattern: &str, path: &str) -> bool {
        PathPattern::parse(pattern)
            .unwrap()
            .covers(&NormalPath::parse(path).unwrap())
    }

    #[test]
    fn patterns_cover_whole_segments_as_a_prefix() {
        assert!(covers("/api/admin", "/api/admin"));
        assert!(covers("/api/admin", "/api/admin/users/1"));
        assert!(covers("/api/admin", "/api/admin/"));
        assert!(!covers("/api/admin", "/api/administrator"));
        assert!(!covers("/api/admin", "/api"));
        assert!(covers("/", "/anything"));
        assert!(covers("/reports/*/export", "/reports/2026/export"));
        assert!(covers("/reports/*/export", "/reports/2026/export/csv"));
        assert!(!covers("/reports/*/export", "/reports/2026/x/export"));
        assert!(covers("/reports/**/export", "/reports/2026/x/export"));
        assert!(covers("/reports/**/export", "/reports/export"));
        assert!(covers("/files/*.pdf", "/files/a.pdf"));
        assert!(!covers("/files/*.pdf", "/files/a.pdfx"));
        assert!(covers("/v*/admin", "/v2/admin"));
        assert!(covers("/a*b*c", "/abxbc"));
        assert!(!covers("/a*b*c", "/abxb"));
        // The request is normalised first: an escape cannot dodge a rule.
        assert!(covers("/api/admin", "/api/%61dmin"));
        assert!(covers("/api/admin", "/x/../api//admin"));
    }

    #[test]
    fn bad_patterns_are_refused() {
        for bad in ["api", "/a**", "/**b/c", "/a/***", "/a?b", "/..", "/a%2Fb"] {
            assert!(PathPattern::parse(bad).is_err(), "{bad:?}");
        }
    }
}
