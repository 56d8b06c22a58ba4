-- Administration over HTTP (docs/api.md §8).

-- When the account last signed in (a password login without 2FA, a completed 2FA challenge, a
-- passkey, an accepted invitation): written with the session the login opens, never by a bearer
-- call, so a busy token costs no write. NULL: never signed in. `updated_at` does not move with it:
-- a login is no change other instances must forget an account for.
ALTER TABLE users ADD COLUMN last_login_at BIGINT;

-- Who made an event happen when that is not its `user_id`: the admin whose call it was (the
-- target is `user_id`, the admin's session `session_id`). NULL for the user's own acts and the CLI.
ALTER TABLE audit_events ADD COLUMN actor_id UUID;

-- GET /admin/audit?type=…: one event name, newest first, in pages.
CREATE INDEX audit_events_event ON audit_events (event, at);
