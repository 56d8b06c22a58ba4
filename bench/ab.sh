#!/usr/bin/env bash
# A/B of release binaries, or of one binary under different settings, on one database seeded once
# (bench/seed.sh): each round starts every variant in turn on it and measures healthz, the contact
# list and chained refreshes, so that the machine's drift (this machine is shared) falls on every
# variant alike. Besides wrk's rate, the server's own CPU per request (user + system, from
# /proc/PID/stat around each run): less noisy than the rate when other work shares the cores.
#
#   bench/ab.sh 'main=/tmp/gatehouse-main' 'branch=/tmp/gatehouse'
#   bench/ab.sh 'inline=/tmp/gatehouse' 'spawn=GATEHOUSE_X=1 /tmp/gatehouse'   # NAME=[ENV=V …] BIN
#
# ROWS (default 1000000), ROUNDS (3), DURATION (5s), CONNECTIONS (32); SQLite, or the PostgreSQL
# database BENCH_DATABASE_URL names (emptied first). PERF=1 also records `perf record -g` of each
# variant's server under the contact list in the first round, and prints the top of each profile.
# Prints one row per variant and round, then each variant's medians.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/common.sh
source bench/common.sh
ROWS=${ROWS:-1000000}
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-5s}
CONNECTIONS=${CONNECTIONS:-32}
ADDR=127.0.0.1:18380
BASE=http://$ADDR
PASSWORD='correct horse battery staple'
[ $# -ge 1 ] || { echo "usage: bench/ab.sh NAME=[ENV=V …] BINARY …" >&2; exit 2; }

need wrk wrk
need jq jq
WORK=$(mktemp -d)
SERVER=
trap '[ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null; rm -rf "$WORK"' EXIT
serve_settings "$ADDR" "$WORK"
export GATEHOUSE_REGISTRATION=open

# The first variant's binary makes the database: schema, ROWS of each kind, the bench account.
first=${1#*=}
BIN=${first##* }
if [ "$BACKEND" = postgres ]; then
  psql -q "$GATEHOUSE_DATABASE_URL" -c 'DROP SCHEMA public CASCADE; CREATE SCHEMA public' >/dev/null
fi
bench_account
bench/seed.sh "$GATEHOUSE_DATABASE_URL" "$ROWS"

cpu_ticks() { awk '{print $14 + $15}' /proc/"$SERVER"/stat; }
TICK=$(getconf CLK_TCK)
# measure WRK-ARGS…: "rate|p99|server CPU µs per request"
measure() {
  local before out after
  before=$(cpu_ticks)
  out=$(wrk --latency "$@")
  after=$(cpu_ticks)
  awk -v cpu=$((after - before)) -v tick="$TICK" -v seconds="${DURATION%s}" '
    /Requests\/sec/ {rps=$2}
    $1=="99%" {p99=$2}
    END {printf "%s|%s|%.0f\n", rps, p99, cpu / tick * 1e6 / (rps * seconds)}' <<<"$out"
}

RESULTS=$WORK/results
login() {
  curl -sf $BASE/api/v1/auth/login -H 'Content-Type: application/json' \
    -d "{\"email\":\"bench@example.com\",\"password\":\"$PASSWORD\"}" | jq -r ".data.$1"
}
for round in $(seq 1 "$ROUNDS"); do
  for spec in "$@"; do
    name=${spec%%=*}
    read -ra cmd <<<"${spec#*=}"
    env "${cmd[@]}" serve & SERVER=$!
    wait_ready $BASE
    access=$(login accessToken)
    if [ "$round$spec" = "1$1" ]; then
      for i in $(seq 1 20); do
        curl -sf $BASE/api/v1/crm/contacts -H "Authorization: Bearer $access" -H 'Content-Type: application/json' \
          -d "{\"fullName\":\"Contact $i\",\"email\":\"c$i@example.com\"}" >/dev/null
      done
    fi
    for _ in $(seq 1 "$CONNECTIONS"); do login refreshToken; done >"$WORK/refresh"
    if [ "${PERF:-0}" = 1 ] && [ "$round" = 1 ]; then
      perf record -g -o "$WORK/perf-$name.data" -p "$SERVER" -- sleep 4 >/dev/null 2>&1 &
      perf_pid=$!
      wrk -t2 -c"$CONNECTIONS" -d5s -H "Authorization: Bearer $access" $BASE/api/v1/crm/contacts >/dev/null
      wait $perf_pid || true
    fi
    h=$(measure -t2 -c"$CONNECTIONS" -d"$DURATION" $BASE/healthz)
    c=$(measure -t2 -c"$CONNECTIONS" -d"$DURATION" -H "Authorization: Bearer $access" $BASE/api/v1/crm/contacts)
    r=$(measure -t"$CONNECTIONS" -c"$CONNECTIONS" -d"$DURATION" -s bench/refresh.lua $BASE -- "$WORK/refresh")
    echo "$name|$round|$h|$c|$r" | tee -a "$RESULTS"
    kill "$SERVER"; wait "$SERVER" 2>/dev/null || true; SERVER=
  done
done

echo
echo "$BACKEND, $ROWS rows, $CONNECTIONS connections, $DURATION a run, $ROUNDS rounds; medians (min–max):"
python3 - "$RESULTS" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    f = line.rstrip("\n").split("|")
    rows.setdefault(f[0], []).append(f[2:])
def span(values, fmt):
    values = sorted(float(v) for v in values)
    return f"{fmt.format(statistics.median(values))} ({fmt.format(values[0])}–{fmt.format(values[-1])})"
print("| variant | healthz/s | contacts/s | contacts % of healthz | contacts CPU µs/req | refresh/s | refresh p99 | refresh CPU µs/req |")
print("|---|---|---|---|---|---|---|---|")
for name, runs in rows.items():
    col = lambda i: [r[i] for r in runs]
    ratio = [float(r[3]) / float(r[0]) * 100 for r in runs]
    p99 = sorted(col(7), key=lambda v: float(v.rstrip("ms").rstrip("u")) * (1e-3 if v.endswith("us") else 1))
    print(f"| {name} | {span(col(0), '{:.0f}')} | {span(col(3), '{:.0f}')} | {span(ratio, '{:.1f}')} % "
          f"| {span(col(5), '{:.0f}')} | {span(col(6), '{:.0f}')} | {p99[len(p99) // 2]} | {span(col(8), '{:.0f}')} |")
PY
if [ "${PERF:-0}" = 1 ]; then
  for spec in "$@"; do
    name=${spec%%=*}
    echo
    echo "perf, $name (contact list; self time, top 25):"
    perf report -i "$WORK/perf-$name.data" --no-children --sort dso,symbol -g none --stdio 2>/dev/null \
      | grep -v '^#' | grep '%' | head -25 || true
  done
fi
