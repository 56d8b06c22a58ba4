#!/usr/bin/env bash
# How soon a change reaches every instance (docs/api.md §2 promises 2 s): two release instances on
# one database, a sign-out made on one and a role given by the CLI, each timed until the other
# instance answers with it (bench/spread.py). On SQLite (default) or the PostgreSQL database named
# by BENCH_DATABASE_URL. The tests only insist that changes arrive (tests/api/helpers.rs,
# SPREAD_DEADLINE); this is where the figure is measured.
#
#   bench/spread.sh
#   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1/gh_spread_bench bench/spread.sh
#
# TRIALS (default 40) changes of each kind. Prints a Markdown table.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/common.sh
source bench/common.sh
TRIALS=${TRIALS:-40}
A=127.0.0.1:18190
B=127.0.0.1:18191
PASSWORD='correct horse battery staple'

build_release

WORK=$(mktemp -d)
PIDS=()
trap 'kill "${PIDS[@]}" 2>/dev/null; rm -rf "$WORK"' EXIT

serve_settings "$A" "$WORK"
# Forward-auth answers the proxies on loopback.
export GATEHOUSE_TRUSTED_PROXIES=127.0.0.1/32
bench_account
for addr in $A $B; do
  GATEHOUSE_LISTEN=$addr "$BIN" serve &
  PIDS+=($!)
  wait_ready "http://$addr"
done

echo "| change ($BACKEND) | trials | p50 ms | p90 ms | p99 ms | max ms |"
echo "|---|---|---|---|---|---|"
python3 bench/spread.py "http://$A" "http://$B" "$BIN" "$TRIALS"
