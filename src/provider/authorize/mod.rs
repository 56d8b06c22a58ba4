//! The authorization (docs/api.md §11): a request checked against its client, the person's
//! session judged (`prompt`, `max_age`), consent asked or remembered, and a code issued.

use url::Url;
use uuid::Uuid;

mod request;

use super::org_choice::{OrgChoice, OrgOffer};
use super::{OAuthError, Provider};
use crate::crypto::{random_token, sha256};
use crate::error::{Error, Result};
use crate::model::oauth::{AuthorizationCode, Consent};
use crate::model::{Client, Session, is_multi_factor};
pub(super) use request::target;
use request::{Judged, Prompt};

/// How long a code may wait for its exchange (RFC 6749 §4.1.2: at most 10 minutes; 60 s here).
pub const CODE_TTL_MS: i64 = 60_000;
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

    /// A sign-in (again): the sign-in page, or `login_required` back to the client with
    /// `prompt=none`, which forbids showing a page.
    fn login(&self, prompt: &Prompt, why: &str) -> Stop {
        Stop::Answer(if prompt.none {
            self.error(OAuthError::LoginRequired, why)
        } else {
            Authorization::LoginRequired
        })
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

/// Where a step of the authorization ends it: with an answer (a redirect, a page to show), or a
/// failure that is not the client's.
enum Stop {
    Answer(Authorization),
    Failed(Error),
}

impl From<Error> for Stop {
    fn from(error: Error) -> Self {
        Stop::Failed(error)
    }
}

type Flow<T> = std::result::Result<T, Stop>;

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

    /// Authorizes `request` for `person` (`None`: no session in this browser): the steps below,
    /// each of which may end it with an answer (`Stop::Answer`).
    pub async fn authorize(
        &self,
        request: &AuthorizeRequest,
        person: Option<Person>,
    ) -> Result<Authorization> {
        match self.authorization(request, person).await {
            Ok(answer) | Err(Stop::Answer(answer)) => Ok(answer),
            Err(Stop::Failed(error)) => Err(error),
        }
    }

    async fn authorization(
        &self,
        request: &AuthorizeRequest,
        person: Option<Person>,
    ) -> Flow<Authorization> {
        let issuer = self.core.tokens.issuer().to_owned();
        let mut checked = self.checked(request, &issuer).await?;
        let (scopes, prompt, audience) = self.judged(&mut checked, person).await?;
        let (person, session) = self.signed_in(&checked, person, &prompt).await?;
        let remembered = if checked.client.first_party {
            None
        } else {
            self.core
                .store
                .consent(person.user_id, checked.client.id)
                .await?
        };
        checked.vouched |= remembered.is_some();
        self.fresh_enough(&checked, &session, &prompt)?;
        if request.consent == Some(false) {
            return Ok(checked.error(OAuthError::AccessDenied, "the person did not allow it"));
        }
        let org_id = self
            .consented(&checked, person, &session, &scopes, &prompt, remembered)
            .await?;
        self.issue_code(&checked, person, &session, scopes, audience, org_id)
            .await
    }

    /// The request with its client and redirect URI known good (else `VALIDATION_ERROR`, an
    /// error page): from here every problem goes back to the client.
    async fn checked<'a>(
        &self,
        request: &'a AuthorizeRequest,
        issuer: &'a str,
    ) -> Result<Checked<'a>> {
        let client = self
            .authorization_client(&request.client_id, &request.redirect_uri)
            .await?;
        let Ok(redirect) = Url::parse(&request.redirect_uri) else {
            return Err(Error::field("redirectUri", "is not a URL"));
        };
        let vouched = !client.self_registered() || request.consent.is_some();
        Ok(Checked {
            client,
            request,
            redirect,
            issuer,
            vouched,
        })
    }

    /// The request's scopes, prompt and audience (`check`), or its error back to the client; an
    /// error is redirected at once for a client the person has consented to before.
    async fn judged(&self, checked: &mut Checked<'_>, person: Option<Person>) -> Flow<Judged> {
        match self.check(checked) {
            Ok(judged) => Ok(judged),
            Err((error, description)) => {
                if let (false, Some(person)) = (checked.vouched, person) {
                    let store = &self.core.store;
                    checked.vouched =
                        (store.consent(person.user_id, checked.client.id).await?).is_some();
                }
                Err(Stop::Answer(checked.error(error, &description)))
            }
        }
    }

    /// The person and their own session, live: a client's session (its token, or a cookie it
    /// got) cannot authorize another client. No one signed in: the sign-in page, or
    /// `login_required` with `prompt=none`.
    async fn signed_in(
        &self,
        checked: &Checked<'_>,
        person: Option<Person>,
        prompt: &Prompt,
    ) -> Flow<(Person, Session)> {
        let Some(person) = person else {
            return Err(checked.login(prompt, "no one is signed in"));
        };
        let session = self
            .core
            .store
            .session(person.session_id)
            .await?
            .filter(|s| s.revoked_at.is_none() && s.user_id == person.user_id);
        let Some(session) = session else {
            return Err(checked.login(prompt, "no one is signed in"));
        };
        if session.grant.is_some() {
            return Err(Stop::Failed(Error::Forbidden));
        }
        Ok((person, session))
    }

    /// The sign-in again for `prompt=login` or one older than `max_age`.
    fn fresh_enough(&self, checked: &Checked<'_>, session: &Session, prompt: &Prompt) -> Flow<()> {
        let now = self.core.clock.now_ms();
        let too_old = checked
            .request
            .max_age
            .is_some_and(|max| now - session.created_at > max.saturating_mul(1000));
        if !(prompt.login || too_old) {
            return Ok(());
        }
        Err(checked.login(prompt, "the sign-in is older than max_age"))
    }

    /// The organisation the authorization acts in, once the person has allowed a third-party
    /// client every scope asked (remembered, or answered now: then remembered for next time);
    /// else the consent screen, or `consent_required` with `prompt=none`.
    async fn consented(
        &self,
        checked: &Checked<'_>,
        person: Person,
        session: &Session,
        scopes: &[String],
        prompt: &Prompt,
        remembered: Option<Consent>,
    ) -> Flow<Option<Uuid>> {
        let request = checked.request;
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
                return Err(Stop::Answer(checked.error(
                    OAuthError::AccessDenied,
                    "the person is not a member of the organisation this application belongs to",
                )));
            }
        };
        if checked.client.first_party {
            return Ok(org_id);
        }
        let given = remembered.unwrap_or_default();
        let missing: Vec<String> = if prompt.consent || choice == OrgChoice::AskAgain {
            scopes.to_vec()
        } else {
            scopes
                .iter()
                .filter(|s| !given.scopes.contains(s))
                .cloned()
                .collect()
        };
        if !missing.is_empty() && !consenting {
            return Err(Stop::Answer(if prompt.none {
                checked.error(
                    OAuthError::ConsentRequired,
                    "the person has not allowed this yet",
                )
            } else {
                let orgs = self
                    .org_offer(&checked.client, person.user_id, given.org_id)
                    .await?;
                Authorization::ConsentRequired {
                    client: Box::new(checked.client.clone()),
                    scopes: missing,
                    orgs,
                }
            }));
        }
        if consenting || given.org_id != org_id {
            self.remember_consent(person.user_id, &checked.client, given, scopes, org_id)
                .await?;
        }
        Ok(org_id)
    }

    /// Remembers that the person allowed `client` `scopes` besides those allowed `before`, acting
    /// in `org_id`: the next authorization asks only for what is new.
    pub(super) async fn remember_consent(
        &self,
        user: Uuid,
        client: &Client,
        before: Consent,
        scopes: &[String],
        org_id: Option<Uuid>,
    ) -> Result<()> {
        let mut all = before.scopes;
        for scope in scopes {
            if !all.contains(scope) {
                all.push(scope.clone());
            }
        }
        let consent = Consent {
            scopes: all,
            org_id,
        };
        let now = self.core.clock.now_ms();
        self.core
            .store
            .put_consent(user, client.id, &consent, now)
            .await
            .map_err(client_gone)
    }

    /// The code, kept by its hash for `CODE_TTL_MS`, and the redirect that carries it.
    async fn issue_code(
        &self,
        checked: &Checked<'_>,
        person: Person,
        session: &Session,
        scopes: Vec<String>,
        audience: Option<String>,
        org_id: Option<Uuid>,
    ) -> Flow<Authorization> {
        let request = checked.request;
        let now = self.core.clock.now_ms();
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
            auth_time: session.created_at,
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
}
