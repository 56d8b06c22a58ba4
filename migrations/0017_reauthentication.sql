-- Issue 30: re-authentication (docs/api.md §3, "Re-authentication"). When the session's holder last
-- proved again who they are (`POST /auth/reauthenticate`, ms since the epoch); for a few minutes
-- after it, the calls that re-check the password take the session's word instead. A column of the
-- session, not of the account: another session of the same person is not vouched for, and every
-- instance reads the same row.
ALTER TABLE sessions ADD COLUMN reauthenticated_at BIGINT;
