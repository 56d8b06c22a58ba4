//! What an organisation's fields and a membership's roles may be (docs/api.md §13), checked where
//! they enter.

use crate::domain::Role;

/// An organisation's slug: `[a-z0-9][a-z0-9-]{1,62}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Slug(String);

impl Slug {
    pub fn parse(input: &str) -> Result<Slug, String> {
        let b = input.as_bytes();
        let ok = (2..=63).contains(&b.len())
            && (b[0].is_ascii_lowercase() || b[0].is_ascii_digit())
            && b.iter()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-');
        if !ok {
            return Err("must be 2 to 63 of a-z 0-9 - starting with a letter or digit".into());
        }
        Ok(Slug(input.to_owned()))
    }

    pub fn into_inner(self) -> String {
        self.0
    }
}

/// An organisation's name: trimmed, 1–200 characters, no control characters.
pub fn org_name(input: &str) -> Result<String, String> {
    crate::domain::FullName::parse(input).map(|n| n.as_str().to_owned())
}

/// Roles a membership may hold at most.
const ROLES_MAX: usize = 32;

/// A membership's roles: at least one, each of §6's form, sorted, without repeats.
pub fn membership_roles(input: &[String]) -> Result<Vec<String>, String> {
    if input.is_empty() {
        return Err("must hold at least one role".into());
    }
    if input.len() > ROLES_MAX {
        return Err(format!("must hold at most {ROLES_MAX} roles"));
    }
    let mut roles = input
        .iter()
        .map(|r| Role::parse(r).map(|r| r.as_str().to_owned()))
        .collect::<Result<Vec<_>, _>>()?;
    roles.sort();
    roles.dedup();
    Ok(roles)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs() {
        for good in ["ab", "acme", "a-1", "0x", &"a".repeat(63)] {
            assert!(Slug::parse(good).is_ok(), "{good}");
        }
        for bad in ["", "a", "-ab", "Acme", "a_b", "a b", &"a".repeat(64), "é1"] {
            assert!(Slug::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn roles_are_checked_sorted_and_unique() {
        let r = |v: &[&str]| membership_roles(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(
            r(&["member", "admin", "member"]).unwrap(),
            ["admin", "member"]
        );
        assert!(r(&[]).is_err());
        assert!(r(&["Bad Role"]).is_err());
    }
}
