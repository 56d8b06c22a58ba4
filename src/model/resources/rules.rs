//! What a declared API must be (docs/guide/resources.md): the rules the settings file and the
//! registry (the CLI, the admin API) check alike, each fault naming its field.

use std::fmt;

use super::{Catalog, Resource, scope_name_ok};

/// Why a resource cannot be declared: the field at fault (`id`, `name`, `audience`, `scopes`, as
/// the admin API names them) and the reason, one line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceFault {
    pub field: &'static str,
    pub reason: String,
}

impl fmt::Display for ResourceFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.reason)
    }
}

fn fault(field: &'static str, reason: impl Into<String>) -> Result<(), ResourceFault> {
    Err(ResourceFault {
        field,
        reason: reason.into(),
    })
}

impl Resource {
    /// A resource's own rules and its fit beside `others` (ids, audiences and scope names
    /// unique; `others` never holds the resource itself), with no audience of `reserved`: the
    /// service's own (`GATEHOUSE_AUDIENCE`, `GATEHOUSE_OAUTH_RESOURCES`, the issuer, whose `aud`
    /// refresh tokens carry). The settings file and the registry check alike.
    pub fn check(&self, others: &Catalog, reserved: &[&str]) -> Result<(), ResourceFault> {
        let id_ok = (1..=32).contains(&self.id.len())
            && self
                .id
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
        if !id_ok {
            return fault("id", "the id must be 1 to 32 of a-z, 0-9 and -");
        }
        if others.resource(&self.id).is_some() {
            return fault("id", "the id is another resource's");
        }
        if !sentence_ok(&self.name) {
            return fault(
                "name",
                "name must be 1 to 200 characters, without control characters",
            );
        }
        if let Some(audience) = &self.audience {
            if !crate::addresses::is_service_url(audience) {
                return fault(
                    "audience",
                    format!(
                        "audience {audience:?} is not an absolute http(s) URL without query or \
                         fragment"
                    ),
                );
            }
            if others.by_audience(audience).is_some() {
                return fault(
                    "audience",
                    format!("audience {audience:?} is another resource's"),
                );
            }
            if reserved.contains(&audience.as_str()) {
                return fault(
                    "audience",
                    format!(
                        "audience {audience:?} is the service's own (GATEHOUSE_AUDIENCE, the \
                         issuer, or one of GATEHOUSE_OAUTH_RESOURCES): leave it out for \
                         GATEHOUSE_AUDIENCE"
                    ),
                );
            }
        }
        if self.scopes.is_empty() || self.scopes.len() > 50 {
            return fault("scopes", "must declare 1 to 50 scopes");
        }
        for scope in &self.scopes {
            if !scope_name_ok(&scope.name) {
                return fault(
                    "scopes",
                    format!(
                        "the scope {:?} is not a scope name (1 to 64 printable ASCII characters, \
                         no space, quote or backslash)",
                        scope.name
                    ),
                );
            }
            if others.is_known(&scope.name) {
                return fault(
                    "scopes",
                    format!("the scope {:?} is declared already", scope.name),
                );
            }
            if !sentence_ok(&scope.description) {
                return fault(
                    "scopes",
                    format!(
                        "the scope {:?} needs a description of 1 to 200 characters (the consent \
                         screen shows it)",
                        scope.name
                    ),
                );
            }
        }
        Ok(())
    }
}

/// A name or description people read: 1 to 200 characters once trimmed, none a control one.
fn sentence_ok(text: &str) -> bool {
    let text = text.trim();
    !text.is_empty() && text.chars().count() <= 200 && !text.chars().any(char::is_control)
}
