//! The settings of the tokens Gatehouse signs: who issues them (and so whether the OpenID
//! provider is on), with which algorithm, and how long they live.

use std::time::Duration;

use super::SettingsArgs;
use super::source::Source;
use super::values::{Setting, SettingsError};
use crate::crypto::SigningAlg;

/// EdDSA unless resource servers need ES256 or RS256 (JWT libraries without EdDSA: go-oidc, cjose).
pub(super) fn access_token_alg(
    src: &Source,
    args: &SettingsArgs,
) -> Result<SigningAlg, SettingsError> {
    let (setting, value) = src.get("access_token_alg", &args.access_token_alg, "EdDSA");
    value
        .parse()
        .map_err(|e: crate::crypto::UnknownAlg| setting.invalid(&value, &e.to_string()))
}

/// The issuer every build before 5251118 gave tokens when none was set, whatever the public URL.
pub const FORMER_DEFAULT_ISSUER: &str = "gatehouse";

/// The issuer this deployment's refresh tokens may still name from before an upgrade: the former
/// default, when the issuer now comes from the public URL (neither set explicitly, so the change
/// of default changed it). `None` when the issuer is set, or is that default still.
pub(super) fn former_issuer(src: &Source, args: &SettingsArgs, issuer: &str) -> Option<String> {
    let derived = src.pick("issuer", &args.issuer).is_none() && issuer != FORMER_DEFAULT_ISSUER;
    derived.then(|| FORMER_DEFAULT_ISSUER.to_owned())
}

/// The `iss` of the tokens: without one, the public URL once that is set (OAuth libraries want a
/// URL), else `gatehouse` (API.md §4).
pub(super) fn issuer(
    src: &Source,
    args: &SettingsArgs,
    public_url: &str,
) -> Result<String, SettingsError> {
    match src.pick("issuer", &args.issuer) {
        Some(issuer) if issuer.trim().is_empty() => {
            Err(Setting { key: "issuer" }.invalid(&issuer, "must not be empty"))
        }
        Some(issuer) => Ok(issuer),
        None if src.pick("public_url", &args.public_url).is_some() => Ok(public_url.to_owned()),
        None => Ok(FORMER_DEFAULT_ISSUER.to_owned()),
    }
}

/// The access and refresh tokens' lifetimes. A session ends when its refresh token lapses; an
/// access token outliving it would keep a lapsed session usable.
pub(super) fn token_lifetimes(
    src: &Source,
    args: &SettingsArgs,
) -> Result<(Duration, Duration), SettingsError> {
    let access = src.duration("access_token_ttl", &args.access_token_ttl, "24h")?;
    let refresh = src.duration("refresh_token_ttl", &args.refresh_token_ttl, "30d")?;
    if access > refresh {
        return Err(SettingsError(format!(
            "GATEHOUSE_ACCESS_TOKEN_TTL ({}s) must not be longer than GATEHOUSE_REFRESH_TOKEN_TTL ({}s)",
            access.as_secs(),
            refresh.as_secs()
        )));
    }
    Ok((access, refresh))
}

/// `GATEHOUSE_OAUTH_RESOURCES`: the resource servers (RFC 8707) a client may ask tokens for,
/// beside `GATEHOUSE_AUDIENCE`. Each is kept exactly as written, because resource indicators are
/// compared as strings (MCP clients send their server's metadata `resource` verbatim, and
/// `https://mcp.example` and `https://mcp.example/` are two indicators).
pub(super) fn oauth_resources(
    src: &Source,
    args: &SettingsArgs,
    issuer: &str,
    audience: &str,
) -> Result<Vec<String>, SettingsError> {
    let (setting, value) = src.get("oauth_resources", &args.oauth_resources, "");
    let mut resources: Vec<String> = Vec::new();
    for resource in value.split(',').map(str::trim).filter(|r| !r.is_empty()) {
        if !crate::addresses::is_service_url(resource) {
            return Err(setting.invalid(
                resource,
                "is not an absolute http(s) URL without query or fragment",
            ));
        }
        // A refresh token's `aud` is the issuer: were it also an access token's audience, only
        // `typ` would keep the two apart.
        if resource == issuer {
            return Err(setting.invalid(resource, "must not be the issuer (GATEHOUSE_ISSUER)"));
        }
        if resource != audience && !resources.iter().any(|r| r == resource) {
            resources.push(resource.to_owned());
        }
    }
    Ok(resources)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resources(value: &str) -> Result<Vec<String>, SettingsError> {
        let args = SettingsArgs {
            oauth_resources: Some(value.to_owned()),
            ..SettingsArgs::default()
        };
        oauth_resources(
            &Source::empty(),
            &args,
            "https://login.example.com",
            "gatehouse-api",
        )
    }

    #[test]
    fn resources_are_urls_kept_as_written() {
        assert_eq!(resources("").unwrap(), Vec::<String>::new());
        assert_eq!(
            resources(
                " https://mcp.example.com/mcp , http://127.0.0.1:9000,https://mcp.example.com/mcp"
            )
            .unwrap(),
            ["https://mcp.example.com/mcp", "http://127.0.0.1:9000"]
        );
        for bad in [
            "mcp.example.com",
            "urn:example:api",
            "https://mcp.example.com/#f",
            "https://mcp.example.com/?tenant=1",
            "https://u:p@mcp.example.com/",
            "ftp://mcp.example.com/",
            "https://login.example.com",
            "gatehouse-api",
        ] {
            let err = resources(bad).unwrap_err().to_string();
            assert!(err.contains("GATEHOUSE_OAUTH_RESOURCES"), "{err}");
        }
    }
}
