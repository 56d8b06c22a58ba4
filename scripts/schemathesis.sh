#!/usr/bin/env bash
# Schemathesis (PyPI) against the OpenAPI document: generated requests for every call, checked
# against the documented answers. A release build on SQLite, registration open, throttling off;
# the bearer calls use a fresh account's token. Settings the document cannot carry are in
# scripts/schemathesis.toml, written for the 4.32 line.
#
#   scripts/schemathesis.sh                      # MAX_EXAMPLES=50 per operation by default
#   scripts/schemathesis.sh --include-path-regex contacts   # extra arguments go to `st run`
set -euo pipefail
cd "$(dirname "$0")/.."
ADDR=127.0.0.1:18083
st --version 2>/dev/null | grep -q ' 4\.32\.' || python3 -m pip install -q 'schemathesis~=4.32.0'
cargo build --release -q
BIN=$PWD/target/release/gatehouse
WORK=$(mktemp -d)
SERVER=
trap '[ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null; rm -rf "$WORK"' EXIT
export GATEHOUSE_LISTEN=$ADDR GATEHOUSE_LOG=warn GATEHOUSE_RATE_LIMIT=off GATEHOUSE_REGISTRATION=open
export GATEHOUSE_DATABASE_URL=sqlite://$WORK/gatehouse.db
PASSWORD='correct horse battery staple'
echo "$PASSWORD" | "$BIN" user add --email st@example.com --name Schemathesis --password-stdin >/dev/null
"$BIN" serve & SERVER=$!
for _ in $(seq 1 100); do curl -sf http://$ADDR/healthz >/dev/null && break; sleep 0.05; done
TOKEN=$(curl -sf http://$ADDR/api/v1/auth/login -H 'Content-Type: application/json' \
  -d "{\"email\":\"st@example.com\",\"password\":\"$PASSWORD\"}" | python3 -c 'import json,sys; print(json.load(sys.stdin)["data"]["accessToken"])')
# Logout and deleting a session would end the session every other call uses; the test suite
# covers both.
st --config-file scripts/schemathesis.toml run "http://$ADDR/api/v1/openapi.json" \
  --header "Authorization: Bearer $TOKEN" \
  --checks all \
  --exclude-path-regex 'auth/(logout|sessions/)' \
  --max-examples "${MAX_EXAMPLES:-50}" \
  --seed 1 \
  "$@"
