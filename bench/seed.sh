#!/usr/bin/env bash
# Fills a migrated Gatehouse database with ROWS of each kind, in bulk SQL (not through the API):
# ROWS accounts, ROWS sessions each with its current refresh-token record, ROWS contacts (of the
# first 1 000 accounts) and ROWS audit events, shaped as a running service leaves them: ids are
# time-ordered UUIDv7 (refresh-token ids random, as the service makes them), sessions live with 1 %
# revoked within the last day, audit events over the last 30 days. ANALYZEs at the end.
#
#   bench/seed.sh DATABASE_URL ROWS             # sqlite://PATH or postgres://…
#   bench/seed.sh --expired DATABASE_URL ROWS   # instead: ROWS sessions that lapsed 40 days ago
#                                               # (with their refresh tokens) and ROWS audit events
#                                               # past the 90-day retention, for housekeeping
#
# The e-mails are seed1@example.com … (password hash 'x': these accounts never log in). Needs
# python3 (SQLite) or psql (PostgreSQL). A million rows of each takes about a minute on either.
set -euo pipefail
EXPIRED=0
if [ "${1:-}" = --expired ]; then EXPIRED=1; shift; fi
URL=${1:?usage: bench/seed.sh [--expired] DATABASE_URL ROWS}
ROWS=${2:?usage: bench/seed.sh [--expired] DATABASE_URL ROWS}
NOW=$(date +%s%3N)
DAY=86400000

# One set of statements for both databases. :n rows, :now ms; v7(ms, kind, i) is a UUIDv7-shaped
# id (kind keeps the tables' ids apart); rid() a random UUID; the two differ per database.
# user_at(i) and session_at(i) are each row's creation time, increasing with i.
read -r -d '' LIVE <<'SQL' || true
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < :n)
INSERT INTO users (id, email, email_normalized, full_name, password_hash, created_at, updated_at)
SELECT v7(:now - 365 * :day + i * (365 * :day / :n), 1, i), 'seed' || i || '@example.com',
       'seed' || i || '@example.com', 'Seed ' || i, 'x',
       :now - 365 * :day + i * (365 * :day / :n), :now - 365 * :day + i * (365 * :day / :n)
FROM n;

WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < :n)
INSERT INTO sessions (id, user_id, amr, ip, user_agent, created_at, last_used_at, expires_at,
                      revoked_at, revoked_reason)
SELECT v7(:now - 20 * :day + i * (20 * :day / :n), 2, i),
       v7(:now - 365 * :day + i * (365 * :day / :n), 1, i), 'pwd', '203.0.113.7', 'bench/seed',
       :now - 20 * :day + i * (20 * :day / :n), :now - (i % 1000) * 1000,
       :now + 10 * :day + i * (20 * :day / :n),
       CASE WHEN i % 100 = 0 THEN :now - (i % 72000) * 1000 END,
       CASE WHEN i % 100 = 0 THEN 'logout' END
FROM n;

INSERT INTO refresh_tokens (jti, session_id, issued_at, expires_at)
SELECT rid(), id, last_used_at, expires_at FROM sessions WHERE user_agent = 'bench/seed';

WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < :n)
INSERT INTO contacts (id, owner_id, full_name, email, company, search_text, created_at, updated_at)
SELECT v7(:now - 365 * :day + i * (365 * :day / :n), 3, i),
       v7(:now - 365 * :day + (i % 1000 + 1) * (365 * :day / :n), 1, i % 1000 + 1),
       'Other ' || i, 'other' || i || '@example.com', 'Elsewhere',
       'other ' || i || char(31) || 'other' || i || '@example.com' || char(31) || 'elsewhere',
       :now - 365 * :day + i * (365 * :day / :n), :now - 365 * :day + i * (365 * :day / :n)
FROM n WHERE i % 1000 + 1 <= :n;

WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < :n)
INSERT INTO audit_events (id, at, event, user_id, session_id, ip, user_agent, detail)
SELECT v7(:now - 30 * :day + i * (30 * :day / :n), 4, i), :now - 30 * :day + i * (30 * :day / :n),
       CASE WHEN i % 3 = 0 THEN 'login.failed' ELSE 'login.succeeded' END,
       v7(:now - 365 * :day + (i * 7 % :n + 1) * (365 * :day / :n), 1, i * 7 % :n + 1),
       NULL, '203.0.113.7', 'bench/seed', NULL
FROM n;
SQL

read -r -d '' EXPIRED_ROWS <<'SQL' || true
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < :n)
INSERT INTO sessions (id, user_id, amr, ip, user_agent, created_at, last_used_at, expires_at)
SELECT v7(:now - 70 * :day + i * (30 * :day / :n), 5, i), u.id, 'pwd', '203.0.113.7',
       'bench/expired', :now - 70 * :day + i * (30 * :day / :n),
       :now - 70 * :day + i * (30 * :day / :n), :now - 40 * :day - :n + i
FROM n JOIN users u ON u.email_normalized = 'seed' || (i % 1000 + 1) || '@example.com';

INSERT INTO refresh_tokens (jti, session_id, issued_at, expires_at)
SELECT rid(), id, last_used_at, expires_at FROM sessions WHERE user_agent = 'bench/expired';

WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < :n)
INSERT INTO audit_events (id, at, event, user_id, session_id, ip, user_agent, detail)
SELECT v7(:now - 130 * :day + i * (30 * :day / :n), 6, i),
       :now - 130 * :day + i * (30 * :day / :n), 'login.succeeded', NULL, NULL, '203.0.113.7',
       'bench/expired', NULL
FROM n;
SQL

if [ "$EXPIRED" = 1 ]; then SCRIPT=$EXPIRED_ROWS; else SCRIPT=$LIVE; fi
SCRIPT=${SCRIPT//:now/$NOW}
SCRIPT=${SCRIPT//:day/CAST($DAY AS BIGINT)}
SCRIPT=${SCRIPT//:n/$ROWS}

case "$URL" in
sqlite:*)
  DB=${URL#sqlite://}
  DB=${DB#sqlite:}
  DB=${DB%%\?*}
  python3 - "$DB" <<PY
import os, sqlite3, sys
c = sqlite3.connect(sys.argv[1], isolation_level=None)
c.create_function("v7", 3, lambda ms, kind, i: bytes.fromhex("%012x7%03x8%015x" % (ms, kind, i)), deterministic=True)
c.create_function("rid", 0, lambda: os.urandom(16))
c.execute("PRAGMA foreign_keys = OFF")
c.executescript("""BEGIN; $SCRIPT; COMMIT; ANALYZE;""")
c.close()
PY
  ;;
postgres:*|postgresql:*)
  SCRIPT=${SCRIPT//char(31)/chr(31)}
  psql -q -v ON_ERROR_STOP=1 "$URL" >/dev/null <<SQL
CREATE FUNCTION pg_temp.v7(ms bigint, kind int, i bigint) RETURNS uuid LANGUAGE sql IMMUTABLE AS
\$\$ SELECT (lpad(to_hex(ms), 12, '0') || '7' || lpad(to_hex(kind), 3, '0') || '8'
             || lpad(to_hex(i), 15, '0'))::uuid \$\$;
CREATE FUNCTION pg_temp.rid() RETURNS uuid LANGUAGE sql AS \$\$ SELECT gen_random_uuid() \$\$;
SET search_path = public, pg_temp;
BEGIN;
$(sed -e 's/v7(/pg_temp.v7(/g' -e 's/rid()/pg_temp.rid()/g' <<<"$SCRIPT")
COMMIT;
VACUUM ANALYZE;
SQL
  ;;
*) echo "not a sqlite:// or postgres:// URL: $URL" >&2; exit 2 ;;
esac
