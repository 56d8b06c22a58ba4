//! The business APIs Gatehouse issues tokens for (docs/api.md §11, docs/guide/resources.md), and
//! the scopes they declare: the operator's own (`orders:read`, `invoices:write` …), beside the
//! OpenID scopes the provider itself answers for. The seed's contacts are one such API, built in
//! and on unless turned off. `Catalog` is the vocabulary every flow checks scopes against.

use std::fmt;

pub mod rules;

/// The OpenID scopes: what a token says about the person (OpenID Connect Core §5.4), which every
/// deployment has, whatever APIs it declares.
pub const OPENID: &str = "openid";
/// `name`, `updated_at`.
pub const PROFILE: &str = "profile";
/// `email`, `email_verified`.
pub const EMAIL: &str = "email";
/// A refresh token comes only with it.
pub const OFFLINE_ACCESS: &str = "offline_access";
/// `roles`.
pub const ROLES: &str = "roles";

/// The OpenID scopes in the order discovery lists them, with what the consent screen says.
pub const IDENTITY_SCOPES: [(&str, &str); 5] = [
    (OPENID, "Know who you are on this service"),
    (PROFILE, "See your name"),
    (EMAIL, "See your e-mail address"),
    (OFFLINE_ACCESS, "Stay connected while you are away"),
    (ROLES, "See your roles"),
];

/// The built-in example API (the seed's `/api/v1/crm/contacts`).
pub const CONTACTS: &str = "contacts";
pub const CONTACTS_READ: &str = "contacts:read";
pub const CONTACTS_WRITE: &str = "contacts:write";

/// Longest scope name, in bytes.
pub const SCOPE_MAX: usize = 64;

/// Where a resource is declared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResourceOrigin {
    /// Gatehouse's own example API (`GATEHOUSE_CONTACTS_API`).
    BuiltIn,
    /// The resources file (`GATEHOUSE_RESOURCES`): changed there and by a restart only.
    Settings,
    /// The CLI or the admin API: in the database, seen by every instance within a second.
    Operator,
}

impl ResourceOrigin {
    pub fn as_str(self) -> &'static str {
        match self {
            ResourceOrigin::BuiltIn => "built_in",
            ResourceOrigin::Settings => "settings",
            ResourceOrigin::Operator => "operator",
        }
    }
}

/// A scope an API declares, with the sentence the consent screen shows for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceScope {
    pub name: String,
    pub description: String,
}

/// A business API: its id, its name for people, the `aud` of its tokens when it has its own
/// (RFC 8707: `None` means `GATEHOUSE_AUDIENCE`, the services behind the proxies), its scopes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resource {
    pub id: String,
    pub name: String,
    pub audience: Option<String>,
    pub scopes: Vec<ResourceScope>,
    pub origin: ResourceOrigin,
}

/// A scope no API declares (its name, cut to 64 characters, for the message) and what there is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownScope {
    pub scope: String,
    pub known: String,
}

impl fmt::Display for UnknownScope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:?} is not a scope (scopes: {})",
            self.scope, self.known
        )
    }
}

/// Why the scopes of one request cannot be one token's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TargetError {
    /// Scopes of two APIs with audiences of their own: one token has one audience.
    SeveralAudiences(String, String),
    /// `resource` names an API that does not declare one of the scopes.
    NotDeclaredBy { scope: String, resource: String },
}

impl fmt::Display for TargetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TargetError::SeveralAudiences(a, b) => write!(
                f,
                "the scopes are of two APIs ({a} and {b}): ask for one API's at a time"
            ),
            TargetError::NotDeclaredBy { scope, resource } => {
                write!(f, "the scope {scope:?} is not one of {resource}'s")
            }
        }
    }
}

/// Every scope there is now: the OpenID ones, then each API's.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    resources: Vec<Resource>,
}

impl Catalog {
    pub fn new(resources: Vec<Resource>) -> Catalog {
        Catalog { resources }
    }

    pub fn resources(&self) -> &[Resource] {
        &self.resources
    }

    pub fn resource(&self, id: &str) -> Option<&Resource> {
        self.resources.iter().find(|r| r.id == id)
    }

    /// The API that declares `scope`; `None` for an OpenID scope or an unknown one.
    pub fn resource_of(&self, scope: &str) -> Option<&Resource> {
        self.resources
            .iter()
            .find(|r| r.scopes.iter().any(|s| s.name == scope))
    }

    pub fn is_identity_scope(scope: &str) -> bool {
        IDENTITY_SCOPES.iter().any(|(name, _)| *name == scope)
    }

    pub fn is_known(&self, scope: &str) -> bool {
        Catalog::is_identity_scope(scope) || self.resource_of(scope).is_some()
    }

    /// Every scope, in the order discovery lists them.
    pub fn all(&self) -> Vec<&str> {
        let identity = IDENTITY_SCOPES.iter().map(|(name, _)| *name);
        identity.chain(self.api_scopes()).collect()
    }

    /// The APIs' scopes (what a client's token may carry to a business API, an API key too).
    pub fn api_scopes(&self) -> impl Iterator<Item = &str> {
        self.resources
            .iter()
            .flat_map(|r| r.scopes.iter().map(|s| s.name.as_str()))
    }

    /// What the consent screen says of `scope`.
    pub fn describe(&self, scope: &str) -> Option<&str> {
        let identity = IDENTITY_SCOPES.iter().find(|(name, _)| *name == scope);
        match identity {
            Some((_, words)) => Some(words),
            None => self
                .resources
                .iter()
                .flat_map(|r| r.scopes.iter())
                .find(|s| s.name == scope)
                .map(|s| s.description.as_str()),
        }
    }

    /// The scopes of a space-separated `scope` string (RFC 6749 §3.3), each once, in the order
    /// first given. Runs of spaces are tolerated; names are case-sensitive. An empty string is
    /// no scope (`Ok(vec![])`): whether that is allowed is the caller's to say.
    pub fn parse(&self, text: &str) -> Result<Vec<String>, UnknownScope> {
        self.parse_names(text.split(' ').filter(|s| !s.is_empty()))
    }

    /// `parse` over names already split (a JSON array, repeated CLI flags).
    pub fn parse_names<'a>(
        &self,
        names: impl IntoIterator<Item = &'a str>,
    ) -> Result<Vec<String>, UnknownScope> {
        let mut scopes: Vec<String> = Vec::new();
        for name in names {
            if !self.is_known(name) {
                return Err(UnknownScope {
                    scope: name.chars().take(SCOPE_MAX).collect(),
                    known: self.all().join(" "),
                });
            }
            if !scopes.iter().any(|s| s == name) {
                scopes.push(name.to_owned());
            }
        }
        Ok(scopes)
    }

    /// The `aud` of a token for `scopes` (RFC 8707): the audience of the one API with an
    /// audience of its own whose scopes they hold, or `asked` (a `resource` parameter, already
    /// checked to be one Gatehouse issues for); `None`: `GATEHOUSE_AUDIENCE`. A `resource`
    /// naming a declared API with an audience takes only that API's scopes (and OpenID ones).
    pub fn audience_for(
        &self,
        scopes: &[String],
        asked: Option<&str>,
    ) -> Result<Option<String>, TargetError> {
        let mut own: Option<&Resource> = None;
        // An API of `GATEHOUSE_AUDIENCE`'s (the services behind the proxies), when there is one.
        let mut shared: Option<&Resource> = None;
        for scope in scopes {
            let Some(resource) = self.resource_of(scope) else {
                continue;
            };
            if let Some(asked) = asked {
                if resource.audience.as_deref().is_some_and(|a| a != asked) {
                    return Err(TargetError::NotDeclaredBy {
                        scope: scope.clone(),
                        resource: asked.to_owned(),
                    });
                }
            }
            if resource.audience.is_none() {
                shared = Some(resource);
                continue;
            }
            match own {
                Some(other) if other.id != resource.id => {
                    return Err(TargetError::SeveralAudiences(
                        other.name.clone(),
                        resource.name.clone(),
                    ));
                }
                _ => own = Some(resource),
            }
        }
        if let (Some(own), Some(shared), None) = (own, shared, asked) {
            return Err(TargetError::SeveralAudiences(
                own.name.clone(),
                shared.name.clone(),
            ));
        }
        if let Some(declared) = asked.and_then(|a| self.by_audience(a)) {
            if let Some(scope) = scopes
                .iter()
                .find(|s| self.resource_of(s).is_some_and(|r| r.id != declared.id))
            {
                return Err(TargetError::NotDeclaredBy {
                    scope: scope.clone(),
                    resource: declared.name.clone(),
                });
            }
        }
        Ok(asked
            .map(str::to_owned)
            .or_else(|| own.and_then(|r| r.audience.clone())))
    }

    /// The declared API whose tokens have `audience`.
    pub fn by_audience(&self, audience: &str) -> Option<&Resource> {
        self.resources
            .iter()
            .find(|r| r.audience.as_deref() == Some(audience))
    }

    /// Every audience an API declares (beside `GATEHOUSE_AUDIENCE`).
    pub fn audiences(&self) -> impl Iterator<Item = &str> {
        self.resources.iter().filter_map(|r| r.audience.as_deref())
    }
}

impl Resource {
    /// The built-in example API: the seed's contacts, for the services behind the proxies
    /// (`GATEHOUSE_AUDIENCE`), on unless `GATEHOUSE_CONTACTS_API` is off.
    pub fn contacts_example() -> Resource {
        let scope = |name: &str, description: &str| ResourceScope {
            name: name.into(),
            description: description.into(),
        };
        Resource {
            id: CONTACTS.into(),
            name: "Contacts".into(),
            audience: None,
            scopes: vec![
                scope(CONTACTS_READ, "Read your contacts"),
                scope(CONTACTS_WRITE, "Add, change and delete your contacts"),
            ],
            origin: ResourceOrigin::BuiltIn,
        }
    }
}

/// Whether `name` can be a scope: 1 to 64 printable ASCII characters, no space, `"` or `\`
/// (RFC 6749 §3.3's scope-token, less the two that would need escaping in a header).
pub fn scope_name_ok(name: &str) -> bool {
    (1..=SCOPE_MAX).contains(&name.len())
        && name
            .bytes()
            .all(|b| (0x21..=0x7e).contains(&b) && b != b'"' && b != b'\\')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope(name: &str) -> ResourceScope {
        ResourceScope {
            name: name.into(),
            description: format!("do {name}"),
        }
    }

    fn catalog() -> Catalog {
        Catalog::new(vec![
            Resource {
                id: "contacts".into(),
                name: "Contacts".into(),
                audience: None,
                scopes: vec![scope(CONTACTS_READ), scope(CONTACTS_WRITE)],
                origin: ResourceOrigin::BuiltIn,
            },
            Resource {
                id: "orders".into(),
                name: "Orders API".into(),
                audience: Some("https://orders.example".into()),
                scopes: vec![scope("orders:read")],
                origin: ResourceOrigin::Settings,
            },
            Resource {
                id: "billing".into(),
                name: "Billing API".into(),
                audience: Some("https://billing.example".into()),
                scopes: vec![scope("billing:read")],
                origin: ResourceOrigin::Operator,
            },
        ])
    }

    #[test]
    fn scope_strings_parse_to_known_scopes_once_each() {
        let c = catalog();
        assert_eq!(
            c.parse("openid  profile openid orders:read").unwrap(),
            ["openid", "profile", "orders:read"]
        );
        assert_eq!(c.parse("   ").unwrap(), Vec::<String>::new());
        for bad in ["OpenID", "openid admin", "openid\tprofile", "orders"] {
            assert!(c.parse(bad).is_err(), "{bad}");
        }
        let long = "x".repeat(500);
        assert_eq!(c.parse(&long).unwrap_err().scope.len(), 64);
        assert_eq!(
            c.all(),
            [
                "openid",
                "profile",
                "email",
                "offline_access",
                "roles",
                "contacts:read",
                "contacts:write",
                "orders:read",
                "billing:read"
            ]
        );
        assert_eq!(c.describe("orders:read"), Some("do orders:read"));
        assert_eq!(c.describe("email"), Some("See your e-mail address"));
    }

    #[test]
    fn a_token_has_the_audience_of_the_one_api_it_is_for() {
        let c = catalog();
        let s = |text: &str| c.parse(text).unwrap();
        assert_eq!(c.audience_for(&s("openid contacts:read"), None), Ok(None));
        assert_eq!(
            c.audience_for(&s("openid orders:read"), None),
            Ok(Some("https://orders.example".into()))
        );
        assert_eq!(
            c.audience_for(&s("orders:read"), Some("https://orders.example")),
            Ok(Some("https://orders.example".into()))
        );
        assert!(matches!(
            c.audience_for(&s("orders:read billing:read"), None),
            Err(TargetError::SeveralAudiences(..))
        ));
        assert!(matches!(
            c.audience_for(&s("orders:read contacts:read"), None),
            Err(TargetError::SeveralAudiences(..))
        ));
        assert!(matches!(
            c.audience_for(&s("orders:read"), Some("https://billing.example")),
            Err(TargetError::NotDeclaredBy { .. })
        ));
        assert!(matches!(
            c.audience_for(&s("contacts:read"), Some("https://orders.example")),
            Err(TargetError::NotDeclaredBy { .. })
        ));
        // A resource of GATEHOUSE_OAUTH_RESOURCES (no declared API): as asked.
        assert_eq!(
            c.audience_for(&s("contacts:read"), Some("https://mcp.example")),
            Ok(Some("https://mcp.example".into()))
        );
    }

    #[test]
    fn scope_names() {
        for good in ["orders:read", "https://api.example/read", "a"] {
            assert!(scope_name_ok(good), "{good}");
        }
        for bad in ["", "a b", "a\"b", "a\\b", "é", &"x".repeat(65)] {
            assert!(!scope_name_ok(bad), "{bad}");
        }
    }
}
