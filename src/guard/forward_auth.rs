//! Forward-auth's decision (docs/api.md §6): what a proxy described and what the request carried,
//! judged against the access rules (`authz`) and the holder of the credential. `http::authz`
//! reads the proxy's headers into a `Described` and a `Credential`, and turns the `Decision` into
//! its status and headers; the order of the checks, which is the security of the endpoint, is
//! here.

use crate::authz::rules::Policy;
use crate::authz::{Described, Gate};
use crate::error::{Error, Result};
use crate::model::{ClientInfo, Holder, Identity};

use super::Guard;

/// How many cookies of Gatehouse's name a request may present: a sibling host under the cookie
/// domain may have set one or two more; a request with hundreds is looking for work to cause.
const MAX_COOKIES: usize = 8;

/// What the request a proxy asks about carried.
pub enum Credential<'a> {
    /// One `Authorization: Bearer` header: an access token or an API key, and where the request
    /// came from (for a key's first use from an address, in the audit trail).
    Bearer { token: &'a str, client: ClientInfo },
    /// More than one `Authorization` header: which counts is a question a proxy's upstream may
    /// answer differently, so neither does.
    Ambiguous,
    /// No bearer token: the values of the session cookie, if any (a sibling host under the cookie
    /// domain may have set another of the same name).
    Cookies(Vec<&'a str>),
}

/// The verdict, for the endpoint to answer in its proxy's convention.
#[derive(Debug)]
pub enum Decision {
    /// Admitted: the holder as they are now, for the `Remote-*` headers.
    Admit(Holder),
    /// A rule refuses: it denies everyone (`holder` is `None`: the credentials were not looked
    /// at), or this holder does not meet it.
    RefusedByRule {
        policy: Policy,
        holder: Option<Holder>,
    },
    /// No valid credential, or (`second_factor`) a cookie session without the second factor a
    /// rule asks for: a browser's navigation is sent to sign in.
    SignIn { second_factor: bool },
    /// The bearer credential identifies no one (`TokenExpired`, `TokenInvalid`), or Gatehouse
    /// cannot tell now (`Unavailable`, `Internal`).
    Refused(Error),
    /// More than one `Authorization` header.
    Ambiguous,
}

impl Guard {
    /// A denying rule refuses before the credentials are looked at (signing in would not help);
    /// otherwise a bearer token, else the first session cookie of a live session, must have a
    /// holder who meets the rule. `may_sign_in`: whether the asker can be sent to sign in again
    /// with a second factor (a browser's navigation, or an endpoint that answers with the sign-in
    /// URL whatever was asked).
    pub async fn decide(
        &self,
        gate: &Gate,
        described: &Described,
        credential: Credential<'_>,
        may_sign_in: bool,
    ) -> Decision {
        let policy = gate.policy_for(described);
        if *policy == Policy::Deny {
            return Decision::RefusedByRule {
                policy: policy.clone(),
                holder: None,
            };
        }
        let (holder, by_cookie) = match credential {
            Credential::Ambiguous => return Decision::Ambiguous,
            Credential::Bearer { token, client } => {
                match self.identify_from(token, Some(&client)).await {
                    Ok(holder) => (holder, false),
                    Err(error) => return Decision::Refused(error),
                }
            }
            Credential::Cookies(values) => match self.cookie_holder(values).await {
                Ok(Some(identity)) => (Holder::Person(identity), true),
                Ok(None) => {
                    return Decision::SignIn {
                        second_factor: false,
                    };
                }
                Err(error) => return Decision::Refused(error),
            },
        };
        if !policy.admits(&holder) {
            if by_cookie && *policy == Policy::TwoFactor && may_sign_in {
                return Decision::SignIn {
                    second_factor: true,
                };
            }
            return Decision::RefusedByRule {
                policy: policy.clone(),
                holder: Some(holder),
            };
        }
        Decision::Admit(holder)
    }

    /// The holder of the first of `values` (at most `MAX_COOKIES`) that is a live session's
    /// cookie; `Ok(None)` without one; `Err` when Gatehouse cannot tell (database unreachable).
    pub async fn cookie_holder(&self, values: Vec<&str>) -> Result<Option<Identity>> {
        for value in values.into_iter().take(MAX_COOKIES) {
            match self.browser.identify(value).await {
                Ok(identity) => return Ok(Some(identity)),
                Err(error @ (Error::Unavailable(_) | Error::Internal(_))) => return Err(error),
                Err(_) => {}
            }
        }
        Ok(None)
    }
}
