//! The identity providers file (`GATEHOUSE_IDENTITY_PROVIDERS`, docs/api.md §14): the upstream
//! OpenID providers people may sign in through. Read and checked whole at start: a bad file stops
//! the start with one line naming the provider, so a typo never runs as a half-configured provider.

use std::path::Path;

use secrecy::SecretString;
use serde::Deserialize;
use url::Url;

use crate::addresses;
use crate::upstream::ProviderConfig;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    #[serde(default)]
    provider: Vec<toml::Value>,
}

/// One `[[provider]]` as written; §14's keys only.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawProvider {
    id: String,
    name: String,
    issuer: Option<String>,
    client_id: String,
    client_secret: Option<String>,
    client_secret_file: Option<String>,
    scopes: Option<Vec<String>>,
    domains: Option<Vec<String>>,
    org: Option<String>,
    #[serde(default)]
    signup: bool,
    #[serde(default)]
    trust_second_factor: bool,
}

/// The providers of the file at `path`.
pub(super) fn load(path: &Path) -> Result<Vec<ProviderConfig>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    parse(&text)
}

/// The providers of a file's text; the first fault, as one line naming the provider.
pub(super) fn parse(text: &str) -> Result<Vec<ProviderConfig>, String> {
    let file: RawFile = toml::from_str(text)
        .map_err(|e| format!("not a providers file: {}", one_line(&e.to_string())))?;
    let mut providers: Vec<ProviderConfig> = Vec::with_capacity(file.provider.len());
    for (i, value) in file.provider.into_iter().enumerate() {
        // The id, when there is one as text, names the provider even when the rest is wrong.
        let label = match value.get("id").and_then(toml::Value::as_str) {
            Some(id) => format!("provider {id:?}"),
            None => format!("provider {}", i + 1),
        };
        let provider = value
            .try_into::<RawProvider>()
            .map_err(|e| one_line(&e.to_string()))
            .and_then(check)
            .map_err(|reason| format!("{label}: {reason}"))?;
        if providers.iter().any(|p| p.id == provider.id) {
            return Err(format!("{label}: the id is used by an earlier provider"));
        }
        for domain in &provider.domains {
            if let Some(other) = providers.iter().find(|p| overlaps(&p.domains, domain)) {
                return Err(format!(
                    "{label}: the domain {domain:?} is already claimed by provider {:?}",
                    other.id
                ));
            }
        }
        providers.push(provider);
    }
    Ok(providers)
}

/// Whether `domain` is, contains or lies under one of `domains` (a listed domain covers its
/// subdomains, so `acme.example` and `eu.acme.example` at two providers would be ambiguous).
fn overlaps(domains: &[String], domain: &str) -> bool {
    domains.iter().any(|d| {
        d == domain || domain.ends_with(&format!(".{d}")) || d.ends_with(&format!(".{domain}"))
    })
}

fn check(raw: RawProvider) -> Result<ProviderConfig, String> {
    let id_ok = (1..=32).contains(&raw.id.len())
        && raw
            .id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    if !id_ok {
        return Err("the id must be 1 to 32 of a-z, 0-9 and -".into());
    }
    if raw.name.trim().is_empty() {
        return Err("name must not be empty".into());
    }
    let issuer = issuer(raw.issuer.as_deref())?;
    if raw.client_id.trim().is_empty() {
        return Err("client_id must not be empty".into());
    }
    let client_secret = client_secret(raw.client_secret, raw.client_secret_file.as_deref())?;
    let mut scopes = raw
        .scopes
        .unwrap_or_else(|| vec!["openid".into(), "email".into(), "profile".into()]);
    if let Some(bad) = scopes.iter().find(|s| {
        s.is_empty()
            || s.chars()
                .any(|c| c.is_whitespace() || c == '"' || c == '\\')
    }) {
        return Err(format!("scopes: {bad:?} is not a scope"));
    }
    if !scopes.iter().any(|s| s == "openid") {
        scopes.insert(0, "openid".into());
    }
    let mut seen = std::collections::HashSet::new();
    scopes.retain(|s| seen.insert(s.clone()));
    let domains = raw
        .domains
        .unwrap_or_default()
        .into_iter()
        .map(|d| domain(&d))
        .collect::<Result<Vec<_>, _>>()?;
    let org = match raw.org {
        Some(org) if org.trim().is_empty() => return Err("org must not be empty".into()),
        org => org,
    };
    Ok(ProviderConfig {
        id: raw.id,
        name: raw.name,
        issuer,
        client_id: raw.client_id,
        client_secret,
        scopes,
        domains,
        org,
        signup: raw.signup,
        trust_second_factor: raw.trust_second_factor,
    })
}

/// An absolute https URL without query or fragment (OpenID Connect Discovery §4); http only on a
/// loopback host, for tests and a provider on the same machine.
fn issuer(value: Option<&str>) -> Result<Url, String> {
    let value = value.ok_or("issuer is missing")?;
    let url = Url::parse(value).map_err(|e| format!("issuer {value:?} is not a URL: {e}"))?;
    if url.query().is_some() || url.fragment().is_some() {
        return Err(format!("issuer {value:?} must have no query or fragment"));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(format!(
            "issuer {value:?} must carry no user name or password"
        ));
    }
    match url.scheme() {
        "https" => Ok(url),
        "http" if addresses::is_loopback(&url) => Ok(url),
        "http" => Err(format!(
            "issuer {value:?} must be https (http only on a loopback address)"
        )),
        _ => Err(format!("issuer {value:?} must be an https URL")),
    }
}

/// The secret, given inline or in a file (its trailing newline trimmed); exactly one of the two.
fn client_secret(inline: Option<String>, file: Option<&str>) -> Result<SecretString, String> {
    let secret = match (inline, file) {
        (Some(_), Some(_)) => {
            return Err("give client_secret or client_secret_file, not both".into());
        }
        (None, None) => return Err("client_secret or client_secret_file is missing".into()),
        (Some(secret), None) => secret,
        // The error names the file, never its content.
        (None, Some(path)) => {
            let mut text = std::fs::read_to_string(path)
                .map_err(|e| format!("cannot read client_secret_file {path}: {e}"))?;
            let kept = text.trim_end_matches(['\n', '\r']).len();
            text.truncate(kept);
            text
        }
    };
    if secret.is_empty() {
        return Err("the client secret is empty".into());
    }
    Ok(SecretString::from(secret))
}

/// A domain as addresses are compared: lower case, no leading dot.
fn domain(value: &str) -> Result<String, String> {
    let domain = value.trim().trim_start_matches('.').to_ascii_lowercase();
    let valid = !domain.is_empty()
        && domain.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        });
    if !valid {
        return Err(format!("domains: {value:?} is not a domain name"));
    }
    Ok(domain)
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use secrecy::ExposeSecret as _;

    use super::*;

    const GOOD: &str = r#"
[[provider]]
id = "acme-sso"
name = "Acme single sign-on"
issuer = "https://login.acme.example"
client_id = "gatehouse"
client_secret = "s3cret"
domains = ["Acme.Example", ".eu.other.example"]
org = "acme"
signup = true
"#;

    fn refused(text: &str) -> String {
        parse(text).map(|_| ()).unwrap_err()
    }

    /// A provider with one line replaced (`key = …`) or added.
    fn with(line: &str) -> String {
        let key = line.split(" =").next().unwrap();
        let mut lines: Vec<String> = GOOD
            .lines()
            .filter(|l| !l.starts_with(&format!("{key} =")))
            .map(str::to_owned)
            .collect();
        lines.push(line.to_owned());
        lines.join("\n")
    }

    #[test]
    fn a_good_file_gives_checked_providers_with_defaults() {
        let providers = parse(GOOD).unwrap();
        let p = &providers[0];
        assert_eq!(p.id, "acme-sso");
        assert_eq!(p.issuer.as_str(), "https://login.acme.example/");
        assert_eq!(p.client_secret.expose_secret(), "s3cret");
        assert_eq!(p.scopes, ["openid", "email", "profile"]);
        assert_eq!(p.domains, ["acme.example", "eu.other.example"]);
        assert_eq!(p.org.as_deref(), Some("acme"));
        assert!(p.signup && !p.trust_second_factor);
        assert!(parse("").unwrap().is_empty());
    }

    #[test]
    fn openid_is_always_among_the_scopes() {
        let p = &parse(&with(r#"scopes = ["email"]"#)).unwrap()[0];
        assert_eq!(p.scopes, ["openid", "email"]);
        let p = &parse(&with(r#"scopes = ["email", "openid", "email"]"#)).unwrap()[0];
        assert_eq!(p.scopes, ["email", "openid"]);
    }

    #[test]
    fn an_unknown_key_is_refused_naming_the_provider() {
        let e = refused(&with("client_secrets = \"x\""));
        assert!(e.starts_with("provider \"acme-sso\": unknown field"), "{e}");
        let e = refused("[[providers]]\nid = \"x\"");
        assert!(e.contains("unknown field"), "{e}");
    }

    #[test]
    fn a_bad_id_is_refused() {
        for id in ["", "Acme", "a_b", "a/b", &"a".repeat(33)] {
            let e = refused(&with(&format!("id = {id:?}")));
            assert!(e.contains("the id must be"), "{id}: {e}");
        }
    }

    #[test]
    fn a_duplicate_id_is_refused() {
        let two = format!("{GOOD}\n{}", GOOD.replace("domains", "# domains"));
        let e = refused(&two);
        assert_eq!(
            e,
            "provider \"acme-sso\": the id is used by an earlier provider"
        );
    }

    #[test]
    fn a_wrong_type_is_refused_naming_the_provider() {
        let e = refused(&with("signup = \"yes\""));
        assert!(e.starts_with("provider \"acme-sso\": invalid type"), "{e}");
        let e = refused(&with("id = 7"));
        assert!(e.starts_with("provider 1: invalid type"), "{e}");
    }

    #[test]
    fn a_missing_issuer_or_secret_is_refused() {
        let no_issuer: String = GOOD
            .lines()
            .filter(|l| !l.starts_with("issuer"))
            .collect::<Vec<_>>()
            .join("\n");
        assert_eq!(
            refused(&no_issuer),
            "provider \"acme-sso\": issuer is missing"
        );
        let no_secret = GOOD.replace("client_secret = \"s3cret\"", "");
        assert!(refused(&no_secret).contains("client_secret or client_secret_file is missing"));
        let both = with("client_secret_file = \"/nonexistent\"");
        assert!(refused(&both).contains("not both"));
    }

    #[test]
    fn an_unreadable_secret_file_is_refused_and_a_readable_one_trimmed() {
        let no_inline = GOOD.replace("client_secret = \"s3cret\"", "");
        let e = refused(&format!(
            "{no_inline}\nclient_secret_file = \"/nonexistent/acme.secret\""
        ));
        assert!(
            e.starts_with(
                "provider \"acme-sso\": cannot read client_secret_file /nonexistent/acme.secret"
            ),
            "{e}"
        );
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("acme.secret");
        std::fs::write(&file, "from-file\n").unwrap();
        let text = format!(
            "{no_inline}\nclient_secret_file = {:?}",
            file.display().to_string()
        );
        assert_eq!(
            parse(&text).unwrap()[0].client_secret.expose_secret(),
            "from-file"
        );
    }

    #[test]
    fn an_http_issuer_is_refused_unless_on_loopback() {
        let e = refused(&with("issuer = \"http://login.acme.example\""));
        assert!(e.contains("must be https"), "{e}");
        for ok in [
            "http://127.0.0.1:9000",
            "http://[::1]:9000/realm",
            "http://localhost:9",
        ] {
            assert!(parse(&with(&format!("issuer = {ok:?}"))).is_ok(), "{ok}");
        }
        for bad in [
            "ftp://x.example",
            "https://x.example/?a=1",
            "not a url",
            "https://u:p@x.example",
        ] {
            assert!(
                refused(&with(&format!("issuer = {bad:?}")))
                    .starts_with("provider \"acme-sso\": issuer"),
                "{bad}"
            );
        }
    }

    #[test]
    fn a_domain_claimed_by_two_providers_is_refused() {
        let second = GOOD.replace("acme-sso", "other").replace(
            r#"["Acme.Example", ".eu.other.example"]"#,
            r#"["eu.acme.example"]"#,
        );
        let e = refused(&format!("{GOOD}\n{second}"));
        assert_eq!(
            e,
            "provider \"other\": the domain \"eu.acme.example\" is already claimed by provider \"acme-sso\""
        );
        assert!(refused(&with(r#"domains = ["a..b"]"#)).contains("is not a domain name"));
    }
}
