-- Organisations (docs/api.md §13): a business API's customers, their members with roles, the
-- invitations mailed to join them, the organisation a session works in, and their shared contacts.

CREATE TABLE orgs (
    id                 UUID PRIMARY KEY,
    name               TEXT NOT NULL,
    -- [a-z0-9][a-z0-9-]{1,62}: unique, so two organisations cannot answer to one name in URLs
    slug               TEXT NOT NULL UNIQUE,
    -- members must have signed in with a second factor to make it their active organisation
    require_two_factor BOOLEAN NOT NULL DEFAULT FALSE,
    created_at         BIGINT NOT NULL
);

-- Who belongs to which organisation. A change here also moves the member's `users.updated_at`
-- in the same transaction: that is how every instance's directory (which forward-auth,
-- introspection and bearer calls naming an organisation read) forgets the old memberships
-- within `live::SYNC_INTERVAL`, with no polling of its own.
CREATE TABLE org_members (
    org_id    UUID NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    user_id   UUID NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    -- role names (owner, admin, member, or any of §6's form), sorted, space-separated; never empty
    roles     TEXT NOT NULL,
    joined_at BIGINT NOT NULL,
    PRIMARY KEY (org_id, user_id)
);
-- a person's organisations (GET /orgs, the directory's profile)
CREATE INDEX org_members_user ON org_members (user_id);

-- Invitations to join an organisation, mailed to an address that may or may not have an account.
-- Only the SHA-256 of the 256-bit token is kept. Accepted or deleted invitations are deleted.
CREATE TABLE org_invitations (
    id               UUID PRIMARY KEY,
    org_id           UUID NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    -- as given (trimmed), shown back; lower-cased, matched against the account accepting it
    email            TEXT NOT NULL,
    email_normalized TEXT NOT NULL,
    roles            TEXT NOT NULL,
    token_hash       BYTEA NOT NULL UNIQUE,
    -- who invited (NULL once that account is gone)
    invited_by       UUID REFERENCES users (id) ON DELETE SET NULL,
    created_at       BIGINT NOT NULL,
    expires_at       BIGINT NOT NULL
);
CREATE INDEX org_invitations_org ON org_invitations (org_id, created_at);

-- The session's active organisation: kept by refresh while the person is a member. No foreign
-- key (SQLite cannot add one to an existing table): a refresh checks the membership anyway.
ALTER TABLE sessions ADD COLUMN org_id UUID;

-- An organisation's shared contacts: the same columns as `contacts`, owned by the organisation.
CREATE TABLE org_contacts (
    id          UUID PRIMARY KEY,
    owner_id    UUID NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    full_name   TEXT NOT NULL,
    email       TEXT,
    phone       TEXT,
    company     TEXT,
    notes       TEXT,
    search_text TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL,
    version     BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX org_contacts_owner_id ON org_contacts (owner_id, id DESC);

-- The organisation an audit event concerns (GET /admin/audit?org=).
ALTER TABLE audit_events ADD COLUMN org_id UUID;
CREATE INDEX audit_events_org ON audit_events (org_id, at) WHERE org_id IS NOT NULL;
