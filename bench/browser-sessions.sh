#!/usr/bin/env bash
# Browser sessions (docs/api.md §6b): forward-auth asked with a session cookie against the same
# with a bearer token and against healthz; and the cost of no credential for a browser (the 302 to
# sign in) and of a made-up cookie (refused by its tag, with no database read: a cookie's value
# carries a tag of the master key). Release build on loopback, SQLite (default) or BENCH_DATABASE_URL's PostgreSQL.
#
#   bench/browser-sessions.sh
#   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1/gh_bs_bench bench/browser-sessions.sh
#
# Prints a Markdown table; DURATION (default 10s) and CONNECTIONS (default 32) tune the runs.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/common.sh
source bench/common.sh
DURATION=${DURATION:-10s}
CONNECTIONS=${CONNECTIONS:-32}
ADDR=127.0.0.1:18180
BASE=http://$ADDR
PASSWORD='correct horse battery staple'

need wrk wrk
need jq jq
build_release

WORK=$(mktemp -d)
SERVER=
trap '[ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null; rm -rf "$WORK"' EXIT

export GATEHOUSE_TRUSTED_PROXIES=127.0.0.1/32 GATEHOUSE_PUBLIC_URL=https://login.example.com
export GATEHOUSE_COOKIE_DOMAIN=example.com
serve_settings "$ADDR" "$WORK"
bench_account
serve_bench $BASE

ACCESS=$(curl -sf $BASE/api/v1/auth/login -H 'Content-Type: application/json' \
  -d "{\"email\":\"bench@example.com\",\"password\":\"$PASSWORD\"}" | jq -r .data.accessToken)
COOKIE=$(curl -sf -D - -o /dev/null -X POST $BASE/api/v1/auth/browser-session \
  -H "Authorization: Bearer $ACCESS" | sed -n 's/^[Ss]et-[Cc]ookie: \([^;]*\);.*/\1/p')

NAV="text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
FWD=(-H "X-Forwarded-Method: GET" -H "X-Forwarded-Proto: https" -H "X-Forwarded-Host: app.example.com"
  -H "X-Forwarded-Uri: /reports?page=2" -H "Accept: $NAV")
WRK=(-t2 -c"$CONNECTIONS" -d"$DURATION")

echo "| scenario ($BACKEND) | connections | requests/s | p50 | p99 | errors (4xx, 5xx, socket) |"
echo "|---|---|---|---|---|---|"
echo "| healthz | $CONNECTIONS | $(wrk_row "${WRK[@]}" $BASE/healthz) |"
echo "| forward-auth, bearer token | $CONNECTIONS | $(wrk_row "${WRK[@]}" "${FWD[@]}" -H "Authorization: Bearer $ACCESS" $BASE/api/v1/authz/forward-auth) |"
echo "| forward-auth, session cookie | $CONNECTIONS | $(wrk_row "${WRK[@]}" "${FWD[@]}" -H "Cookie: theme=dark; $COOKIE" $BASE/api/v1/authz/forward-auth) |"
echo "| forward-auth, no credential: 302 to sign in | $CONNECTIONS | $(wrk_row "${WRK[@]}" "${FWD[@]}" $BASE/api/v1/authz/forward-auth) |"
echo "| forward-auth, a made-up cookie: 302 | $CONNECTIONS | $(wrk_row "${WRK[@]}" "${FWD[@]}" -H "Cookie: gatehouse_session=$(printf 'A%.0s' $(seq 64))" $BASE/api/v1/authz/forward-auth) |"
