//! The scopes of the OpenID provider (docs/api.md §11), named once: the registry checks clients'
//! scopes against them, discovery lists them, the authorization and token flows parse requests
//! with `parse`.

use std::fmt;

pub const OPENID: &str = "openid";
/// `name`, `updated_at`.
pub const PROFILE: &str = "profile";
/// `email`, `email_verified`.
pub const EMAIL: &str = "email";
/// A refresh token comes only with it.
pub const OFFLINE_ACCESS: &str = "offline_access";
/// `roles`.
pub const ROLES: &str = "roles";
pub const CONTACTS_READ: &str = "contacts:read";
pub const CONTACTS_WRITE: &str = "contacts:write";

/// Every scope Gatehouse knows, in the order discovery lists them.
pub const SUPPORTED: [&str; 7] = [
    OPENID,
    PROFILE,
    EMAIL,
    OFFLINE_ACCESS,
    ROLES,
    CONTACTS_READ,
    CONTACTS_WRITE,
];

/// A client registered without scopes has these.
pub const DEFAULT: [&str; 4] = [OPENID, PROFILE, EMAIL, OFFLINE_ACCESS];

pub fn is_supported(scope: &str) -> bool {
    SUPPORTED.contains(&scope)
}

/// A scope that is not in `SUPPORTED` (its name, cut to 64 characters, for the message).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownScope(pub String);

impl fmt::Display for UnknownScope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:?} is not a scope (scopes: {})",
            self.0,
            SUPPORTED.join(" ")
        )
    }
}

/// The scopes of a space-separated `scope` string (RFC 6749 §3.3), each once, in the order first
/// given. Runs of spaces are tolerated; scope names are case-sensitive. An empty string is no
/// scope (`Ok(vec![])`): whether that is allowed is the caller's to say.
pub fn parse(text: &str) -> Result<Vec<String>, UnknownScope> {
    from_names(text.split(' ').filter(|s| !s.is_empty()))
}

/// `parse` over names already split (a JSON array, repeated CLI flags).
pub fn from_names<'a>(
    names: impl IntoIterator<Item = &'a str>,
) -> Result<Vec<String>, UnknownScope> {
    let mut scopes: Vec<String> = Vec::new();
    for name in names {
        if !is_supported(name) {
            return Err(UnknownScope(name.chars().take(64).collect()));
        }
        if !scopes.iter().any(|s| s == name) {
            scopes.push(name.to_owned());
        }
    }
    Ok(scopes)
}

/// The `scope` string of a list: space-separated.
pub fn join(scopes: &[String]) -> String {
    scopes.join(" ")
}

/// Whether every scope of `requested` is in `allowed`.
pub fn all_within(requested: &[String], allowed: &[String]) -> bool {
    requested.iter().all(|r| allowed.contains(r))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scope_strings_parse_to_known_scopes_once_each() {
        assert_eq!(
            parse("openid  profile openid contacts:read").unwrap(),
            ["openid", "profile", "contacts:read"]
        );
        assert_eq!(parse("").unwrap(), Vec::<String>::new());
        assert_eq!(parse("   ").unwrap(), Vec::<String>::new());
        assert_eq!(parse(&SUPPORTED.join(" ")).unwrap(), SUPPORTED);
        for bad in [
            "OpenID",
            "openid admin",
            "openid\tprofile",
            "contacts",
            "openid,profile",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        let long = "x".repeat(500);
        assert_eq!(parse(&long).unwrap_err().0.len(), 64);
    }

    #[test]
    fn subsets() {
        let allowed = parse("openid profile").unwrap();
        assert!(all_within(&parse("profile").unwrap(), &allowed));
        assert!(!all_within(&parse("profile email").unwrap(), &allowed));
        assert_eq!(join(&allowed), "openid profile");
    }
}
