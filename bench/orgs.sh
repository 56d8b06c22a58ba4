#!/usr/bin/env bash
# The active organisation on the hot paths (docs/api.md §11): forward-auth and the contacts list
# with an access token naming an organisation against one naming none, same account, same run,
# interleaved (none, org, none, org) so that the machine's drift falls on both alike. A release
# build on loopback, on SQLite (default) or the PostgreSQL database named by BENCH_DATABASE_URL.
#
#   bench/orgs.sh
#   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1/gh_orgs_bench bench/orgs.sh
#
# The question: does the membership check (a lookup in the directory every instance keeps) cost
# anything measurable? Prints a Markdown table; DURATION (default 10s) and CONNECTIONS (default
# 32) tune the runs.
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

cat >"$WORK/rules.toml" <<'EOF'
[[rule]]
paths = ["/sales"]
policy = "org_roles"
org_roles = ["owner"]
EOF
export GATEHOUSE_TRUSTED_PROXIES=127.0.0.1/32 GATEHOUSE_ACCESS_RULES=$WORK/rules.toml
serve_settings "$ADDR" "$WORK"

bench_account
serve_bench $BASE

json() { curl -sf "$@" -H 'Content-Type: application/json'; }
PLAIN=$(json $BASE/api/v1/auth/login -d "{\"email\":\"bench@example.com\",\"password\":\"$PASSWORD\"}" \
  | jq -r .data.accessToken)
ORG=$(json $BASE/api/v1/orgs -H "Authorization: Bearer $PLAIN" -d '{"name":"Bench","slug":"bench"}' \
  | jq -r .data.id)
# A second session, switched into the organisation (the first keeps none).
SECOND=$(json $BASE/api/v1/auth/login -d "{\"email\":\"bench@example.com\",\"password\":\"$PASSWORD\"}" \
  | jq -r .data.accessToken)
IN_ORG=$(json $BASE/api/v1/auth/org -H "Authorization: Bearer $SECOND" -d "{\"orgId\":\"$ORG\"}" \
  | jq -r .data.accessToken)
# 50 contacts in each collection: a full first page either way.
for i in $(seq 1 50); do
  json $BASE/api/v1/crm/contacts -H "Authorization: Bearer $PLAIN" -d "{\"fullName\":\"Own $i\"}" >/dev/null
  json $BASE/api/v1/crm/contacts -H "Authorization: Bearer $IN_ORG" -d "{\"fullName\":\"Shared $i\"}" >/dev/null
done

FWD=(-H "X-Forwarded-Method: GET" -H "X-Forwarded-Host: app.example.com" -H "X-Forwarded-Uri: /reports?page=2")
WRK=(-t2 -c"$CONNECTIONS" -d"$DURATION")

echo "| scenario ($BACKEND) | connections | requests/s | p50 | p99 | errors |"
echo "|---|---|---|---|---|---|"
for round in 1 2; do
  for who in none org; do
    token=$PLAIN; [ $who = org ] && token=$IN_ORG
    echo "| forward-auth, active organisation: $who (round $round) | $CONNECTIONS | $(wrk_row "${WRK[@]}" -H "Authorization: Bearer $token" "${FWD[@]}" $BASE/api/v1/authz/forward-auth) |"
  done
done
for round in 1 2; do
  for who in none org; do
    token=$PLAIN; [ $who = org ] && token=$IN_ORG
    echo "| contacts list (50 a page), active organisation: $who (round $round) | $CONNECTIONS | $(wrk_row "${WRK[@]}" -H "Authorization: Bearer $token" "$BASE/api/v1/crm/contacts?limit=50") |"
  done
done
