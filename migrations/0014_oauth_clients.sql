-- The client registry of the OpenID provider (docs/api.md §11). The introspection clients of §6
-- are kept as they are: the defaults below make each of them a confidential client, as before.

-- 'confidential' or 'public'; a public client's secret_hash is empty (no secret can match it)
ALTER TABLE api_clients ADD COLUMN client_type TEXT NOT NULL DEFAULT 'confidential';
-- first-party clients (the team's own apps) skip the consent page
ALTER TABLE api_clients ADD COLUMN first_party BOOLEAN NOT NULL DEFAULT FALSE;
-- space-separated lists: the registry refuses a URI holding any whitespace, and scope and grant
-- names hold none
ALTER TABLE api_clients ADD COLUMN redirect_uris TEXT NOT NULL DEFAULT '';
ALTER TABLE api_clients ADD COLUMN post_logout_redirect_uris TEXT NOT NULL DEFAULT '';
ALTER TABLE api_clients ADD COLUMN grant_types TEXT NOT NULL DEFAULT 'authorization_code refresh_token';
ALTER TABLE api_clients ADD COLUMN scopes TEXT NOT NULL DEFAULT 'openid profile email offline_access';
ALTER TABLE api_clients ADD COLUMN backchannel_logout_uri TEXT;
-- the JWS algorithm of its ID tokens: RS256 unless asked (OpenID Connect Core §15.1)
ALTER TABLE api_clients ADD COLUMN id_token_alg TEXT NOT NULL DEFAULT 'RS256';
-- last change (ms); instances read a client again at most a second after they last did
ALTER TABLE api_clients ADD COLUMN updated_at BIGINT NOT NULL DEFAULT 0;
UPDATE api_clients SET updated_at = created_at;
