//! Authorization for the services Gatehouse guards (docs/api.md §6): which policy the access
//! rules give a request that a reverse proxy describes, and whether a session's holder meets it.
//! `auth` says who holds a token (`AuthService::identify`); `http::authz` reads the proxy's
//! headers and answers.

pub mod path;
pub mod rules;

use path::NormalPath;
use rules::{AccessRules, Policy, Target, normal_host};

use crate::model::Identity;

/// What the proxy's headers said of the original request.
#[derive(Debug, Clone)]
pub enum Described {
    /// Not from a trusted proxy: its headers are not believed, only its token is judged.
    Untrusted,
    /// From a trusted proxy, but without the endpoint's own headers or with headers that cannot
    /// be read one way (a path that does not normalise): refused when rules are configured.
    Unreadable,
    Request(Target),
}

impl Described {
    /// Caddy and Traefik: `X-Forwarded-Method`, `-Host` and `-Uri`, each given exactly once.
    pub fn forwarded(method: Option<&str>, host: Option<&str>, uri: Option<&str>) -> Described {
        let (Some(method), Some(host), Some(uri)) = (method, host, uri) else {
            return Described::Unreadable;
        };
        Self::target(method, host, uri)
    }

    /// nginx: `X-Original-Method` and `X-Original-URL` (an absolute URL: the host comes from it).
    pub fn original(method: Option<&str>, url: Option<&str>) -> Described {
        let (Some(method), Some(url)) = (method, url) else {
            return Described::Unreadable;
        };
        let Some((_, rest)) = url.split_once("://") else {
            return Described::Unreadable;
        };
        let split = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let (authority, target) = rest.split_at(split);
        // userinfo@host:port
        let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
        let target = if target.starts_with('/') { target } else { "/" };
        Self::target(method, host, target)
    }

    fn target(method: &str, host: &str, uri: &str) -> Described {
        let method_ok = !method.is_empty() && method.bytes().all(|b| b.is_ascii_alphabetic());
        match (method_ok, normal_host(host), NormalPath::parse(uri)) {
            (true, Some(host), Ok(path)) => Described::Request(Target {
                method: method.to_ascii_uppercase(),
                host,
                path,
            }),
            _ => Described::Unreadable,
        }
    }
}

/// The access rules in force.
#[derive(Debug, Clone, Default)]
pub struct Gate {
    rules: AccessRules,
}

impl Gate {
    pub fn new(rules: AccessRules) -> Gate {
        Gate { rules }
    }

    /// The policy for a described request. No rules, or a request from an untrusted peer: a live
    /// session suffices. With rules, a request that cannot be read is denied (fail closed).
    pub fn policy_for<'a>(&'a self, request: &Described) -> &'a Policy {
        if self.rules.is_empty() {
            return &Policy::Authenticated;
        }
        match request {
            Described::Untrusted => &Policy::Authenticated,
            Described::Unreadable => &Policy::Deny,
            Described::Request(target) => self.rules.policy_for(target),
        }
    }
}

impl Policy {
    /// Whether the holder of a live session meets the policy.
    pub fn admits(&self, who: &Identity) -> bool {
        match self {
            Policy::Deny => false,
            Policy::Authenticated => true,
            Policy::TwoFactor => who.multi_factor,
            Policy::Roles(roles) => roles
                .iter()
                .any(|r| who.roles.iter().any(|h| h == r.as_str())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules() -> Gate {
        Gate::new(
            AccessRules::parse(
                "[[rule]]\npaths = [\"/admin\"]\npolicy = \"roles\"\nroles = [\"admin\"]\n\
                 [[rule]]\npaths = [\"/secure\"]\npolicy = \"two_factor\"",
            )
            .unwrap(),
        )
    }

    fn who(roles: &[&str], multi_factor: bool) -> Identity {
        Identity {
            user_id: uuid::Uuid::nil(),
            session_id: uuid::Uuid::nil(),
            email: "a@b".into(),
            full_name: "A".into(),
            roles: roles.iter().map(|r| r.to_string()).collect(),
            multi_factor,
        }
    }

    #[test]
    fn policies_admit_whom_they_say() {
        let gate = rules();
        let admin = gate.policy_for(&Described::original(Some("GET"), Some("https://h/admin/x")));
        assert!(admin.admits(&who(&["admin"], false)));
        assert!(!admin.admits(&who(&["ops"], true)));
        let secure = gate.policy_for(&Described::forwarded(
            Some("get"),
            Some("h"),
            Some("/secure"),
        ));
        assert!(secure.admits(&who(&[], true)));
        assert!(!secure.admits(&who(&["admin"], false)));
        let open = gate.policy_for(&Described::forwarded(Some("GET"), Some("h"), Some("/x")));
        assert!(open.admits(&who(&[], false)));
    }

    #[test]
    fn with_rules_an_unreadable_request_is_denied_and_an_untrusted_one_judged_by_token() {
        let gate = rules();
        for unreadable in [
            Described::forwarded(None, Some("h"), Some("/x")),
            Described::forwarded(Some("GET"), None, Some("/x")),
            Described::forwarded(Some("GET"), Some("h"), Some("/admin%2Fx")),
            Described::forwarded(Some("G T"), Some("h"), Some("/x")),
            Described::original(Some("GET"), Some("/admin")),
            Described::original(Some("GET"), None),
            Described::original(Some("GET"), Some("http://h/../x")),
        ] {
            assert_eq!(
                gate.policy_for(&unreadable),
                &Policy::Deny,
                "{unreadable:?}"
            );
        }
        assert_eq!(
            gate.policy_for(&Described::Untrusted),
            &Policy::Authenticated
        );
        assert_eq!(
            Gate::default().policy_for(&Described::Unreadable),
            &Policy::Authenticated
        );
    }

    #[test]
    fn original_urls_give_host_and_path() {
        let Described::Request(t) = Described::original(
            Some("post"),
            Some("https://user@Admin.Example.com:8443/a/./b?q=/admin"),
        ) else {
            panic!()
        };
        assert_eq!(
            (t.method.as_str(), t.host.as_str()),
            ("POST", "admin.example.com")
        );
        assert_eq!(t.path.to_string(), "/a/b");
        let Described::Request(t) = Described::original(Some("GET"), Some("http://h?x")) else {
            panic!()
        };
        assert_eq!(t.path.to_string(), "/");
    }
}
