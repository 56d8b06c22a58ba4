//! DPoP at the endpoints that take an access token (RFC 9449 §7, docs/api.md §11): the
//! `Authorization: DPoP` scheme beside `Bearer`, the `DPoP` header, and the rule every such
//! endpoint applies before it answers: a token bound to a key (`cnf.jkt`) is accepted only with
//! the DPoP scheme and a proof by that key for this very request (its method, its URL, the token's
//! hash, a `jti` never seen); a token bound to no key only as a bearer token. The proof's checks
//! are `auth::dpop`'s; this reads the request.

use std::sync::Arc;

use axum::http::{HeaderMap, header};

use super::AppState;
use crate::auth::dpop::Request;

/// How an access token was presented.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Presented<'a> {
    Bearer(&'a str),
    Dpop(&'a str),
}

impl<'a> Presented<'a> {
    pub fn token(self) -> &'a str {
        match self {
            Presented::Bearer(token) | Presented::Dpop(token) => token,
        }
    }
}

/// The token of one `Authorization` header with the `Bearer` or the `DPoP` scheme (any case);
/// anything else, or the header twice, is none.
pub(crate) fn presented(headers: &HeaderMap) -> Option<Presented<'_>> {
    let mut given = headers.get_all(header::AUTHORIZATION).iter();
    let value = given.next()?.to_str().ok()?;
    if given.next().is_some() {
        return None;
    }
    let (scheme, token) = value.split_once(' ')?;
    let token = token.trim();
    if token.is_empty() {
        return None;
    }
    if scheme.eq_ignore_ascii_case("bearer") {
        Some(Presented::Bearer(token))
    } else if scheme.eq_ignore_ascii_case("dpop") {
        Some(Presented::Dpop(token))
    } else {
        None
    }
}

/// The request's one `DPoP` header: `Ok(None)` without one, `Err` with two or an unreadable one.
pub(crate) fn proof_header(headers: &HeaderMap) -> Result<Option<&str>, &'static str> {
    let mut given = headers.get_all("dpop").iter();
    let Some(value) = given.next() else {
        return Ok(None);
    };
    if given.next().is_some() {
        return Err("more than one DPoP header");
    }
    value
        .to_str()
        .map(Some)
        .map_err(|_| "the DPoP header is not a JWT")
}

/// What a presented credential is bound to.
pub(crate) enum Binding {
    /// An access token bound to this DPoP key (its `cnf.jkt`).
    Key(Arc<str>),
    /// A bearer credential: an access token bound to no key, or an API key.
    Bearer,
    /// Not a token that verifies (expired, revoked keys, garbage): the endpoint's own check
    /// refuses it, in its own words (an expired token is `TOKEN_EXPIRED`, not a DPoP fault).
    Unverified,
}

/// The binding of the credential `token`.
pub(crate) fn binding(state: &AppState, token: &str) -> Binding {
    if crate::auth::api_keys::is_api_key(token) {
        return Binding::Bearer;
    }
    match state.auth.sessions.bound_key(token) {
        Some(Some(jkt)) => Binding::Key(jkt),
        Some(None) => Binding::Bearer,
        None => Binding::Unverified,
    }
}

/// Whether `presented`, of `binding`, may be used for a request of `method` whose URL `htu`
/// recognises: the rule of this module. `Err` says why not, for developers.
pub(crate) async fn sender_checked(
    state: &AppState,
    headers: &HeaderMap,
    presented: Presented<'_>,
    binding: &Binding,
    method: &str,
    htu: &(dyn Fn(&str) -> bool + Sync),
) -> Result<(), &'static str> {
    let (token, jkt) = match (presented, binding) {
        (_, Binding::Unverified) | (Presented::Bearer(_), Binding::Bearer) => return Ok(()),
        (Presented::Bearer(_), Binding::Key(_)) => {
            return Err(
                "the token is bound to a DPoP key: send it as Authorization: DPoP, with a proof",
            );
        }
        (Presented::Dpop(_), Binding::Bearer) => {
            return Err("the token is not bound to a DPoP key: send it as Authorization: Bearer");
        }
        (Presented::Dpop(token), Binding::Key(jkt)) => (token, jkt),
    };
    let Some(proof) = proof_header(headers)? else {
        return Err("a DPoP-bound token needs a DPoP proof");
    };
    let request = Request {
        method,
        htu,
        access_token: Some(token),
    };
    match state.auth.sessions.dpop_proof(proof, &request).await {
        Ok(Ok(proof)) if *proof.jkt == **jkt => Ok(()),
        Ok(Ok(_)) => Err("the DPoP proof is signed by another key than the token is bound to"),
        Ok(Err(bad)) => Err(bad.0),
        // The store is away: the proof's single use cannot be checked, so it is not accepted.
        Err(_) => Err("the DPoP proof could not be checked"),
    }
}

/// `sender_checked` for a request to this service itself: its URL is the public URL and `path`.
pub(crate) async fn own_request_checked(
    state: &AppState,
    headers: &HeaderMap,
    presented: Presented<'_>,
    binding: &Binding,
    (method, path): (&str, &str),
) -> Result<(), &'static str> {
    // The common case, a bearer token presented as one, needs no URL.
    if let (Presented::Bearer(_), Binding::Bearer | Binding::Unverified) = (presented, binding) {
        return Ok(());
    }
    let url = format!("{}{path}", state.public_url);
    let htu = |htu: &str| crate::auth::dpop::same_target(htu, &url);
    sender_checked(state, headers, presented, binding, method, &htu).await
}
