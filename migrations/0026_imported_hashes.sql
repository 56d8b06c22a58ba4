-- long: builds an index over every account (about a second a million rows; writes to accounts wait for it)
--
-- The accounts that still hold a password hash another system made (`gatehouse import`, docs/api.md
-- §15), which every instance counts every few minutes: without this index, a scan of every
-- account. It shrinks to nothing as those people sign in.
--
-- Not CONCURRENTLY: PostgreSQL's concurrent build waits for every transaction that holds a
-- snapshot, and an instance starting beside this one waits, inside such a transaction, for the
-- migrator's advisory lock this one holds: a deadlock (seen when instances start together).
CREATE INDEX IF NOT EXISTS users_imported_hash ON users (id)
WHERE password_hash <> '' AND password_hash NOT LIKE '$argon2%';
