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
        // Browsers run passkey ceremonies only in a secure context: https, or localhost.
        Some(rp) if rp.origins.iter().any(|o| insecure_origin(o)) => Err(format!(
            "passkeys will not work: browsers refuse them on a page that is not https (or \
             localhost), and the pages are at {}; put the service behind TLS, its public URL \
             https://…",
            rp.origins.join(", ")
        )),
        Some(rp) => Ok(format!(
            "passkeys on for the relying party {} (pages at {}); a passkey is bound to {} for \
             good: another GATEHOUSE_WEBAUTHN_RP_ID later voids every passkey made before",
            rp.id,
            rp.origins.join(", "),
            rp.id
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

/// An origin that is not a secure context for browsers: `http` on a host other than a loopback
/// one (`localhost`, `*.localhost`, a loopback address).
fn insecure_origin(origin: &str) -> bool {
    let Ok(url) = url::Url::parse(origin) else {
        return false;
    };
    let local = crate::addresses::is_loopback(&url)
        || url.host_str().is_some_and(|h| h.ends_with(".localhost"));
    url.scheme() == "http" && !local
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

#[cfg(test)]
mod tests {
    use super::insecure_origin;

    #[test]
    fn only_plain_http_away_from_this_machine_is_insecure() {
        for secure in [
            "https://login.example.com",
            "http://localhost:8080",
            "http://app.localhost",
            "http://127.0.0.1:3000",
            "http://[::1]:3000",
        ] {
            assert!(!insecure_origin(secure), "{secure}");
        }
        for insecure in ["http://login.example.com", "http://192.168.1.5:8080"] {
            assert!(insecure_origin(insecure), "{insecure}");
        }
    }
}
