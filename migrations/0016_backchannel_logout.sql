-- Issue 25 (docs/api.md §11): OpenID Connect Back-Channel Logout. Whenever a client's session
-- ends, whatever ended it, the client is told by a signed logout token POSTed to its
-- `backchannel_logout_uri`, through this outbox (delivered like mail: claimed under a lease by any
-- instance, retried with backoff, deleted once the client took it).
--
-- How ended sessions get here: a sweep of `sessions` (`auth::oauth::logout`), not a row written by
-- each revocation. Sessions are ended in a dozen places (logout, the session list, password change
-- and reset, disable, deletion, the admin API and the CLI, refresh reuse, code replay, consent
-- withdrawn, client removed) and more will come; the sweep sees every one of them, the CLI's too,
-- because it reads the one thing they all write: `revoked_at`. `logout_queued` is the sweep's
-- durable mark, set in the transaction that queues the notice, so each ended client session is
-- queued exactly once; a time watermark instead would miss a revocation committed late or stamped
-- by an instance whose clock is behind.
ALTER TABLE sessions ADD COLUMN logout_queued BOOLEAN NOT NULL DEFAULT FALSE;
-- Only the ended client sessions not yet swept: the index stays as small as the backlog.
CREATE INDEX sessions_logout_pending ON sessions (revoked_at)
    WHERE client_id IS NOT NULL AND revoked_at IS NOT NULL AND logout_queued = FALSE;

CREATE TABLE backchannel_logouts (
    id              UUID PRIMARY KEY,
    client_id       UUID NOT NULL,
    -- copied from the client when queued: a removed client's sessions are ended, swept and then
    -- the client deleted, and its notices still go out
    uri             TEXT NOT NULL,
    -- the client's ID-token algorithm, which signs the logout token (copied for the same reason)
    alg             TEXT NOT NULL,
    user_id         UUID NOT NULL,
    session_id      UUID NOT NULL,
    attempts        BIGINT NOT NULL DEFAULT 0,
    next_attempt_at BIGINT NOT NULL,
    claimed_until   BIGINT,
    last_error      TEXT,
    created_at      BIGINT NOT NULL
);
CREATE INDEX backchannel_logouts_due ON backchannel_logouts (next_attempt_at);
