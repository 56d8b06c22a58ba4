#!/usr/bin/env bash
# Slow readers (issue 18): can one address that never reads its answers keep other clients out?
# A release build at the default settings, on loopback. From 127.0.0.1, SOCKETS sockets pipeline
# requests for a large answer and never read them, opening a new socket whenever the server lets
# one go; from 127.0.0.2, a fresh connection asks for /healthz every 50 ms. Three targets:
#   - /docs/swagger-ui-bundle.js (1.5 MB) with GATEHOUSE_DOCS=on, the reviewer's attack;
#   - the same path at the bare defaults, where /docs is off (a 404 each);
#   - a page of 100 contacts with 10 000-character notes (about 1 MB), with a bearer token.
#
#   bench/slow-readers.sh           # SOCKETS=256 DURATION=30 by default (seconds, per target)
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/common.sh
source bench/common.sh
SOCKETS=${SOCKETS:-256}
DURATION=${DURATION:-30}
ADDR=127.0.0.1:18085
BASE=http://$ADDR
PASSWORD='correct horse battery staple'
need jq jq
build_release
WORK=$(mktemp -d)
SERVER=
ATTACK=
trap '[ -n "$ATTACK" ] && kill "$ATTACK" 2>/dev/null; [ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null; rm -rf "$WORK"' EXIT
export GATEHOUSE_LISTEN=$ADDR GATEHOUSE_LOG=warn GATEHOUSE_DATABASE_URL=sqlite://$WORK/gatehouse.db
tools() { python3 bench/slow_readers.py "$@"; }

# scenario TITLE PATH [TOKEN]: the attack on PATH for DURATION seconds, /healthz measured from its
# second second to its last, then the server's memory and descriptors while the attack still runs.
scenario() {
  echo "## $1"
  tools probe $ADDR 3 | sed 's/^/quiet: /'
  local overflows; overflows=$(tools overflows)
  tools attack $ADDR "$2" $((DURATION + 2)) "$SOCKETS" ${3:+"$3"} & ATTACK=$!
  sleep 1
  tools probe $ADDR $((DURATION - 2))
  tools memory "$SERVER"
  wait "$ATTACK"; ATTACK=
  echo "listen queue overflows (SYNs dropped) during the attack: $(($(tools overflows) - overflows))"
}

start() { env "$@" "$BIN" serve & SERVER=$!; wait_ready $BASE; }
stop() { kill "$SERVER"; wait "$SERVER" || true; SERVER=; }

echo "Settings: the defaults$([ $# -gt 0 ] && echo " and $*"); $SOCKETS attack sockets, ${DURATION}s per target."
echo "Load average before: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores."
start GATEHOUSE_DOCS=on "$@"
scenario "GET /docs/swagger-ui-bundle.js, GATEHOUSE_DOCS=on" /docs/swagger-ui-bundle.js
stop

start "$@"
scenario "GET /docs/swagger-ui-bundle.js, the defaults (docs off: 404)" /docs/swagger-ui-bundle.js
echo "$PASSWORD" | "$BIN" user add --email bench@example.com --name Bench --password-stdin >/dev/null
# Throttling counts logins, not reads: one login is enough.
ACCESS=$(curl -sf $BASE/api/v1/auth/login -H 'Content-Type: application/json' \
  -d "{\"email\":\"bench@example.com\",\"password\":\"$PASSWORD\"}" | jq -r .data.accessToken)
NOTES=$(head -c 10000 /dev/zero | tr '\0' 'n')
for i in $(seq 1 100); do
  curl -sf $BASE/api/v1/crm/contacts -H "Authorization: Bearer $ACCESS" \
    -H 'Content-Type: application/json' \
    -d "{\"fullName\":\"Contact $i\",\"notes\":\"$NOTES\"}" >/dev/null
done
echo "(a page: $(curl -sf "$BASE/api/v1/crm/contacts?limit=100" -H "Authorization: Bearer $ACCESS" | wc -c) bytes)"
scenario "GET /api/v1/crm/contacts?limit=100, the defaults" "/api/v1/crm/contacts?limit=100" "$ACCESS"
stop
