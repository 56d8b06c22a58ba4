//! What an authorization request must be before anything else is looked at (RFC 6749 §4.1.1,
//! OpenID Connect Core §3.1.2.1, RFC 7636, RFC 8707): every problem here goes back to the client
//! as its error.

use super::{Checked, Provider};
use crate::model::GrantType;
use crate::provider::pkce::check_pkce;
use crate::provider::{OAuthError, Refusal};

/// Longest `state` and `nonce` kept (they travel back in URLs and tokens).
const STATE_MAX: usize = 2048;
const NONCE_MAX: usize = 512;

/// A request that passed `check`: its scopes, its `prompt`, and its tokens' audience (`None`:
/// `GATEHOUSE_AUDIENCE`).
pub(super) type Judged = (Vec<String>, Prompt, Option<String>);

/// The `prompt` values (OpenID Connect Core §3.1.2.1) Gatehouse acts on.
#[derive(Default)]
pub(super) struct Prompt {
    pub(super) none: bool,
    pub(super) login: bool,
    pub(super) consent: bool,
}

fn prompt(text: Option<&str>) -> std::result::Result<Prompt, String> {
    let mut p = Prompt::default();
    for value in text
        .unwrap_or_default()
        .split(' ')
        .filter(|v| !v.is_empty())
    {
        match value {
            "none" => p.none = true,
            "login" => p.login = true,
            "consent" => p.consent = true,
            // Gatehouse holds one account per browser: there is nothing to select.
            "select_account" => {}
            other => return Err(format!("prompt {other:?} is not supported")),
        }
    }
    if p.none && (p.login || p.consent) {
        return Err("prompt=none cannot be combined with another value".into());
    }
    Ok(p)
}

/// The `aud` of the tokens of `scopes` (RFC 8707: `resource` as asked, else the one declared API
/// with an audience of its own they are for, else `None`: `GATEHOUSE_AUDIENCE`), or the error
/// that goes back to the client.
pub(in crate::provider) fn target(
    catalog: &crate::model::Catalog,
    scopes: &[String],
    resource: Option<&str>,
) -> std::result::Result<Option<String>, Refusal> {
    use crate::model::resources::TargetError;
    catalog.audience_for(scopes, resource).map_err(|e| match e {
        TargetError::SeveralAudiences(..) => (OAuthError::InvalidScope, e.to_string()),
        TargetError::NotDeclaredBy { .. } => (OAuthError::InvalidTarget, e.to_string()),
    })
}

impl Provider {
    /// Everything of a request that goes back to the client when wrong: its scopes, prompt and
    /// tokens' audience if right, the error and its description if not.
    pub(super) fn check(&self, checked: &Checked<'_>) -> std::result::Result<Judged, Refusal> {
        let r = checked.request;
        let client = &checked.client;
        if let Some(t) = r.response_type.as_deref().filter(|t| *t != "code") {
            return Err((
                OAuthError::UnsupportedResponseType,
                format!("response_type {t:?} is not supported: only \"code\""),
            ));
        }
        if !client.has_grant(GrantType::AuthorizationCode) {
            return Err((
                OAuthError::UnauthorizedClient,
                "the client may not use the authorization code grant".into(),
            ));
        }
        let catalog = self.core.catalog.current();
        let scopes = catalog
            .parse(r.scope.as_deref().unwrap_or_default())
            .map_err(|e| (OAuthError::InvalidScope, e.to_string()))?;
        check_pkce(
            client,
            r.code_challenge.as_deref(),
            r.code_challenge_method.as_deref(),
            r.nonce.is_some(),
            &scopes,
        )?;
        if scopes.is_empty() {
            return Err((OAuthError::InvalidScope, "scope is required".into()));
        }
        if let Some(s) = scopes.iter().find(|s| !client.allows_scope(s)) {
            return Err((
                OAuthError::InvalidScope,
                format!("the client is not registered for the scope {s:?}"),
            ));
        }
        let prompt = prompt(r.prompt.as_deref()).map_err(|e| (OAuthError::InvalidRequest, e))?;
        if r.max_age.is_some_and(|m| m < 0) {
            return Err((
                OAuthError::InvalidRequest,
                "max_age must not be negative".into(),
            ));
        }
        if r.state.as_ref().is_some_and(|s| s.len() > STATE_MAX) {
            return Err((
                OAuthError::InvalidRequest,
                format!("state is longer than {STATE_MAX} bytes"),
            ));
        }
        if r.nonce.as_ref().is_some_and(|n| n.len() > NONCE_MAX) {
            return Err((
                OAuthError::InvalidRequest,
                format!("nonce is longer than {NONCE_MAX} bytes"),
            ));
        }
        if let Some(resource) = &r.resource {
            if !self.core.tokens.issues_for(resource) {
                return Err((
                    OAuthError::InvalidTarget,
                    format!(
                        "resource must be {:?} or a resource server this service issues tokens \
                         for (GATEHOUSE_OAUTH_RESOURCES, an API of docs/guide/resources.md)",
                        self.core.tokens.audience()
                    ),
                ));
            }
        }
        let audience = target(&catalog, &scopes, r.resource.as_deref())?;
        Ok((scopes, prompt, audience))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompts() {
        assert!(prompt(Some("login consent")).is_ok());
        assert!(prompt(Some("none login")).is_err());
        assert!(prompt(Some("bogus")).is_err());
        assert!(!prompt(None).unwrap().none);
    }
}
