//! The authorization (docs/api.md §11): a request checked against its client, the person's
//! session judged (`prompt`, `max_age`), consent asked or remembered, and a code issued.

use url::Url;
use uuid::Uuid;

use super::org_choice::{OrgChoice, OrgOffer};
use super::pkce::check_pkce;
use super::{OAuthError, Provider, Refusal};
use crate::crypto::{random_token, sha256};
use crate::error::{Error, Result};
use crate::model::oauth::{AuthorizationCode, Consent};
use crate::model::{Client, GrantType, is_multi_factor};

/// How long a code may wait for its exchange (RFC 6749 §4.1.2: at most 10 minutes; 60 s here).
pub const CODE_TTL_MS: i64 = 60_000;
/// Longest `state` and `nonce` kept (they travel back in URLs and tokens).
const STATE_MAX: usize = 2048;
const NONCE_MAX: usize = 512;

/// The parameters of an authorization request, as the page's query or the API's body gives them.
#[derive(Debug, Clone, Default)]
pub struct AuthorizeRequest {
    pub client_id: String,
    pub redirect_uri: String,
    /// `None`: the API's call, which is for `code` only.
    pub response_type: Option<String>,
    pub scope: Option<String>,
    pub state: Option<String>,
    pub code_challenge: Option<String>,
    pub code_challenge_method: Option<String>,
    pub nonce: Option<String>,
    pub prompt: Option<String>,
    pub max_age: Option<i64>,
    pub resource: Option<String>,
    /// The person's answer on the consent screen: `true` allows, `false` refuses; `None`: not asked.
    pub consent: Option<bool>,
    /// The organisation the person chose to act in (docs/api.md §13); `None` with `consent`:
    /// none (their own data); `None` without: the remembered consent's.
    pub org_id: Option<Uuid>,
}

/// Who asks: the person's own session (a first-party access token's, or the browser cookie's).
#[derive(Debug, Clone, Copy)]
pub struct Person {
    pub user_id: Uuid,
    pub session_id: Uuid,
}

/// What the authorization comes to.
#[derive(Debug)]
pub enum Authorization {
    /// Back to the client: its redirect URI with `code` or `error`, and `state` and `iss`.
    Redirect(String),
    /// An error for a self-registered client the person has not dealt with (no consent given, none
    /// refused on the consent screen): its redirect URI with `error`, to offer as a link naming its
    /// host, never to follow at once. Anyone can register a client with any redirect URI, and
    /// a redirect from this origin to it on a crafted request would make Gatehouse an open
    /// redirector (RFC 9700 §4.11.2).
    Unvouched(String),
    /// The person must allow the client these scopes (those not consented yet), in one of the
    /// organisations offered (or none, unless the client is bound to one).
    ConsentRequired {
        client: Box<Client>,
        scopes: Vec<String>,
        orgs: OrgOffer,
    },
    /// The person must sign in (again): no session, `prompt=login`, or older than `max_age`.
    LoginRequired,
}

/// A request with its client and redirect URI known good: from here every problem goes back to
/// the client.
struct Checked<'a> {
    client: Client,
    request: &'a AuthorizeRequest,
    /// `request.redirect_uri`, parsed.
    redirect: Url,
    issuer: &'a str,
    /// Whether an error may be redirected at once: an operator's client, or one the person has
    /// dealt with (a consent given before, or the consent screen answered now).
    vouched: bool,
}

impl Checked<'_> {
    fn back(&self, params: &[(&str, &str)]) -> Authorization {
        let mut url = self.redirect.clone();
        {
            let mut query = url.query_pairs_mut();
            for (name, value) in params {
                query.append_pair(name, value);
            }
            if let Some(state) = &self.request.state {
                query.append_pair("state", state);
            }
            query.append_pair("iss", self.issuer);
        }
        Authorization::Redirect(url.into())
    }

    fn error(&self, error: OAuthError, description: &str) -> Authorization {
        match self.back(&[
            ("error", error.as_str()),
            ("error_description", description),
        ]) {
            Authorization::Redirect(to) if !self.vouched => Authorization::Unvouched(to),
            other => other,
        }
    }
}

/// A request that passed `check`: its scopes, its `prompt`, and its tokens' audience (`None`:
/// `GATEHOUSE_AUDIENCE`).
type Judged = (Vec<String>, Prompt, Option<String>);

/// The `prompt` values (OpenID Connect Core §3.1.2.1) Gatehouse acts on.
#[derive(Default)]
struct Prompt {
    none: bool,
    login: bool,
    consent: bool,
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
pub(super) fn target(
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

/// A write that found the client gone (removed on another instance or by the CLI while this one
/// still held it, for up to `CLIENT_CACHE_MS`): answered as the removed client is everywhere.
fn client_gone(error: Error) -> Error {
    match error {
        Error::NotFound => Error::field("clientId", "is not a registered client"),
        other => other,
    }
}

impl Provider {
    /// The client and redirect URI of a request, which must be known before anything can go back
    /// to it: `VALIDATION_ERROR` otherwise (an error page, never a redirect).
    pub async fn authorization_client(
        &self,
        client_id: &str,
        redirect_uri: &str,
    ) -> Result<Client> {
        let client = match self.clients.resolve(client_id).await? {
            Ok(client) => client,
            Err(why) if self.clients.names_document(client_id) => {
                return Err(Error::field(
                    "clientId",
                    format!("its client metadata document was refused: {why}"),
                ));
            }
            Err(why) => return Err(Error::field("clientId", why)),
        };
        if Url::parse(redirect_uri).is_err() || !client.allows_redirect(redirect_uri) {
            return Err(Error::field(
                "redirectUri",
                "is not a redirect URI registered for this client",
            ));
        }
        Ok(client)
    }

    /// Authorizes `request` for `person` (`None`: no session in this browser).
    pub async fn authorize(
        &self,
        request: &AuthorizeRequest,
        person: Option<Person>,
    ) -> Result<Authorization> {
        let client = self
            .authorization_client(&request.client_id, &request.redirect_uri)
            .await?;
        let issuer = self.core.tokens.issuer().to_owned();
        let Ok(redirect) = Url::parse(&request.redirect_uri) else {
            return Err(Error::field("redirectUri", "is not a URL"));
        };
        let vouched = !client.self_registered() || request.consent.is_some();
        let mut checked = Checked {
            client,
            request,
            redirect,
            issuer: &issuer,
            vouched,
        };
        let (scopes, prompt, audience) = match self.check(&checked) {
            Ok(ok) => ok,
            Err((error, description)) => {
                if let (false, Some(person)) = (checked.vouched, person) {
                    let store = &self.core.store;
                    checked.vouched =
                        (store.consent(person.user_id, checked.client.id).await?).is_some();
                }
                return Ok(checked.error(error, &description));
            }
        };
        let Some(person) = person else {
            return Ok(if prompt.none {
                checked.error(OAuthError::LoginRequired, "no one is signed in")
            } else {
                Authorization::LoginRequired
            });
        };
        // The person's own session, live: a client's session (its token, or a cookie it got)
        // cannot authorize another client.
        let session = self
            .core
            .store
            .session(person.session_id)
            .await?
            .filter(|s| s.revoked_at.is_none() && s.user_id == person.user_id);
        let Some(session) = session else {
            return Ok(if prompt.none {
                checked.error(OAuthError::LoginRequired, "no one is signed in")
            } else {
                Authorization::LoginRequired
            });
        };
        if session.grant.is_some() {
            return Err(Error::Forbidden);
        }
        let remembered = if checked.client.first_party {
            None
        } else {
            self.core
                .store
                .consent(person.user_id, checked.client.id)
                .await?
        };
        checked.vouched |= remembered.is_some();
        let now = self.core.clock.now_ms();
        let auth_time = session.created_at;
        let too_old = request
            .max_age
            .is_some_and(|max| now - auth_time > max.saturating_mul(1000));
        if prompt.login || too_old {
            return Ok(if prompt.none {
                checked.error(
                    OAuthError::LoginRequired,
                    "the sign-in is older than max_age",
                )
            } else {
                Authorization::LoginRequired
            });
        }
        if request.consent == Some(false) {
            return Ok(checked.error(OAuthError::AccessDenied, "the person did not allow it"));
        }
        let consenting = request.consent == Some(true);
        let choice = self
            .org_choice(
                &checked.client,
                person.user_id,
                is_multi_factor(&session.amr),
                request.org_id,
                consenting,
                remembered.as_ref(),
            )
            .await?;
        let org_id = match choice {
            OrgChoice::Act(org) => org,
            OrgChoice::AskAgain => None,
            OrgChoice::NotMember => {
                return Ok(checked.error(
                    OAuthError::AccessDenied,
                    "the person is not a member of the organisation this application belongs to",
                ));
            }
        };
        if !checked.client.first_party {
            let given = remembered.clone().unwrap_or_default();
            let missing: Vec<String> = if prompt.consent || choice == OrgChoice::AskAgain {
                scopes.clone()
            } else {
                scopes
                    .iter()
                    .filter(|s| !given.scopes.contains(s))
                    .cloned()
                    .collect()
            };
            if !missing.is_empty() && !consenting {
                return Ok(if prompt.none {
                    checked.error(
                        OAuthError::ConsentRequired,
                        "the person has not allowed this yet",
                    )
                } else {
                    let orgs = self
                        .org_offer(&checked.client, person.user_id, given.org_id)
                        .await?;
                    Authorization::ConsentRequired {
                        client: Box::new(checked.client),
                        scopes: missing,
                        orgs,
                    }
                });
            }
            if consenting || given.org_id != org_id {
                let mut all = given.scopes;
                all.extend(
                    scopes
                        .iter()
                        .filter(|s| !all.contains(s))
                        .cloned()
                        .collect::<Vec<_>>(),
                );
                let consent = Consent {
                    scopes: all,
                    org_id,
                };
                self.core
                    .store
                    .put_consent(person.user_id, checked.client.id, &consent, now)
                    .await
                    .map_err(client_gone)?;
            }
        }
        let code = random_token();
        let record = AuthorizationCode {
            client_id: checked.client.id,
            user_id: person.user_id,
            parent_id: session.id,
            redirect_uri: request.redirect_uri.clone(),
            code_challenge: request.code_challenge.clone().unwrap_or_default(),
            scope: scopes,
            nonce: request.nonce.clone(),
            audience,
            amr: session.amr.clone(),
            auth_time,
            expires_at: now + CODE_TTL_MS,
            org_id,
        };
        self.core
            .store
            .insert_code(&sha256(code.as_bytes()), &record)
            .await
            .map_err(client_gone)?;
        Ok(checked.back(&[("code", &code)]))
    }

    /// Everything of a request that goes back to the client when wrong: its scopes, prompt and
    /// tokens' audience if right, the error and its description if not.
    fn check(&self, checked: &Checked<'_>) -> std::result::Result<Judged, Refusal> {
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
        check_pkce(client, r, &scopes)?;
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
