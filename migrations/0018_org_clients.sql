-- Issue 27 (docs/api.md §13): OAuth clients bound to an organisation, and the organisation a
-- person chose when authorizing a client.

-- The organisation a client belongs to (NULL: none). Its client-credentials tokens name it, and
-- people authorizing it act in it. A client lives no longer than its organisation (the service
-- ends its sessions first, with their back-channel logouts).
ALTER TABLE api_clients ADD COLUMN org_id UUID REFERENCES orgs (id) ON DELETE CASCADE;
CREATE INDEX api_clients_org ON api_clients (org_id) WHERE org_id IS NOT NULL;

-- The organisation an authorization acts in (NULL: the person's own data), carried from the
-- code to the session it begins (sessions.org_id).
ALTER TABLE oauth_codes ADD COLUMN org_id UUID;

-- The organisation the person chose last time: a remembered consent authorizes in it again.
ALTER TABLE oauth_consents ADD COLUMN org_id UUID;
