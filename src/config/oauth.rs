//! The OpenID provider's settings of how clients come and prove themselves (docs/api.md §11,
//! §12): dynamic client registration, client ID metadata documents, and DPoP nonces.

use super::SettingsArgs;
use super::source::Source;

/// `GATEHOUSE_OAUTH_REGISTRATION`: who may call `POST /oauth2/register`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RegistrationMode {
    /// Nobody: the endpoint is 404, as if it did not exist.
    #[default]
    Off,
    /// Whoever holds an initial access token (`gatehouse clients registration-token`).
    Token,
    /// Anyone (throttled per address).
    Open,
}

#[derive(Debug, Clone, Copy, Default)]
pub struct ClientRegistration {
    pub mode: RegistrationMode,
    /// `GATEHOUSE_OAUTH_CLIENT_METADATA_DOCUMENTS=on`: an https `client_id` is fetched.
    pub metadata_documents: bool,
    /// The tests' switch (`SettingsArgs::oauth_client_metadata_insecure_loopback`, in code
    /// only): documents may also be fetched over http from a loopback address.
    pub insecure_loopback: bool,
    /// `GATEHOUSE_OAUTH_DPOP_NONCE=required`: a DPoP proof at the token endpoint must carry a
    /// nonce this server gave (RFC 9449 §8).
    pub dpop_nonce: bool,
}

pub(super) fn resolve(
    src: &Source,
    args: &SettingsArgs,
) -> Result<ClientRegistration, super::SettingsError> {
    let (setting, value) = src.get("oauth_registration", &args.oauth_registration, "off");
    let mode = match value.trim().to_ascii_lowercase().as_str() {
        "off" => RegistrationMode::Off,
        "token" => RegistrationMode::Token,
        "open" => RegistrationMode::Open,
        _ => return Err(setting.invalid(&value, "must be off, token or open")),
    };
    // Retired: it turned the metadata fetch's address rules off, for tests, which now set it in
    // code. A settings file written before (deployment.md's example said "off") still starts;
    // "on" is refused rather than quietly doing nothing.
    let (_, retired) = src.get("oauth_client_metadata_insecure_loopback", &None, "off");
    if !retired.trim().eq_ignore_ascii_case("off") {
        return Err(super::SettingsError(format!(
            "oauth_client_metadata_insecure_loopback {retired:?} is no longer a setting: the \
             metadata fetch's address rules cannot be turned off; remove the line"
        )));
    }
    Ok(ClientRegistration {
        mode,
        metadata_documents: src.choice(
            "oauth_client_metadata_documents",
            &args.oauth_client_metadata_documents,
            "off",
            ("on", "off"),
        )?,
        insecure_loopback: args.oauth_client_metadata_insecure_loopback,
        dpop_nonce: src.choice(
            "oauth_dpop_nonce",
            &args.oauth_dpop_nonce,
            "off",
            ("required", "off"),
        )?,
    })
}
