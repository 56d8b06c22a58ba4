#!/usr/bin/env bash
# Does listing contacts stay fast as the table grows? One user with 100 contacts (made through the
# API) asks for a page, and for a search, while the contacts table holds 1 000 and then 1 000 000
# rows of other users (inserted with SQL). Release build on loopback, wrk as the load; SQLite, and
# PostgreSQL on the server named by BENCH_POSTGRES_URL (default: the local one; a database is
# created and dropped for the run; set it empty to skip).
#
#   bench/contacts-scale.sh
#
# Prints a Markdown table and each database's query plan. DURATION (default 10s) and CONNECTIONS
# (default 16) tune the runs.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/common.sh
source bench/common.sh
DURATION=${DURATION:-10s}
CONNECTIONS=${CONNECTIONS:-16}
POSTGRES=${BENCH_POSTGRES_URL-postgres://postgres@127.0.0.1:5432/postgres}
ADDR=127.0.0.1:18081
BASE=http://$ADDR
PASSWORD='correct horse battery staple'

need wrk wrk
need jq jq
need psql postgresql-client
build_release

WORK=$(mktemp -d)
SERVER=
PGDB=
cleanup() {
  [ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null
  [ -n "$PGDB" ] && psql -q "$POSTGRES" -c "DROP DATABASE IF EXISTS $PGDB WITH (FORCE)" >/dev/null 2>&1
  rm -rf "$WORK"
}
trap cleanup EXIT
export GATEHOUSE_LISTEN=$ADDR GATEHOUSE_LOG=warn GATEHOUSE_RATE_LIMIT=off

# The other users' contacts, so that the table holds $1 rows besides the bench user's, spread over
# 1 000 owners. Ids are random, not time-ordered: they land all over the index.
seed_sqlite() {
  python3 - "$WORK/gatehouse.db" "$1" <<'PY'
import sqlite3, sys
db, total = sys.argv[1], int(sys.argv[2])
c = sqlite3.connect(db)
c.executescript("""
INSERT INTO users (id, email, email_normalized, full_name, password_hash, created_at, updated_at)
SELECT randomblob(16), 'o'||value||'@example.com', 'o'||value||'@example.com', 'Owner', 'x', 0, 0
FROM (WITH RECURSIVE n(value) AS (SELECT 1 UNION ALL SELECT value+1 FROM n WHERE value < 1000) SELECT value FROM n)
WHERE NOT EXISTS (SELECT 1 FROM users WHERE email_normalized = 'o1@example.com');
CREATE TEMP TABLE owners AS SELECT row_number() OVER () - 1 AS k, id FROM users WHERE email_normalized LIKE 'o%@example.com';
""")
have = c.execute("SELECT COUNT(*) FROM contacts c JOIN owners o ON o.id = c.owner_id").fetchone()[0]
c.execute("""
WITH RECURSIVE n(i) AS (SELECT ? UNION ALL SELECT i+1 FROM n WHERE i < ?)
INSERT INTO contacts (id, owner_id, full_name, email, company, search_text, created_at, updated_at)
SELECT randomblob(16), o.id, 'Other '||i, 'other'||i||'@example.com', 'Elsewhere',
       'other '||i||char(31)||'other'||i||'@example.com'||char(31)||'elsewhere', i, i
FROM n JOIN owners o ON o.k = i % 1000
""", (have + 1, total))
c.commit()
c.execute("ANALYZE")
c.close()
PY
}

seed_postgres() {
  psql -q "$GATEHOUSE_DATABASE_URL" -v total="$1" <<'SQL' >/dev/null
INSERT INTO users (id, email, email_normalized, full_name, password_hash, created_at, updated_at)
SELECT gen_random_uuid(), 'o'||i||'@example.com', 'o'||i||'@example.com', 'Owner', 'x', 0, 0
FROM generate_series(1, 1000) i
ON CONFLICT (email_normalized) DO NOTHING;
CREATE TEMP TABLE owners AS
  SELECT (row_number() OVER (ORDER BY id)) - 1 AS k, id FROM users WHERE email_normalized LIKE 'o%@example.com';
INSERT INTO contacts (id, owner_id, full_name, email, company, search_text, created_at, updated_at)
SELECT gen_random_uuid(), o.id, 'Other '||i, 'other'||i||'@example.com', 'Elsewhere',
       'other '||i||chr(31)||'other'||i||'@example.com'||chr(31)||'elsewhere', i, i
FROM generate_series((SELECT COUNT(*) FROM contacts c JOIN owners o ON o.id = c.owner_id) + 1, :total) i
JOIN owners o ON o.k = i % 1000;
ANALYZE;
SQL
}


bench() {
  local backend=$1 seed=$2
  bench_account
  serve_bench $BASE
  ACCESS=$(curl -sf $BASE/api/v1/auth/login -H 'Content-Type: application/json' \
    -d "{\"email\":\"bench@example.com\",\"password\":\"$PASSWORD\"}" | jq -r .data.accessToken)
  for i in $(seq 1 100); do
    curl -sf $BASE/api/v1/crm/contacts -H "Authorization: Bearer $ACCESS" -H 'Content-Type: application/json' \
      -d "{\"fullName\":\"Contact $i\",\"email\":\"c$i@example.com\",\"company\":\"Acme\"}" >/dev/null
  done
  local auth="Authorization: Bearer $ACCESS"
  local cursor
  cursor=$(curl -sf "$BASE/api/v1/crm/contacts?limit=50" -H "$auth" | jq -r .data.nextCursor)
  for total in 1000 1000000; do
    "$seed" "$total"
    local size
    size=$([ "$total" = 1000 ] && echo "1 000" || echo "1 000 000")
    echo "| $backend | $size | first page (20) | $(wrk_row -t2 -c"$CONNECTIONS" -d"$DURATION" -H "$auth" "$BASE/api/v1/crm/contacts?limit=20") |"
    echo "| $backend | $size | page after a cursor (20) | $(wrk_row -t2 -c"$CONNECTIONS" -d"$DURATION" -H "$auth" "$BASE/api/v1/crm/contacts?limit=20&cursor=$cursor") |"
    echo "| $backend | $size | search q=contact%205 | $(wrk_row -t2 -c"$CONNECTIONS" -d"$DURATION" -H "$auth" "$BASE/api/v1/crm/contacts?limit=20&q=contact%205") |"
  done
  kill "$SERVER"; wait "$SERVER" 2>/dev/null || true; SERVER=
}

PLANS=$WORK/plans
echo "| backend | other users' contacts | request | requests/s | p50 | p99 | errors |"
echo "|---|---|---|---|---|---|---|"

export GATEHOUSE_DATABASE_URL=sqlite://$WORK/gatehouse.db
unset GATEHOUSE_MASTER_KEY
bench sqlite seed_sqlite
python3 - "$WORK/gatehouse.db" >>"$PLANS" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
owner = c.execute("SELECT id FROM users WHERE email_normalized = 'bench@example.com'").fetchone()[0]
print("SQLite, first page:", [r[3] for r in c.execute(
    "EXPLAIN QUERY PLAN SELECT * FROM contacts WHERE owner_id = ? ORDER BY id DESC LIMIT 21", (owner,))])
print("SQLite, after a cursor:", [r[3] for r in c.execute(
    "EXPLAIN QUERY PLAN SELECT * FROM contacts WHERE owner_id = ? AND id < ? ORDER BY id DESC LIMIT 21", (owner, owner))])
PY

if [ -n "$POSTGRES" ]; then
  PGDB=gatehouse_scale_$$
  psql -q "$POSTGRES" -c "CREATE DATABASE $PGDB" >/dev/null
  export GATEHOUSE_DATABASE_URL=${POSTGRES%/*}/$PGDB
  export GATEHOUSE_MASTER_KEY=$(head -c 32 /dev/urandom | base64)
  bench postgres seed_postgres
  {
    echo "PostgreSQL, after a cursor:"
    psql -qAt "$GATEHOUSE_DATABASE_URL" -c "EXPLAIN SELECT * FROM contacts
      WHERE owner_id = (SELECT id FROM users WHERE email_normalized = 'bench@example.com')
      AND id < 'ffffffff-ffff-7fff-bfff-ffffffffffff'::uuid ORDER BY id DESC LIMIT 21"
  } >>"$PLANS"
fi
echo
cat "$PLANS"
