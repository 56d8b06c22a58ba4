-- Issue 42: the device authorization grant (RFC 8628, docs/api.md §11).

-- A command-line tool's or an agent's request, known by the SHA-256 of its device code (what the
-- client polls with) and of its user code (what the person types on /device), until the person
-- approves or denies it and the client collects its tokens, once.
CREATE TABLE device_authorizations (
    device_hash    BYTEA PRIMARY KEY,
    user_code_hash BYTEA NOT NULL UNIQUE,
    client_id      UUID NOT NULL REFERENCES api_clients (id) ON DELETE CASCADE,
    scope          TEXT NOT NULL,
    audience       TEXT,
    created_at     BIGINT NOT NULL,
    expires_at     BIGINT NOT NULL,
    -- the least time between two polls (ms); RFC 8628 §3.5's slow_down adds 5 s to it, for every
    -- instance (the client may poll any)
    interval_ms    BIGINT NOT NULL,
    polled_at      BIGINT,
    -- whether the last poll came before `interval_ms` had passed since the one before it
    early          BOOLEAN NOT NULL DEFAULT FALSE,
    -- 'pending', 'approved' or 'denied'
    status         TEXT NOT NULL,
    -- the approval: who, from which of their sessions, how they signed in, in which organisation
    user_id        UUID REFERENCES users (id) ON DELETE CASCADE,
    parent_id      UUID,
    amr            TEXT,
    auth_time      BIGINT,
    org_id         UUID,
    -- the collection of the tokens, and the client's session it began
    used_at        BIGINT,
    session_id     UUID
);
CREATE INDEX device_authorizations_expires ON device_authorizations (expires_at);
CREATE INDEX device_authorizations_client ON device_authorizations (client_id);
CREATE INDEX device_authorizations_user ON device_authorizations (user_id);
