-- What a security review and a concurrency review asked for (docs/api.md §2, §3).

-- Moves on every change that must void logins in flight (password changed or set, account
-- disabled). A login reads it before checking the password and opens its session only if it has
-- not moved: a login racing `user disable` or a password change gets no session.
ALTER TABLE users ADD COLUMN auth_epoch BIGINT NOT NULL DEFAULT 0;

-- Wrong second-factor codes in a row, across challenges and re-checks, and until when the next
-- code must wait: an attacker who knows the password gets few guesses (growing waits), reset by a
-- right code.
ALTER TABLE users ADD COLUMN second_factor_failures BIGINT NOT NULL DEFAULT 0;
ALTER TABLE users ADD COLUMN second_factor_blocked_until BIGINT;

-- Bumped by every write: a PATCH merges its fields over the version it read and writes only if
-- that is still the version, so two PATCHes of different fields never lose one another's change.
ALTER TABLE contacts ADD COLUMN version BIGINT NOT NULL DEFAULT 0;

-- A signing key revoked by the operator (`gatehouse keys revoke`): it neither signs nor verifies,
-- and leaves the JWK Set, on every instance at its next key reload.
ALTER TABLE signing_keys ADD COLUMN revoked_at BIGINT;
