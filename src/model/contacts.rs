//! Contacts, the business data of the seed's CRM, as stored.

use uuid::Uuid;

#[derive(Debug, Clone)]
pub struct Contact {
    pub id: Uuid,
    pub full_name: String,
    pub email: Option<String>,
    pub phone: Option<String>,
    pub company: Option<String>,
    pub notes: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
    /// Bumped by every change: the base a partial update was merged over.
    pub version: i64,
}

/// The fields a user sets, plus what is derived from them.
pub struct ContactFields<'a> {
    pub full_name: &'a str,
    pub email: Option<&'a str>,
    pub phone: Option<&'a str>,
    pub company: Option<&'a str>,
    pub notes: Option<&'a str>,
    pub search_text: &'a str,
}
