//! `gatehouse backup PATH` (docs/api.md §4): a SQLite database copied, while the service runs, into
//! one consistent file, and its master key file beside it, both mode 0600; the copy is checked
//! (its structure, and that the key opens its signing key) before the command says it is done.
//! PostgreSQL is backed up with `pg_dump`: the command says what to run, and fails, since it made
//! no backup.

use std::path::{Path, PathBuf};

use anyhow::Context as _;

use crate::auth::keys::Keyring;
use crate::config::Settings;
use crate::crypto::Secrets;
use crate::private_files;
use crate::services::{absolute, connect_store, key_file_path, read_key_file};
use crate::store::Store;

/// The key file's name beside a backup at `path`: `PATH.master.key`.
pub fn key_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".master.key");
    PathBuf::from(name)
}

pub(super) async fn backup(settings: &Settings, path: &Path) -> anyhow::Result<()> {
    let Some(db) = settings.sqlite_path() else {
        anyhow::bail!(
            "gatehouse backup copies SQLite databases; back up PostgreSQL with its own tool: \
             pg_dump --format=custom --file={} '{}' (any time, also while serving), and keep \
             GATEHOUSE_MASTER_KEY with it: the dump's secrets are sealed under that key",
            path.display(),
            settings.database_url
        );
    };
    let path = absolute(path);
    let key_copy = key_path(&path);
    for target in [&path, &key_copy] {
        if target.exists() {
            anyhow::bail!("{} exists already: give a new path", target.display());
        }
    }
    if !db.exists() {
        anyhow::bail!("there is no database at {}", absolute(&db).display());
    }
    // The key first: a database copied without its key would be no backup.
    let key = match &settings.master_key {
        Some(key) => key.clone(),
        None => {
            let file = absolute(&key_file_path(&db));
            read_key_file(&file)?.with_context(|| {
                format!(
                    "no master key file at {}: there is nothing to back up it with",
                    file.display()
                )
            })?
        }
    };
    let store = connect_store(settings).await?;
    let copied = copy(&store, &path, &key).await;
    store.close().await;
    if let Err(error) = copied {
        let _ = std::fs::remove_file(&path);
        return Err(error);
    }
    let keyed = match &settings.master_key {
        Some(_) => {
            "the master key is GATEHOUSE_MASTER_KEY, which is not in it: keep it with the backup"
                .to_owned()
        }
        None => {
            write_key(&key_copy, &key).with_context(|| {
                format!("cannot write the master key file {}", key_copy.display())
            })?;
            format!("the master key into {} (0600)", key_copy.display())
        }
    };
    let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    eprintln!(
        "gatehouse: backed up {} into {} ({size} bytes, 0600, checked); {keyed}",
        absolute(&db).display(),
        path.display()
    );
    Ok(())
}

/// The copy, made owner-only before SQLite writes into it, then opened and checked.
async fn copy(store: &Store, path: &Path, key: &crate::config::MasterKey) -> anyhow::Result<()> {
    private_files::create_new_owner_only(path)
        .with_context(|| format!("cannot create {}", path.display()))?;
    let target = path.to_str().context("the backup path is not UTF-8")?;
    store
        .backup_into(target)
        .await
        .with_context(|| format!("cannot copy the database into {}", path.display()))?;
    let copy = Store::connect(&format!("sqlite://{target}"))
        .await
        .with_context(|| format!("cannot open the copy {}", path.display()))?;
    let checked = async {
        let verdict = copy.quick_check().await?;
        if verdict != "ok" {
            anyhow::bail!("the copy {} is damaged: {verdict}", path.display());
        }
        Keyring::active_kids(&copy, &Secrets::new(key)).await?;
        Ok(())
    }
    .await;
    copy.close().await;
    checked
}

fn write_key(path: &Path, key: &crate::config::MasterKey) -> std::io::Result<()> {
    use std::io::Write as _;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path)?;
    writeln!(file, "{}", key.encode())?;
    file.sync_all()
}
