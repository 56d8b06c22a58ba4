//! RFC 7662 introspection (docs/api.md §6), for the resource servers the operator designates
//! (confidential clients registered with `introspection`): services that check tokens with
//! Gatehouse rather than verify them offline. Any other client is refused, and a token a client
//! was given is described only as far as its scopes allow: a stranger's client that holds a
//! token learns no more from here than userinfo would tell it.

use std::net::SocketAddr;

use axum::body::Bytes;
use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::errors::{self, OAuthErrorBody};
use super::{calling_client, form_parameters, single};
use crate::guard::Introspection;
use crate::http::AppState;
use crate::http::extract::client_ip;
use crate::model::{Holder, KeyIdentity};
use crate::provider::OAuthError;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(introspect))
}

/// RFC 7662 §2.2. Inactive tokens say nothing else: no reason, no claims.
#[derive(Serialize, ToSchema, Default)]
struct IntrospectionAnswer {
    active: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(format = Uuid)]
    sub: Option<String>,
    /// The account's e-mail address.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(example = "ada@example.com")]
    username: Option<String>,
    /// Whether the address is verified (OpenID Connect's claim name): with open registration,
    /// anyone may register any address.
    #[serde(skip_serializing_if = "Option::is_none")]
    email_verified: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(example = "Ada Lovelace")]
    name: Option<String>,
    /// The account's roles now (not as issued).
    #[serde(skip_serializing_if = "Option::is_none")]
    roles: Option<Vec<String>>,
    /// The token's active organisation (docs/api.md §13); absent without one.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(format = Uuid)]
    org_id: Option<String>,
    /// The holder's roles in `org_id` now (not as issued); absent without an organisation.
    #[serde(skip_serializing_if = "Option::is_none")]
    org_roles: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(format = Uuid)]
    sid: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    amr: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    iss: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    aud: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    exp: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    iat: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(format = Uuid)]
    jti: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    /// `Bearer` for an access token, `DPoP` for one bound to a key (RFC 9449), `api_key` for a
    /// personal API key (docs/api.md §12).
    #[schema(example = "Bearer")]
    token_type: Option<&'static str>,
    /// The client the token was issued to (RFC 7662 §2.2); absent for the person's own sign-in.
    #[serde(skip_serializing_if = "Option::is_none")]
    client_id: Option<String>,
    /// The scopes granted to that client (or an API key), space-separated; absent for the
    /// person's own sign-in.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(example = "openid contacts:read")]
    scope: Option<String>,
    /// Who acts for `sub` (RFC 8693 §4.1): the client that exchanged a token of the person's for
    /// this one, nested for a chain; absent for a token not exchanged.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Object, example = json!({"sub": "0190a000-0000-7000-8000-000000000001"}))]
    act: Option<crate::auth::tokens::Act>,
    /// The DPoP key the token is bound to (RFC 9449 §6.2: `{"jkt": …}`): a resource server
    /// accepts it only with a proof by that key; absent for a bearer token.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Object, example = json!({"jkt": "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"}))]
    cnf: Option<crate::auth::tokens::Cnf>,
}

/// Introspect a token (RFC 7662), as a resource server the operator designated (`gatehouse
/// clients add NAME`, or `--introspect`; `introspection` in the admin API).
///
/// Form-encoded `token=…` (`token_type_hint` is accepted and not needed), the client's id and
/// secret as HTTP Basic credentials (`client_secret_basic`) or as `client_id` and `client_secret`
/// in the form (`client_secret_post`); public clients may not introspect (401), nor confidential
/// ones without `introspection` (403 `unauthorized_client`). A live access token answers its
/// claims with the account's current e-mail, name and roles, each only when the token's `scope`
/// allows it if the token was issued to a client (`email`: `username` and `email_verified`;
/// `profile`: `name`; `roles`: `roles`); a client's token for itself (`client_credentials`) answers
/// `sub` = `client_id` = the client, its `scope` and (bound to one) `org_id`, while the client
/// keeps the grant; a personal API key (`ghk_…`) answers `sub`, `username` and the owner's
/// current name and roles, its `scope`, `token_type: "api_key"`, `org_id` when it names an
/// organisation and `exp` when it expires; anything else (expired, revoked, a refresh token, garbage)
/// answers `{"active": false}` alone. Wrong client credentials count against the caller's address
/// like failed logins.
#[utoipa::path(post, path = "/oauth2/introspect", tag = "oauth",
    request_body(content = String, content_type = "application/x-www-form-urlencoded",
        description = "token=…[&token_type_hint=access_token]"),
    responses(
        (status = 200, description = "The token's state", body = IntrospectionAnswer),
        (status = 400, description = "No token, not a form, or two ways of client authentication", body = OAuthErrorBody),
        (status = 401, description = "Bad client credentials", body = OAuthErrorBody),
        (status = 403, description = "The client is not one the operator lets introspect (unauthorized_client)", body = OAuthErrorBody),
        (status = 429, description = "Too many wrong client credentials from this address", body = OAuthErrorBody)))]
async fn introspect(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let ip = client_ip(peer.ip(), &headers, &state.trusted_proxies);
    let form = form_parameters(&headers, &body);
    match calling_client(&state, &headers, form.as_deref(), ip, false).await {
        Ok(client) if client.introspection => {}
        Ok(_) => {
            return errors::answer_as(StatusCode::FORBIDDEN, OAuthError::UnauthorizedClient, None);
        }
        Err(refused) => return refused.into_plain_response(),
    }
    let token = form.as_deref().map(|f| single(f, "token"));
    let Some(Ok(Some(token))) = token else {
        return errors::answer(OAuthError::InvalidRequest, None);
    };
    let token = token.to_owned();
    let answer = match state.auth.guard.introspect(&token).await {
        Ok(Some(live)) => answer(live),
        Ok(None) => IntrospectionAnswer::default(),
        Err(error) => return error.into_response(),
    };
    axum::Json(answer).into_response()
}

/// A live token's answer. A client's token for itself (docs/api.md §12) names no person: `sub`
/// and `client_id` are the client, and there is no e-mail, name, roles, session or `amr`.
fn answer(live: Introspection) -> IntrospectionAnswer {
    let (claims, holder) = match live {
        Introspection::Token { claims, holder } => (*claims, holder),
        Introspection::Key(key) => return key_answer(key),
    };
    let common = IntrospectionAnswer {
        active: true,
        sub: Some(claims.sub.to_string()),
        iss: Some(claims.iss),
        aud: Some(claims.aud),
        exp: Some(claims.exp),
        iat: Some(claims.iat),
        jti: Some(claims.jti.to_string()),
        token_type: Some(if claims.cnf.is_some() {
            "DPoP"
        } else {
            "Bearer"
        }),
        client_id: claims.client_id,
        scope: claims.scope,
        act: claims.act,
        cnf: claims.cnf,
        ..IntrospectionAnswer::default()
    };
    match holder {
        Holder::Key(key) => key_answer(key),
        Holder::Client(client) => IntrospectionAnswer {
            org_id: client.org_id.map(|o| o.to_string()),
            ..common
        },
        Holder::Person(who) => {
            // A token a client was given says what its scopes allow, as userinfo would; the
            // person's own sign-in says everything.
            let allows = |scope: &str| {
                common
                    .scope
                    .as_deref()
                    .is_none_or(|s| s.split(' ').any(|g| g == scope))
            };
            let (email, profile, roles) = (allows("email"), allows("profile"), allows("roles"));
            IntrospectionAnswer {
                username: Some(who.email).filter(|_| email),
                email_verified: Some(who.email_verified).filter(|_| email),
                name: Some(who.full_name).filter(|_| profile),
                roles: Some(who.roles).filter(|_| roles),
                org_id: who.org.as_ref().map(|o| o.id.to_string()),
                org_roles: who.org.map(|o| o.roles),
                sid: Some(claims.sid.to_string()),
                amr: Some(claims.amr),
                ..common
            }
        }
    }
}

/// A personal API key's answer (docs/api.md §12): its owner as they are now, its scopes, and
/// `exp` when it expires; no session, `amr`, `iss` or `aud` (it is no JWT).
fn key_answer(key: KeyIdentity) -> IntrospectionAnswer {
    IntrospectionAnswer {
        active: true,
        sub: Some(key.user_id.to_string()),
        username: Some(key.email),
        email_verified: Some(key.email_verified),
        name: Some(key.full_name),
        roles: Some(key.roles),
        org_id: key.org.as_ref().map(|o| o.id.to_string()),
        org_roles: key.org.map(|o| o.roles),
        exp: key.expires_at.map(|ms| ms.div_euclid(1000)),
        token_type: Some("api_key"),
        scope: Some(key.scopes.scope_string()),
        ..IntrospectionAnswer::default()
    }
}
