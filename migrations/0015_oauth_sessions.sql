-- Issue 25 (docs/api.md §11, the OpenID provider): the sessions clients are given, the
-- authorization codes that begin them, and the consents people gave.

-- A session begun by an authorization of a client (NULL: the person's own sign-in). Each
-- authorization is a session of its own, so that the live revocation of §2 (every instance refuses
-- its tokens within 2 s of its end) holds for clients' tokens too.
ALTER TABLE sessions ADD COLUMN client_id UUID;
-- the granted scopes, space-separated (scope tokens hold no space, RFC 6749 §3.3)
ALTER TABLE sessions ADD COLUMN scope TEXT;
-- the person's own session the authorization was given from
ALTER TABLE sessions ADD COLUMN parent_id UUID;
-- when the person authenticated (ms), for the ID token's `auth_time`
ALTER TABLE sessions ADD COLUMN auth_time BIGINT;
-- the RFC 8707 resource the tokens are for, when one was asked (NULL: GATEHOUSE_AUDIENCE)
ALTER TABLE sessions ADD COLUMN audience TEXT;
CREATE INDEX sessions_client ON sessions (client_id) WHERE client_id IS NOT NULL;
CREATE INDEX sessions_parent ON sessions (parent_id) WHERE parent_id IS NOT NULL;

-- Authorization codes: single use, 60 s, bound to the client, the redirect URI, the PKCE
-- challenge, the nonce and the person's session. Only the SHA-256 of the >=128-bit code is kept.
-- A used code stays until it expires, with the session its exchange began: a second use of it
-- ends that session (RFC 6749 §4.1.2).
CREATE TABLE oauth_codes (
    code_hash      BYTEA PRIMARY KEY,
    client_id      UUID NOT NULL REFERENCES api_clients (id) ON DELETE CASCADE,
    user_id        UUID NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    parent_id      UUID NOT NULL,
    redirect_uri   TEXT NOT NULL,
    -- the S256 challenge, base64url (`plain` is refused)
    code_challenge TEXT NOT NULL,
    scope          TEXT NOT NULL,
    nonce          TEXT,
    audience       TEXT,
    amr            TEXT NOT NULL,
    auth_time      BIGINT NOT NULL,
    expires_at     BIGINT NOT NULL,
    used_at        BIGINT,
    session_id     UUID
);
CREATE INDEX oauth_codes_expires ON oauth_codes (expires_at);

-- What a person allowed a third-party client: a request for a scope not in `scopes` asks again.
CREATE TABLE oauth_consents (
    user_id    UUID NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    client_id  UUID NOT NULL REFERENCES api_clients (id) ON DELETE CASCADE,
    scopes     TEXT NOT NULL,
    granted_at BIGINT NOT NULL,
    PRIMARY KEY (user_id, client_id)
);
CREATE INDEX oauth_consents_client ON oauth_consents (client_id);
