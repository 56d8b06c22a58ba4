//! `/admin/users…`: the accounts, one account, its sessions, its password and second factor.

use axum::extract::{Query, State};
use axum::http::StatusCode;
use secrecy::SecretString;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::views::UserView;
use super::{Admin, limit};
use crate::admin::UserFilter;
use crate::admin::actions::UserChanges;
use crate::domain::{Email, FullName, Role};
use crate::error::{Conflict, Error, FieldErrors, OwnAction, PasswordProblem, Result, Validator};
use crate::http::auth::views::{Deleted, Done, SessionView};
use crate::http::docs::{bearer_errors, body_errors, error_responses, server_errors};
use crate::http::extract::{AppJson, PathId};
use crate::http::fields;
use crate::http::{Answer, AppState, Envelope, ok};
use crate::model::ManagedUser;

pub(super) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list, create))
        .routes(routes!(one, update, delete))
        .routes(routes!(sessions, end_sessions))
        .routes(routes!(password_reset))
        .routes(routes!(reset_two_factor))
}

/// The errors every administration call can give.
pub(super) fn gate_errors() -> Vec<Error> {
    let mut errors = bearer_errors();
    errors.extend([Error::Forbidden, Error::TwoFactorRequired]);
    errors.extend(server_errors());
    errors
}

fn self_conflict() -> Error {
    Error::Conflict(Conflict::OwnAccount(OwnAction::Disable))
}

/// The list's query; values arrive as strings and are checked by the flow, so a bad one is a
/// named field error.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct ListQuery {
    /// Case-insensitive literal substring of the e-mail address or the name (no wildcards); at
    /// most 200 characters, no control characters; empty for every account.
    #[param(
        max_length = 200,
        pattern = r"^[^\u0000-\u001f\u007f-\u009f]*$",
        example = "ada"
    )]
    q: Option<String>,
    /// Page size, 1 to 200 (default 50).
    #[param(value_type = Option<u32>, minimum = 1, maximum = 200, example = 50)]
    limit: Option<String>,
    /// `nextCursor` of the previous page; empty for the first. Opaque: one the service did not
    /// issue is 400.
    cursor: Option<String>,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct UserPage {
    items: Vec<UserView>,
    /// Give it as `cursor` for the next page; `null` on the last page.
    next_cursor: Option<String>,
}

error_responses!(ListErrors:
    [Error::field("cursor", "is not a cursor this service issued")],
    gate_errors(),
);

/// Accounts in e-mail order, a page at a time, optionally searched.
///
/// Follow `nextCursor` until it is `null`: pages stay exact while accounts are added or deleted in
/// between. Deleted accounts are not listed.
#[utoipa::path(get, path = "/users", tag = "admin", security(("bearer" = [])), params(ListQuery),
    responses((status = 200, description = "A page of accounts", body = Envelope<UserPage>), ListErrors))]
async fn list(
    State(state): State<AppState>,
    admin: Admin,
    query: Result<Query<ListQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Answer<UserPage>> {
    let Query(query) = query.map_err(|_| Error::field("query", "is not a valid query string"))?;
    let mut v = Validator::new();
    let limit = limit(&mut v, query.limit.as_deref());
    let limit = v.finish(limit)?;
    let filter = UserFilter {
        q: query.q,
        cursor: query.cursor,
        limit,
    };
    let page = state.auth.admin.list_users(admin.op(), filter).await?;
    Ok(ok(UserPage {
        items: page.items.into_iter().map(UserView::from).collect(),
        next_cursor: page.next_cursor,
    }))
}

#[derive(Deserialize, Default, ToSchema)]
#[serde(rename_all = "camelCase", default)]
struct CreateRequest {
    #[schema(required = true, format = Email, max_length = 254, example = "grace@example.com")]
    email: String,
    #[schema(required = true, schema_with = fields::account_name)]
    full_name: String,
    /// Role names (`[a-z0-9][a-z0-9_.:-]{0,63}`).
    #[schema(example = json!(["billing"]))]
    roles: Vec<String>,
    /// The first password (8 to 256 characters, not a common one). Left out: an invitation is
    /// mailed, with a link to choose it.
    #[schema(min_length = 8, max_length = 256)]
    password: Option<String>,
}

error_responses!(CreateErrors:
    body_errors(),
    [Error::WeakPassword(PasswordProblem::Common), Error::EmailTaken],
    gate_errors(),
    [Error::Overloaded { retry_after: 1 }],
);

/// Create an account, with a password or by mailing an invitation.
#[utoipa::path(post, path = "/users", tag = "admin", security(("bearer" = [])),
    request_body = CreateRequest,
    responses((status = 201, description = "The new account", body = Envelope<UserView>), CreateErrors))]
async fn create(
    State(state): State<AppState>,
    admin: Admin,
    AppJson(body): AppJson<CreateRequest>,
) -> Result<(StatusCode, Answer<UserView>)> {
    let mut v = Validator::new();
    let email = v.check("email", Email::parse(&body.email));
    let name = v.check("fullName", FullName::parse(&body.full_name));
    let roles = v.check("roles", parse_roles(&body.roles));
    let password = match body.password {
        Some(p) if p.is_empty() => v.check("password", Err("must not be empty".to_owned())),
        other => Some(other.map(SecretString::from)),
    };
    let (email, (name, (roles, password))) = v.finish(email.zip(name.zip(roles.zip(password))))?;
    let user = state
        .auth
        .admin
        .add_user(admin.op(), &email, &name, &roles, password)
        .await?;
    // A new account has no passkey; no second read (it would be audited as one).
    let user = ManagedUser {
        user,
        passkeys: 0,
        identities: Vec::new(),
    };
    Ok((StatusCode::CREATED, ok(UserView::from(user))))
}

fn parse_roles(names: &[String]) -> Result<Vec<Role>, String> {
    names
        .iter()
        .map(|n| Role::parse(n).map_err(|reason| format!("{n:?} {reason}")))
        .collect()
}

error_responses!(OneErrors: [Error::NotFound], gate_errors());

/// One account.
#[utoipa::path(get, path = "/users/{id}", tag = "admin", security(("bearer" = [])),
    params(("id" = Uuid, Path, description = "The account's id")),
    responses((status = 200, description = "The account", body = Envelope<UserView>), OneErrors))]
async fn one(
    State(state): State<AppState>,
    admin: Admin,
    PathId(id): PathId,
) -> Result<Answer<UserView>> {
    let user = state.auth.admin.managed_user(admin.op(), id).await?;
    Ok(ok(UserView::from(user)))
}

/// Each field is left out (kept) or given; `null` is no value for any of them (400).
#[derive(Deserialize, Default, ToSchema)]
#[serde(rename_all = "camelCase", default)]
struct PatchRequest {
    #[serde(deserialize_with = "given")]
    #[schema(schema_with = fields::account_name)]
    full_name: Option<Option<String>>,
    /// The whole set of roles the account is to have (roles left out are removed).
    #[serde(deserialize_with = "given")]
    #[schema(value_type = Option<Vec<String>>, example = json!(["admin", "billing"]))]
    roles: Option<Option<Vec<String>>>,
    /// `true` disables the account and ends its sessions (on every instance within 2 s);
    /// `false` enables it again.
    #[serde(deserialize_with = "given")]
    #[schema(value_type = Option<bool>)]
    disabled: Option<Option<bool>>,
}

pub(super) use crate::http::extract::given;

/// A field's value: left out → `Some(None)`, given → `Some(Some(checked))`, `null` or failing
/// `check` → `None` with the reason recorded.
fn field<T, U>(
    v: &mut Validator,
    name: &str,
    value: Option<Option<T>>,
    check: impl Fn(T) -> Result<U, String>,
) -> Option<Option<U>> {
    match value {
        None => Some(None),
        Some(None) => v.check(name, Err("must not be null".to_owned())),
        Some(Some(value)) => v.check(name, check(value).map(Some)),
    }
}

error_responses!(PatchErrors:
    body_errors(),
    [Error::NotFound, self_conflict()],
    gate_errors(),
);

/// Change an account's name, roles or state.
///
/// Each given field is changed; the others stay. An admin cannot disable themselves or take the
/// `admin` role from themselves (409 `CONFLICT`, nothing changed). Roles and the state reach
/// forward-auth, introspection and this API's gate on every instance within 2 s.
#[utoipa::path(patch, path = "/users/{id}", tag = "admin", security(("bearer" = [])),
    params(("id" = Uuid, Path, description = "The account's id")),
    request_body = PatchRequest,
    responses((status = 200, description = "The account as it is now", body = Envelope<UserView>), PatchErrors))]
async fn update(
    State(state): State<AppState>,
    admin: Admin,
    PathId(id): PathId,
    AppJson(body): AppJson<PatchRequest>,
) -> Result<Answer<UserView>> {
    if body.full_name.is_none() && body.roles.is_none() && body.disabled.is_none() {
        return Err(Error::Validation(FieldErrors::from([(
            "body".to_owned(),
            "must give at least one of fullName, roles, disabled".to_owned(),
        )])));
    }
    let mut v = Validator::new();
    let full_name = field(&mut v, "fullName", body.full_name, |n| FullName::parse(&n));
    let roles = field(&mut v, "roles", body.roles, |r| parse_roles(&r));
    let disabled = field(&mut v, "disabled", body.disabled, Ok);
    let (full_name, (roles, disabled)) = v.finish(full_name.zip(roles.zip(disabled)))?;
    let changes = UserChanges {
        full_name,
        roles,
        disabled,
    };
    let user = state
        .auth
        .admin
        .update_user(admin.op(), id, changes)
        .await?;
    Ok(ok(UserView::from(user)))
}

error_responses!(DeleteErrors: [Error::NotFound, Error::Conflict(
    Conflict::OwnAccount(OwnAction::Delete))], gate_errors());

/// Delete an account: as its owner leaving would (its sessions end, its personal data, contacts,
/// codes and links go; the audit trail keeps its events). Not the caller's own (409).
#[utoipa::path(delete, path = "/users/{id}", tag = "admin", security(("bearer" = [])),
    params(("id" = Uuid, Path, description = "The account's id")),
    responses((status = 200, description = "The account is gone", body = Envelope<Deleted>), DeleteErrors))]
async fn delete(
    State(state): State<AppState>,
    admin: Admin,
    PathId(id): PathId,
) -> Result<Answer<Deleted>> {
    state.auth.admin.delete_user(admin.op(), id).await?;
    Ok(ok(Deleted { id }))
}

#[derive(Serialize, ToSchema)]
struct SessionList {
    items: Vec<SessionView>,
}

/// An account's live sessions, the most recently used first (`current`: the caller's own).
#[utoipa::path(get, path = "/users/{id}/sessions", tag = "admin", security(("bearer" = [])),
    params(("id" = Uuid, Path, description = "The account's id")),
    responses((status = 200, description = "The sessions", body = Envelope<SessionList>), OneErrors))]
async fn sessions(
    State(state): State<AppState>,
    admin: Admin,
    PathId(id): PathId,
) -> Result<Answer<SessionList>> {
    let items = state.auth.admin.user_sessions(admin.op(), id).await?;
    Ok(ok(SessionList {
        items: items.into_iter().map(SessionView::from).collect(),
    }))
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct RevokedSessions {
    /// How many sessions ended.
    revoked_sessions: u64,
}

/// End every session of an account: its tokens are refused here at once and on every instance
/// within 2 s.
#[utoipa::path(delete, path = "/users/{id}/sessions", tag = "admin", security(("bearer" = [])),
    params(("id" = Uuid, Path, description = "The account's id")),
    responses((status = 200, description = "Sessions ended", body = Envelope<RevokedSessions>), OneErrors))]
async fn end_sessions(
    State(state): State<AppState>,
    admin: Admin,
    PathId(id): PathId,
) -> Result<Answer<RevokedSessions>> {
    let revoked_sessions = state.auth.admin.end_user_sessions(admin.op(), id).await?;
    Ok(ok(RevokedSessions { revoked_sessions }))
}

error_responses!(ResetErrors:
    [Error::NotFound, Error::Conflict(Conflict::AccountDisabled),
     Error::RateLimited { retry_after: 3600 }],
    gate_errors(),
);

/// Mail the account a password-reset link now.
///
/// Within the account's allowance of 3 reset mails an hour (shared with forgotten-password
/// requests; past it 429, `retryAfter` an upper bound). A disabled account gets none (409).
#[utoipa::path(post, path = "/users/{id}/password-reset", tag = "admin", security(("bearer" = [])),
    params(("id" = Uuid, Path, description = "The account's id")),
    responses((status = 202, description = "The link is in the outbox", body = Envelope<Done>), ResetErrors))]
async fn password_reset(
    State(state): State<AppState>,
    admin: Admin,
    PathId(id): PathId,
) -> Result<(StatusCode, Answer<Done>)> {
    state.auth.admin.send_password_reset(admin.op(), id).await?;
    Ok((StatusCode::ACCEPTED, ok(Done {})))
}

error_responses!(ResetTwoFactorErrors:
    [Error::NotFound, Error::Conflict(
        Conflict::OwnAccount(OwnAction::ResetSecondFactor))],
    gate_errors(),
);

/// Turn an account's two-factor authentication off (a lost authenticator), and end its sessions.
///
/// The account signs in with its password alone (or a passkey) until it enables 2FA again; a
/// notice is mailed. Not the caller's own (409).
#[utoipa::path(post, path = "/users/{id}/reset-2fa", tag = "admin", security(("bearer" = [])),
    params(("id" = Uuid, Path, description = "The account's id")),
    responses((status = 200, description = "2FA is off", body = Envelope<Done>), ResetTwoFactorErrors))]
async fn reset_two_factor(
    State(state): State<AppState>,
    admin: Admin,
    PathId(id): PathId,
) -> Result<Answer<Done>> {
    state.auth.admin.reset_two_factor(admin.op(), id).await?;
    Ok(ok(Done {}))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::admin::MAX_LIMIT;

    #[test]
    fn page_sizes_are_bounded() {
        let mut v = Validator::new();
        assert_eq!(limit(&mut v, Some("200")), Some(MAX_LIMIT));
        assert_eq!(limit(&mut v, Some("201")), None);
        assert!(v.finish(Some(())).is_err());
    }
}
