//! Where a setting's value comes from: the flag or environment variable (merged by clap), else
//! the settings file, else the default; and the common ways of reading it, each failing with the
//! one line that names the setting.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use super::values::{
    Setting, SettingsError, parse_addr, parse_choice, parse_count, parse_duration, read_file,
};

type Given<'a> = &'a Option<String>;

/// The settings file, read once, and the lookups every setting goes through.
pub(super) struct Source {
    file: BTreeMap<String, String>,
}

impl Source {
    pub(super) fn read(config: Option<&Path>) -> Result<Source, SettingsError> {
        let file = match config {
            Some(path) => read_file(path)?,
            None => BTreeMap::new(),
        };
        Ok(Source { file })
    }

    /// No settings file: flags and variables only.
    #[cfg(test)]
    pub(super) fn empty() -> Source {
        Source {
            file: BTreeMap::new(),
        }
    }

    /// The value given as a flag or variable, else the file's; `None` when neither has one.
    pub(super) fn pick(&self, key: &'static str, given: Given<'_>) -> Option<String> {
        given.clone().or_else(|| self.file.get(key).cloned())
    }

    /// The value, else the default, with the setting to name in an error.
    pub(super) fn get(
        &self,
        key: &'static str,
        given: Given<'_>,
        default: &str,
    ) -> (Setting, String) {
        let value = self.pick(key, given).unwrap_or_else(|| default.to_owned());
        (Setting { key }, value)
    }

    pub(super) fn duration(
        &self,
        key: &'static str,
        given: Given<'_>,
        default: &str,
    ) -> Result<Duration, SettingsError> {
        let (setting, value) = self.get(key, given, default);
        parse_duration(&setting, &value)
    }

    pub(super) fn count(
        &self,
        key: &'static str,
        given: Given<'_>,
        default: &str,
    ) -> Result<usize, SettingsError> {
        let (setting, value) = self.get(key, given, default);
        parse_count(&setting, &value)
    }

    pub(super) fn addr(
        &self,
        key: &'static str,
        given: Given<'_>,
        default: &str,
    ) -> Result<SocketAddr, SettingsError> {
        let (setting, value) = self.get(key, given, default);
        parse_addr(&setting, &value)
    }

    /// `true` for the first of `(yes, no)`, `false` for the second.
    pub(super) fn choice(
        &self,
        key: &'static str,
        given: Given<'_>,
        default: &str,
        words: (&str, &str),
    ) -> Result<bool, SettingsError> {
        let (setting, value) = self.get(key, given, default);
        parse_choice(&setting, &value, words)
    }

    /// A string that must not be blank.
    pub(super) fn text(
        &self,
        key: &'static str,
        given: Given<'_>,
        default: &str,
    ) -> Result<String, SettingsError> {
        let (setting, value) = self.get(key, given, default);
        if value.trim().is_empty() {
            return Err(setting.invalid(&value, "must not be empty"));
        }
        Ok(value)
    }
}
