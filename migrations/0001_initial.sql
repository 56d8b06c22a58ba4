-- One schema for SQLite and PostgreSQL. To keep it portable:
--  * ids are UUIDs (native in PostgreSQL, 16-byte BLOBs in SQLite); the UUIDv7 ids of contacts sort
--    in creation order in both, which the keyset paging relies on;
--  * times are BIGINT milliseconds since the Unix epoch (UTC): SQLite has no timestamp type, and
--    integers compare correctly in both;
--  * booleans are BOOLEAN (0/1 in SQLite).

CREATE TABLE users (
    id               UUID PRIMARY KEY,
    -- as the user gave it (trimmed), shown back to them
    email            TEXT NOT NULL,
    -- lower-cased: the login key, unique so two spellings cannot open two accounts
    email_normalized TEXT NOT NULL UNIQUE,
    full_name        TEXT NOT NULL,
    -- Argon2id PHC string; parameters travel with it, so weaker ones can be upgraded at login
    password_hash    TEXT NOT NULL,
    disabled         BOOLEAN NOT NULL DEFAULT FALSE,
    -- TOTP secret of enabled 2FA, sealed (XChaCha20-Poly1305) under a key derived from the master key
    totp_secret      BYTEA,
    -- secret handed out by 2fa/setup and not yet confirmed by 2fa/enable
    totp_pending     BYTEA,
    -- highest TOTP time step accepted: a code for that step or an older one is a replay
    totp_last_step   BIGINT,
    created_at       BIGINT NOT NULL,
    updated_at       BIGINT NOT NULL
);

CREATE TABLE recovery_codes (
    user_id   UUID NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    -- HMAC-SHA256 of the normalised code under a master-derived key: a database dump alone
    -- cannot be brute-forced back to the 50-bit codes
    code_hash BYTEA NOT NULL,
    used_at   BIGINT,
    PRIMARY KEY (user_id, code_hash)
);

CREATE TABLE sessions (
    id           UUID PRIMARY KEY,
    user_id      UUID NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    -- authentication methods of the login, space-separated (RFC 8176 values), copied into each
    -- access token the session is given
    amr          TEXT NOT NULL,
    ip           TEXT,
    user_agent   TEXT,
    created_at   BIGINT NOT NULL,
    last_used_at BIGINT NOT NULL,
    -- when the newest refresh token lapses: refreshing slides it
    expires_at   BIGINT NOT NULL,
    revoked_at   BIGINT,
    revoked_reason TEXT
);
CREATE INDEX sessions_user ON sessions (user_id);
-- revocations are read by time when instances catch up with each other
CREATE INDEX sessions_revoked ON sessions (revoked_at) WHERE revoked_at IS NOT NULL;

-- Every refresh token issued, by its jti. At most one per session is unconsumed: the current one.
-- A consumed one presented again is either a racing client (within the grace window) or a stolen
-- token (after it), which revokes the session.
CREATE TABLE refresh_tokens (
    jti         UUID PRIMARY KEY,
    session_id  UUID NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    issued_at   BIGINT NOT NULL,
    expires_at  BIGINT NOT NULL,
    consumed_at BIGINT
);
CREATE INDEX refresh_tokens_session ON refresh_tokens (session_id);

-- Two-factor challenges. Only the SHA-256 of the 256-bit token is kept.
CREATE TABLE temp_tokens (
    token_hash BYTEA PRIMARY KEY,
    user_id    UUID NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    attempts   BIGINT NOT NULL DEFAULT 0,
    expires_at BIGINT NOT NULL,
    used_at    BIGINT
);

CREATE TABLE signing_keys (
    -- RFC 7638 thumbprint of the public key
    kid         TEXT PRIMARY KEY,
    -- Ed25519 seed, sealed under a key derived from the master key
    private_key BYTEA NOT NULL,
    public_key  BYTEA NOT NULL,
    state       TEXT NOT NULL CHECK (state IN ('active', 'retired')),
    created_at  BIGINT NOT NULL,
    retired_at  BIGINT
);
-- exactly one key signs: two instances starting at once cannot both create one
CREATE UNIQUE INDEX signing_keys_one_active ON signing_keys (state) WHERE state = 'active';

CREATE TABLE contacts (
    id          UUID PRIMARY KEY,
    owner_id    UUID NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    full_name   TEXT NOT NULL,
    email       TEXT,
    phone       TEXT,
    company     TEXT,
    notes       TEXT,
    -- lower-cased name, e-mail and company joined by U+001F, matched by `q`. Lower-casing in Rust
    -- makes the match Unicode-aware and identical on both databases (SQLite's lower() is ASCII-only).
    search_text TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL
);
-- the list query: one owner's contacts, newest first, from a cursor
CREATE INDEX contacts_owner_id ON contacts (owner_id, id DESC);
