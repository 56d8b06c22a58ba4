//! `/api/v1/auth/…`: login, second factor, refresh, the caller's account, sessions and 2FA; a
//! file per group of calls, their answers in `views`.

use utoipa_axum::router::OpenApiRouter;

use secrecy::SecretString;

use super::AppState;
use crate::error::{Result, Validator};

mod account;
pub mod api_keys;
mod browser;
pub(crate) mod connected_apps;
mod consents;
pub(crate) mod identities;
mod login;
mod mail;
mod passkeys;
mod reauth;
mod sessions;
mod two_factor;
pub mod views;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .merge(login::router())
        .merge(sessions::router())
        .merge(consents::router())
        .merge(connected_apps::router())
        .merge(browser::router())
        .merge(account::router())
        .merge(reauth::router())
        .merge(two_factor::router())
        .merge(passkeys::router())
        .merge(api_keys::router())
        .merge(identities::router())
        .merge(mail::router())
}

fn non_empty(value: String) -> Result<String, String> {
    if value.is_empty() {
        Err("is required".into())
    } else {
        Ok(value)
    }
}

/// A password field of a call the re-authentication window can stand in for (`auth::reauth`):
/// empty or absent, the session's window is asked instead.
fn password_or_window(raw: String) -> Option<SecretString> {
    (!raw.is_empty()).then(|| SecretString::from(raw))
}

/// A code field: trimmed, required.
fn code(raw: String) -> Result<String> {
    let mut v = Validator::new();
    let code = v.check("code", non_empty(raw.trim().to_owned()));
    v.finish(code)
}
