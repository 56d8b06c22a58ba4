-- Issue 26 part C (docs/api.md §12): clients that register themselves, by RFC 7591 dynamic client
-- registration or by a client ID metadata document.

-- How the client came to be: 'operator' (the CLI or the admin API), 'registered' (POST
-- /oauth2/register) or 'metadata_document' (its client_id is the URL of a document it serves).
ALTER TABLE api_clients ADD COLUMN origin TEXT NOT NULL DEFAULT 'operator';
-- A metadata-document client's client_id, the https URL of its document: one row per URL, so that
-- its consents, codes and sessions hang off a row like any client's.
ALTER TABLE api_clients ADD COLUMN metadata_url TEXT;
-- Until when (ms) the fetched document is believed: its Cache-Control max-age, at most 24 h; past
-- it the document is fetched again before the client is used.
ALTER TABLE api_clients ADD COLUMN metadata_fresh_until BIGINT;
-- NULLs are distinct on both databases: operator and registered clients have none.
CREATE UNIQUE INDEX api_clients_metadata_url ON api_clients (metadata_url);

-- Initial access tokens (RFC 7591 §3) for GATEHOUSE_OAUTH_REGISTRATION=token. Only a keyed hash of
-- the 256-bit token is kept; each registers one client (used_at set in the same statement that
-- checks it is unused and unexpired, so two racing registrations cannot both use it).
CREATE TABLE client_registration_tokens (
    id         UUID PRIMARY KEY,
    token_hash BYTEA NOT NULL UNIQUE,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    -- the admin who asked for it; NULL: the CLI
    created_by UUID,
    used_at    BIGINT,
    -- the client it registered
    client_id  UUID
);
