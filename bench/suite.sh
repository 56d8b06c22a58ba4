#!/usr/bin/env bash
# The benchmark suite: every scenario of BENCHMARKS.md on SQLite and on PostgreSQL, each on a
# database of 1 000 and of 1 000 000 rows (accounts, sessions with their refresh tokens, contacts,
# audit events: bench/seed.sh), one table with the sizes side by side. A release build on
# loopback; wrk (installed if missing) as the load, on the same two cores.
#
#   bench/suite.sh              # prints the table and writes it into BENCHMARKS.md
#   DURATION=5s bench/suite.sh  # shorter runs (default 10s)
#   SIZES=1000 bench/suite.sh   # the small database only (default "1000 1000000")
#   BENCH_POSTGRES_URL= bench/suite.sh   # SQLite only
#
# PostgreSQL: a database is created for each size on BENCH_POSTGRES_URL's server (default the
# local one) and dropped afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/common.sh
source bench/common.sh
DURATION=${DURATION:-10s}
SIZES=${SIZES:-1000 1000000}
SECONDS_EACH=${DURATION%s}
POSTGRES=${BENCH_POSTGRES_URL-postgres://postgres@127.0.0.1:5432/postgres}
ADDR=127.0.0.1:18190
BASE=http://$ADDR
PASSWORD='correct horse battery staple'

need wrk wrk
need jq jq
need psql postgresql-client
python3 -c 'import argon2' 2>/dev/null || python3 -m pip install -q argon2-cffi
build_release

WORK=$(mktemp -d)
SERVER=
FLOOD=
PGDB=
cleanup() {
  [ -n "$FLOOD" ] && kill "$FLOOD" 2>/dev/null
  [ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null
  [ -n "$PGDB" ] && psql -q "$POSTGRES" -c "DROP DATABASE IF EXISTS $PGDB WITH (FORCE)" >/dev/null 2>&1
  rm -rf "$WORK"
}
trap cleanup EXIT
# The load comes from one address but stands for many clients: no per-client connection cap.
export GATEHOUSE_LISTEN=$ADDR GATEHOUSE_LOG=warn GATEHOUSE_RATE_LIMIT=off GATEHOUSE_REGISTRATION=open
export GATEHOUSE_MAX_CONNECTIONS_PER_CLIENT=1024

rss() { awk '/VmRSS/ {printf "%.1f", $2/1024}' /proc/"$SERVER"/status; }
peak() { awk '/VmHWM/ {printf "%.1f", $2/1024}' /proc/"$SERVER"/status; }
# Resets the peak RSS (VmHWM) so the next reading is the next scenario's own.
reset_peak() { echo 5 > /proc/"$SERVER"/clear_refs 2>/dev/null || true; }

ROWS=$WORK/rows
# scenario|backend|size|"req/s|p50|p99|errors|peak MiB|note"; SIZE is the database's, set by run.
row() { echo "$1|$2|$SIZE|$3" >>"$ROWS"; }

start() {
  local out
  out=$(python3 bench/tools.py ready "$BIN")
  STARTUP_MS=$(sed -n 1p <<<"$out")
  SERVER=$(sed -n 2p <<<"$out")
}
stop() { kill "$SERVER"; wait "$SERVER" 2>/dev/null || true; SERVER=; }

bench() {
  local backend=$1
  echo "$PASSWORD" | "$BIN" user add --email bench@example.com --name Bench --password-stdin >/dev/null
  # The database exists now: start-to-ready is measured on an existing database.
  start
  local idle
  sleep 1
  idle=$(rss)
  row "start to ready (existing database)" "$backend" "||||| ${STARTUP_MS} ms"
  row "memory, idle" "$backend" "||||${idle}|"

  local access auth
  access=$(curl -sf $BASE/api/v1/auth/login -H 'Content-Type: application/json' \
    -d "{\"email\":\"bench@example.com\",\"password\":\"$PASSWORD\"}" | jq -r .data.accessToken)
  auth="Authorization: Bearer $access"
  for i in $(seq 1 20); do
    curl -sf $BASE/api/v1/crm/contacts -H "$auth" -H 'Content-Type: application/json' \
      -d "{\"fullName\":\"Contact $i\",\"email\":\"c$i@example.com\",\"company\":\"Acme\"}" >/dev/null
  done
  python3 bench/tools.py tokens $BASE 10000 "$WORK/tokens"
  for n in 8 32; do
    for i in $(seq 1 $n); do
      curl -sf $BASE/api/v1/auth/login -H 'Content-Type: application/json' \
        -d "{\"email\":\"bench@example.com\",\"password\":\"$PASSWORD\"}" | jq -r .data.refreshToken
    done >"$WORK/refresh-$n"
  done
  python3 bench/tools.py twofactor $BASE 150 >"$WORK/twofactor"

  reset_peak; row "healthz" "$backend" "$(wrk_fields -t2 -c64 -d"$DURATION" $BASE/healthz)|$(peak)|"
  reset_peak; row "readyz (one database round trip, no auth)" "$backend" "$(wrk_fields -t2 -c64 -d"$DURATION" $BASE/readyz)|$(peak)|reference"
  reset_peak; row "contacts" "$backend" "$(wrk_fields -t2 -c64 -d"$DURATION" -H "$auth" $BASE/api/v1/crm/contacts)|$(peak)|"
  reset_peak; row "contacts-many-tokens" "$backend" "$(wrk_fields -t2 -c64 -d"$DURATION" -s bench/many-tokens.lua $BASE -- "$WORK/tokens")|$(peak)|10 000 tokens"
  reset_peak; row "refresh" "$backend" "$(wrk_fields -t8 -c8 -d"$DURATION" -s bench/refresh.lua $BASE -- "$WORK/refresh-8")|$(peak)|chained, 8 connections"
  reset_peak; row "refresh-32" "$backend" "$(wrk_fields -t32 -c32 -d"$DURATION" -s bench/refresh.lua $BASE -- "$WORK/refresh-32")|$(peak)|chained, 32 connections"
  reset_peak; row "login" "$backend" "$(wrk_fields -t2 -c8 -d"$DURATION" -s bench/login.lua $BASE/api/v1/auth/login)|$(peak)|"
  reset_peak
  local flows
  flows=$(wrk_fields -t8 -c8 -d"$DURATION" -s bench/login-2fa.lua $BASE -- "$WORK/twofactor" 8)
  row "login-2fa" "$backend" "$flows|$(peak)|requests; flows/s = half"

  # storm: contacts measured while a login flood holds the hash pool.
  reset_peak
  wrk -t1 -c64 -d60s -s bench/login.lua $BASE/api/v1/auth/login >/dev/null & FLOOD=$!
  sleep 2
  row "storm (contacts during a login flood)" "$backend" "$(wrk_fields -t1 -c8 -d"$DURATION" -H "$auth" $BASE/api/v1/crm/contacts)|$(peak)|login flood: 64 connections"
  kill "$FLOOD"; wait "$FLOOD" 2>/dev/null || true; FLOOD=
  stop
}

: >"$ROWS"
# A fresh database of SIZE rows of each kind (migrated, seeded, analysed), then the scenarios.
for SIZE in $SIZES; do
  export GATEHOUSE_DATABASE_URL=sqlite://$WORK/gatehouse-$SIZE.db
  unset GATEHOUSE_MASTER_KEY
  "$BIN" migrate 2>/dev/null
  bench/seed.sh "$GATEHOUSE_DATABASE_URL" "$SIZE"
  bench sqlite
  rm -f "$WORK"/gatehouse-"$SIZE".db*

  if [ -n "$POSTGRES" ]; then
    PGDB=gatehouse_suite_$$_$SIZE
    psql -q "$POSTGRES" -c "CREATE DATABASE $PGDB" >/dev/null
    export GATEHOUSE_DATABASE_URL=${POSTGRES%/*}/$PGDB
    export GATEHOUSE_MASTER_KEY=$(head -c 32 /dev/urandom | base64)
    "$BIN" migrate 2>/dev/null
    bench/seed.sh "$GATEHOUSE_DATABASE_URL" "$SIZE"
    bench postgres
    psql -q "$POSTGRES" -c "DROP DATABASE IF EXISTS $PGDB WITH (FORCE)" >/dev/null
    PGDB=
  fi
done

CORES=$(nproc)
ARGON2=$(python3 bench/tools.py argon2 "$SECONDS_EACH" "$CORES")

TABLE=$WORK/table
python3 bench/tools.py table "$ROWS" "$SIZES" >"$TABLE"
echo "| libargon2 reference (argon2-cffi, m=19 MiB t=2 p=1, $CORES processes) | – | $ARGON2 hashes/s | | | | | | | | |" >>"$TABLE"
cat "$TABLE"

# Into BENCHMARKS.md, between the suite markers, with the machine and the command.
MACHINE="$(nproc) vCPU ($(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)), $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), Linux $(uname -r); wrk $(wrk -v 2>&1 | awk 'NR==1 {print $2}' || true) on the same cores"
{
  echo "<!-- suite:start -->"
  echo "Run of $(date -u +%Y-%m-%d) on $MACHINE, $DURATION per scenario. The machine is shared:"
  echo "other work (builds, tests, other benchmarks) may have run at the same time, so a figure"
  echo "that looks off is repeated and the repeat noted below the table."
  echo
  echo '```sh'
  echo "SIZES=\"$SIZES\" DURATION=$DURATION bench/suite.sh"
  echo '```'
  echo
  cat "$TABLE"
  echo "<!-- suite:end -->"
} >"$WORK/section"
python3 - "$WORK/section" <<'PY'
import re, sys
section = open(sys.argv[1]).read().rstrip("\n")
text = open("BENCHMARKS.md").read()
if "<!-- suite:start -->" in text:
    text = re.sub(r"<!-- suite:start -->.*?<!-- suite:end -->", lambda _: section, text, flags=re.S)
else:
    text = text.rstrip("\n") + "\n\n## The suite (issue 6 targets)\n\n" + section + "\n"
open("BENCHMARKS.md", "w").write(text)
PY
