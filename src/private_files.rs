//! Files that hold secrets: the SQLite database (password hashes, encrypted TOTP secrets and
//! signing keys, sessions) and the master key file that decrypts them. Both are made readable by
//! their owner only, and a start with either open to other users is warned about, since together
//! they are every account's secrets. (`#![forbid(unsafe_code)]` rules out setting the umask; the
//! mode is given where each file is created instead.)

use std::io;
use std::path::Path;

/// Creates `path` empty, mode 0600, unless it exists. SQLite, left to create the database, would
/// make it 0644 (the usual umask); an empty file is a valid empty database to it, and it gives the
/// `-wal` and `-shm` files it creates later the database file's mode.
pub fn create_owner_only(path: &Path) -> io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    match options.open(path) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    }
}

/// Creates `path` empty, mode 0600; fails if it exists (a backup never replaces a file).
pub fn create_new_owner_only(path: &Path) -> io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path).map(|_| ())
}

/// Logs a warning if `path` can be read or written by anyone but its owner.
pub fn warn_if_shared(path: &Path, what: &str) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let Ok(metadata) = std::fs::metadata(path) else {
            return;
        };
        let mode = metadata.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            tracing::warn!(
                path = %path.display(),
                mode = %format_args!("{mode:o}"),
                "the {what} is open to users other than its owner: chmod 600 it"
            );
        }
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    #[test]
    fn a_new_file_is_owner_only_and_an_existing_one_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("new.db");
        create_owner_only(&path).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o600);

        let existing = dir.path().join("old.db");
        std::fs::write(&existing, b"data").unwrap();
        std::fs::set_permissions(&existing, std::fs::Permissions::from_mode(0o640)).unwrap();
        create_owner_only(&existing).unwrap();
        assert_eq!(mode(&existing), 0o640);
        assert_eq!(std::fs::read(&existing).unwrap(), b"data");
    }
}
