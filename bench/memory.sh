#!/usr/bin/env bash
# Resident memory of release binaries over a burst of sign-ins: idle (3 s after the start), after
# one login, after eight at once, and once the hashing threads have been idle 35 s (they give
# their Argon2 memory back after 30 s). SQLite, a new database in a temporary folder.
#
#   bench/memory.sh /work/bench-rb/gatehouse-main /work/bench-rb/gatehouse-branch
#
# Prints one Markdown row per binary: VmRSS (and the anonymous part of the idle figure), in MiB.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/common.sh
source bench/common.sh
[ $# -ge 1 ] || { echo "usage: bench/memory.sh BINARY …" >&2; exit 2; }
ADDR=127.0.0.1:18390
BASE=http://$ADDR
PASSWORD='correct horse battery staple'
WORK=$(mktemp -d)
SERVER=
trap '[ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null; rm -rf "$WORK"' EXIT
serve_settings "$ADDR" "$WORK"

mib() { awk -v k="$1" '$1 == k":" {printf "%.1f", $2 / 1024}' /proc/"$SERVER"/status; }
login() {
  curl -sf -o /dev/null $BASE/api/v1/auth/login -H 'Content-Type: application/json' \
    -d "{\"email\":\"bench@example.com\",\"password\":\"$PASSWORD\"}"
}

echo "| binary | idle | idle, anonymous | after 1 login | after 8 at once | 35 s later |"
echo "|---|---|---|---|---|---|"
for BIN in "$@"; do
  [ -e "$WORK/gatehouse.db" ] || bench_account
  serve_bench $BASE
  sleep 3
  idle=$(mib VmRSS) anon=$(mib RssAnon)
  login
  sleep 1
  one=$(mib VmRSS)
  pids=()
  for _ in $(seq 1 8); do login & pids+=($!); done
  wait "${pids[@]}"
  sleep 1
  eight=$(mib VmRSS)
  sleep 35
  later=$(mib VmRSS)
  echo "| $(basename "$BIN") | $idle | $anon | $one | $eight | $later |"
  kill "$SERVER"; wait "$SERVER" 2>/dev/null || true; SERVER=
done
