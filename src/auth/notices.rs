//! Security notices to an account's address (docs/api.md §7), and the mailed tokens the link
//! flows share. A notice is queued right after the change it reports has committed; a failure
//! to queue it is logged, never answered: the change has happened.

use super::core::Core;
use crate::crypto::{b64url_decode, random_token, sha256};
use crate::error::{Error, Result};
use crate::mail::{Letter, Notice};
use crate::model::User;
use crate::model::mail::OutboxMail;
use crate::store::mail_tokens::MailTokenRecord;

/// The length of a mailed token: 32 random bytes in base64url.
const TOKEN_LENGTH: usize = 43;

/// A new mailed token and the hash that is all the database keeps of it.
pub(crate) fn new_link_token() -> (String, [u8; 32]) {
    let token = random_token();
    let hash = sha256(token.as_bytes());
    (token, hash)
}

/// The hash of a token as posted, or `LINK_INVALID` for text that no token can be (so a
/// tampered or truncated token costs no database read).
pub(crate) fn link_token_hash(token: &str) -> Result<[u8; 32]> {
    let token = token.trim();
    let well_formed =
        token.len() == TOKEN_LENGTH && b64url_decode(token).is_some_and(|b| b.len() == 32);
    if !well_formed {
        return Err(Error::LinkInvalid);
    }
    Ok(sha256(token.as_bytes()))
}

impl Core {
    /// The live token of `purpose` with this hash, and its enabled account; `LINK_INVALID` else.
    /// Reads only: the change consumes the token.
    pub(crate) async fn live_link(
        &self,
        hash: &[u8; 32],
        purpose: &str,
    ) -> Result<(MailTokenRecord, User)> {
        let record = self
            .store
            .mail_token(hash, purpose, self.clock.now_ms())
            .await?
            .ok_or(Error::LinkInvalid)?;
        let user = self
            .store
            .user_by_id(record.user_id)
            .await?
            .filter(|u| !u.disabled)
            .ok_or(Error::LinkInvalid)?;
        Ok((record, user))
    }

    /// Queues `notice` to `user`'s address. For the flows of this service and of others (the
    /// passkeys' "added" and "removed").
    pub async fn notify(&self, user: &User, notice: Notice) {
        let queued = async {
            let mail = self.compose(user, Letter::Notice(notice))?;
            self.store.queue_mails(&[&mail]).await?;
            self.mailer.queued(&[&mail]);
            Ok::<_, Error>(())
        };
        if let Err(error) = queued.await {
            tracing::warn!(user = %user.id, notice = notice.key(), error = %error, "cannot queue a notice");
        }
    }

    /// `letter` to `user`'s address, ready for the outbox.
    pub(crate) fn compose(&self, user: &User, letter: Letter<'_>) -> Result<OutboxMail> {
        self.compose_to(&user.email, user, letter)
    }

    /// `letter` to `address` (an address change's new one), for `user`.
    pub(crate) fn compose_to(
        &self,
        address: &str,
        user: &User,
        letter: Letter<'_>,
    ) -> Result<OutboxMail> {
        self.mailer
            .compose(address, &user.full_name, letter, self.clock.now_ms())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_have_256_bits_and_only_their_form_is_accepted() {
        let (token, hash) = new_link_token();
        assert_eq!(token.len(), TOKEN_LENGTH);
        assert_eq!(link_token_hash(&token).unwrap(), hash);
        assert!(matches!(
            link_token_hash(&token[1..]),
            Err(Error::LinkInvalid)
        ));
        assert!(matches!(
            link_token_hash(&format!("{}=", &token[1..])),
            Err(Error::LinkInvalid)
        ));
        assert!(matches!(link_token_hash(""), Err(Error::LinkInvalid)));
    }
}
