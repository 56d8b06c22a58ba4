//! What a sign-in for an unknown address is verified against. Without imported hashes, every
//! account's hash is Argon2id and so is the dummy an unknown address is checked against: the two
//! cost the same. An imported hash (`foreign`) costs what its algorithm costs (bcrypt of cost 10:
//! about three Argon2id verifications), so until its owner signs in once, a wrong password for
//! that address would take visibly longer than one for an address nobody has: a timing oracle for
//! "this address has an imported account". So an unknown address is checked, in the same share as
//! the accounts that still hold imported hashes, against one of those hashes instead of the dummy;
//! which one it is, is drawn from a keyed hash of the address (`Secrets::sign_in_draw`), so the
//! same address always costs the same, on every instance, and nobody without the master key can
//! tell which addresses draw what.

use std::sync::{Arc, RwLock};

/// The shares of the imported hashes still in use, as the last count found them.
#[derive(Default)]
pub struct Decoys {
    table: RwLock<Arc<Vec<Decoy>>>,
}

struct Decoy {
    /// Draws below this (and above the previous decoy's) use this hash.
    below: u64,
    hash: String,
}

/// One algorithm's imported hashes: how many accounts hold one, and one of them, which an unknown
/// address's sign-in verifies a password against (a real hash, so the cost is the real cost; the
/// answer is discarded).
pub struct ImportedKind {
    pub accounts: u64,
    pub sample: String,
}

impl Decoys {
    /// Replaces the shares: `kinds` of `total` accounts.
    pub fn replace(&self, total: u64, kinds: Vec<ImportedKind>) {
        let mut table = Vec::with_capacity(kinds.len());
        let mut below = 0u64;
        for kind in kinds {
            let share = u128::from(kind.accounts) * u128::from(u64::MAX) / u128::from(total.max(1));
            below = below.saturating_add(u64::try_from(share).unwrap_or(u64::MAX));
            table.push(Decoy {
                below,
                hash: kind.sample,
            });
        }
        *self.table.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(table);
    }

    /// The hash an unknown address of this draw is verified against: an imported one, or `None`
    /// for the Argon2id dummy.
    pub fn pick(&self, draw: u64) -> Option<String> {
        let table = self.table.read().unwrap_or_else(|e| e.into_inner()).clone();
        table
            .iter()
            .find(|decoy| draw < decoy.below)
            .map(|decoy| decoy.hash.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_fall_on_the_imported_hashes_in_their_share() {
        let decoys = Decoys::default();
        assert_eq!(decoys.pick(0), None, "no imported hash: always the dummy");
        decoys.replace(
            4,
            vec![ImportedKind {
                accounts: 1,
                sample: "$2b$10$x".into(),
            }],
        );
        let hits = (0..1000u64)
            .map(|i| i * (u64::MAX / 1000))
            .filter(|draw| decoys.pick(*draw).is_some())
            .count();
        assert!((240..=260).contains(&hits), "{hits} of 1000");
        assert_eq!(decoys.pick(u64::MAX), None);
        decoys.replace(4, Vec::new());
        assert_eq!(decoys.pick(0), None, "once every imported hash is replaced");
    }
}
