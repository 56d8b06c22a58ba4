-- Personal API keys (docs/api.md §12): long-lived credentials a person makes for scripts and
-- integrations, sent as `Authorization: Bearer ghk_…`.

CREATE TABLE api_keys (
    id           UUID PRIMARY KEY,
    -- a key lives no longer than its owner
    user_id      UUID NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name         TEXT NOT NULL,
    -- the first 8 characters after `ghk_`, shown in lists so that the owner can tell keys apart;
    -- 48 of the key's ≥ 190 random bits, which leaves more than 140 unknown
    prefix       TEXT NOT NULL,
    -- the key's keyed hash (HMAC-SHA256 under a key derived from the master key): all that is
    -- kept of it. A key is found by this index, so comparing a presented key is the lookup of its
    -- hash, and nothing about the stored key's bytes leaks through timing.
    key_hash     BYTEA NOT NULL UNIQUE,
    -- resource scopes of the business API, sorted, space-separated (contacts:read contacts:write)
    scopes       TEXT NOT NULL,
    -- the organisation whose contacts the key works with (NULL: the owner's own); a key lives no
    -- longer than its organisation, and is refused once its owner is no longer a member
    org_id       UUID REFERENCES orgs (id) ON DELETE CASCADE,
    -- ms; NULL: never expires
    expires_at   BIGINT,
    created_at   BIGINT NOT NULL,
    -- ms; written at most once a minute per key (a conditional UPDATE), never on every request
    last_used_at BIGINT
);
-- a person's keys (the list, the limit of 50)
CREATE INDEX api_keys_user ON api_keys (user_id);

-- The client addresses each key was used from: a use from an address not here is audited
-- (`api_key.new_address`), once, however many instances see it first.
CREATE TABLE api_key_addresses (
    key_id  UUID NOT NULL REFERENCES api_keys (id) ON DELETE CASCADE,
    address TEXT NOT NULL,
    PRIMARY KEY (key_id, address)
);
