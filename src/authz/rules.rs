//! The access rules file (`GATEHOUSE_ACCESS_RULES`, docs/api.md §6): rules checked in order, the
//! first that matches a request deciding its policy. Every field a rule gives must match; within a
//! list, any entry may. A bad file stops the start with one line naming the rule by its position.

use std::path::Path;

use serde::Deserialize;
use uuid::Uuid;

use super::path::{NormalPath, PathPattern};
use crate::domain::Role;

/// What a matching rule demands of the request's session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Policy {
    /// Refused, whoever asks.
    Deny,
    /// A live session.
    Authenticated,
    /// A live session whose login had a second factor.
    TwoFactor,
    /// A live session whose account's address is verified (a mailed link came back, or an
    /// operator made the account): with open registration, anyone may register any address.
    VerifiedEmail,
    /// A live session whose account has any of these roles now.
    Roles(Vec<Role>),
    /// A live session whose token names an active organisation in which its holder has any of
    /// these roles now (docs/api.md §13).
    OrgRoles(Vec<Role>),
    /// A token one of these clients holds for itself (`client_credentials`, docs/api.md §12),
    /// the client still registered with that grant. Never a person's token, not even one given
    /// to a listed client: that one speaks for the person.
    Clients(Vec<Uuid>),
    /// A credential holding any of these scopes of a business API (docs/guide/resources.md): a
    /// client's token (for itself or for a person) or an API key by its `scope`; the person's
    /// own sign-in (a token of theirs, or the session cookie) holds them all.
    Scopes(Vec<String>),
}

/// The original request, as the proxy described it.
#[derive(Debug, Clone)]
pub struct Target {
    pub method: String,
    /// Lower-case, without port or trailing dot.
    pub host: String,
    pub path: NormalPath,
}

#[derive(Debug, Clone)]
struct Rule {
    /// The rule's optional `name`, for the log line of a refusal.
    name: Option<String>,
    hosts: Option<Vec<HostPattern>>,
    paths: Option<Vec<PathPattern>>,
    methods: Option<Vec<String>>,
    policy: Policy,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum HostPattern {
    Exact(String),
    /// `*.example.com`: any subdomain of it (stored as `.example.com`), not the bare domain.
    Subdomains(String),
}

/// The rules, in file order. Empty when no file is configured.
#[derive(Debug, Clone, Default)]
pub struct AccessRules(Vec<Rule>);

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    #[serde(default)]
    rule: Vec<toml::Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRule {
    name: Option<String>,
    hosts: Option<Vec<String>>,
    paths: Option<Vec<String>>,
    methods: Option<Vec<String>>,
    policy: String,
    roles: Option<Vec<String>>,
    org_roles: Option<Vec<String>>,
    clients: Option<Vec<String>>,
    scopes: Option<Vec<String>>,
}

impl AccessRules {
    /// Reads and checks the file; the error is one line naming the rule at fault.
    pub fn load(path: &Path) -> Result<AccessRules, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        Self::parse(&text)
    }

    pub fn parse(text: &str) -> Result<AccessRules, String> {
        let file: RawFile = toml::from_str(text)
            .map_err(|e| format!("not a rules file: {}", one_line(&e.to_string())))?;
        let rules = file
            .rule
            .into_iter()
            .enumerate()
            .map(|(i, value)| {
                let rule: Result<Rule, String> = value
                    .try_into::<RawRule>()
                    .map_err(|e| one_line(&e.to_string()))
                    .and_then(Rule::check);
                rule.map_err(|reason| format!("rule {}: {reason}", i + 1))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(AccessRules(rules))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// The policy of the first rule that matches; `Authenticated` when none does.
    pub fn policy_for(&self, target: &Target) -> &Policy {
        self.0
            .iter()
            .find(|rule| rule.matches(target))
            .map_or(&Policy::Authenticated, |rule| &rule.policy)
    }

    /// How the log names the first rule that matches: `rule 3`, or `rule 3 (admin area)` with
    /// its `name`. `None` when none does.
    pub fn label_for(&self, target: &Target) -> Option<String> {
        let (i, rule) = self.0.iter().enumerate().find(|(_, r)| r.matches(target))?;
        Some(match &rule.name {
            Some(name) => format!("rule {} ({name})", i + 1),
            None => format!("rule {}", i + 1),
        })
    }
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

impl Rule {
    fn check(raw: RawRule) -> Result<Rule, String> {
        let hosts = non_empty("hosts", raw.hosts)?
            .map(|hosts| hosts.iter().map(|h| HostPattern::parse(h)).collect())
            .transpose()?;
        let paths = non_empty("paths", raw.paths)?
            .map(|paths| paths.iter().map(|p| PathPattern::parse(p)).collect())
            .transpose()?;
        let methods = non_empty("methods", raw.methods)?
            .map(|methods| {
                methods
                    .iter()
                    .map(|m| {
                        if !m.is_empty() && m.bytes().all(|b| b.is_ascii_alphabetic()) {
                            Ok(m.to_ascii_uppercase())
                        } else {
                            Err(format!("method {m:?} is not an HTTP method"))
                        }
                    })
                    .collect()
            })
            .transpose()?;
        // The name goes into log lines: one line each, of a readable length.
        if let Some(name) = &raw.name
            && (name.trim().is_empty()
                || name.chars().count() > 100
                || name.chars().any(char::is_control))
        {
            return Err(format!(
                "name {name:?} is not 1 to 100 characters without control characters"
            ));
        }
        let roles = non_empty("roles", raw.roles)?;
        let org_roles = non_empty("org_roles", raw.org_roles)?;
        let parse = |roles: Vec<String>| -> Result<Vec<Role>, String> {
            roles.iter().map(|r| Role::parse(r)).collect()
        };
        let scopes = non_empty("scopes", raw.scopes)?;
        if raw.policy != "scopes" && scopes.is_some() {
            return Err("scopes are given only with policy = \"scopes\"".into());
        }
        if raw.policy == "scopes" {
            let scopes = scopes.ok_or("policy \"scopes\" needs a list of scopes")?;
            if let Some(bad) = scopes
                .iter()
                .find(|s| !crate::model::resources::scope_name_ok(s))
            {
                return Err(format!("{bad:?} is not a scope name"));
            }
            if roles.is_some() || org_roles.is_some() || raw.clients.is_some() {
                return Err("policy \"scopes\" takes no roles, org_roles or clients".into());
            }
            return Ok(Rule {
                name: raw.name.clone(),
                hosts,
                paths,
                methods,
                policy: Policy::Scopes(scopes),
            });
        }
        let clients = non_empty("clients", raw.clients)?;
        if raw.policy != "clients" && clients.is_some() {
            return Err("clients are given only with policy = \"clients\"".into());
        }
        if raw.policy == "clients" {
            let clients = clients.ok_or("policy \"clients\" needs a list of clients")?;
            if roles.is_some() || org_roles.is_some() {
                return Err("roles are given only with policy = \"roles\"".into());
            }
            let ids = clients
                .iter()
                .map(|c| Uuid::parse_str(c).map_err(|_| format!("{c:?} is not a client id")))
                .collect::<Result<Vec<_>, _>>()?;
            return Ok(Rule {
                name: raw.name.clone(),
                hosts,
                paths,
                methods,
                policy: Policy::Clients(ids),
            });
        }
        if raw.policy != "org_roles" && org_roles.is_some() {
            return Err("org_roles are given only with policy = \"org_roles\"".into());
        }
        if raw.policy == "org_roles" {
            let org_roles = org_roles.ok_or("policy \"org_roles\" needs a list of org_roles")?;
            if roles.is_some() {
                return Err("roles are given only with policy = \"roles\"".into());
            }
            return Ok(Rule {
                name: raw.name.clone(),
                hosts,
                paths,
                methods,
                policy: Policy::OrgRoles(parse(org_roles)?),
            });
        }
        let policy = match (raw.policy.as_str(), roles) {
            ("roles", Some(roles)) => Policy::Roles(parse(roles)?),
            ("roles", None) => return Err("policy \"roles\" needs a list of roles".into()),
            (_, Some(_)) => return Err("roles are given only with policy = \"roles\"".into()),
            ("deny", None) => Policy::Deny,
            ("authenticated", None) => Policy::Authenticated,
            ("two_factor", None) => Policy::TwoFactor,
            ("verified_email", None) => Policy::VerifiedEmail,
            (other, None) => {
                return Err(format!(
                    "unknown policy {other:?} (deny, authenticated, two_factor, verified_email, roles, org_roles, clients or scopes)"
                ));
            }
        };
        Ok(Rule {
            name: raw.name,
            hosts,
            paths,
            methods,
            policy,
        })
    }

    fn matches(&self, target: &Target) -> bool {
        let hosts = self.hosts.as_ref();
        let paths = self.paths.as_ref();
        let methods = self.methods.as_ref();
        hosts.is_none_or(|hosts| hosts.iter().any(|h| h.matches(&target.host)))
            && paths.is_none_or(|paths| paths.iter().any(|p| p.covers(&target.path)))
            && methods.is_none_or(|methods| {
                methods.iter().any(|m| {
                    m.eq_ignore_ascii_case(&target.method)
                        // Every upstream answers HEAD as it answers GET, less the body: a rule
                        // for GET that HEAD walked around would leak whatever the headers say.
                        || (target.method == "HEAD" && m.eq_ignore_ascii_case("GET"))
                })
            })
    }
}

/// An empty list would match nothing, which is surely not what was meant.
fn non_empty(field: &str, list: Option<Vec<String>>) -> Result<Option<Vec<String>>, String> {
    match list {
        Some(list) if list.is_empty() => {
            Err(format!("{field} is empty (leave it out to match any)"))
        }
        other => Ok(other),
    }
}

impl HostPattern {
    fn parse(pattern: &str) -> Result<HostPattern, String> {
        let lower = pattern.to_ascii_lowercase();
        let (subdomains, name) = match lower.strip_prefix("*.") {
            Some(rest) => (true, rest),
            None => (false, lower.as_str()),
        };
        let valid = !name.is_empty()
            && name.split('.').all(|label| {
                !label.is_empty()
                    && label
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'-')
            });
        if !valid {
            return Err(format!(
                "host {pattern:?} is not a host name or *.domain (no port, no other wildcard)"
            ));
        }
        Ok(if subdomains {
            HostPattern::Subdomains(format!(".{name}"))
        } else {
            HostPattern::Exact(name.to_owned())
        })
    }

    fn matches(&self, host: &str) -> bool {
        match self {
            HostPattern::Exact(name) => host == name,
            HostPattern::Subdomains(suffix) => {
                host.len() > suffix.len() && host.ends_with(suffix.as_str())
            }
        }
    }
}

#[cfg(test)]
mod tests;
