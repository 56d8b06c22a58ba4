//! Extractors that carry the request rules: JSON bodies whose every rejection is the envelope,
//! the bearer caller, and the client's address behind trusted proxies.

use std::net::{IpAddr, SocketAddr};

use axum::body::Bytes;
use axum::extract::{ConnectInfo, FromRequest, FromRequestParts, Path, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::middleware::Next;
use axum::response::{IntoResponse as _, Response};
use ipnet::IpNet;
use serde::de::DeserializeOwned;

use super::error::{ApiError, RequestError};
use super::{AppState, BODY_LIMIT};
use crate::error::{Error, FieldErrors};
use crate::model::{ClientInfo, Principal};

/// A JSON body. Wrong content type → 415, too large → 413, bad JSON → 400 naming the reason,
/// missing or mistyped field → 400 naming the field.
pub struct AppJson<T>(pub T);

impl<T: DeserializeOwned> FromRequest<AppState> for AppJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, ApiError> {
        if !is_json(req.headers()) {
            return Err(RequestError::UnsupportedMediaType.into());
        }
        let bytes = read_body(req, state).await?;
        parse_json(&bytes).map(AppJson)
    }
}

/// A JSON body that may be left out altogether (an empty body is `None`).
pub struct MaybeJson<T>(pub Option<T>);

impl<T: DeserializeOwned> FromRequest<AppState> for MaybeJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, ApiError> {
        let json = is_json(req.headers());
        let bytes = read_body(req, state).await?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(MaybeJson(None));
        }
        if !json {
            return Err(RequestError::UnsupportedMediaType.into());
        }
        parse_json(&bytes).map(|v| MaybeJson(Some(v)))
    }
}

fn is_json(headers: &HeaderMap) -> bool {
    let Some(value) = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    let essence = value
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    essence == "application/json"
        || (essence.starts_with("application/") && essence.ends_with("+json"))
}

/// Reads every request's body whole, before routing, within the size limit and the body deadline,
/// and hands it on in memory. Reading it here, rather than in the extractor that wants it, means a
/// call refused before its body is looked at (no token, unknown route) still leaves the connection
/// clean for the client's next request; and a client trickling bytes cannot hold a request open
/// (tower-http's body timeout restarts with every chunk, so it would not stop that). A refusal
/// here closes the connection, whose unread rest would otherwise be taken for the next request.
pub async fn read_whole_body(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let announced = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let error = if announced.is_some_and(|n| n > BODY_LIMIT as u64) {
        // Refused before a byte is read.
        RequestError::PayloadTooLarge { limit: BODY_LIMIT }
    } else {
        let (parts, body) = req.into_parts();
        match tokio::time::timeout(state.body_timeout, axum::body::to_bytes(body, BODY_LIMIT)).await
        {
            Ok(Ok(bytes)) => {
                return next
                    .run(Request::from_parts(parts, axum::body::Body::from(bytes)))
                    .await;
            }
            Err(_) => RequestError::BodyTimeout,
            Ok(Err(e)) if is_length_limit(&e) => {
                RequestError::PayloadTooLarge { limit: BODY_LIMIT }
            }
            Ok(Err(_)) => RequestError::MalformedJson("the request body could not be read".into()),
        }
    };
    let mut response = error.into_response();
    response
        .headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

fn is_length_limit(error: &axum::Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = source {
        if e.is::<http_body_util::LengthLimitError>() {
            return true;
        }
        source = e.source();
    }
    false
}

/// The body, already in memory and within the limit (`read_whole_body` ran before routing).
async fn read_body(req: Request, state: &AppState) -> Result<Bytes, RequestError> {
    Bytes::from_request(req, state)
        .await
        .map_err(|_| RequestError::MalformedJson("the request body could not be read".into()))
}

fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    // Every body is an object (docs/api.md §1). serde would also read a struct from an array, its
    // fields in order: `["Ann"]` would create a contact, `[]` would patch nothing and answer 200.
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    if first.is_some_and(|b| *b != b'{')
        && serde_json::from_slice::<serde::de::IgnoredAny>(bytes).is_ok()
    {
        return Err(
            RequestError::MalformedJson("the body must be a JSON object".to_owned()).into(),
        );
    }
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let value = serde_path_to_error::deserialize(&mut deserializer).map_err(json_error)?;
    deserializer
        .end()
        .map_err(|e| RequestError::MalformedJson(without_position(&e)))?;
    Ok(value)
}

fn json_error(error: serde_path_to_error::Error<serde_json::Error>) -> ApiError {
    let path = error.path().to_string();
    let inner = error.inner();
    if !inner.is_data() {
        return RequestError::MalformedJson(without_position(inner)).into();
    }
    let message = without_position(inner);
    if path == "." {
        if let Some(field) = message
            .strip_prefix("missing field `")
            .and_then(|m| m.strip_suffix('`'))
        {
            return Error::Validation(FieldErrors::from([(
                field.to_owned(),
                "is required".to_owned(),
            )]))
            .into();
        }
        return RequestError::MalformedJson(format!("the body must be a JSON object ({message})"))
            .into();
    }
    Error::Validation(FieldErrors::from([(path, message)])).into()
}

/// serde_json appends " at line L column C", which says nothing about which field was wrong.
fn without_position(error: &serde_json::Error) -> String {
    let text = error.to_string();
    match text.rfind(" at line ") {
        Some(i) => text[..i].to_owned(),
        None => text,
    }
}

/// The caller of one of the person's own bearer calls (account, organisations, the authorization
/// call): a token a client was given is refused (`Sessions::authenticate_person`).
pub struct AuthUser(pub Principal);

impl FromRequestParts<AppState> for AuthUser {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Error> {
        let token = bearer_token(&parts.headers).ok_or(Error::Unauthenticated)?;
        state
            .auth
            .sessions
            .authenticate_person(token)
            .await
            .map(AuthUser)
    }
}

/// The caller of a business call: the person's own token, a client's, or a personal API key
/// (docs/api.md §12), the last two within their scopes (the handler checks them:
/// `Principal::allows`).
pub struct ApiUser(pub Principal);

impl FromRequestParts<AppState> for ApiUser {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Error> {
        let is_key = crate::http::dpop::presented(&parts.headers)
            .map(|p| crate::auth::api_keys::is_api_key(p.token()))
            .ok_or(Error::Unauthenticated)?;
        // A key's use is noted with the caller's address (a new one is audited).
        let caller = match is_key {
            true => Some(Caller::from_request_parts(parts, state).await?.0),
            false => None,
        };
        let presented =
            crate::http::dpop::presented(&parts.headers).ok_or(Error::Unauthenticated)?;
        let token = presented.token();
        let who = match &caller {
            Some(client) => state.auth.api_keys.authenticate(token, client).await?,
            None => state.auth.sessions.authenticate(token).await?,
        };
        // A DPoP-bound token only with a proof by its key for this request; any other only as a
        // bearer token (RFC 9449 §7). The binding is the verified token's, read once.
        let binding = match &who.dpop_jkt {
            Some(jkt) => crate::http::dpop::Binding::Key(jkt.clone()),
            None => crate::http::dpop::Binding::Bearer,
        };
        // Nested routers see their own part of the path; the proof names the whole URL.
        let original = parts.extensions.get::<axum::extract::OriginalUri>();
        let path = original.map_or(parts.uri.path(), |o| o.0.path());
        let request = (parts.method.as_str(), path);
        let checked = crate::http::dpop::own_request_checked(
            state,
            &parts.headers,
            presented,
            &binding,
            request,
        );
        if let Err(why) = checked.await {
            tracing::debug!(why, "a business call's DPoP was refused");
            return Err(Error::TokenInvalid);
        }
        Ok(ApiUser(who))
    }
}

/// `Authorization: Bearer <token>` (scheme case-insensitive, RFC 7235). Anything else, including a
/// header that is not visible ASCII or given twice (the framing layer refuses those first),
/// counts as no token.
pub fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    let mut given = headers.get_all(header::AUTHORIZATION).iter();
    let value = given.next()?.to_str().ok()?;
    if given.next().is_some() {
        return None;
    }
    let (scheme, token) = value.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// The `{id}` of a resource path. An id that is not a UUID (or not even UTF-8) names nothing: 404,
/// like an id that does not exist, and never the framework's plain-text rejection.
pub struct PathId(pub uuid::Uuid);

impl<S: Send + Sync> FromRequestParts<S> for PathId {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Error> {
        let Path(raw) = Path::<String>::from_request_parts(parts, state)
            .await
            .map_err(|_| Error::NotFound)?;
        uuid::Uuid::parse_str(&raw)
            .map(PathId)
            .map_err(|_| Error::NotFound)
    }
}

/// The two ids of a nested resource path (`/orgs/{id}/members/{userId}`): 404 unless both are
/// UUIDs, like `PathId`.
pub struct PathIds(pub uuid::Uuid, pub uuid::Uuid);

impl<S: Send + Sync> FromRequestParts<S> for PathIds {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Error> {
        let Path((a, b)) = Path::<(String, String)>::from_request_parts(parts, state)
            .await
            .map_err(|_| Error::NotFound)?;
        let parse = |raw: &str| uuid::Uuid::parse_str(raw).map_err(|_| Error::NotFound);
        Ok(PathIds(parse(&a)?, parse(&b)?))
    }
}

/// Who calls: their address and user agent (an HTTP client, not an OAuth client: that is
/// `model::Client`).
pub struct Caller(pub ClientInfo);

/// A user agent longer than this is cut: it is shown in session lists, not parsed.
pub(crate) const USER_AGENT_MAX: usize = 512;

impl FromRequestParts<AppState> for Caller {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Error> {
        let peer = parts
            .extensions
            .get::<ConnectInfo<SocketAddr>>()
            .map(|ci| ci.0.ip());
        let ip = peer.map(|peer| client_ip(peer, &parts.headers, &state.trusted_proxies));
        let user_agent = parts
            .headers
            .get(header::USER_AGENT)
            .and_then(|v| v.to_str().ok())
            .map(|ua| ua.chars().take(USER_AGENT_MAX).collect());
        Ok(Caller(ClientInfo { ip, user_agent }))
    }
}

/// The socket peer; or, when the peer is a trusted proxy, the rightmost `X-Forwarded-For` entry
/// that is not itself a trusted proxy. Entries left of that one were written by the client and
/// prove nothing, so they are never used.
pub fn client_ip(peer: IpAddr, headers: &HeaderMap, trusted: &[IpNet]) -> IpAddr {
    let is_trusted = |ip: &IpAddr| trusted.iter().any(|net| net.contains(ip));
    let mut ip = peer.to_canonical();
    if !is_trusted(&ip) {
        return ip;
    }
    let hops: Vec<&str> = headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .collect();
    for hop in hops.iter().rev() {
        match hop.trim().parse::<IpAddr>() {
            Ok(hop) => {
                ip = hop.to_canonical();
                if !is_trusted(&ip) {
                    return ip;
                }
            }
            // A hop we cannot read: stop at the last address a trusted proxy vouched for.
            Err(_) => return ip,
        }
    }
    ip
}

/// A field that is present: `Some(None)` for `null`, told apart from a field left out (`None`).
pub(crate) fn given<'de, D, T>(d: D) -> Result<Option<Option<T>>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::Deserialize<'de>,
{
    <Option<T> as serde::Deserialize>::deserialize(d).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(xff: &[&str]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for v in xff {
            h.append("x-forwarded-for", HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn untrusted_peers_are_taken_at_their_word_only() {
        let peer: IpAddr = "203.0.113.9".parse().unwrap();
        assert_eq!(client_ip(peer, &headers(&["1.2.3.4"]), &[]), peer);
        let trusted = ["10.0.0.0/8".parse().unwrap()];
        assert_eq!(client_ip(peer, &headers(&["1.2.3.4"]), &trusted), peer);
    }

    #[test]
    fn behind_trusted_proxies_the_rightmost_untrusted_hop_wins() {
        let trusted = ["10.0.0.0/8".parse().unwrap()];
        let peer: IpAddr = "10.0.0.2".parse().unwrap();
        let h = headers(&["6.6.6.6, 198.51.100.7", "10.0.0.5"]);
        assert_eq!(
            client_ip(peer, &h, &trusted),
            "198.51.100.7".parse::<IpAddr>().unwrap()
        );
        assert_eq!(client_ip(peer, &headers(&[]), &trusted), peer);
        assert_eq!(
            client_ip(peer, &headers(&["garbage, 10.0.0.9"]), &trusted),
            "10.0.0.9".parse::<IpAddr>().unwrap()
        );
    }

    #[test]
    fn bearer_tokens() {
        let mut h = HeaderMap::new();
        assert_eq!(bearer_token(&h), None);
        h.insert(header::AUTHORIZATION, HeaderValue::from_static("Basic abc"));
        assert_eq!(bearer_token(&h), None);
        h.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("bearer abc"),
        );
        assert_eq!(bearer_token(&h), Some("abc"));
        h.insert(header::AUTHORIZATION, HeaderValue::from_static("Bearer "));
        assert_eq!(bearer_token(&h), None);
        h.insert(
            header::AUTHORIZATION,
            HeaderValue::from_bytes(b"Bearer \xff").unwrap(),
        );
        assert_eq!(bearer_token(&h), None);
        h.insert(header::AUTHORIZATION, HeaderValue::from_static("Bearer a"));
        h.append(header::AUTHORIZATION, HeaderValue::from_static("Bearer b"));
        assert_eq!(bearer_token(&h), None);
    }
}
