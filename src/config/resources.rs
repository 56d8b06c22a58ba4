//! The resources file (`GATEHOUSE_RESOURCES`, docs/guide/resources.md): the business APIs the
//! operator's services serve, each with the scopes clients and API keys may be given for it. Read
//! and checked whole at start, as the providers file is: a bad file stops the start with one line
//! naming the resource, by the rules the registry checks too (`Resource::check`).

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use crate::model::resources::{Catalog, Resource, ResourceOrigin, ResourceScope};

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

/// The resources of the file at `path`.
pub(super) fn load(
    path: &Path,
    taken: &[Resource],
    reserved: &[&str],
) -> Result<Vec<Resource>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    parse(&text, taken, reserved)
}

/// The resources of a file's text, beside those `taken` already (the built-in one) and with no
/// audience of `reserved` (the service's own); the first fault, as one line naming the resource.
pub(super) fn parse(
    text: &str,
    taken: &[Resource],
    reserved: &[&str],
) -> Result<Vec<Resource>, String> {
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
        (resource.check(&Catalog::new(resources.clone()), reserved))
            .map_err(|fault| format!("{label}: {fault}"))?;
        resources.push(resource);
    }
    Ok(resources.split_off(taken.len()))
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    const RESERVED: &[&str] = &["gatehouse-api", "https://login.example.com"];

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
        let resources = parse(GOOD, &[Resource::contacts_example()], RESERVED).unwrap();
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
        let refused =
            |text: &str| parse(text, &[Resource::contacts_example()], RESERVED).unwrap_err();
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
        let issuer = with("audience = 'https://login.example.com'\nscopes = { 'x:y' = 'd' }");
        assert!(refused(&issuer).contains("the service's own"));
    }
}
