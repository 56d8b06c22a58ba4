#!/usr/bin/env bash
# Login storm: do the other calls keep their latency while logins arrive faster than the hash pool
# can serve them, and are the excess logins shed rather than queued? A release build on SQLite,
# throttling off; wrk drives a login flood (64 connections) while a second wrk measures GET
# contacts (8 connections), then refresh, against the same server.
#
#   bench/storm.sh                  # DURATION=10s by default
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/common.sh
source bench/common.sh
DURATION=${DURATION:-10s}
ADDR=127.0.0.1:18084
BASE=http://$ADDR
PASSWORD='correct horse battery staple'
need wrk wrk
need jq jq
build_release
WORK=$(mktemp -d)
SERVER=
FLOOD=
trap '[ -n "$FLOOD" ] && kill "$FLOOD" 2>/dev/null; [ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null; rm -rf "$WORK"' EXIT
# The load comes from one address but stands for many clients: no per-client connection cap.
export GATEHOUSE_LISTEN=$ADDR GATEHOUSE_LOG=warn GATEHOUSE_RATE_LIMIT=off
export GATEHOUSE_MAX_CONNECTIONS_PER_CLIENT=1024
export GATEHOUSE_DATABASE_URL=sqlite://$WORK/gatehouse.db
bench_account
serve_bench $BASE
login() { curl -sf $BASE/api/v1/auth/login -H 'Content-Type: application/json' \
  -d "{\"email\":\"bench@example.com\",\"password\":\"$PASSWORD\"}"; }
ACCESS=$(login | jq -r .data.accessToken)
for i in $(seq 1 20); do
  curl -sf $BASE/api/v1/crm/contacts -H "Authorization: Bearer $ACCESS" -H 'Content-Type: application/json' \
    -d "{\"fullName\":\"Contact $i\"}" >/dev/null
done
for i in 1 2 3 4; do login | jq -r .data.refreshToken; done > "$WORK/refresh-a"
for i in 1 2 3 4; do login | jq -r .data.refreshToken; done > "$WORK/refresh-b"

contacts() { wrk_row -t1 -c8 -d"$DURATION" -H "Authorization: Bearer $ACCESS" $BASE/api/v1/crm/contacts; }
refresh() { wrk_row -t4 -c4 -d"$DURATION" -s bench/refresh.lua $BASE -- "$1"; }

echo "| scenario | requests/s | p50 | p99 | errors |"
echo "|---|---|---|---|---|"
echo "| contacts, quiet | $(contacts) |"
echo "| refresh, quiet | $(refresh "$WORK/refresh-a") |"
wrk -t2 -c64 -d60s --latency -s bench/login.lua $BASE/api/v1/auth/login > "$WORK/flood" & FLOOD=$!
sleep 2
echo "| contacts, during the login flood | $(contacts) |"
echo "| refresh, during the login flood | $(refresh "$WORK/refresh-b") |"
kill -INT "$FLOOD"; wait "$FLOOD" || true; FLOOD=
rps=$(awk '/Requests\/sec/ {print $2}' "$WORK/flood")
total=$(awk '/requests in/ {print $1}' "$WORK/flood")
shed=$(awk '/Non-2xx/ {print $5}' "$WORK/flood")
p99=$(awk '$1=="99%" {print $2}' "$WORK/flood")
echo "| login flood, 64 connections (non-2xx = shed with 503) | $rps | | $p99 | ${shed:-0} of $total |"
