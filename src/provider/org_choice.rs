//! The organisation an authorization acts in (docs/api.md §13): the client's own when it is bound
//! to one, else the one the person chooses on the consent page (or none: their own data), and a
//! remembered consent authorizes in the organisation chosen with it.

use uuid::Uuid;

use super::Provider;
use crate::error::{Error, Result};
use crate::model::Client;
use crate::model::oauth::Consent;
use crate::model::orgs::Org;

/// Where the wanted organisation came from: it decides what happens when it cannot be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    /// The client's own: the person cannot act for it elsewhere.
    Bound,
    /// Chosen in this request (the consent page's answer, or an application's own page).
    Asked,
    /// Chosen with an earlier consent.
    Remembered,
}

/// What the organisation of an authorization comes to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum OrgChoice {
    /// Act in this organisation (`None`: the person's own data).
    Act(Option<Uuid>),
    /// The remembered organisation is no longer the person's: ask again on the consent page.
    AskAgain,
    /// The client's organisation is not the person's: `access_denied` goes back to the client.
    NotMember,
}

/// Whose organisations the consent page offers, and which is chosen already.
#[derive(Debug, Clone)]
pub struct OrgOffer {
    /// The organisations the person may authorize in: the client's alone when it is bound.
    pub orgs: Vec<Org>,
    /// Chosen already: the client's own, the remembered one, or the person's only organisation.
    pub chosen: Option<Uuid>,
    /// The client is bound to `chosen`: no other choice (and not "none").
    pub fixed: bool,
}

impl Provider {
    /// The organisation `client` acts in for `user`: `asked` (the request's `orgId`), else none
    /// when the person answers the consent page now (`consenting`), else the remembered consent's.
    /// An asked organisation the person is not a member of is `NotFound` (as at `POST
    /// /auth/org`); one that needs two factors from a session without them is
    /// `TWO_FACTOR_REQUIRED`.
    pub(super) async fn org_choice(
        &self,
        client: &Client,
        user: Uuid,
        multi_factor: bool,
        asked: Option<Uuid>,
        consenting: bool,
        remembered: Option<&Consent>,
    ) -> Result<OrgChoice> {
        let (wanted, source) = match (client.org_id, asked) {
            (Some(own), Some(other)) if own != other => {
                return Err(Error::field(
                    "orgId",
                    "is not the organisation this application belongs to",
                ));
            }
            (Some(own), _) => (own, Source::Bound),
            (None, Some(asked)) => (asked, Source::Asked),
            (None, None) if consenting => return Ok(OrgChoice::Act(None)),
            (None, None) => match remembered.and_then(|c| c.org_id) {
                Some(org) => (org, Source::Remembered),
                None => return Ok(OrgChoice::Act(None)),
            },
        };
        let store = &self.core.store;
        let org = match store.membership(wanted, user).await? {
            Some(_) => store.org(wanted).await?,
            None => None,
        };
        let Some(org) = org else {
            return match source {
                Source::Bound => Ok(OrgChoice::NotMember),
                Source::Asked => Err(Error::NotFound),
                Source::Remembered => Ok(OrgChoice::AskAgain),
            };
        };
        if org.require_two_factor && !multi_factor {
            return Err(Error::TwoFactorRequired);
        }
        Ok(OrgChoice::Act(Some(org.id)))
    }

    /// What the consent page offers `user` for `client`, `remembered` being the organisation of
    /// an earlier consent.
    pub(super) async fn org_offer(
        &self,
        client: &Client,
        user: Uuid,
        remembered: Option<Uuid>,
    ) -> Result<OrgOffer> {
        let mine = self.core.store.orgs_of(user).await?;
        if let Some(own) = client.org_id {
            return Ok(OrgOffer {
                orgs: mine
                    .into_iter()
                    .map(|(org, _)| org)
                    .filter(|o| o.id == own)
                    .collect(),
                chosen: Some(own),
                fixed: true,
            });
        }
        let orgs: Vec<Org> = mine.into_iter().map(|(org, _)| org).collect();
        let chosen = remembered
            .filter(|r| orgs.iter().any(|o| o.id == *r))
            .or_else(|| (orgs.len() == 1).then(|| orgs[0].id));
        Ok(OrgOffer {
            orgs,
            chosen,
            fixed: false,
        })
    }
}
