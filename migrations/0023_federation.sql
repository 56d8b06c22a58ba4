-- Issue 28: signing in with other identity providers (docs/api.md §14). An upstream OpenID
-- provider's identity (provider, `sub`) linked to an account, the sign-ins and links under way,
-- and the finished sign-ins the pages have yet to collect.

CREATE TABLE federated_identities (
    -- the `id` of the provider in the providers file (`[a-z0-9-]{1,32}`); a provider removed from
    -- the file leaves its rows, which sign no one in until it is back
    provider_id  TEXT NOT NULL,
    -- the ID token's `sub`: stable and unique at that provider (OpenID Connect Core §2), unlike
    -- the address, which is never what finds the account
    subject      TEXT NOT NULL,
    -- an identity lives no longer than its account
    user_id      UUID NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    -- the address as the provider last said, shown in the list; NULL when it gave none
    email        TEXT,
    linked_at    BIGINT NOT NULL,
    -- ms of the last sign-in through it; NULL before the first
    last_used_at BIGINT,
    PRIMARY KEY (provider_id, subject)
);
-- one identity per provider and account (a second is 409 CONFLICT); also an account's list
CREATE UNIQUE INDEX federated_identities_user ON federated_identities (user_id, provider_id);

-- A sign-in or link under way, bound to the browser that started it: the key is the SHA-256 of the
-- value of the browser's `gatehouse_federation` cookie, so a `state` seen in a URL (a log, a
-- Referer) is worth nothing without the cookie. Single use: the callback deletes the row it reads.
CREATE TABLE federation_flows (
    binding_hash BYTEA PRIMARY KEY,
    provider_id  TEXT NOT NULL,
    -- SHA-256 of `state`, compared in constant time
    state_hash   BYTEA NOT NULL,
    -- what the ID token's `nonce` must be; worth nothing without a token signed for it
    nonce        TEXT NOT NULL,
    -- the PKCE verifier, sealed (XChaCha20-Poly1305 under the master key, context = binding_hash)
    verifier     BYTEA NOT NULL,
    -- where the sign-in ends, checked against the allowed return URLs when the flow began
    return_to    TEXT NOT NULL,
    -- 'sign_in'; 'link' (an identity to link to the account below); 'reauthenticate' (the session
    -- below proves its holder again through the identity linked to its account)
    purpose      TEXT NOT NULL,
    -- a link or a re-authentication: whose account, from which session (a sign-out on the way
    -- ends the flow too)
    user_id      UUID REFERENCES users (id) ON DELETE CASCADE,
    session_id   UUID REFERENCES sessions (id) ON DELETE CASCADE,
    -- ms; 10 minutes after the start
    expires_at   BIGINT NOT NULL
);
CREATE INDEX federation_flows_expiry ON federation_flows (expires_at);
-- Housekeeping deletes sessions by the thousand; each deletion looks here for the link flows of
-- that session (the ON DELETE CASCADE): without an index, this table would be scanned once per
-- session deleted. Partial: most flows are sign-ins (no session), and a planner that counts
-- their NULLs as one value judges a full index no better than a scan (SQLite did).
CREATE INDEX federation_flows_session ON federation_flows (session_id) WHERE session_id IS NOT NULL;

-- A finished sign-in waiting for the pages to collect it (POST /api/v1/auth/providers/finish): the
-- login answer (a token set or a 2FA challenge), sealed under the master key (context =
-- binding_hash); single use; 60 s.
CREATE TABLE federation_handoffs (
    binding_hash BYTEA PRIMARY KEY,
    outcome      BYTEA NOT NULL,
    expires_at   BIGINT NOT NULL
);
CREATE INDEX federation_handoffs_expiry ON federation_handoffs (expires_at);

-- How a challenged login began: 'pwd' (the password) or 'fed' (a provider). The session the
-- challenge completes carries it in its `amr` with the second factor.
ALTER TABLE temp_tokens ADD COLUMN first_factor TEXT NOT NULL DEFAULT 'pwd';
