//! The `.eml` mailbox of development and tests: one file per mail, named
//! `TIME-kind-recipient.eml` (e.g. `20261124T112207.123Z-reset-ann@example.com.eml`), so that `ls`
//! sorts them by time and shows whom each is for. Written in the service user's private folder
//! (`Transport::prepare`), readable by that user only: the files hold live links.

use std::path::{Path, PathBuf};

use time::OffsetDateTime;

/// The longest recipient part of a name (file names stay well under the usual 255 bytes).
const MAX_RECIPIENT: usize = 100;

/// The file name of a mail of `kind` to `recipient`, written at `at_ms` (UTC). Every character
/// of the address that is not a letter, digit or one of `@ . _ + -` becomes `_`: an address may
/// hold `/`, quotes or spaces (`"a b"@example.com`), none of which a file name should.
pub fn name(at_ms: i64, kind: &str, recipient: &str) -> String {
    let time = OffsetDateTime::from_unix_timestamp_nanos(i128::from(at_ms) * 1_000_000)
        .unwrap_or(OffsetDateTime::UNIX_EPOCH);
    let stamp = format!(
        "{:04}{:02}{:02}T{:02}{:02}{:02}.{:03}Z",
        time.year(),
        u8::from(time.month()),
        time.day(),
        time.hour(),
        time.minute(),
        time.second(),
        time.millisecond()
    );
    let recipient: String = recipient
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "@._+-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .take(MAX_RECIPIENT)
        .collect();
    let kind: String = kind
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    format!("{stamp}-{kind}-{recipient}")
}

/// Writes `message` to `dir/name.eml`, or `dir/name-2.eml` and so on when that exists (two mails of
/// one kind to one address in one millisecond); never replaces a file. Returns its path.
pub async fn write(dir: &Path, name: &str, message: &[u8]) -> std::io::Result<PathBuf> {
    let (dir, name, message) = (dir.to_owned(), name.to_owned(), message.to_owned());
    tokio::task::spawn_blocking(move || write_now(&dir, &name, &message))
        .await
        .map_err(std::io::Error::other)?
}

fn write_now(dir: &Path, name: &str, message: &[u8]) -> std::io::Result<PathBuf> {
    use std::io::Write as _;
    let mut n = 1;
    loop {
        let path = match n {
            1 => dir.join(format!("{name}.eml")),
            n => dir.join(format!("{name}-{n}.eml")),
        };
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        match options.open(&path) {
            Ok(mut file) => {
                file.write_all(message)?;
                file.sync_all()?;
                return Ok(path);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && n < 1000 => n += 1,
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_sort_by_time_and_show_the_kind_and_recipient() {
        assert_eq!(
            name(1_795_000_000_123, "reset", "Ann@Example.com"),
            "20261118T110640.123Z-reset-Ann@Example.com"
        );
        assert!(name(0, "notice", "a@b.c") < name(1, "notice", "a@b.c"));
    }

    #[test]
    fn characters_a_file_name_should_not_hold_are_replaced() {
        let n = name(0, "email_change", "\"a/b c\"@[192.0.2.1]");
        assert_eq!(n, "19700101T000000.000Z-email_change-_a_b_c_@_192.0.2.1_");
        let n = name(0, "../x", &format!("{}@example.com", "a".repeat(300)));
        assert!(n.starts_with("19700101T000000.000Z-___x-aaa"), "{n}");
        assert!(!n.contains('/') && n.len() < 150);
    }

    #[tokio::test]
    async fn a_second_mail_of_the_same_name_gets_a_file_of_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let first = write(dir.path(), "x", b"one").await.unwrap();
        let second = write(dir.path(), "x", b"two").await.unwrap();
        assert_eq!(first.file_name().unwrap(), "x.eml");
        assert_eq!(second.file_name().unwrap(), "x-2.eml");
        assert_eq!(std::fs::read(first).unwrap(), b"one");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(second).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }
}
