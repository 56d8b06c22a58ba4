//! The scopes of the OpenID provider (docs/api.md §11): the OpenID ones, named once here for the
//! flows, and the business APIs' (`model::resources::Catalog`, which every flow parses requests
//! with: the operator's APIs change while the service runs).

pub use crate::model::resources::{EMAIL, OFFLINE_ACCESS, OPENID, PROFILE, ROLES};

/// A client registered without scopes has these.
pub const DEFAULT: [&str; 4] = [OPENID, PROFILE, EMAIL, OFFLINE_ACCESS];

/// The scopes that say something of a person, which a client's token for itself cannot carry.
pub const PERSONAL: [&str; 5] = [OPENID, OFFLINE_ACCESS, PROFILE, EMAIL, ROLES];

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
    fn subsets() {
        let allowed = vec!["openid".to_owned(), "profile".to_owned()];
        assert!(all_within(&["profile".to_owned()], &allowed));
        assert!(!all_within(
            &["profile".to_owned(), "email".to_owned()],
            &allowed
        ));
        assert_eq!(join(&allowed), "openid profile");
    }
}
