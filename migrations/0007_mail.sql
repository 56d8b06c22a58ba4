-- Mail (docs/api.md §7): the outbox that delivery workers drain, the mailed tokens, and whether
-- an account's address is known to reach its owner.

-- Accounts made before this migration were made by an operator (CLI) or registered without any
-- check: the operator's are trusted, so every existing account counts as verified.
ALTER TABLE users ADD COLUMN email_verified BOOLEAN NOT NULL DEFAULT TRUE;

-- Mails waiting for delivery, written in the transaction of the change that causes them. A worker
-- claims a due mail by setting `claimed_until` (a lease): another instance takes it only after
-- the lease has lapsed, so a mail is sent by one worker at a time. Delivered mails are deleted.
CREATE TABLE mail_outbox (
    id              UUID PRIMARY KEY,
    -- the envelope's recipient
    recipient       TEXT NOT NULL,
    -- the whole RFC 5322 message, sealed under a key derived from the master key: a reset link in
    -- it is as good as a password until it is used
    message         BYTEA NOT NULL,
    -- what kind of mail (reset, verify, notice.password_changed…), for logs and metrics
    kind            TEXT NOT NULL,
    created_at      BIGINT NOT NULL,
    next_attempt_at BIGINT NOT NULL,
    claimed_until   BIGINT,
    attempts        BIGINT NOT NULL DEFAULT 0,
    last_error      TEXT
);
CREATE INDEX mail_outbox_due ON mail_outbox (next_attempt_at);

-- Tokens sent by mail (reset, verification, invitation). Only the SHA-256 of the 256-bit token is
-- kept. Used or voided tokens stay until they expire: they count against the per-address limit
-- of reset mails.
CREATE TABLE mail_tokens (
    token_hash BYTEA PRIMARY KEY,
    user_id    UUID NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    purpose    TEXT NOT NULL CHECK (purpose IN ('reset', 'verify', 'invite')),
    -- the address a verification token confirms (an address change's new address)
    email      TEXT,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    used_at    BIGINT
);
CREATE INDEX mail_tokens_user ON mail_tokens (user_id, purpose, created_at);
-- housekeeping deletes expired tokens, oldest first
CREATE INDEX mail_tokens_expires ON mail_tokens (expires_at);

-- An account its owner deleted: its personal data, contacts, codes and tokens are gone, its
-- sessions are revoked, and this row stays (with a placeholder address) only so that those
-- revocations reach every instance like any other (they are read from `sessions`).
ALTER TABLE users ADD COLUMN deleted_at BIGINT;
