//! Group commit for the refresh rotation. A rotation is three small statements in a write
//! transaction of its own, and on SQLite the transaction costs more than its statements: BEGIN
//! IMMEDIATE and COMMIT (the write-ahead log's appends, the file locks) were 18.5 % of the
//! server's time under a refresh load, the statements 5.5 % (BENCHMARKS.md, 2026-11-24). Rotations
//! queue for the one write turn anyway; so each leaves its work in a queue first, and whoever
//! gets the turn runs every rotation queued by then in one transaction: one COMMIT for many.
//!
//! Each rotation is judged alone, as in a transaction of its own: its statements run inside a
//! SAVEPOINT, in queue order, each seeing what those before it wrote (two rotations of one token:
//! the first consumes it, the second finds it consumed). One whose statement fails is rolled back
//! to its savepoint and answered with its error; the others go on. Answers are sent after the
//! COMMIT, so a racing tab's grace-window reads (`Sessions::already_rotated`, on a read
//! connection) see the rotation that beat it. An error that ends the whole transaction (SQLite
//! rolls back by itself after a full disk or an I/O error) or a failed COMMIT fails every rotation
//! of the batch: none was written, and each client may present its token again.

use rusqlite::{Connection, TransactionBehavior};
use tokio::sync::oneshot;
use uuid::Uuid;

use super::hot::{execute, one, session};
use super::{Lite, lock};
use crate::error::{Error, Result};
use crate::model::{RefreshRecord, Session};
use crate::store::sessions::{ROTATE_SQLITE_STEPS, SessionRow};

/// A rotation waiting for a holder of the write turn: `Store::rotate_refresh`'s arguments, and
/// where its answer goes.
pub(super) struct Rotation {
    jti: Uuid,
    next: RefreshRecord,
    answer: oneshot::Sender<Result<Option<Session>>>,
}

impl Lite {
    /// `Store::rotate_refresh`: the three statements of `ROTATE_SQLITE_STEPS`, committed with
    /// whatever other rotations wait for the write turn at the time (see the module's comment).
    pub(crate) async fn rotate_refresh(
        &self,
        jti: Uuid,
        next: &RefreshRecord,
    ) -> Result<Option<Session>> {
        let (answer, mut answered) = oneshot::channel();
        let next = next.clone();
        let key = next.jti;
        lock(&self.inner.rotations).push(Rotation { jti, next, answer });
        // Either a holder of the turn runs this rotation in its batch (the answer comes first), or
        // this caller gets the turn with the rotation still queued, and runs the batch itself.
        let mut turn = tokio::select! {
            biased;
            answer = &mut answered => return delivered(answer),
            turn = self.turn() => match turn {
                Ok(turn) => turn,
                // Run by no one, unless a holder took it from the queue meanwhile: then it will
                // be answered, and its answer is the truth.
                Err(error) if self.unqueue(key) => return Err(error),
                Err(_) => return delivered(answered.await),
            },
        };
        // The previous holder answers before it gives the turn up: it may have run this one last.
        if let Ok(answer) = answered.try_recv() {
            return answer;
        }
        let conn = match Lite::connection(&mut turn, &self.inner.path) {
            Ok(conn) => conn,
            Err(error) => {
                self.unqueue(key);
                return Err(error);
            }
        };
        let batch = std::mem::take(&mut *lock(&self.inner.rotations));
        run(conn, batch);
        drop(turn);
        delivered(answered.await)
    }

    /// Takes the rotation whose next token is `key` out of the queue; whether it was still there.
    fn unqueue(&self, key: Uuid) -> bool {
        let mut queue = lock(&self.inner.rotations);
        let before = queue.len();
        queue.retain(|r| r.next.jti != key);
        queue.len() < before
    }

    /// Rotations waiting for a holder of the turn.
    #[cfg(test)]
    pub(crate) fn queued(&self) -> usize {
        lock(&self.inner.rotations).len()
    }
}

fn delivered(
    answer: std::result::Result<Result<Option<Session>>, oneshot::error::RecvError>,
) -> Result<Option<Session>> {
    answer.unwrap_or_else(|_| {
        // Only a holder that panicked drops a rotation unanswered.
        Err(Error::Internal(anyhow::anyhow!(
            "the refresh rotation's batch was abandoned"
        )))
    })
}

/// Runs `batch` in one transaction and answers each of its rotations.
fn run(conn: &mut Connection, batch: Vec<Rotation>) {
    // A cancelled request's rotation is left out: no one would receive its tokens.
    let batch: Vec<Rotation> = batch
        .into_iter()
        .filter(|r| !r.answer.is_closed())
        .collect();
    if batch.is_empty() {
        return;
    }
    match rotate_all(conn, &batch) {
        Ok(answers) => {
            for (rotation, answer) in batch.into_iter().zip(answers) {
                let answer = answer
                    .map(|row| row.map(Session::from))
                    .map_err(super::error);
                let _ = rotation.answer.send(answer);
            }
        }
        Err(error) => {
            if !conn.is_autocommit() {
                let _ = conn.execute_batch("ROLLBACK");
            }
            for rotation in batch {
                let cause = anyhow::anyhow!("a batch of refresh rotations failed: {error}");
                let answer = super::classify(super::unavailable(&error), cause);
                let _ = rotation.answer.send(Err(answer));
            }
        }
    }
}

/// Each rotation's answer, once all are committed; an error if none could be.
fn rotate_all(
    conn: &mut Connection,
    batch: &[Rotation],
) -> rusqlite::Result<Vec<rusqlite::Result<Option<SessionRow>>>> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let mut answers = Vec::with_capacity(batch.len());
    for rotation in batch {
        execute(&tx, "SAVEPOINT rotation", &[])?;
        let answer = match rotate(&tx, rotation) {
            // SQLite ended the transaction itself: what the batch did before is gone too.
            Err(error) if tx.is_autocommit() => return Err(error),
            Err(error) => {
                execute(&tx, "ROLLBACK TO rotation", &[])?;
                Err(error)
            }
            done => done,
        };
        execute(&tx, "RELEASE rotation", &[])?;
        answers.push(answer);
    }
    tx.commit()?;
    Ok(answers)
}

/// One rotation's statements, within the batch's transaction: nothing else writes between them,
/// so the session that the first found unrevoked is still so in the third.
fn rotate(conn: &Connection, r: &Rotation) -> rusqlite::Result<Option<SessionRow>> {
    let args: [&dyn rusqlite::ToSql; 4] = [
        r.jti.as_bytes(),
        &r.next.issued_at,
        r.next.jti.as_bytes(),
        &r.next.expires_at,
    ];
    let [consume, insert, touch] = ROTATE_SQLITE_STEPS;
    if execute(conn, consume, &args)? != 1 {
        // Not current: nothing was written.
        return Ok(None);
    }
    execute(conn, insert, &args)?;
    one(conn, touch, &args, session)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::sessions::NewSession;
    use crate::store::users::NewUser;
    use crate::store::{Backend, Store};

    fn record(session_id: Uuid, jti: Uuid, now: i64) -> RefreshRecord {
        RefreshRecord {
            jti,
            session_id,
            issued_at: now,
            expires_at: now + 60_000,
            consumed_at: None,
        }
    }

    /// Rotations queued behind a held write turn run as one batch: each is judged as alone (the
    /// second rotation of one token finds it consumed), and the one whose insert fails (its next
    /// jti is taken) is rolled back alone, its token still current, while the others commit.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_batch_judges_each_rotation_alone() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("t.db").display());
        let store = Store::connect(&url).await.unwrap();
        store.migrate().await.unwrap();
        let Backend::Sqlite { lite, .. } = &store.backend else {
            unreachable!("a SQLite URL")
        };
        let now = 1_000_000;
        let user = Uuid::new_v4();
        let new_user = NewUser {
            id: user,
            email: "a@example.com",
            email_normalized: "a@example.com",
            full_name: "A",
            password_hash: "x",
            created_at: now,
        };
        assert!(store.insert_user(&new_user).await.unwrap());
        let mut firsts = Vec::new();
        for _ in 0..6 {
            let (id, first) = (Uuid::new_v4(), Uuid::new_v4());
            let amr = ["pwd".to_owned()];
            let refresh = record(id, first, now);
            let session = NewSession {
                id,
                user_id: user,
                amr: &amr,
                ip: None,
                user_agent: None,
                refresh: &refresh,
                auth_epoch: 0,
                grant: None,
                org_id: None,
            };
            assert!(store.insert_session(&session).await.unwrap());
            firsts.push((id, first));
        }
        let turn = lite.turn().await.unwrap();
        let mut rotations = Vec::new();
        let mut queue = |jti: Uuid, next: RefreshRecord| {
            let lite = lite.clone();
            rotations.push(tokio::spawn(async move {
                lite.rotate_refresh(jti, &next).await
            }));
        };
        // Sessions 0–3 rotated once; session 4's token twice; session 5's onto a taken jti.
        for &(id, first) in &firsts[..4] {
            queue(first, record(id, Uuid::new_v4(), now + 1));
        }
        let (id4, first4) = firsts[4];
        queue(first4, record(id4, Uuid::new_v4(), now + 1));
        queue(first4, record(id4, Uuid::new_v4(), now + 1));
        let (id5, first5) = firsts[5];
        queue(first5, record(id5, firsts[0].1, now + 1));
        while lite.queued() < 7 {
            tokio::task::yield_now().await;
        }
        drop(turn);
        let mut answers = Vec::new();
        for rotation in rotations {
            answers.push(rotation.await.unwrap());
        }
        for (answer, &(id, _)) in answers.iter().zip(&firsts[..4]) {
            let session = answer.as_ref().unwrap().as_ref().unwrap();
            assert_eq!(session.id, id);
            assert_eq!(session.last_used_at, now + 1);
        }
        // Of the two rotations of one token, whichever was queued first.
        let twice: Vec<&Session> = answers[4..6]
            .iter()
            .filter_map(|a| a.as_ref().unwrap().as_ref())
            .collect();
        assert_eq!(twice.len(), 1, "rotated once");
        assert_eq!(twice[0].id, id4);
        assert!(answers[6].is_err(), "the taken jti");
        assert_eq!(lite.queued(), 0);
        // Committed, each as answered: session 5's token is still its current one.
        for (i, &(id, first)) in firsts.iter().enumerate() {
            let current = store.current_refresh_token(id).await.unwrap().unwrap();
            assert_eq!(current.jti == first, i == 5, "session {i}");
            let presented = store.refresh_token(first).await.unwrap().unwrap();
            assert_eq!(presented.consumed_at.is_some(), i != 5, "session {i}");
        }
        store.close().await;
    }
}
