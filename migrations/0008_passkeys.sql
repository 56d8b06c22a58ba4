-- Passkeys (WebAuthn, docs/api.md §9): the credentials of each account, and the ceremonies in
-- flight, kept here rather than in one process's memory so that any instance finishes a ceremony
-- another started.

CREATE TABLE passkeys (
    id              UUID PRIMARY KEY,
    user_id         UUID NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    -- the authenticator's credential id (raw bytes). Unique across accounts: one credential
    -- registered to two accounts would sign in to whichever is looked up first
    credential_id   BYTEA NOT NULL UNIQUE,
    -- the user's label for it, shown in the list
    name            TEXT NOT NULL,
    -- webauthn-rs's `Passkey` as JSON: the public key, the counter and the backup flags the
    -- library checks the next assertion against. Public data: nothing here signs anything
    credential      TEXT NOT NULL,
    -- copies of the credential's counter and backup flags, updated with it on each use: the
    -- counter is compared in the UPDATE itself, so two instances racing with a cloned
    -- authenticator's assertions cannot both move it
    sign_count      BIGINT NOT NULL,
    backup_eligible BOOLEAN NOT NULL,
    backup_state    BOOLEAN NOT NULL,
    created_at      BIGINT NOT NULL,
    last_used_at    BIGINT
);
CREATE INDEX passkeys_user ON passkeys (user_id);

-- A registration or sign-in begun and not yet finished: single use (deleted by the finish that
-- takes it, whatever its outcome), 5 minutes of life.
CREATE TABLE passkey_ceremonies (
    -- the ceremonyId handed to the client (UUIDv4: 122 random bits)
    id              UUID PRIMARY KEY,
    -- 'register', 'login' (e-mail given), 'discoverable' (no e-mail) or 'second_factor'
    kind            TEXT NOT NULL,
    -- whose registration it is, or whose 2FA challenge it completes; none for the sign-ins
    user_id         UUID REFERENCES users (id) ON DELETE CASCADE,
    -- the SHA-256 of the 2FA challenge's temp token a 'second_factor' ceremony completes
    temp_token_hash BYTEA,
    -- webauthn-rs's ceremony state as JSON (the challenge, and for a sign-in the credentials
    -- allowed): it never leaves the server
    state           TEXT NOT NULL,
    expires_at      BIGINT NOT NULL
);
-- housekeeping deletes the abandoned ones by age
CREATE INDEX passkey_ceremonies_expires ON passkey_ceremonies (expires_at);
