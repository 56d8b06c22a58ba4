//! What a starting server tells its operator besides `listening on`: where the pages are, whether
//! passkeys and the OpenID provider are on (when off, why, and how to turn them on), and, before
//! the first account, the command that makes one. `gatehouse check` prints the same lines.

use crate::config::Settings;
use crate::store::Store;

/// Where a person signs in.
pub fn pages(settings: &Settings) -> String {
    let url = &settings.public_url;
    let docs = if settings.docs {
        format!("; the API reference at {url}/docs")
    } else {
        String::new()
    };
    format!("pages at {url}/sign-in (GATEHOUSE_PUBLIC_URL){docs}")
}

/// Whether passkeys are on, for which relying party; when off, why and what turns them on.
pub fn passkeys(settings: &Settings) -> Result<String, String> {
    match &settings.webauthn {
        Some(rp) => Ok(format!(
            "passkeys on for the relying party {} (pages at {})",
            rp.id,
            rp.origins.join(", ")
        )),
        None => Err(format!(
            "passkeys are off: the host of GATEHOUSE_PUBLIC_URL ({}) is an IP address, and browsers \
             bind passkeys to a domain only; set GATEHOUSE_PUBLIC_URL to the URL people open, with \
             a domain (https://login.example.com; http://localhost:8080 to try it on this machine), \
             or GATEHOUSE_WEBAUTHN_RP_ID and GATEHOUSE_WEBAUTHN_ORIGINS",
            settings.public_url
        )),
    }
}

/// Whether the OpenID provider is on, with which issuer; when off, what turns it on.
pub fn provider(settings: &Settings) -> Result<String, String> {
    match settings.provider_issuer() {
        Some(issuer) => Ok(format!(
            "OpenID provider on: issuer {issuer}, discovery at {}/.well-known/openid-configuration",
            settings.public_url
        )),
        None => Err(format!(
            "OpenID provider off: the issuer ({}) is not an absolute http(s) URL; set \
             GATEHOUSE_PUBLIC_URL (the issuer defaults to it) or GATEHOUSE_ISSUER to turn it on",
            settings.issuer
        )),
    }
}

/// Before the first account: how to make the first administrator.
pub fn no_accounts(settings: &Settings) -> String {
    format!(
        "no accounts yet: make the first admin with `gatehouse user add --email you@example.com \
         --name \"Your Name\" --role admin --password-stdin` (the password on standard input; \
         run it with this server's settings), then sign in at {}/sign-in",
        settings.public_url
    )
}

/// Logs the lines above, once the services are open.
pub async fn report(settings: &Settings, store: &Store) {
    tracing::info!("{}", pages(settings));
    match passkeys(settings) {
        Ok(line) => tracing::info!("{line}"),
        Err(line) => tracing::warn!("{line}"),
    }
    match provider(settings) {
        Ok(line) | Err(line) => tracing::info!("{line}"),
    }
    match store.has_accounts().await {
        Ok(false) => tracing::info!("{}", no_accounts(settings)),
        Ok(true) => {}
        Err(error) => tracing::debug!(error = %error, "cannot count the accounts"),
    }
}
