//! Authorization for the services Gatehouse guards (docs/api.md §6): which policy the access
//! rules give a request that a reverse proxy describes, and whether a session's holder meets it.
//! `auth` says who holds a token (`AuthService::identify`); `http::authz` reads the proxy's
//! headers and answers.

pub mod authority;
pub mod path;
pub mod rules;

use std::sync::Mutex;
use std::time::{Duration, Instant};

use authority::authority_host;
use path::NormalPath;
use rules::{AccessRules, Policy, Target};

use crate::model::Holder;

/// What the proxy's headers said of the original request.
#[derive(Debug, Clone)]
pub enum Described {
    /// Not from a trusted proxy: its headers are not believed. With rules, refused unless the
    /// operator chose to judge such requests by their token alone.
    Untrusted,
    /// From a trusted proxy, but without the endpoint's own headers or with headers that cannot
    /// be read one way: refused when rules are configured. Says why, for the debug log.
    Unreadable(&'static str),
    Request(Target),
}

impl Described {
    /// Caddy and Traefik: `X-Forwarded-Method`, `-Host` and `-Uri`, each given exactly once.
    pub fn forwarded(method: Option<&str>, host: Option<&str>, uri: Option<&str>) -> Described {
        let (Some(method), Some(host), Some(uri)) = (method, host, uri) else {
            return Described::Unreadable("X-Forwarded-Method, -Host or -Uri missing or repeated");
        };
        Self::target(method, host, uri)
    }

    /// nginx: `X-Original-Method` and `X-Original-URL`, one absolute URL
    /// `http(s)://host[:port]/path?query` (the recipe: `$scheme://$host$request_uri`). The host is
    /// what lies between `://` and the first `/`, and must be a clean `host[:port]`: a `?`, `#`
    /// or `@` before that `/` is refused, never read as the start of a query, a fragment or a
    /// host after user information (each once let a client choose what was judged).
    pub fn original(method: Option<&str>, url: Option<&str>) -> Described {
        let (Some(method), Some(url)) = (method, url) else {
            return Described::Unreadable("X-Original-Method or -URL missing or repeated");
        };
        let Some((scheme, rest)) = url.split_once("://") else {
            return Described::Unreadable("X-Original-URL is not an absolute URL");
        };
        if !(scheme.eq_ignore_ascii_case("http") || scheme.eq_ignore_ascii_case("https")) {
            return Described::Unreadable("X-Original-URL is not an http(s) URL");
        }
        let Some(slash) = rest.find('/') else {
            return Described::Unreadable("X-Original-URL has no path");
        };
        let (authority, target) = rest.split_at(slash);
        Self::target(method, authority, target)
    }

    fn target(method: &str, authority: &str, target: &str) -> Described {
        if method.is_empty() || !method.bytes().all(|b| b.is_ascii_alphabetic()) {
            return Described::Unreadable("the method is not a word");
        }
        let host = match authority_host(authority) {
            Ok(host) => host,
            Err(bad) => return Described::Unreadable(bad.0),
        };
        // A raw `#` is never sent by a browser; upstreams disagree on whether it ends the path
        // (nginx, WSGI servers and Go's net/http keep `/public#/../internal` as one path, which
        // then cleans to `/internal`). Whitespace is no part of a target either.
        if target.contains('#') {
            return Described::Unreadable("the target holds a raw #");
        }
        if target.contains(|c: char| c.is_ascii_whitespace()) {
            return Described::Unreadable("the target holds whitespace");
        }
        match NormalPath::parse(target) {
            Ok(path) => Described::Request(Target {
                method: method.to_ascii_uppercase(),
                host,
                path,
            }),
            Err(bad) => Described::Unreadable(bad.0),
        }
    }
}

/// The access rules in force.
#[derive(Debug, Default)]
pub struct Gate {
    rules: AccessRules,
    /// `GATEHOUSE_UNTRUSTED_FORWARD_AUTH=token-only`: with rules, a request from an untrusted
    /// peer is judged by its token alone instead of refused.
    untrusted_token_only: bool,
    /// When an untrusted peer's refusal was last logged, and how many came since.
    refusals: Mutex<(Option<Instant>, u64)>,
    /// Per rule (its label), when its last refusal was logged and how many came since.
    rule_refusals: Mutex<std::collections::HashMap<String, (Option<Instant>, u64)>>,
}

/// A rule's refusals are logged at most this often: "which rule refused Bob?" is answered, and
/// a client retrying in a loop cannot fill the log.
const RULE_LOG_INTERVAL: Duration = Duration::from_secs(10);

/// Refusals of untrusted peers are logged at most this often: a misconfigured proxy is seen at
/// once, and a flood of requests from elsewhere cannot fill the log.
const REFUSAL_LOG_INTERVAL: Duration = Duration::from_secs(60);

impl Gate {
    pub fn new(rules: AccessRules, untrusted_token_only: bool) -> Gate {
        Gate {
            rules,
            untrusted_token_only,
            refusals: Mutex::default(),
            rule_refusals: Mutex::default(),
        }
    }

    /// The label of the rule that decided `request` (`None`: no rule, or the request could not
    /// be read), and whether a log line of its refusal is due now: `Some((label, n))`, `n` the
    /// refusals since its last line, this one included.
    pub fn rule_refused(&self, request: &Described) -> Option<(String, u64)> {
        let Described::Request(target) = request else {
            return None;
        };
        let label = self.rules.label_for(target)?;
        let now = Instant::now();
        let mut all = self.rule_refusals.lock().unwrap_or_else(|e| e.into_inner());
        // Rules are few (a file's): the table stays small.
        let (last, count) = all.entry(label.clone()).or_insert((None, 0));
        *count += 1;
        if last.is_some_and(|at| now.duration_since(at) < RULE_LOG_INTERVAL) {
            return None;
        }
        *last = Some(now);
        Some((label, std::mem::take(count)))
    }

    /// Counts a refused request from an untrusted peer; `Some(n)` when a log line is due now,
    /// `n` being the refusals since the last line, this one included.
    pub fn untrusted_refused(&self) -> Option<u64> {
        let now = Instant::now();
        // A poisoned lock only means a thread panicked between two plain assignments.
        let mut refusals = self.refusals.lock().unwrap_or_else(|e| e.into_inner());
        let (last, count) = &mut *refusals;
        *count += 1;
        if last.is_some_and(|at| now.duration_since(at) < REFUSAL_LOG_INTERVAL) {
            return None;
        }
        *last = Some(now);
        Some(std::mem::take(count))
    }

    /// The policy for a described request. No rules: a live session suffices. With rules, a
    /// request that cannot be read is denied (fail closed), and so is one from an untrusted peer
    /// (one wrong CIDR in GATEHOUSE_TRUSTED_PROXIES must not switch every rule off), unless the
    /// operator asked for such requests to be judged by their token alone.
    pub fn policy_for<'a>(&'a self, request: &Described) -> &'a Policy {
        if self.rules.is_empty() {
            return &Policy::Authenticated;
        }
        match request {
            Described::Untrusted if self.untrusted_token_only => &Policy::Authenticated,
            Described::Untrusted | Described::Unreadable(_) => &Policy::Deny,
            Described::Request(target) => self.rules.policy_for(target),
        }
    }
}

impl Policy {
    /// Whether the holder of a live token or session meets the policy. A client's token for
    /// itself (docs/api.md §12) is authenticated, and meets `clients` when it names the client;
    /// every policy about a person (a second factor, a verified address, roles) refuses it, as
    /// it has none of them. A personal API key is judged by its owner as they are now, except
    /// that it never proves a second factor.
    pub fn admits(&self, holder: &Holder) -> bool {
        match (self, holder) {
            (Policy::Deny, _) => false,
            (Policy::Authenticated, _) => true,
            (Policy::Scopes(scopes), holder) => holder.holds_any(scopes),
            (Policy::Clients(ids), Holder::Client(client)) => ids.contains(&client.client_id),
            (Policy::Clients(_), Holder::Person(_) | Holder::Key(_)) => false,
            (_, Holder::Client(_)) => false,
            (person_policy, Holder::Person(who)) => person_policy.admits_person(&Facts {
                multi_factor: who.multi_factor,
                email_verified: who.email_verified,
                roles: &who.roles,
                org: who.org.as_ref(),
            }),
            (person_policy, Holder::Key(key)) => person_policy.admits_person(&Facts {
                multi_factor: false,
                email_verified: key.email_verified,
                roles: &key.roles,
                org: key.org.as_ref(),
            }),
        }
    }

    fn admits_person(&self, who: &Facts<'_>) -> bool {
        match self {
            Policy::Deny | Policy::Clients(_) => false,
            // Judged on the credential, before a person's facts (`admits`).
            Policy::Scopes(_) => true,
            Policy::Authenticated => true,
            Policy::TwoFactor => who.multi_factor,
            Policy::VerifiedEmail => who.email_verified,
            Policy::Roles(roles) => roles
                .iter()
                .any(|r| who.roles.iter().any(|h| h == r.as_str())),
            // Roles in the token's active organisation, as they are now (docs/api.md §13).
            Policy::OrgRoles(roles) => who.org.is_some_and(|org| {
                roles
                    .iter()
                    .any(|r| org.roles.iter().any(|h| h == r.as_str()))
            }),
        }
    }
}

/// What the policies about a person read, of a person's token, session or API key.
struct Facts<'a> {
    multi_factor: bool,
    email_verified: bool,
    roles: &'a [String],
    org: Option<&'a crate::model::orgs::ActiveOrg>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Identity;

    fn rules() -> Gate {
        Gate::new(
            AccessRules::parse(
                "[[rule]]\npaths = [\"/admin\"]\npolicy = \"roles\"\nroles = [\"admin\"]\n\
                 [[rule]]\npaths = [\"/secure\"]\npolicy = \"two_factor\"",
            )
            .unwrap(),
            false,
        )
    }

    fn person(roles: &[&str], multi_factor: bool) -> Identity {
        Identity {
            user_id: uuid::Uuid::nil(),
            session_id: uuid::Uuid::nil(),
            email: "a@b".into(),
            email_verified: false,
            full_name: "A".into(),
            roles: roles.iter().map(|r| r.to_string()).collect(),
            multi_factor,
            org: None,
            client: None,
            scopes: None,
            actor: None,
            dpop: None,
        }
    }

    fn who(roles: &[&str], multi_factor: bool) -> Holder {
        Holder::Person(person(roles, multi_factor))
    }

    #[test]
    fn org_roles_are_those_of_the_active_organisation_now() {
        let rules = AccessRules::parse(
            "[[rule]]\npaths = [\"/sales\"]\npolicy = \"org_roles\"\norg_roles = [\"sales\"]",
        )
        .unwrap();
        let gate = Gate::new(rules, false);
        let policy = gate.policy_for(&Described::original(Some("GET"), Some("https://h/sales")));
        let mut holder = person(&["sales"], true);
        assert!(
            !policy.admits(&Holder::Person(holder.clone())),
            "account roles are not org roles"
        );
        holder.org = Some(crate::model::orgs::ActiveOrg {
            id: uuid::Uuid::nil(),
            roles: vec!["member".into(), "sales".into()],
        });
        assert!(policy.admits(&Holder::Person(holder.clone())));
        holder.org.as_mut().unwrap().roles = vec!["member".into()];
        assert!(!policy.admits(&Holder::Person(holder)));
    }

    /// A client's token for itself is no person: only `authenticated` and a `clients` rule that
    /// names it let it in.
    #[test]
    fn a_client_for_itself_meets_only_authenticated_and_its_clients_rule() {
        let reports = uuid::Uuid::now_v7();
        let other = uuid::Uuid::now_v7();
        let client = |id| {
            Holder::Client(crate::model::ClientIdentity {
                client_id: id,
                org_id: Some(uuid::Uuid::nil()),
                scopes: crate::model::ApiScopes::parse("contacts:read"),
                dpop: None,
            })
        };
        let rules = AccessRules::parse(&format!(
            "[[rule]]\npaths = [\"/export\"]\npolicy = \"clients\"\nclients = [\"{reports}\"]\n\
             [[rule]]\npaths = [\"/2fa\"]\npolicy = \"two_factor\"\n\
             [[rule]]\npaths = [\"/verified\"]\npolicy = \"verified_email\"\n\
             [[rule]]\npaths = [\"/admin\"]\npolicy = \"roles\"\nroles = [\"admin\"]\n\
             [[rule]]\npaths = [\"/sales\"]\npolicy = \"org_roles\"\norg_roles = [\"member\"]\n\
             [[rule]]\npaths = [\"/no\"]\npolicy = \"deny\""
        ))
        .unwrap();
        let gate = Gate::new(rules, false);
        let at =
            |path: &str| gate.policy_for(&Described::forwarded(Some("GET"), Some("h"), Some(path)));
        assert!(at("/export").admits(&client(reports)));
        assert!(!at("/export").admits(&client(other)));
        let mut given_to_reports = person(&["admin"], true);
        given_to_reports.client = Some(reports.to_string());
        assert!(!at("/export").admits(&Holder::Person(given_to_reports)));
        assert!(at("/open").admits(&client(other)));
        for path in ["/2fa", "/verified", "/admin", "/sales", "/no"] {
            assert!(!at(path).admits(&client(reports)), "{path}");
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
        let verified = Gate::new(
            AccessRules::parse("[[rule]]\npolicy = \"verified_email\"").unwrap(),
            false,
        );
        let policy = verified.policy_for(&Described::forwarded(Some("GET"), Some("h"), Some("/")));
        assert!(!policy.admits(&who(&["admin"], true)));
        let mut proven = person(&[], false);
        proven.email_verified = true;
        assert!(policy.admits(&Holder::Person(proven)));
    }

    #[test]
    fn with_rules_unreadable_and_untrusted_requests_are_denied() {
        let gate = rules();
        for unreadable in [
            Described::forwarded(None, Some("h"), Some("/x")),
            Described::forwarded(Some("GET"), None, Some("/x")),
            Described::forwarded(Some("GET"), Some("h"), Some("/admin%2Fx")),
            Described::forwarded(Some("G T"), Some("h"), Some("/x")),
            Described::forwarded(Some("GET"), Some("h"), Some("/x#/../admin")),
            Described::forwarded(Some("GET"), Some("h?"), Some("/admin")),
            Described::original(Some("GET"), Some("/admin")),
            Described::original(Some("GET"), None),
            Described::original(Some("GET"), Some("http://h/../x")),
            Described::Untrusted,
        ] {
            assert_eq!(
                gate.policy_for(&unreadable),
                &Policy::Deny,
                "{unreadable:?}"
            );
        }
        let lenient = Gate::new(gate.rules.clone(), true);
        assert_eq!(gate.untrusted_refused(), Some(1));
        assert_eq!(gate.untrusted_refused(), None);
        assert_eq!(gate.untrusted_refused(), None);
        assert_eq!(
            lenient.policy_for(&Described::Untrusted),
            &Policy::Authenticated
        );
        assert_eq!(
            Gate::default().policy_for(&Described::Unreadable("x")),
            &Policy::Authenticated
        );
        assert_eq!(
            Gate::default().policy_for(&Described::Untrusted),
            &Policy::Authenticated
        );
    }

    #[test]
    fn original_urls_give_host_and_path() {
        let Described::Request(t) = Described::original(
            Some("post"),
            Some("HTTPS://Admin.Example.com:8443/a/./b?q=/admin"),
        ) else {
            panic!()
        };
        assert_eq!(
            (t.method.as_str(), t.host.as_str()),
            ("POST", "admin.example.com")
        );
        assert_eq!(t.path.to_string(), "/a/b");
    }

    /// Issue 22: each of these was once judged as another request than the upstream serves.
    #[test]
    fn original_urls_that_could_be_read_two_ways_are_unreadable() {
        for url in [
            "http://h?x",
            "http://h?/admin",
            "http://h#/admin",
            "http://h",
            "http://user@h/admin",
            "http://a.corp@pub/admin",
            "http://h:x/admin",
            "http://h\\x/admin",
            "http://h/public#/../admin",
            "http://h/a b",
            "file://h/admin",
        ] {
            assert!(
                matches!(
                    Described::original(Some("GET"), Some(url)),
                    Described::Unreadable(_)
                ),
                "{url}"
            );
        }
    }

    /// A `scopes` rule (docs/guide/resources.md): a client's token or key by its `scope`, the
    /// person's own sign-in always.
    #[test]
    fn a_scopes_rule_takes_the_credentials_that_hold_one() {
        let gate = Gate::new(
            AccessRules::parse(
                "[[rule]]\npaths = [\"/orders\"]\npolicy = \"scopes\"\nscopes = [\"orders:read\", \"orders:write\"]",
            )
            .unwrap(),
            false,
        );
        let policy = gate.policy_for(&Described::original(
            Some("GET"),
            Some("https://h/orders/7"),
        ));
        let given = |scope: &str| {
            let mut person = person(&[], false);
            person.scopes = Some(crate::model::ApiScopes::parse(scope));
            Holder::Person(person)
        };
        assert!(policy.admits(&who(&[], false)), "the person's own sign-in");
        assert!(policy.admits(&given("openid orders:read")));
        assert!(!policy.admits(&given("openid contacts:read")));
        let client = |scope: &str| {
            Holder::Client(crate::model::ClientIdentity {
                client_id: uuid::Uuid::nil(),
                org_id: None,
                scopes: crate::model::ApiScopes::parse(scope),
                dpop: None,
            })
        };
        assert!(policy.admits(&client("orders:write")));
        assert!(!policy.admits(&client("contacts:read")));
        for bad in [
            "[[rule]]\npolicy = \"scopes\"",
            "[[rule]]\npolicy = \"scopes\"\nscopes = []",
            "[[rule]]\npolicy = \"scopes\"\nscopes = [\"a b\"]",
            "[[rule]]\npolicy = \"roles\"\nroles = [\"x\"]\nscopes = [\"a\"]",
        ] {
            assert!(AccessRules::parse(bad).is_err(), "{bad}");
        }
    }
}
