#!/usr/bin/env bash
# Enumeration resistance, measured (bench/enumeration.py): a release build on SQLite, throttling
# off so thousands of failures from one address are all checked.
#
#   bench/enumeration.sh            # SAMPLES=400 per case by default
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/common.sh
source bench/common.sh
ADDR=127.0.0.1:18082
build_release
WORK=$(mktemp -d)
SERVER=
trap '[ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null; rm -rf "$WORK"' EXIT
export GATEHOUSE_LISTEN=$ADDR GATEHOUSE_LOG=warn GATEHOUSE_RATE_LIMIT=off
export GATEHOUSE_DATABASE_URL=sqlite://$WORK/gatehouse.db
echo 'correct horse battery staple' | "$BIN" user add --email timing@example.com --name Timing --password-stdin >/dev/null
"$BIN" serve & SERVER=$!
wait_ready http://$ADDR
BASE=http://$ADDR BENCH_EMAIL=timing@example.com python3 bench/enumeration.py
