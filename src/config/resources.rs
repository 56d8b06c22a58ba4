//! The resources file (`GATEHOUSE_RESOURCES`, docs/guide/resources.md): the business APIs the
//! operator's services serve, each with the scopes clients and API keys may be given for it. Read
//! and checked whole at start, as the providers file is: a bad file stops the start with one line
//! naming the resource. The contacts example API (`GATEHOUSE_CONTACTS_API`) is added here too.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use crate::model::resources::{
    CONTACTS, CONTACTS_READ, CONTACTS_WRITE, Catalog, Resource, ResourceOrigin, ResourceScope,
};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    #[serde(default)]
    resource: Vec<toml::Value>,
}

/// One `[[resource]]` as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawResource {
    id: String,
    name: String,
    audience: Option<String>,
    /// Scope name → what the consent screen says of it.
    scopes: BTreeMap<String, String>,
}

/// The built-in example API: the seed's contacts, for the services behind the proxies
/// (`GATEHOUSE_AUDIENCE`).
pub fn contacts() -> Resource {
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

/// The resources of the file at `path`.
pub(super) fn load(path: &Path, taken: &[Resource]) -> Result<Vec<Resource>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    parse(&text, taken)
}

/// The resources of a file's text, beside those `taken` already (the built-in one); the first
/// fault, as one line naming the resource.
pub(super) fn parse(text: &str, taken: &[Resource]) -> Result<Vec<Resource>, String> {
    let file: RawFile = toml::from_str(text)
        .map_err(|e| format!("not a resources file: {}", one_line(&e.to_string())))?;
    let mut resources: Vec<Resource> = taken.to_vec();
    for (i, value) in file.resource.into_iter().enumerate() {
        let label = match value.get("id").and_then(toml::Value::as_str) {
            Some(id) => format!("resource {id:?}"),
            None => format!("resource {}", i + 1),
        };
        let raw = value
            .try_into::<RawResource>()
            .map_err(|e| format!("{label}: {}", one_line(&e.to_string())))?;
        let resource = Resource {
            id: raw.id,
            name: raw.name,
            audience: raw.audience,
            scopes: raw
                .scopes
                .into_iter()
                .map(|(name, description)| ResourceScope { name, description })
                .collect(),
            origin: ResourceOrigin::Settings,
        };
        check(&resource, &Catalog::new(resources.clone()))
            .map_err(|reason| format!("{label}: {reason}"))?;
        resources.push(resource);
    }
    Ok(resources.split_off(taken.len()))
}

/// A resource's own rules and its fit beside `others` (ids, audiences and scope names unique):
/// the checks of the file and of the registry alike. `others` never holds `resource` itself.
pub fn check(resource: &Resource, others: &Catalog) -> Result<(), String> {
    let id_ok = (1..=32).contains(&resource.id.len())
        && resource
            .id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    if !id_ok {
        return Err("the id must be 1 to 32 of a-z, 0-9 and -".into());
    }
    if others.resource(&resource.id).is_some() {
        return Err("the id is another resource's".into());
    }
    let name = resource.name.trim();
    if name.is_empty() || name.chars().count() > 200 || name.chars().any(char::is_control) {
        return Err("name must be 1 to 200 characters, without control characters".into());
    }
    if let Some(audience) = &resource.audience {
        let plain = url::Url::parse(audience).is_ok_and(|url| {
            matches!(url.scheme(), "http" | "https")
                && url.host().is_some()
                && url.username().is_empty()
                && url.password().is_none()
                && url.query().is_none()
                && url.fragment().is_none()
        });
        if !plain {
            return Err(format!(
                "audience {audience:?} is not an absolute http(s) URL without query or fragment"
            ));
        }
        if others.by_audience(audience).is_some() {
            return Err(format!("audience {audience:?} is another resource's"));
        }
    }
    if resource.scopes.is_empty() || resource.scopes.len() > 50 {
        return Err("must declare 1 to 50 scopes".into());
    }
    for scope in &resource.scopes {
        if !crate::model::resources::scope_name_ok(&scope.name) {
            return Err(format!(
                "the scope {:?} is not a scope name (1 to 64 printable ASCII characters, no \
                 space, quote or backslash)",
                scope.name
            ));
        }
        if others.is_known(&scope.name) {
            return Err(format!("the scope {:?} is declared already", scope.name));
        }
        let description = scope.description.trim();
        if description.is_empty()
            || description.chars().count() > 200
            || description.chars().any(char::is_control)
        {
            return Err(format!(
                "the scope {:?} needs a description of 1 to 200 characters (the consent screen \
                 shows it)",
                scope.name
            ));
        }
    }
    Ok(())
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
[[resource]]
id = "orders"
name = "Orders API"
audience = "https://orders.example.com"
[resource.scopes]
"orders:read" = "See your orders"
"orders:write" = "Place and change orders for you"

[[resource]]
id = "reports"
name = "Reports"
scopes = { "reports:read" = "Read your reports" }
"#;

    #[test]
    fn a_good_file_declares_its_apis() {
        let resources = parse(GOOD, &[contacts()]).unwrap();
        assert_eq!(resources.len(), 2);
        assert_eq!(resources[0].id, "orders");
        assert_eq!(
            resources[0].audience.as_deref(),
            Some("https://orders.example.com")
        );
        assert_eq!(resources[0].scopes.len(), 2);
        assert_eq!(resources[1].audience, None);
        assert_eq!(resources[1].origin, ResourceOrigin::Settings);
    }

    #[test]
    fn each_fault_names_its_resource() {
        let refused = |text: &str| parse(text, &[contacts()]).unwrap_err();
        let with = |extra: &str| format!("[[resource]]\nid = \"x\"\nname = \"X\"\n{extra}");
        assert!(refused("[[resource]]\nid = 'x'").contains("resource \"x\""));
        assert!(refused(&with("scopes = {}")).contains("1 to 50 scopes"));
        assert!(refused(&with("scopes = { 'a b' = 'x' }")).contains("not a scope name"));
        assert!(refused(&with("scopes = { 'contacts:read' = 'x' }")).contains("declared already"));
        assert!(refused(&with("scopes = { 'openid' = 'x' }")).contains("declared already"));
        assert!(refused(&with("scopes = { 'x:y' = '' }")).contains("description"));
        assert!(
            refused(&with("audience = 'ftp://x'\nscopes = { 'x:y' = 'd' }")).contains("audience")
        );
        assert!(refused(&format!("{GOOD}\n{GOOD}")).contains("another resource's"));
        assert!(
            refused("[[resource]]\nid = 'Bad Id'\nname = 'X'\nscopes = { 'x:y' = 'd' }")
                .contains("the id")
        );
        assert!(refused("[[thing]]").contains("not a resources file"));
    }
}
