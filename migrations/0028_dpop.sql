-- Issue 42: DPoP (RFC 9449, docs/api.md §11). The proofs seen, by the SHA-256 of their key's
-- thumbprint and their jti, until their window (iat, 60 s back and 5 s ahead) has passed: a proof
-- used again, on any instance, is refused.
CREATE TABLE dpop_proofs (
    proof_hash BYTEA PRIMARY KEY,
    expires_at BIGINT NOT NULL
);
CREATE INDEX dpop_proofs_expires ON dpop_proofs (expires_at);

-- A client that must use DPoP (RFC 9449 §5.2's `dpop_bound_access_tokens`): its token requests
-- without a proof are refused, so every token it gets is bound to its key.
ALTER TABLE api_clients ADD COLUMN dpop_required BOOLEAN NOT NULL DEFAULT FALSE;
