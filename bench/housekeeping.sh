#!/usr/bin/env bash
# Housekeeping at scale: does purging a million lapsed sessions (with their refresh tokens) and a
# million audit events past retention leave a refresh storm its latency? On a database of
# 1 000 000 live rows of each kind plus those 2 000 000 dead ones (bench/seed.sh), a release build
# serves chained refreshes on 32 connections (wrk, closed loop) while `gatehouse housekeep`, in a
# process of its own as an operator would run it, deletes the dead rows in batches. SQLite and
# PostgreSQL (BENCH_POSTGRES_URL's server, default the local one; empty to skip).
#
#   bench/housekeeping.sh           # DURATION (default 10s) is the quiet run's length
#
# Prints a Markdown table: refresh quiet, refresh during the purge, and what the purge did
# (rows, seconds, its longest batch, i.e. the longest it held SQLite's writer).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/common.sh
source bench/common.sh
DURATION=${DURATION:-10s}
ROWS=${ROWS:-1000000}
POSTGRES=${BENCH_POSTGRES_URL-postgres://postgres@127.0.0.1:5432/postgres}
ADDR=127.0.0.1:18186
BASE=http://$ADDR
PASSWORD='correct horse battery staple'

need wrk wrk
need jq jq
need psql postgresql-client
build_release

WORK=$(mktemp -d)
SERVER=
STORM=
PGDB=
cleanup() {
  [ -n "$STORM" ] && kill "$STORM" 2>/dev/null
  [ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null
  [ -n "$PGDB" ] && psql -q "$POSTGRES" -c "DROP DATABASE IF EXISTS $PGDB WITH (FORCE)" >/dev/null 2>&1
  rm -rf "$WORK"
}
trap cleanup EXIT
export GATEHOUSE_LISTEN=$ADDR GATEHOUSE_LOG=warn GATEHOUSE_RATE_LIMIT=off

logins() {
  for i in $(seq 1 "$1"); do
    curl -sf $BASE/api/v1/auth/login -H 'Content-Type: application/json' \
      -d "{\"email\":\"bench@example.com\",\"password\":\"$PASSWORD\"}" | jq -r .data.refreshToken
  done
}

bench() {
  local backend=$1
  "$BIN" migrate 2>/dev/null
  bench/seed.sh "$GATEHOUSE_DATABASE_URL" "$ROWS"
  bench/seed.sh --expired "$GATEHOUSE_DATABASE_URL" "$ROWS"
  bench_account
  serve_bench $BASE
  logins 32 >"$WORK/quiet"
  logins 32 >"$WORK/storm"
  echo "| $backend | refresh, quiet | $(wrk_row -t32 -c32 -d"$DURATION" -s bench/refresh.lua $BASE -- "$WORK/quiet") | |"
  wrk --latency -t32 -c32 -d300s -s bench/refresh.lua $BASE -- "$WORK/storm" >"$WORK/storm.out" & STORM=$!
  sleep 2
  local purge
  purge=$("$BIN" housekeep)
  sleep 1
  kill -INT "$STORM"; wait "$STORM" || true; STORM=
  local fields
  fields=$(awk '
    /Requests\/sec/ {rps=$2}
    $1=="50%" {p50=$2}
    $1=="99%" {p99=$2}
    /Non-2xx/ {err+=$5}
    /Socket errors/ {gsub(",", ""); err+=$4+$6+$8+$10}
    END {printf "%s | %s | %s | %d", rps, p50, p99, err}' "$WORK/storm.out")
  echo "| $backend | refresh during \`gatehouse housekeep\` | $fields | $purge |"
  kill "$SERVER"; wait "$SERVER" 2>/dev/null || true; SERVER=
}

echo "| backend | scenario (32 connections, chained) | requests/s | p50 | p99 | errors | purge |"
echo "|---|---|---|---|---|---|---|"
export GATEHOUSE_DATABASE_URL=sqlite://$WORK/gatehouse.db
unset GATEHOUSE_MASTER_KEY
bench sqlite
rm -f "$WORK"/gatehouse.db*

if [ -n "$POSTGRES" ]; then
  PGDB=gatehouse_housekeeping_$$
  psql -q "$POSTGRES" -c "CREATE DATABASE $PGDB" >/dev/null
  export GATEHOUSE_DATABASE_URL=${POSTGRES%/*}/$PGDB
  export GATEHOUSE_MASTER_KEY=$(head -c 32 /dev/urandom | base64)
  bench postgres
fi
