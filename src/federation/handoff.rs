//! A finished sign-in waiting for the pages (`POST /auth/providers/finish`): the login's answer,
//! sealed under the master key with the cookie's hash as context, so that a row read from the
//! database (a backup, a replica) gives no tokens, and one row cannot be opened as another's.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::crypto::Secrets;
use crate::error::{Error, Result};
use crate::model::{LoginOutcome, TokenSet, UserSummary};

#[derive(Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Sealed {
    Tokens {
        access_token: String,
        refresh_token: String,
        expires_in: i64,
        user_id: Uuid,
        email: String,
        full_name: String,
        session_id: Uuid,
    },
    Challenge {
        temp_token: String,
    },
}

pub(super) fn seal(secrets: &Secrets, hash: &[u8; 32], outcome: &LoginOutcome) -> Result<Vec<u8>> {
    let sealed = match outcome {
        LoginOutcome::Tokens(t) => Sealed::Tokens {
            access_token: t.access_token.clone(),
            refresh_token: t.refresh_token.clone(),
            expires_in: t.expires_in,
            user_id: t.user.id,
            email: t.user.email.clone(),
            full_name: t.user.full_name.clone(),
            session_id: t.session_id,
        },
        LoginOutcome::Challenge { temp_token } => Sealed::Challenge {
            temp_token: temp_token.clone(),
        },
    };
    let json = serde_json::to_vec(&sealed).map_err(Error::internal)?;
    Ok(secrets.seal(hash, &json))
}

pub(super) fn open(secrets: &Secrets, hash: &[u8; 32], sealed: &[u8]) -> Result<LoginOutcome> {
    let json = secrets
        .open(hash, sealed)
        .map_err(|_| Error::internal(anyhow::anyhow!("a federation handoff does not open")))?;
    let sealed: Sealed = serde_json::from_slice(&json).map_err(Error::internal)?;
    Ok(match sealed {
        Sealed::Tokens {
            access_token,
            refresh_token,
            expires_in,
            user_id,
            email,
            full_name,
            session_id,
        } => LoginOutcome::Tokens(TokenSet {
            access_token,
            refresh_token,
            expires_in,
            user: UserSummary {
                id: user_id,
                email,
                full_name,
            },
            session_id,
        }),
        Sealed::Challenge { temp_token } => LoginOutcome::Challenge { temp_token },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::MasterKey;

    #[test]
    fn a_handoff_opens_only_under_its_own_hash() {
        let secrets = Secrets::new(&MasterKey::generate());
        let outcome = LoginOutcome::Challenge {
            temp_token: "t".into(),
        };
        let sealed = seal(&secrets, &[1; 32], &outcome).unwrap();
        assert!(matches!(
            open(&secrets, &[1; 32], &sealed).unwrap(),
            LoginOutcome::Challenge { temp_token } if temp_token == "t"
        ));
        assert!(open(&secrets, &[2; 32], &sealed).is_err());
    }
}
