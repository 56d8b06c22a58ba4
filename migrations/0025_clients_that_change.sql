-- Issue 45: clients that change.

-- A rotated secret keeps working beside the new one until `previous_secret_until` (ms), so that a
-- relying party can be given the new one without an outage; the keyed hash as `secret_hash`'s.
ALTER TABLE api_clients ADD COLUMN previous_secret_hash BYTEA;
ALTER TABLE api_clients ADD COLUMN previous_secret_until BIGINT;

-- Whether the client must use PKCE (RFC 7636). Public clients always must; a confidential
-- client may be let off by the operator (a legacy relying party that relies on `nonce`).
ALTER TABLE api_clients ADD COLUMN pkce_required BOOLEAN NOT NULL DEFAULT TRUE;

-- The business APIs an operator declares through the CLI or the admin API (docs/api.md §11;
-- those of the resources file and the built-in contacts API are not stored). `scopes`: a JSON
-- array of {"name", "description"}; a scope name is unique across every API, which the registry
-- checks (it knows the file's and the built-in ones too).
CREATE TABLE resources (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL,
    -- the `aud` of its tokens (RFC 8707 resource indicator); NULL: GATEHOUSE_AUDIENCE
    audience   TEXT UNIQUE,
    scopes     TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    -- instances read the table again at most a second after they last did
    updated_at BIGINT NOT NULL
);
