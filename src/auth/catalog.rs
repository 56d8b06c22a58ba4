//! The vocabulary of business APIs and scopes as this instance knows it (`CatalogCell`): the
//! settings' resources and the operator's as last read from the database. `Core` and the token
//! issuer hold it and every flow reads it; `resources` changes what it holds.

use std::sync::{Arc, RwLock};
use std::time::Duration;

use super::live::{read, write};
use crate::error::Result;
use crate::model::Resource;
use crate::model::resources::Catalog;
use crate::store::Store;

/// How often an instance reads the operator's resources again.
pub const SYNC_INTERVAL: Duration = Duration::from_secs(1);

/// The vocabulary now: the settings' resources and the database's as last read.
pub struct CatalogCell {
    settings: Vec<Resource>,
    current: RwLock<Arc<Catalog>>,
}

impl CatalogCell {
    /// The settings' resources and those of the database now.
    pub async fn load(store: &Store, settings: Vec<Resource>) -> Result<CatalogCell> {
        let cell = CatalogCell {
            current: RwLock::new(Arc::new(Catalog::new(settings.clone()))),
            settings,
        };
        cell.sync(store).await?;
        Ok(cell)
    }

    /// The catalog as this instance knows it (at most `SYNC_INTERVAL` old).
    pub fn current(&self) -> Arc<Catalog> {
        read(&self.current).clone()
    }

    /// Reads the operator's resources again; the new catalog, which replaces the old one.
    pub async fn sync(&self, store: &Store) -> Result<Arc<Catalog>> {
        let mut all = self.settings.clone();
        all.extend(store.resources().await?);
        let catalog = Arc::new(Catalog::new(all));
        *write(&self.current) = catalog.clone();
        Ok(catalog)
    }
}
