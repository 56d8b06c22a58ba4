-- Guarding other services (docs/api.md §6): roles, the change feed forward-auth reads, and the
-- clients that may introspect tokens.

-- The account's roles, space-separated, sorted (names are [a-z0-9][a-z0-9_.:-]{0,63}, so they hold
-- no space). A column rather than a table of its own: every token issue and every refresh reads
-- the account's row already, and a change of roles is then one UPDATE that also moves
-- `updated_at`, which is how other instances learn of it.
ALTER TABLE users ADD COLUMN roles TEXT NOT NULL DEFAULT '';

-- Each instance keeps the accounts forward-auth and introspection describe (e-mail, name, roles)
-- in memory, and polls this index for the accounts changed since its last look. It covers the
-- poll (`id` included): without it SQLite judged a range of an unknown bound cheaper to scan.
CREATE INDEX users_updated_at ON users (updated_at, id);

-- Clients registered with `gatehouse clients add`, which may call /oauth2/introspect (RFC 7662).
CREATE TABLE api_clients (
    id          UUID PRIMARY KEY,
    name        TEXT NOT NULL,
    -- HMAC-SHA256 of the secret under a key derived from the master key. The secret is 256 random
    -- bits, so a fast keyed hash is as strong as a slow one here, and an introspection call does
    -- not cost a password hash.
    secret_hash BYTEA NOT NULL,
    created_at  BIGINT NOT NULL
);
