-- Issue 38: trust between parties.

-- Who proved an account's address (docs/guide/providers.md, "Which provider speaks for an
-- address"): NULL when the account proved it itself (a mailed link: verification, reset,
-- invitation) or the operator made it; else the `id` of the identity provider that vouched for it
-- when it made the account. A domain's provider adopts an existing account only when the address
-- was proved by mail or by that provider itself, never by another provider's word.
ALTER TABLE users ADD COLUMN email_verified_by TEXT;
-- Accounts made by a provider before this column: the provider of the identity linked when the
-- account was made (federated sign-up writes both with the same time).
UPDATE users SET email_verified_by = (
    SELECT f.provider_id FROM federated_identities f
    WHERE f.user_id = users.id AND f.linked_at = users.created_at
    ORDER BY f.provider_id LIMIT 1
) WHERE email_verified AND password_hash = '';

-- Access tokens revoked one by one (RFC 7009) that belong to no session of the sessions table: a
-- client's token for itself (client credentials), whose `sid` names nothing else. The revocation
-- poll reads these beside the sessions' (`live`); a row is kept until the token would have
-- expired anyway.
CREATE TABLE token_revocations (
    sid        UUID PRIMARY KEY,
    revoked_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);
-- the poll's: covering, so that it reads the index alone however few rows the table holds
CREATE INDEX token_revocations_revoked_at ON token_revocations (revoked_at, sid);
CREATE INDEX token_revocations_expires_at ON token_revocations (expires_at);

-- The clients that may introspect tokens (RFC 7662): resource servers the operator designates,
-- no longer every confidential client. The operator's confidential clients made before this
-- column keep the right they had (introspection was what the first clients were for); clients
-- that registered themselves lose it.
ALTER TABLE api_clients ADD COLUMN introspection BOOLEAN NOT NULL DEFAULT FALSE;
UPDATE api_clients SET introspection = TRUE
WHERE origin = 'operator' AND client_type = 'confidential';
