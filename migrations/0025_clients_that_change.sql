-- Issue 45: clients that change.

-- A rotated secret keeps working beside the new one until `previous_secret_until` (ms), so that a
-- relying party can be given the new one without an outage; the keyed hash as `secret_hash`'s.
ALTER TABLE api_clients ADD COLUMN previous_secret_hash BYTEA;
ALTER TABLE api_clients ADD COLUMN previous_secret_until BIGINT;

-- Whether the client must use PKCE (RFC 7636). Public clients always must; a confidential
-- client may be let off by the operator (a legacy relying party that relies on `nonce`).
ALTER TABLE api_clients ADD COLUMN pkce_required BOOLEAN NOT NULL DEFAULT TRUE;
