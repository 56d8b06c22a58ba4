-- Issue 24: browser session cookies (docs/api.md §6b). A cookie belongs to one session and lives
-- no longer: it counts only while its session is neither revoked nor lapsed, and its row goes with
-- the session's (ON DELETE CASCADE, when housekeeping deletes ended sessions). Only the SHA-256
-- of the cookie's 256-bit random value is kept.
CREATE TABLE browser_cookies (
    token_hash BYTEA PRIMARY KEY,
    session_id UUID NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    created_at BIGINT NOT NULL
);
CREATE INDEX browser_cookies_session ON browser_cookies (session_id, created_at);
