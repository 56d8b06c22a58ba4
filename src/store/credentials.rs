//! The sign-in methods an account has besides its password, read and, at the first proof of its
//! address, removed (issue 22): a password reset or a verification link that reaches an address
//! never verified before removes every passkey, the TOTP authenticator and its recovery codes,
//! because whoever added them had not shown that the address reaches them (an account
//! pre-registered with someone else's address must not be kept by its passkey). A new kind of
//! credential (API keys, linked identities: docs/api.md §12, §14) is removed here too, and named in
//! `model::SignInMethods`.

use super::{Backend, Store};

#[derive(sqlx::FromRow)]
pub(super) struct ProofRow {
    pub email_verified: bool,
    pub totp_secret: Option<Vec<u8>>,
}

#[derive(sqlx::FromRow)]
pub(super) struct PasskeyLabelRow {
    pub name: String,
    pub created_at: i64,
}

impl Store {
    /// What locks an account's row for the rest of a transaction, so that no passkey is added to
    /// it meanwhile (a passkey's insert checks the row's key): PostgreSQL's `FOR UPDATE`; SQLite
    /// has one writer at a time, and a transaction that proves an address writes first.
    pub(super) fn row_lock(&self) -> &'static str {
        match self.backend {
            Backend::Sqlite { .. } => "",
            Backend::Postgres(_) => " FOR UPDATE",
        }
    }
}

/// In `$tx`, after the change that proves the address of account `$user` has consumed its token
/// and before the address is marked verified: locks the account (`$lock`, `Store::row_lock`),
/// reads its other sign-in methods, and removes them if the address was never verified. Evaluates
/// to the `AddressProof`.
macro_rules! prove_address {
    ($tx:ident, $user:expr, $lock:expr) => {{
        let user: uuid::Uuid = $user;
        let row: $crate::store::credentials::ProofRow = sqlx::query_as(&format!(
            "SELECT email_verified, totp_secret FROM users WHERE id = $1{}",
            $lock
        ))
        .bind(user)
        .fetch_one(&mut *$tx)
        .await?;
        let passkeys: Vec<$crate::store::credentials::PasskeyLabelRow> = sqlx::query_as(
            "SELECT name, created_at FROM passkeys WHERE user_id = $1 ORDER BY created_at, id",
        )
        .bind(user)
        .fetch_all(&mut *$tx)
        .await?;
        // A provider's identity linked to an account whose address no one had proved is the
        // pre-account takeover of docs/api.md §14 by the other door: it goes with the rest.
        let identities: Vec<String> = sqlx::query_scalar(
            "SELECT provider_id FROM federated_identities WHERE user_id = $1 ORDER BY provider_id",
        )
        .bind(user)
        .fetch_all(&mut *$tx)
        .await?;
        let methods = $crate::model::SignInMethods {
            identities,
            passkeys: passkeys
                .into_iter()
                .map(|p| (p.name, p.created_at))
                .collect(),
            authenticator: row.totp_secret.is_some(),
        };
        if row.email_verified {
            $crate::model::AddressProof {
                removed: Default::default(),
                remaining: methods,
            }
        } else {
            for sql in [
                "DELETE FROM passkeys WHERE user_id = $1",
                "DELETE FROM passkey_ceremonies WHERE user_id = $1",
                "DELETE FROM recovery_codes WHERE user_id = $1",
                "DELETE FROM federated_identities WHERE user_id = $1",
                "UPDATE users SET totp_secret = NULL, totp_pending = NULL WHERE id = $1",
            ] {
                sqlx::query(sql).bind(user).execute(&mut *$tx).await?;
            }
            $crate::model::AddressProof {
                removed: methods,
                remaining: Default::default(),
            }
        }
    }};
}
pub(super) use prove_address;
