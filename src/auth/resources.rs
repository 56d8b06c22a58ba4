//! The business APIs tokens are issued for (docs/guide/resources.md), and so the scopes there are:
//! the settings' (the contacts example and `GATEHOUSE_RESOURCES`, fixed until a restart) and the
//! operator's (the CLI, the admin API: in the database). Every flow reads the vocabulary from
//! memory (`Core::catalog`, kept by `catalog`); each instance reads the operator's again every
//! `catalog::SYNC_INTERVAL`, so a change made anywhere is everywhere within a second. This file
//! declares, changes and removes them.

use std::sync::Arc;

use super::audit::AuditEvent;
use super::audit::Operator;
use super::core::Core;
use crate::error::{Conflict, Error, Result};
use crate::model::resources::Catalog;
use crate::model::{Resource, ResourceOrigin, ResourceScope};

/// A resource to declare, or a declared one's new state, as given (checked whole).
#[derive(Debug, Clone, Default)]
pub struct ResourceInput {
    pub id: String,
    pub name: String,
    pub audience: Option<String>,
    /// Name and description of each scope.
    pub scopes: Vec<(String, String)>,
}

/// A change of an operator's resource: each `Some` replaces the field (`audience: Some(None)`
/// removes it). Its id never changes.
#[derive(Debug, Clone, Default)]
pub struct ResourceChanges {
    pub name: Option<String>,
    pub audience: Option<Option<String>>,
    pub scopes: Option<Vec<(String, String)>>,
}

impl ResourceChanges {
    pub fn is_empty(&self) -> bool {
        self.name.is_none() && self.audience.is_none() && self.scopes.is_none()
    }
}

/// The business APIs: listed, declared, changed and removed by operators.
#[derive(Clone)]
pub struct Resources {
    pub(crate) core: Arc<Core>,
}

impl Resources {
    /// Reads the operator's APIs again (the instance's periodic work: a change made elsewhere
    /// is here within `catalog::SYNC_INTERVAL`).
    pub async fn sync(&self) -> Result<()> {
        self.core.catalog.sync(&self.core.store).await.map(|_| ())
    }

    /// The vocabulary of scopes now.
    pub fn catalog(&self) -> Arc<Catalog> {
        self.core.catalog.current()
    }

    /// Every API, the settings' first.
    pub fn list(&self) -> Vec<Resource> {
        self.core.catalog.current().resources().to_vec()
    }

    /// One API; `NotFound` without it.
    pub fn get(&self, id: &str) -> Result<Resource> {
        let catalog = self.core.catalog.current();
        catalog.resource(id).cloned().ok_or(Error::NotFound)
    }

    /// Declares an API; `VALIDATION_ERROR` naming the fault, 409 when its id, audience or a
    /// scope is another API's.
    pub async fn create(&self, op: Operator<'_>, input: ResourceInput) -> Result<Resource> {
        let resource = resource_of(input);
        let catalog = self.core.catalog.sync(&self.core.store).await?;
        let audience = resource.audience.as_deref();
        if catalog.resource(&resource.id).is_some()
            || audience.is_some_and(|a| catalog.by_audience(a).is_some())
        {
            return Err(Error::Conflict(Conflict::ResourceTaken));
        }
        self.check(&resource, &catalog)?;
        let now = self.core.clock.now_ms();
        if !self.core.store.insert_resource(&resource, now).await? {
            return Err(Error::Conflict(Conflict::ResourceTaken));
        }
        self.core.catalog.sync(&self.core.store).await?;
        let event = AuditEvent::ResourceAdded {
            resource: resource.id.clone(),
            by: op.actor(),
        };
        self.core.audit_by(op, event, None).await;
        Ok(resource)
    }

    /// Changes an operator's API (those of the settings change in the settings only).
    pub async fn update(
        &self,
        op: Operator<'_>,
        id: &str,
        changes: ResourceChanges,
    ) -> Result<Resource> {
        let catalog = self.core.catalog.sync(&self.core.store).await?;
        let current = catalog.resource(id).cloned().ok_or(Error::NotFound)?;
        if current.origin != ResourceOrigin::Operator {
            return Err(Error::Conflict(Conflict::ResourceInSettings));
        }
        let resource = Resource {
            name: changes.name.unwrap_or(current.name),
            audience: changes.audience.unwrap_or(current.audience),
            scopes: match changes.scopes {
                Some(scopes) => scopes_of(scopes),
                None => current.scopes,
            },
            ..current
        };
        let others: Vec<Resource> = (catalog.resources().iter())
            .filter(|r| r.id != id)
            .cloned()
            .collect();
        self.check(&resource, &Catalog::new(others))?;
        let now = self.core.clock.now_ms();
        match self.core.store.update_resource(&resource, now).await? {
            None => return Err(Error::NotFound),
            Some(false) => return Err(Error::Conflict(Conflict::ResourceTaken)),
            Some(true) => {}
        }
        self.core.catalog.sync(&self.core.store).await?;
        let event = AuditEvent::ResourceChanged {
            resource: resource.id.clone(),
            by: op.actor(),
        };
        self.core.audit_by(op, event, None).await;
        Ok(resource)
    }

    /// Removes an operator's API: its scopes are no scopes any more (clients registered for
    /// them are asked for them in vain, `invalid_scope`; tokens issued keep them until they
    /// expire).
    pub async fn remove(&self, op: Operator<'_>, id: &str) -> Result<()> {
        let catalog = self.core.catalog.current();
        if catalog
            .resource(id)
            .is_some_and(|r| r.origin != ResourceOrigin::Operator)
        {
            return Err(Error::Conflict(Conflict::ResourceInSettings));
        }
        if !self.core.store.delete_resource(id).await? {
            return Err(Error::NotFound);
        }
        self.core.catalog.sync(&self.core.store).await?;
        let event = AuditEvent::ResourceRemoved {
            resource: id.to_owned(),
            by: op.actor(),
        };
        self.core.audit_by(op, event, None).await;
        Ok(())
    }

    /// `Resource::check`, the settings' rules, with the service's own audiences reserved:
    /// `GATEHOUSE_AUDIENCE` (leave `audience` out for it), the issuer, `GATEHOUSE_OAUTH_RESOURCES`.
    fn check(&self, resource: &Resource, others: &Catalog) -> Result<()> {
        let tokens = &self.core.tokens;
        let mut reserved = vec![tokens.audience(), tokens.issuer()];
        reserved.extend(tokens.settings_resources());
        resource
            .check(others, &reserved)
            .map_err(|fault| Error::field(fault.field, fault.reason))
    }
}

fn scopes_of(scopes: Vec<(String, String)>) -> Vec<ResourceScope> {
    scopes
        .into_iter()
        .map(|(name, description)| ResourceScope {
            name,
            description: description.trim().to_owned(),
        })
        .collect()
}

fn resource_of(input: ResourceInput) -> Resource {
    Resource {
        id: input.id,
        name: input.name.trim().to_owned(),
        audience: input.audience,
        scopes: scopes_of(input.scopes),
        origin: ResourceOrigin::Operator,
    }
}
