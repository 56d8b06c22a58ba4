-- Housekeeping deletes expired organisation invitations and client registration tokens (issues 26
-- and 27 left them forever); each purge batch starts from an index on what it filters by.
CREATE INDEX org_invitations_expires ON org_invitations (expires_at);
CREATE INDEX client_registration_tokens_expires ON client_registration_tokens (expires_at);
