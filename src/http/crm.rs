//! `/api/v1/crm/…`: the business calls behind the bearer token.

use std::collections::HashMap;

use axum::Router;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::get;
use serde::Deserialize;
use serde_json::json;

use super::extract::{AppJson, AuthUser, PathId};
use super::{AppState, ok};
use crate::crm::{ContactInput, ListParams, Patch};
use crate::error::{Error, Result};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/contacts", get(list).post(create))
        .route("/contacts/{id}", get(read).patch(update).delete(remove))
}

/// Parameters arrive as strings and are checked by the domain, so a bad `limit` is a named
/// field error rather than a framework rejection.
async fn list(
    State(state): State<AppState>,
    AuthUser(who): AuthUser,
    query: Result<Query<HashMap<String, String>>, axum::extract::rejection::QueryRejection>,
) -> Result<impl IntoResponse> {
    let Query(mut query) =
        query.map_err(|_| Error::field("query", "is not a valid query string"))?;
    let params = ListParams {
        limit: query.remove("limit"),
        cursor: query.remove("cursor"),
        q: query.remove("q"),
    };
    Ok(ok(state.contacts.list(who.user_id, params).await?))
}

/// A contact body. Optional fields are tri-state: absent keeps, `null` clears, a string sets.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ContactBody {
    #[serde(default, deserialize_with = "patch")]
    full_name: Patch<String>,
    #[serde(default, deserialize_with = "patch")]
    email: Patch<String>,
    #[serde(default, deserialize_with = "patch")]
    phone: Patch<String>,
    #[serde(default, deserialize_with = "patch")]
    company: Patch<String>,
    #[serde(default, deserialize_with = "patch")]
    notes: Patch<String>,
}

fn patch<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Patch<String>, D::Error> {
    Ok(match Option::<String>::deserialize(d)? {
        None => Patch::Clear,
        Some(value) => Patch::Set(value),
    })
}

impl From<ContactBody> for ContactInput {
    fn from(b: ContactBody) -> Self {
        ContactInput {
            full_name: b.full_name,
            email: b.email,
            phone: b.phone,
            company: b.company,
            notes: b.notes,
        }
    }
}

async fn create(
    State(state): State<AppState>,
    AuthUser(who): AuthUser,
    AppJson(body): AppJson<ContactBody>,
) -> Result<impl IntoResponse> {
    let contact = state.contacts.create(who.user_id, body.into()).await?;
    Ok((StatusCode::CREATED, ok(contact)))
}

async fn read(
    State(state): State<AppState>,
    AuthUser(who): AuthUser,
    PathId(id): PathId,
) -> Result<impl IntoResponse> {
    Ok(ok(state.contacts.get(who.user_id, id).await?))
}

async fn update(
    State(state): State<AppState>,
    AuthUser(who): AuthUser,
    PathId(id): PathId,
    AppJson(body): AppJson<ContactBody>,
) -> Result<impl IntoResponse> {
    Ok(ok(state
        .contacts
        .update(who.user_id, id, body.into())
        .await?))
}

async fn remove(
    State(state): State<AppState>,
    AuthUser(who): AuthUser,
    PathId(id): PathId,
) -> Result<impl IntoResponse> {
    state.contacts.delete(who.user_id, id).await?;
    Ok(ok(json!({ "id": id })))
}
