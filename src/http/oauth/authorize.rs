//! `POST /api/v1/oauth2/authorize` (docs/api.md §11): the authorization page's own call, open to
//! applications that keep their own pages. The person's first-party access token authorizes; the
//! answer says where the browser goes next, or what the person must do first.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use crate::error::{Error, Result};
use crate::http::docs::{bearer_errors, body_errors, error_responses, server_errors};
use crate::http::extract::{AppJson, AuthUser};
use crate::http::{Answer, AppState, Envelope, ok};
use crate::provider::{Authorization, AuthorizeRequest, Person};

pub(super) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(authorize))
}

/// The parameters of `GET /oauth2/authorize`, in JSON.
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct AuthorizeBody {
    #[schema(format = Uuid)]
    client_id: String,
    redirect_uri: String,
    /// Space-separated.
    #[schema(example = "openid profile email")]
    scope: String,
    #[serde(default)]
    state: Option<String>,
    /// BASE64URL(SHA-256(code_verifier)), 43 characters.
    #[serde(default)]
    code_challenge: Option<String>,
    /// `S256` (`plain` is refused).
    #[serde(default)]
    code_challenge_method: Option<String>,
    #[serde(default)]
    nonce: Option<String>,
    /// `none`, `login`, `consent` (space-separated).
    #[serde(default)]
    prompt: Option<String>,
    /// Seconds: an older sign-in answers `loginRequired`.
    #[serde(default)]
    max_age: Option<i64>,
    /// RFC 8707: `GATEHOUSE_AUDIENCE` is the one resource.
    #[serde(default)]
    resource: Option<String>,
    /// The person's answer on the consent screen: `true` allows the scopes asked, `false`
    /// refuses (the client gets `access_denied`); absent: not asked yet.
    #[serde(default)]
    consent: Option<bool>,
    /// The organisation to act in (docs/api.md §13), one of `organisations` of the consent
    /// answer. With `consent: true`, absent or `null` means none (the person's own data); without
    /// `consent`, absent means the one chosen with the remembered consent.
    #[serde(default)]
    org_id: Option<Uuid>,
}

/// An organisation the person may authorize the client in.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct OrgView {
    id: Uuid,
    #[schema(example = "Acme")]
    name: String,
    #[schema(example = "acme")]
    slug: String,
}

/// The client as the consent screen names it.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct ClientView {
    #[schema(format = Uuid)]
    client_id: String,
    name: String,
    first_party: bool,
    /// Registered by no operator (RFC 7591, or a client ID metadata document): its name is its
    /// own word, and the consent screen says so.
    self_registered: bool,
    /// The host the browser returns to (the request's redirect URI): what the person can check
    /// a name against.
    #[schema(example = "app.example.com")]
    redirect_host: String,
}

/// A scope the consent screen asks about, in words.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(super) struct ScopeView {
    #[schema(example = "orders:read")]
    scope: String,
    /// The OpenID scopes' sentence, or what the business API declares (docs/guide/resources.md).
    #[schema(example = "See your orders")]
    description: String,
    /// The business API the scope is of; `null` for an OpenID scope.
    #[schema(example = "Orders API")]
    resource: Option<String>,
}

impl From<crate::model::orgs::Org> for OrgView {
    fn from(o: crate::model::orgs::Org) -> Self {
        OrgView {
            id: o.id,
            name: o.name,
            slug: o.slug,
        }
    }
}

impl ScopeView {
    /// `scopes` in the words of the consent screen, in their order.
    pub(super) fn all(catalog: &crate::model::Catalog, scopes: &[String]) -> Vec<ScopeView> {
        scopes
            .iter()
            .map(|s| ScopeView {
                scope: s.clone(),
                description: catalog.describe(s).unwrap_or(s).to_owned(),
                resource: catalog.resource_of(s).map(|r| r.name.clone()),
            })
            .collect()
    }
}

/// One of three answers.
#[derive(Serialize, ToSchema)]
#[serde(untagged)]
enum AuthorizeAnswer {
    /// Where the browser goes now: the redirect URI with `code`, `state` and `iss`, or with
    /// `error`, `error_description`, `state` and `iss`. `confirmRedirect: true` (an error for a
    /// self-registered client the person has not dealt with): show the host and let the person
    /// follow it, never follow it at once.
    #[serde(rename_all = "camelCase")]
    Redirect {
        redirect_to: String,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        confirm_redirect: bool,
    },
    /// The person must allow these scopes (those not consented to yet); ask, then call again with
    /// `consent: true` (or `false`).
    #[serde(rename_all = "camelCase")]
    Consent {
        consent_required: bool,
        client: ClientView,
        scopes: Vec<String>,
        /// `scopes` in words, in the same order.
        scope_details: Vec<ScopeView>,
        /// The person's organisations to choose from (only the client's own when it is bound to
        /// one); empty: none to choose.
        organisations: Vec<OrgView>,
        /// Chosen already (the client's, the one chosen last time, or the only one); `null`: none.
        org_id: Option<Uuid>,
        /// The client is bound to `orgId`: there is no other choice, and none is not one.
        org_fixed: bool,
    },
    /// The person must sign in again (`prompt=login`, or a sign-in older than `maxAge`); call
    /// again with the new session's token and without `prompt=login`.
    #[serde(rename_all = "camelCase")]
    Login { login_required: bool },
}

error_responses!(AuthorizeErrors: body_errors(), bearer_errors(),
    [Error::Forbidden, Error::NotFound, Error::TwoFactorRequired], server_errors());

/// Authorize a client for the caller (the authorization page's call).
///
/// Bearer: the person's own access token (a token issued to a client is refused: 403
/// `FORBIDDEN`). An unknown client or a redirect URI not registered for it is 400
/// `VALIDATION_ERROR` (the page shows an error and never redirects); every other problem of the
/// request (PKCE missing or `plain`, a scope the client may not have, `prompt=none` without
/// consent, a refused consent) comes back as `redirectTo` carrying `error`. A third-party client
/// needs the person's consent to the scopes (remembered per person, client and scopes; a new scope
/// asks again); a first-party client does not. The authorization acts in one organisation or none
/// (docs/api.md §13): a client bound to one acts in it (a non-member's authorization goes back as
/// `access_denied`); otherwise the person chooses on the consent page (`orgId`), and a remembered
/// consent acts in the organisation chosen with it. An `orgId` the person is not a member of is
/// 404 `NOT_FOUND`; one requiring two factors from a session without them, 403
/// `TWO_FACTOR_REQUIRED`.
#[utoipa::path(post, path = "/api/v1/oauth2/authorize", tag = "oauth", security(("bearer" = [])),
    request_body = AuthorizeBody,
    responses((status = 200, description = "Where to go, or what to ask", body = Envelope<AuthorizeAnswer>),
        AuthorizeErrors))]
async fn authorize(
    axum::extract::State(state): axum::extract::State<AppState>,
    AuthUser(who): AuthUser,
    AppJson(body): AppJson<AuthorizeBody>,
) -> Result<Answer<AuthorizeAnswer>> {
    state.require_provider()?;
    let redirect_uri = body.redirect_uri.clone();
    let request = AuthorizeRequest {
        client_id: body.client_id,
        redirect_uri: body.redirect_uri,
        response_type: None,
        scope: Some(body.scope),
        state: body.state,
        code_challenge: body.code_challenge,
        code_challenge_method: body.code_challenge_method,
        nonce: body.nonce,
        prompt: body.prompt,
        max_age: body.max_age,
        resource: crate::http::resource::audience_of(&state, body.resource),
        consent: body.consent,
        org_id: body.org_id,
    };
    let person = Person {
        user_id: who.user_id,
        session_id: who.session_id,
    };
    let answer = match state.auth.oauth.authorize(&request, Some(person)).await? {
        Authorization::Redirect(redirect_to) => AuthorizeAnswer::Redirect {
            redirect_to,
            confirm_redirect: false,
        },
        Authorization::Unvouched(redirect_to) => AuthorizeAnswer::Redirect {
            redirect_to,
            confirm_redirect: true,
        },
        Authorization::ConsentRequired {
            client,
            scopes,
            orgs,
        } => AuthorizeAnswer::Consent {
            consent_required: true,
            client: ClientView {
                client_id: client.client_id(),
                self_registered: client.self_registered(),
                name: client.name,
                first_party: client.first_party,
                redirect_host: url::Url::parse(&redirect_uri)
                    .ok()
                    .and_then(|u| u.host_str().map(str::to_owned))
                    .unwrap_or_default(),
            },
            scope_details: ScopeView::all(&state.auth.resources.catalog(), &scopes),
            scopes,
            organisations: orgs.orgs.into_iter().map(OrgView::from).collect(),
            org_id: orgs.chosen,
            org_fixed: orgs.fixed,
        },
        Authorization::LoginRequired => AuthorizeAnswer::Login {
            login_required: true,
        },
    };
    Ok(ok(answer))
}
