#!/usr/bin/env bash
# First load figures: a release build on loopback, driven by wrk, on SQLite (default) or on the
# PostgreSQL database named by BENCH_DATABASE_URL (with BENCH_MASTER_KEY, or a fresh key).
#
#   bench/load.sh                 # SQLite in a temporary folder
#   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1/gh_bench bench/load.sh
#
# Prints a Markdown table; DURATION (default 10s) and CONNECTIONS (default 64) tune the runs.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/common.sh
source bench/common.sh
DURATION=${DURATION:-10s}
CONNECTIONS=${CONNECTIONS:-64}
ADDR=127.0.0.1:18080
BASE=http://$ADDR
PASSWORD='correct horse battery staple'

need wrk wrk
need jq jq
build_release

WORK=$(mktemp -d)
SERVER=
trap '[ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null; rm -rf "$WORK"' EXIT
serve_settings "$ADDR" "$WORK"

bench_account
serve_bench $BASE

login() { curl -sf $BASE/api/v1/auth/login -H 'Content-Type: application/json' \
  -d "{\"email\":\"bench@example.com\",\"password\":\"$PASSWORD\"}"; }
ACCESS=$(login | jq -r .data.accessToken)
for i in $(seq 1 20); do
  curl -sf $BASE/api/v1/crm/contacts -H "Authorization: Bearer $ACCESS" -H 'Content-Type: application/json' \
    -d "{\"fullName\":\"Contact $i\",\"email\":\"c$i@example.com\",\"company\":\"Acme\"}" >/dev/null
done
REFRESH_CONNECTIONS=8
for i in $(seq 1 $REFRESH_CONNECTIONS); do login | jq -r .data.refreshToken; done > "$WORK/refresh-tokens"


echo "| scenario ($BACKEND) | connections | requests/s | p50 | p99 | errors |"
echo "|---|---|---|---|---|---|"
echo "| healthz | $CONNECTIONS | $(wrk_row -t2 -c$CONNECTIONS -d$DURATION $BASE/healthz) |"
echo "| GET contacts (20), bearer | $CONNECTIONS | $(wrk_row -t2 -c$CONNECTIONS -d$DURATION -H "Authorization: Bearer $ACCESS" $BASE/api/v1/crm/contacts) |"
echo "| refresh (chained) | $REFRESH_CONNECTIONS | $(wrk_row -t$REFRESH_CONNECTIONS -c$REFRESH_CONNECTIONS -d$DURATION -s bench/refresh.lua $BASE -- "$WORK/refresh-tokens") |"
echo "| login (Argon2id) | 8 | $(wrk_row -t2 -c8 -d$DURATION -s bench/login.lua $BASE/api/v1/auth/login) |"
