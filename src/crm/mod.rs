//! The CRM's contacts: a per-user (or, with an active organisation, per-organisation) collection with keyset paging and literal substring search.

use std::sync::Arc;

use uuid::Uuid;

use crate::clock::Clock;
use crate::crypto::Secrets;
use crate::error::{Error, Result, Validator};
use crate::store::Store;

pub use crate::model::orgs::Collection;

mod contact;

pub use crate::model::contacts::Contact;
pub use contact::{COMPANY_MAX, ContactInput, NOTES_MAX, PHONE_MAX, Patch};

pub const DEFAULT_LIMIT: u32 = 50;
pub const MAX_LIMIT: u32 = 100;
const QUERY_MAX: usize = 200;

/// How often a partial update merges again over a contact that changed under it before giving up.
const UPDATE_ATTEMPTS: usize = 8;

/// One page of the list.
#[derive(Debug)]
pub struct Page {
    pub items: Vec<Contact>,
    /// Give it as `cursor` for the next page; `None` on the last page.
    pub next_cursor: Option<String>,
}

/// What a list call asks for; `limit` is already a number (1 to `MAX_LIMIT`).
#[derive(Debug)]
pub struct ListQuery {
    pub limit: u32,
    pub cursor: Option<String>,
    pub q: Option<String>,
}

pub struct Contacts {
    store: Store,
    secrets: Arc<Secrets>,
    clock: Clock,
}

impl Contacts {
    pub fn new(store: Store, secrets: Arc<Secrets>, clock: Clock) -> Self {
        Contacts {
            store,
            secrets,
            clock,
        }
    }

    pub async fn create(&self, owner: Collection, input: ContactInput) -> Result<Contact> {
        let checked = contact::check(input, None)?;
        let now = self.clock.now_ms();
        let search_text = checked.search_text();
        let contact = Contact {
            // UUIDv7 from one process are strictly increasing: creation order, even within a ms.
            id: Uuid::now_v7(),
            full_name: checked.full_name,
            email: checked.email,
            phone: checked.phone,
            company: checked.company,
            notes: checked.notes,
            created_at: now,
            updated_at: now,
            version: 0,
        };
        self.store
            .insert_contact(owner, &contact, &search_text)
            .await?;
        Ok(contact)
    }

    pub async fn get(&self, owner: Collection, id: Uuid) -> Result<Contact> {
        self.store.contact(owner, id).await?.ok_or(Error::NotFound)
    }

    /// Merges `input` over the stored contact and writes it if nobody changed the contact in
    /// between; if somebody did, merges again over their version, so concurrent changes of
    /// different fields all survive.
    pub async fn update(
        &self,
        owner: Collection,
        id: Uuid,
        input: ContactInput,
    ) -> Result<Contact> {
        for _ in 0..UPDATE_ATTEMPTS {
            let current = self.get(owner, id).await?;
            let checked = contact::check(input.clone(), Some(&current))?;
            let search_text = checked.search_text();
            let written = self
                .store
                .update_contact(
                    owner,
                    id,
                    current.version,
                    &checked.fields(&search_text),
                    self.clock.now_ms(),
                )
                .await?;
            if let Some(contact) = written {
                return Ok(contact);
            }
        }
        Err(Error::internal(anyhow::anyhow!(
            "contact {id} changed under {UPDATE_ATTEMPTS} updates in a row"
        )))
    }

    pub async fn delete(&self, owner: Collection, id: Uuid) -> Result<()> {
        if self.store.delete_contact(owner, id).await? {
            Ok(())
        } else {
            Err(Error::NotFound)
        }
    }

    pub async fn list(&self, owner: Collection, query: ListQuery) -> Result<Page> {
        let mut v = Validator::new();
        let before = match query.cursor.as_deref().filter(|c| !c.is_empty()) {
            None => Some(None),
            Some(cursor) => v.check("cursor", self.open_cursor(owner, cursor).map(Some)),
        };
        let needle = match query.q.as_deref().filter(|q| !q.is_empty()) {
            None => Some(None),
            Some(q) if q.chars().count() > QUERY_MAX => {
                v.check("q", Err(format!("must be at most {QUERY_MAX} characters")))
            }
            Some(q) if q.chars().any(char::is_control) => {
                v.check("q", Err("must not contain control characters".into()))
            }
            Some(q) => Some(Some(q.to_lowercase())),
        };
        let (before, needle) = v.finish(before.zip(needle))?;
        let limit = i64::from(query.limit.clamp(1, MAX_LIMIT));

        // One row more than asked tells whether there is a next page.
        let mut rows = self
            .store
            .list_contacts(owner, before, needle.as_deref(), limit + 1)
            .await?;
        let more = rows.len() as i64 > limit;
        rows.truncate(limit as usize);
        let next_cursor = if more {
            rows.last().map(|last| self.cursor(owner, last.id))
        } else {
            None
        };
        Ok(Page {
            items: rows,
            next_cursor,
        })
    }

    /// The id of the last contact of a page, with a keyed tag binding it to its owner, so a cursor
    /// the service did not issue (or issued to someone else) is refused.
    fn cursor(&self, owner: Collection, last: Uuid) -> String {
        self.secrets
            .cursor(&[owner.owner().as_bytes()], last.as_bytes())
    }

    fn open_cursor(&self, owner: Collection, cursor: &str) -> Result<Uuid, String> {
        let key = self
            .secrets
            .open_cursor(&[owner.owner().as_bytes()], cursor)?;
        Uuid::from_slice(&key).map_err(|_| "is not a cursor this service issued".to_owned())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::OnceLock;

    use proptest::prelude::*;
    use regex::Regex;

    use crate::crypto::{b64url, b64url_decode};

    /// The `pattern` the API document gives the list's `cursor`, compiled.
    fn cursor_pattern() -> &'static Regex {
        static PATTERN: OnceLock<Regex> = OnceLock::new();
        PATTERN.get_or_init(|| {
            let doc = serde_json::to_value(crate::http::openapi()).unwrap();
            let params = doc["paths"]["/api/v1/crm/contacts"]["get"]["parameters"]
                .as_array()
                .unwrap();
            let cursor = params.iter().find(|p| p["name"] == "cursor").unwrap();
            Regex::new(cursor["schema"]["pattern"].as_str().unwrap()).unwrap()
        })
    }

    proptest! {
        /// The documented form is exactly what `open_cursor` can decode: an id and a 16-byte tag
        /// in base64url (or empty, for the first page).
        #[test]
        fn the_cursor_pattern_is_the_cursors_form(
            bytes in prop::array::uniform32(any::<u8>()),
            text in "[A-Za-z0-9_=+/-]{42,44}",
        ) {
            let re = cursor_pattern();
            prop_assert!(re.is_match(&b64url(&bytes)));
            let decodes = b64url_decode(&text).is_some_and(|b| b.len() == 32);
            prop_assert_eq!(re.is_match(&text), decodes, "{:?}", text);
        }
    }

    #[test]
    fn the_first_page_needs_no_cursor() {
        assert!(cursor_pattern().is_match(""));
    }
}
