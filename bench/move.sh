#!/usr/bin/env bash
# `gatehouse move-to-postgres` at scale: a SQLite database of USERS rows of each kind (accounts,
# sessions with their refresh tokens, contacts, audit events: bench/seed.sh) plus one account with
# a known password that signed in on it, moved into a new, empty PostgreSQL database; timed with
# /usr/bin/time -v (wall and CPU time, peak RSS). Then, independently of what the command says:
# the rows of every table counted on both sides (python's sqlite3, psql) and compared, and
# `gatehouse serve` on the PostgreSQL database with the SQLite database's master key: the account
# signs in with its password, and the access and refresh tokens it got from the SQLite instance
# before the move are still accepted (sessions and signing keys moved, secrets unsealed by the
# same key). The seeded accounts cannot sign in (their hash is 'x'): the last one's row is checked.
# The PostgreSQL database (gh_move_PID) is made with psql and dropped at the end.
#
#   bench/move.sh                                          # USERS=1000000
#   USERS=2000 GATEHOUSE_BIN=target/debug/gatehouse bench/move.sh    # a smoke run
#
# The binary is GATEHOUSE_BIN (default target/release/gatehouse; this script builds nothing).
# BENCH_POSTGRES_URL names the PostgreSQL server (default postgres://postgres@127.0.0.1:5432, no
# database name). Needs python3, curl, jq, psql and GNU time (/usr/bin/time). Prints two Markdown
# tables and the command line; exits 1 when a count differs or a check fails.
set -euo pipefail
cd "$(dirname "$0")/.."
export LC_ALL=C # sort and join alike
USERS=${USERS:-1000000}
BIN=${GATEHOUSE_BIN:-target/release/gatehouse}
POSTGRES=${BENCH_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432}
POSTGRES=${POSTGRES%/}
ADDR=127.0.0.1:18430
BASE=http://$ADDR
EMAIL=mover@example.com
PASSWORD='correct horse battery staple'

[ -x "$BIN" ] || { echo "no gatehouse binary at $BIN: build it (cargo build --release) or set GATEHOUSE_BIN" >&2; exit 2; }
BIN=$(realpath "$BIN")
for tool in /usr/bin/time psql jq curl python3; do
  command -v "$tool" >/dev/null || { echo "needs $tool" >&2; exit 2; }
done
psql -q "$POSTGRES/postgres" -c 'SELECT 1' >/dev/null || { echo "cannot reach PostgreSQL at $POSTGRES (BENCH_POSTGRES_URL)" >&2; exit 2; }

WORK=$(mktemp -d)
SERVER=
PGDB=
cleanup() {
  if [ -n "$SERVER" ]; then kill "$SERVER" 2>/dev/null || true; wait "$SERVER" 2>/dev/null || true; fi
  if [ -n "$PGDB" ]; then psql -q "$POSTGRES/postgres" -c "DROP DATABASE IF EXISTS $PGDB WITH (FORCE)" >/dev/null 2>&1 || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT
SQLITE=sqlite://$WORK/gatehouse.db
export GATEHOUSE_DATABASE_URL=$SQLITE GATEHOUSE_LOG=error
# For serve: one address, no throttling; a public URL with a host name (an IP address would turn
# passkeys off with a warning at each start); mail into the work folder.
export GATEHOUSE_LISTEN=$ADDR GATEHOUSE_PUBLIC_URL=http://localhost:${ADDR#*:}
export GATEHOUSE_RATE_LIMIT=off GATEHOUSE_MAIL_DIR=$WORK/mail
unset GATEHOUSE_MASTER_KEY GATEHOUSE_CONFIG
FAILED=0

# serve: `gatehouse serve` in the background with the current settings, until it answers.
serve() {
  GATEHOUSE_LOG=warn "$BIN" serve & SERVER=$!
  for _ in $(seq 1 200); do curl -sf "$BASE/healthz" >/dev/null && return 0; sleep 0.05; done
  echo "the server did not come up at $BASE (database ${GATEHOUSE_DATABASE_URL%%\?*})" >&2
  exit 1
}
stop() { kill "$SERVER"; wait "$SERVER" 2>/dev/null || true; SERVER=; }
login() {
  curl -s -o "$WORK/login.json" -w '%{http_code}' "$BASE/api/v1/auth/login" -H 'Content-Type: application/json' \
    -d "{\"email\":\"$EMAIL\",\"password\":\"$PASSWORD\"}"
}
# check NAME EXPECTED ACTUAL: a row of the checks' table; a mismatch fails the run at the end.
CHECKS=$WORK/checks
: >"$CHECKS"
check() {
  local verdict=ok
  [ "$2" = "$3" ] || { verdict="**FAILED**"; FAILED=1; }
  echo "| $1 | $2 | $3 | $verdict |" >>"$CHECKS"
}

# The SQLite database: migrated (its master key file made beside it), seeded, and one account
# that signs in on a SQLite instance (which also makes that instance's signing key).
"$BIN" migrate >"$WORK/migrate.out" 2>&1 || { cat "$WORK/migrate.out" >&2; exit 1; }
started=$(date +%s.%N)
bench/seed.sh "$SQLITE" "$USERS"
SEED_SECONDS=$(awk -v s="$started" -v e="$(date +%s.%N)" 'BEGIN {printf "%.1f", e - s}')
echo "$PASSWORD" | "$BIN" user add --email "$EMAIL" --name Mover --password-stdin >/dev/null
[ -s "$WORK/gatehouse.master.key" ] || { echo "no master key file beside the SQLite database" >&2; exit 1; }
serve
status=$(login)
[ "$status" = 200 ] || { echo "sign-in on SQLite before the move: $status $(cat "$WORK/login.json")" >&2; exit 1; }
ACCESS=$(jq -r .data.accessToken "$WORK/login.json")
REFRESH=$(jq -r .data.refreshToken "$WORK/login.json")
stop
SQLITE_MIB=$(du -cm "$WORK"/gatehouse.db* | awk 'END {print $1}')

# Rows per table: "table count" lines, sorted, the migrations' own table left out (each database
# has its own migrations).
python3 - "$WORK/gatehouse.db" >"$WORK/sqlite.counts" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
tables = [r[0] for r in c.execute("SELECT name FROM sqlite_master WHERE type = 'table' "
                                  "AND name NOT LIKE 'sqlite_%' AND name <> '_sqlx_migrations' ORDER BY name")]
for t in tables:
    print(t, c.execute('SELECT COUNT(*) FROM "%s"' % t.replace('"', '""')).fetchone()[0])
PY

# The new, empty PostgreSQL database, and the move.
PGDB=gh_move_$$
PGURL=$POSTGRES/$PGDB
psql -q "$POSTGRES/postgres" -c "CREATE DATABASE $PGDB" >/dev/null
rc=0
/usr/bin/time -v -o "$WORK/move.time" "$BIN" move-to-postgres "$PGURL" >"$WORK/move.out" 2>"$WORK/move.err" || rc=$?
if [ "$rc" != 0 ]; then
  {
    echo "FAILED: \`gatehouse move-to-postgres $PGURL\` exited $rc (binary $BIN; a SQLite database of $USERS rows of each kind, $(du -cm "$WORK"/gatehouse.db* | awk 'END {print $1}') MiB)."
    if grep -q "unrecognized subcommand" "$WORK/move.err"; then
      echo "This binary has no move-to-postgres command: build one that has (cargo build --release) or point GATEHOUSE_BIN at it."
    fi
    echo "Its output (last 20 lines of each):"
    tail -n 20 "$WORK/move.out" | sed 's/^/  stdout: /'
    tail -n 20 "$WORK/move.err" | sed 's/^/  stderr: /'
  } >&2
  exit 1
fi

psql -Atq "$PGURL" -c "SELECT string_agg(format('SELECT %L, COUNT(*) FROM %I', table_name, table_name), ' UNION ALL ' ORDER BY table_name)
  FROM information_schema.tables
  WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' AND table_name <> '_sqlx_migrations'" >"$WORK/count.sql"
psql -Atq -F ' ' "$PGURL" -f "$WORK/count.sql" | sort >"$WORK/postgres.counts"
PG_MIB=$(psql -Atq "$PGURL" -c 'SELECT round(pg_database_size(current_database()) / 1048576.0)')

# After the move: PostgreSQL with the SQLite database's master key.
GATEHOUSE_DATABASE_URL=$PGURL GATEHOUSE_MASTER_KEY=$(tr -d '\n' <"$WORK/gatehouse.master.key")
export GATEHOUSE_DATABASE_URL GATEHOUSE_MASTER_KEY
serve
check "sign-in with the password, on PostgreSQL (HTTP status)" 200 "$(login)"
check "the access token from the SQLite instance: GET /api/v1/auth/me" 200 \
  "$(curl -s -o /dev/null -w '%{http_code}' "$BASE/api/v1/auth/me" -H "Authorization: Bearer $ACCESS")"
check "the refresh token from the SQLite instance: POST /api/v1/auth/refresh" 200 \
  "$(curl -s -o /dev/null -w '%{http_code}' "$BASE/api/v1/auth/refresh" -H 'Content-Type: application/json' -d "{\"refreshToken\":\"$REFRESH\"}")"
check "the last seeded account (seed$USERS@example.com) has its row" 1 \
  "$(psql -Atq "$PGURL" -c "SELECT COUNT(*) FROM users WHERE email_normalized = 'seed$USERS@example.com'")"
stop

# The tables.
echo
echo '```sh'
echo "USERS=$USERS GATEHOUSE_BIN=${GATEHOUSE_BIN:-target/release/gatehouse}${BENCH_POSTGRES_URL:+ BENCH_POSTGRES_URL=$BENCH_POSTGRES_URL} bench/move.sh"
echo '```'
echo
echo "$(date -u +%Y-%m-%d), $(nproc) vCPU ($(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)), load average $(cut -d' ' -f1-3 /proc/loadavg); $("$BIN" --version) at $BIN; tree $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet HEAD 2>/dev/null || echo ' with changes'); PostgreSQL $(psql -Atq "$POSTGRES/postgres" -c 'SHOW server_version')."
echo
TOTAL=$(awk '{n += $2} END {print n}' "$WORK/sqlite.counts")
awk -F': ' '
  /Elapsed \(wall clock\)/ {n = split($2, p, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + p[i]}
  /User time/ {cpu += $2}
  /System time/ {cpu += $2}
  /Maximum resident set size/ {rss = $2 / 1024}
  END {printf "%.2f %.1f %.1f\n", s, cpu, rss}' "$WORK/move.time" >"$WORK/move.fields"
read -r WALL CPU RSS <"$WORK/move.fields"
OWN=$(sed -n 's/^moved .* in \([0-9.]*\) s;.*/\1/p' "$WORK/move.out")
echo "| step | rows | wall s | rows/s | CPU s (user+sys) | peak RSS MiB | size MiB |"
echo "|---|---|---|---|---|---|---|"
echo "| seed SQLite (bench/seed.sh, $USERS of each kind) | $TOTAL | $SEED_SECONDS | | | | $SQLITE_MIB (SQLite) |"
echo "| \`gatehouse move-to-postgres\` (snapshot, migrations, COPY, counts; the copy alone: ${OWN:-?} s) | $TOTAL | $WALL | $(awk -v n="$TOTAL" -v s="$WALL" 'BEGIN {if (s > 0) printf "%.0f", n / s; else printf "–"}') | $CPU | $RSS | $PG_MIB (PostgreSQL) |"
echo
echo "| table | SQLite rows | PostgreSQL rows | same |"
echo "|---|---|---|---|"
join -a1 -a2 -e '(no table)' -o '0,1.2,2.2' <(sort "$WORK/sqlite.counts") "$WORK/postgres.counts" >"$WORK/joined"
while read -r table here there; do
  same=yes
  [ "$here" = "$there" ] || { same="**no**"; FAILED=1; }
  echo "| $table | $here | $there | $same |"
done <"$WORK/joined"
echo
echo "| check, on PostgreSQL after the move | expected | got | |"
echo "|---|---|---|---|"
cat "$CHECKS"
echo
echo "The command's own last line: $(tail -n 1 "$WORK/move.out")"
if [ "$FAILED" != 0 ]; then
  echo "FAILED: see the rows marked above" >&2
  exit 1
fi
