//! Values that are checked once, where they enter, and trusted from then on.

use std::fmt;

/// An e-mail address, trimmed and syntactically valid (RFC 5322 addr-spec, at most 254
/// characters as SMTP allows). Accounts match it case-insensitively through `normalized`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Email(String);

impl Email {
    pub const MAX_LENGTH: usize = 254;

    pub fn parse(input: &str) -> Result<Email, String> {
        let trimmed = input.trim();
        if trimmed.is_empty() {
            return Err("is required".into());
        }
        if trimmed.chars().count() > Self::MAX_LENGTH {
            return Err(format!("must be at most {} characters", Self::MAX_LENGTH));
        }
        // The crate accepts quoted and IP-literal forms; a bare `user@host` with a dot-free host is
        // fine on an intranet, so no TLD is demanded.
        match email_address::EmailAddress::parse_with_options(
            trimmed,
            email_address::Options::default(),
        ) {
            Ok(_) if !trimmed.contains(char::is_whitespace) => Ok(Email(trimmed.to_owned())),
            _ => Err("is not a valid e-mail address".into()),
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The form accounts are keyed by.
    pub fn normalized(&self) -> String {
        self.0.to_lowercase()
    }
}

impl fmt::Display for Email {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A person's display name: trimmed, 1–200 characters, no control characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FullName(String);

impl FullName {
    pub const MAX_LENGTH: usize = 200;

    pub fn parse(input: &str) -> Result<FullName, String> {
        label(input, Self::MAX_LENGTH, "is required").map(FullName)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A name a person gives (their own, a passkey's, an API key's): trimmed, not blank (`blank` is
/// the refusal's words), at most `max` characters, no control characters.
pub fn label(input: &str, max: usize, blank: &str) -> Result<String, String> {
    let trimmed = input.trim();
    if trimmed.is_empty() {
        return Err(blank.into());
    }
    if trimmed.chars().count() > max {
        return Err(format!("must be at most {max} characters"));
    }
    if trimmed.chars().any(char::is_control) {
        return Err("must not contain control characters".into());
    }
    Ok(trimmed.to_owned())
}

/// A role name (docs/api.md §6): `[a-z0-9][a-z0-9_.:-]{0,63}`. No blanks, commas or upper case, so
/// a list of roles is safe to join with spaces (storage) or commas (`Remote-Groups`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Role(String);

impl Role {
    pub const MAX_LENGTH: usize = 64;

    pub fn parse(input: &str) -> Result<Role, String> {
        let bytes = input.as_bytes();
        let first_ok = bytes
            .first()
            .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
        let rest_ok = bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"_.:-".contains(b));
        if !first_ok || !rest_ok || bytes.len() > Self::MAX_LENGTH {
            return Err(format!(
                "{input:?} is not a role name: 1 to {} of a-z 0-9 _ . : - starting with a letter or digit",
                Self::MAX_LENGTH
            ));
        }
        Ok(Role(input.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn role_names() {
        for good in [
            "admin",
            "ops",
            "0",
            "team:billing",
            "a.b_c-d",
            &"r".repeat(64),
        ] {
            assert_eq!(Role::parse(good).unwrap().as_str(), good);
        }
        for bad in ["", "Admin", "-x", "_x", "a b", "a,b", "é", &"r".repeat(65)] {
            assert!(Role::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn emails_are_trimmed_and_matched_without_case() {
        let e = Email::parse("  Alice@Example.COM ").unwrap();
        assert_eq!(e.as_str(), "Alice@Example.COM");
        assert_eq!(e.normalized(), "alice@example.com");
    }

    #[test]
    fn bad_emails_are_refused() {
        for bad in [
            "",
            "   ",
            "alice",
            "@example.com",
            "alice@",
            "a b@example.com",
            "alice@@example.com",
        ] {
            assert!(Email::parse(bad).is_err(), "{bad:?}");
        }
        let long = format!("{}@example.com", "a".repeat(10_000));
        assert!(Email::parse(&long).is_err());
        assert!(Email::parse("a\0b@example.com").is_err());
    }

    #[test]
    fn names() {
        assert_eq!(
            FullName::parse("  Ada Lovelace ").unwrap().as_str(),
            "Ada Lovelace"
        );
        assert!(FullName::parse(" ").is_err());
        assert!(FullName::parse(&"x".repeat(201)).is_err());
        assert!(FullName::parse(&"é".repeat(200)).is_ok());
        assert!(FullName::parse("a\u{0}b").is_err());
    }
}
