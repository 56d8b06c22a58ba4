#!/usr/bin/env bash
# The benchmark suite: every scenario of BENCHMARKS.md on SQLite and on PostgreSQL, each on a
# database of 1 000 and of 1 000 000 rows (accounts, sessions with their refresh tokens, contacts,
# audit events: bench/seed.sh), one table with the sizes side by side. A release build on
# loopback; wrk (installed if missing) as the load, on the same two cores. The surfaces of issue 29
# (forward-auth, the OAuth token endpoint, userinfo, an active organisation) are in
# bench/surfaces.sh; SURFACES=0 leaves them out.
#
#   bench/suite.sh              # prints the table and writes it into BENCHMARKS.md
#   DURATION=5s bench/suite.sh  # shorter runs (default 10s)
#   SIZES=1000 bench/suite.sh   # the small database only (default "1000 1000000")
#   BENCH_POSTGRES_URL= bench/suite.sh   # SQLite only
#   BENCH_BIN=/path/to/gatehouse bench/suite.sh   # a binary built beforehand (an A/B pair)
#
# PostgreSQL: a database is created for each size on BENCH_POSTGRES_URL's server (default the
# local one) and dropped afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/common.sh
source bench/common.sh
# shellcheck source=bench/surfaces.sh
source bench/surfaces.sh
DURATION=${DURATION:-10s}
SIZES=${SIZES:-1000 1000000}
SURFACES=${SURFACES:-1}
SECONDS_EACH=${DURATION%s}
POSTGRES=${BENCH_POSTGRES_URL-postgres://postgres@127.0.0.1:5432/postgres}
# Servers listen on 18190 and up (one per size), clear of another checkout's suite on 18090.
PASSWORD='correct horse battery staple'

need wrk wrk
need jq jq
need psql postgresql-client
need openssl openssl
python3 -c 'import argon2' 2>/dev/null || python3 -m pip install -q argon2-cffi
build_release

WORK=$(mktemp -d)
FLOOD=
declare -A PIDS=()
PGDBS=()
cleanup() {
  [ -n "$FLOOD" ] && kill "$FLOOD" 2>/dev/null
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null; done
  for db in "${PGDBS[@]}"; do
    psql -q "$POSTGRES" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1
  done
  rm -rf "$WORK"
}
trap cleanup EXIT
# The load comes from one address but stands for many clients: no per-client connection cap.
export GATEHOUSE_LOG=warn GATEHOUSE_RATE_LIMIT=off GATEHOUSE_REGISTRATION=open
export GATEHOUSE_MAX_CONNECTIONS_PER_CLIENT=1024
surfaces_env

# One server per database size, all up at once, so that each scenario runs on every size back to
# back: load from elsewhere on the machine then weighs on the sizes alike, and the change between
# them is the database's. SERVER, BASE, SIZE and DIR name the one being measured (use SIZE).
declare -A PIDS PORTS STARTS IDLES
use() { SIZE=$1; SERVER=${PIDS[$1]}; BASE=http://127.0.0.1:${PORTS[$1]}; DIR=$WORK/$BACKEND-$1; }

rss() { awk '/VmRSS/ {printf "%.1f", $2/1024}' /proc/"$SERVER"/status; }
peak() { awk '/VmHWM/ {printf "%.1f", $2/1024}' /proc/"$SERVER"/status; }
# Resets the peak RSS (VmHWM) so the next reading is the next scenario's own.
reset_peak() { echo 5 > /proc/"$SERVER"/clear_refs 2>/dev/null || true; }

ROWS=$WORK/rows
# scenario|backend|size|"req/s|p50|p99|errors|peak MiB|note"
row() { echo "$1|$BACKEND|$SIZE|$2" >>"$ROWS"; }

# prepare SIZE PORT: a fresh database of SIZE rows of each kind (migrated, seeded, analysed) with
# the bench account, its server started (the time to ready measured on the existing database),
# and the scenarios' tokens and accounts made.
prepare() {
  local size=$1 port=$2 dir=$WORK/$BACKEND-$1 out
  mkdir -p "$dir"
  if [ "$BACKEND" = sqlite ]; then
    export GATEHOUSE_DATABASE_URL=sqlite://$dir/gatehouse.db
    unset GATEHOUSE_MASTER_KEY
  else
    PGDBS+=("gatehouse_suite_$$_$size")
    psql -q "$POSTGRES" -c "CREATE DATABASE gatehouse_suite_$$_$size" >/dev/null
    export GATEHOUSE_DATABASE_URL=${POSTGRES%/*}/gatehouse_suite_$$_$size
    export GATEHOUSE_MASTER_KEY=$(head -c 32 /dev/urandom | base64)
  fi
  export GATEHOUSE_LISTEN=127.0.0.1:$port
  # With PostgreSQL the mail folder would be the working folder's `mail/`: the checkout's.
  export GATEHOUSE_MAIL_DIR=$dir/mail
  "$BIN" migrate 2>/dev/null
  bench/seed.sh "$GATEHOUSE_DATABASE_URL" "$size"
  echo "$PASSWORD" | "$BIN" user add --email bench@example.com --name Bench --password-stdin >/dev/null
  DIR=$dir
  [ "$SURFACES" = 1 ] && surfaces_client
  out=$(python3 bench/tools.py ready "$BIN")
  STARTS[$size]=$(sed -n 1p <<<"$out")
  PIDS[$size]=$(sed -n 2p <<<"$out")
  PORTS[$size]=$port
  use "$size"
  # Idle memory now, before the set-up below hashes passwords (Argon2 memory stays mapped).
  sleep 1
  IDLES[$size]=$(rss)
  local access
  access=$(curl -sf $BASE/api/v1/auth/login -H 'Content-Type: application/json' \
    -d "{\"email\":\"bench@example.com\",\"password\":\"$PASSWORD\"}" | jq -r .data.accessToken)
  echo "$access" >"$DIR/access"
  for i in $(seq 1 20); do
    curl -sf $BASE/api/v1/crm/contacts -H "Authorization: Bearer $access" -H 'Content-Type: application/json' \
      -d "{\"fullName\":\"Contact $i\",\"email\":\"c$i@example.com\",\"company\":\"Acme\"}" >/dev/null
  done
  python3 bench/tools.py tokens $BASE 10000 "$DIR/tokens"
  for n in 8 32; do
    for i in $(seq 1 $n); do
      curl -sf $BASE/api/v1/auth/login -H 'Content-Type: application/json' \
        -d "{\"email\":\"bench@example.com\",\"password\":\"$PASSWORD\"}" | jq -r .data.refreshToken
    done >"$DIR/refresh-$n"
  done
  python3 bench/tools.py twofactor $BASE 150 >"$DIR/twofactor"
  [ "$SURFACES" = 1 ] && surfaces_prepare
  return 0
}

# each NAME NOTE WRK-ARGS…: the scenario on every size in turn; in WRK-ARGS, {BASE} and {DIR}
# stand for the server's address and its files.
each() {
  local name=$1 note=$2 size
  shift 2
  for size in $SIZES; do
    use "$size"
    local args=("${@//\{BASE\}/$BASE}")
    args=("${args[@]//\{DIR\}/$DIR}")
    reset_peak
    row "$name" "$(wrk_fields "${args[@]}")|$(peak)|$note"
  done
}

bench() {
  BACKEND=$1
  local port=18190 size
  for size in $SIZES; do prepare "$size" $port; port=$((port + 1)); done
  for size in $SIZES; do use "$size"; row "start to ready (existing database)" "||||| ${STARTS[$size]} ms"; done
  for size in $SIZES; do use "$size"; row "memory, idle" "||||${IDLES[$size]}|"; done

  each "healthz" "" -t2 -c64 -d"$DURATION" "{BASE}/healthz"
  each "readyz (one database round trip, no auth)" "reference" -t2 -c64 -d"$DURATION" "{BASE}/readyz"
  for size in $SIZES; do
    use "$size"; reset_peak
    row "contacts" "$(wrk_fields -t2 -c64 -d"$DURATION" -H "Authorization: Bearer $(cat "$DIR/access")" $BASE/api/v1/crm/contacts)|$(peak)|"
  done
  each "contacts-many-tokens" "10 000 tokens" -t2 -c64 -d"$DURATION" -s bench/many-tokens.lua "{BASE}" -- "{DIR}/tokens"
  each "refresh" "chained, 8 connections" -t8 -c8 -d"$DURATION" -s bench/refresh.lua "{BASE}" -- "{DIR}/refresh-8"
  each "refresh-32" "chained, 32 connections" -t32 -c32 -d"$DURATION" -s bench/refresh.lua "{BASE}" -- "{DIR}/refresh-32"
  each "login" "" -t2 -c8 -d"$DURATION" -s bench/login.lua "{BASE}/api/v1/auth/login"
  each "login-2fa" "requests; flows/s = half" -t8 -c8 -d"$DURATION" -s bench/login-2fa.lua "{BASE}" -- "{DIR}/twofactor" 8
  [ "$SURFACES" = 1 ] && surfaces_run

  # storm: contacts measured while a login flood holds the hash pool.
  for size in $SIZES; do
    use "$size"; reset_peak
    wrk -t1 -c64 -d60s -s bench/login.lua $BASE/api/v1/auth/login >/dev/null & FLOOD=$!
    sleep 2
    row "storm (contacts during a login flood)" "$(wrk_fields -t1 -c8 -d"$DURATION" -H "Authorization: Bearer $(cat "$DIR/access")" $BASE/api/v1/crm/contacts)|$(peak)|login flood: 64 connections"
    kill "$FLOOD"; wait "$FLOOD" 2>/dev/null || true; FLOOD=
  done
  for size in $SIZES; do kill "${PIDS[$size]}"; wait "${PIDS[$size]}" 2>/dev/null || true; done
  PIDS=()
  rm -rf "$WORK"/sqlite-*
}

: >"$ROWS"
PGDBS=()
bench sqlite
if [ -n "$POSTGRES" ]; then
  bench postgres
fi

CORES=$(nproc)
ARGON2=$(python3 bench/tools.py argon2 "$SECONDS_EACH" "$CORES")

TABLE=$WORK/table
python3 bench/tools.py table "$ROWS" "$SIZES" >"$TABLE"
echo "| libargon2 reference (argon2-cffi, m=19 MiB t=2 p=1, $CORES processes) | – | $ARGON2 hashes/s | | | | | | | | |" >>"$TABLE"
cat "$TABLE"

# Into BENCHMARKS.md, between the suite markers, with the machine and the command.
MACHINE="$(nproc) vCPU ($(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)), $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), Linux $(uname -r); wrk $(wrk -v 2>&1 | awk 'NR==1 {print $2}' || true) on the same cores"
{
  echo "<!-- suite:start -->"
  echo "Run of $(date -u +%Y-%m-%d) on $MACHINE, $DURATION per scenario. The machine is shared:"
  echo "other work (builds, tests, other benchmarks) may have run at the same time, so a figure"
  echo "that looks off is repeated and the repeat noted below the table."
  echo
  echo '```sh'
  echo "SIZES=\"$SIZES\" DURATION=$DURATION bench/suite.sh"
  echo '```'
  echo
  cat "$TABLE"
  echo "<!-- suite:end -->"
} >"$WORK/section"
python3 - "$WORK/section" <<'PY'
import re, sys
section = open(sys.argv[1]).read().rstrip("\n")
text = open("BENCHMARKS.md").read()
if "<!-- suite:start -->" in text:
    text = re.sub(r"<!-- suite:start -->.*?<!-- suite:end -->", lambda _: section, text, flags=re.S)
else:
    text = text.rstrip("\n") + "\n\n## The suite (issue 6 targets)\n\n" + section + "\n"
open("BENCHMARKS.md", "w").write(text)
PY
