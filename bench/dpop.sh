#!/usr/bin/env bash
# DPoP (RFC 9449, docs/api.md §11) at the endpoints that take an access token: userinfo and
# forward-auth, each with a bearer access token and with a DPoP-bound one (and a fresh proof on
# every request), back to back in each round so that the machine's drift falls on both alike.
# Target (issue 42): DPoP-bound userinfo and forward-auth within 70 % of the bearer figures. A
# release build on loopback, on SQLite (default) or on the PostgreSQL database BENCH_DATABASE_URL
# names (created for the run, and dropped after it, when missing; an existing one is refused: the
# run adds an account it would already hold).
#
#   bench/dpop.sh
#   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/gh_dpop_bench bench/dpop.sh
#
# Both tokens are the same public client's, from the same person's authorization (code + PKCE):
# the bearer one from an exchange without a proof, the bound one from an exchange with a proof
# (token_type DPoP, cnf.jkt). What differs per request is DPoP's own work: the proof's signature
# check with the key in its header and its jti taken in the database (one INSERT per request, on
# every backend: a jti is accepted once, by every instance).
# - userinfo: GET /oauth2/userinfo, the proofs for GET <public URL>/oauth2/userinfo;
# - forward-auth: GET /api/v1/authz/forward-auth as a trusted proxy describes GET
#   https://app.example.test/orders (X-Forwarded-*), the proofs for that URL (forward-auth
#   compares the proof's method, host and path with the described request's).
#
# The proofs: wrk's Lua cannot sign, and each proof is accepted once, so every DPoP run gets a set
# made just before it by bench/dpop-proofs.mjs (node's crypto; one node process per wrk thread,
# each thread sending its own slice once, bench/dpop.lua). All of a set carry one iat, a few seconds ahead (the
# server allows 5), and the server takes a proof up to 60 s after its iat: making the set and the
# run must fit in that window, which the script checks. PROOFS (default: what the bearer run of
# the same round would need, 1.25× over; a DPoP request does all a bearer one does, and more)
# sets the size; a thread past its slice sends its proofs again, the server refuses them (401),
# and the row shows them as errors and as "reused".
#
# Prints a Markdown table, the ratios against the target, and the command lines measured.
# DURATION (default 10s), CONNECTIONS (default 8), ROUNDS (default 2; 0: the sanity checks only),
# DPOP_ALG (ES256, the default, or EdDSA) and PROOFS tune the runs. Needs wrk, jq, curl (installed if missing) and
# node; psql with BENCH_DATABASE_URL.
#
# BENCH_QUIET (default: the API tests of `cargo test`, any compile, bench/agents.sh) is a process
# to wait for (pgrep -f, an extended regex) before the build and before each measurement, so that
# another load on the machine is not measured along (nor slowed by this one); a row measured while
# one ran (looked for every second) is marked "(disturbed)". Empty: do not wait. The server's CPU
# time over each run is shown beside its rate (100 % is one core): a run whose server
# is far from busy waits on something (the database's one writer), not on its own work.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/common.sh
source bench/common.sh
DURATION=${DURATION:-10s}
CONNECTIONS=${CONNECTIONS:-8}
ROUNDS=${ROUNDS:-2}
DPOP_ALG=${DPOP_ALG:-ES256}
PROOFS=${PROOFS:-}
QUIET=${BENCH_QUIET-target/debug/deps/api-|/rustc |bench/agents\.sh}
ADDR=127.0.0.1:18300
BASE=http://$ADDR
PASSWORD='correct horse battery staple'
REDIRECT=http://127.0.0.1:9/callback
# PKCE (S256): one verifier for every authorization of the run (each code is still single use).
VERIFIER=bench-verifier-0123456789-0123456789-0123456789
CHALLENGE=$(printf %s "$VERIFIER" | openssl dgst -sha256 -binary | base64 | tr '+/' '-_' | tr -d '=')
# The request forward-auth is asked about, and the URL its proofs name (without the query).
FORWARDED=("X-Forwarded-Method: GET" "X-Forwarded-Proto: https" "X-Forwarded-Host: app.example.test"
  "X-Forwarded-Uri: /orders")
FORWARDED_URL=https://app.example.test/orders
THREADS=2
# A proof is taken up to 60 s after its iat; the sets are issued this far ahead (the server allows
# 5 s), and a run must end this long before the window closes (wrk's start, the last answers).
IAT_AHEAD=4
SLACK=3

case $DPOP_ALG in ES256 | EdDSA) ;; *) echo "DPOP_ALG: ES256 or EdDSA" >&2; exit 1 ;; esac
# seconds DURATION: wrk's duration (30, 30s, 2m) in seconds.
seconds() {
  case $1 in
  *m) echo $((${1%m} * 60)) ;;
  *s) echo "${1%s}" ;;
  *) echo "$1" ;;
  esac
}
RUN_S=$(seconds "$DURATION")
[ $((RUN_S + SLACK)) -lt $((60 + IAT_AHEAD)) ] || { echo "DURATION: a run must fit in a proof's 60 s" >&2; exit 1; }

need wrk wrk
need jq jq
need curl curl
need openssl openssl
[ -z "${BENCH_DATABASE_URL:-}" ] || need psql postgresql-client
command -v node >/dev/null || { echo "node is needed (apt-get install nodejs)" >&2; exit 1; }

# wait_quiet: until no BENCH_QUIET process runs (checked every 30 s).
wait_quiet() {
  [ -n "$QUIET" ] || return 0
  while pgrep -f "$QUIET" >/dev/null; do
    echo "waiting for $QUIET to end ($(date +%T))" >&2
    sleep 30
  done
}
wait_quiet
build_release

WORK=$(mktemp -d)
SERVER=
PGDB=
PG_ADMIN=
cleanup() {
  [ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null
  # The server is gone first: a database in use is dropped all the same (FORCE), but after it.
  [ -n "$PGDB" ] && { wait "$SERVER" 2>/dev/null; psql -q "$PG_ADMIN" -c "DROP DATABASE IF EXISTS $PGDB WITH (FORCE)" >/dev/null 2>&1; }
  rm -rf "$WORK"
}
trap cleanup EXIT

# The PostgreSQL database: `gatehouse migrate` makes a SQLite file, never a PostgreSQL database.
if [ -n "${BENCH_DATABASE_URL:-}" ]; then
  name=${BENCH_DATABASE_URL##*/}
  name=${name%%\?*}
  [[ $name =~ ^[a-z_][a-z0-9_]*$ ]] || { echo "BENCH_DATABASE_URL: name a database ([a-z0-9_]): $name" >&2; exit 1; }
  PG_ADMIN=${BENCH_DATABASE_URL%/*}/postgres
  if [ -n "$(psql -qAt "$PG_ADMIN" -c "SELECT 1 FROM pg_database WHERE datname = '$name'")" ]; then
    echo "the database $name exists: drop it, or name another" >&2
    exit 1
  fi
  psql -q "$PG_ADMIN" -c "CREATE DATABASE $name" >/dev/null
  PGDB=$name
fi

# --- Gatehouse: the issuer is its public URL (the proofs' htu); loopback is the trusted proxy ---
export GATEHOUSE_PUBLIC_URL=$BASE GATEHOUSE_TRUSTED_PROXIES=127.0.0.1/32
serve_settings "$ADDR" "$WORK"
bench_account bench@example.com
# Public (no secret): such a client's tokens are bound when its token request carries a proof.
CLIENT_ID=$("$BIN" clients add bench-dpop --public --redirect-uri "$REDIRECT" --scope openid \
  --scope offline_access --json | jq -r .clientId)
serve_bench $BASE

# The client's key, for the whole run (the bound tokens name its thumbprint).
node bench/dpop-proofs.mjs key "$DPOP_ALG" >"$WORK/key.json"
JKT=$(jq -r .jkt "$WORK/key.json")
# proof METHOD URL [ACCESS-TOKEN]: one fresh proof.
proof() {
  node bench/dpop-proofs.mjs proofs "$WORK/key.json" "$1" "$2" 1 "$(date +%s)" "${3:-}"
}
# jwt_claims JWT: its payload as JSON.
jwt_claims() {
  local payload
  payload=$(cut -d. -f2 <<<"$1" | tr '_-' '/+')
  while [ $((${#payload} % 4)) -ne 0 ]; do payload+='='; done
  base64 -d <<<"$payload"
}

# tokens [PROOF]: the person's authorization (signed in by password, consenting) and its exchange
# by the public client, with PROOF as the DPoP header when given; prints the token answer. Taken
# before each run: a wait for a quiet machine may outlast an access token.
tokens() {
  local person code
  person=$(curl -sf $BASE/api/v1/auth/login -H 'Content-Type: application/json' \
    -d "{\"email\":\"bench@example.com\",\"password\":\"$PASSWORD\"}" | jq -r .data.accessToken)
  code=$(curl -sf $BASE/api/v1/oauth2/authorize -H 'Content-Type: application/json' \
    -H "Authorization: Bearer $person" \
    -d "$(jq -nc --arg c "$CLIENT_ID" --arg r "$REDIRECT" --arg ch "$CHALLENGE" \
      '{clientId: $c, redirectUri: $r, scope: "openid", state: "bench", codeChallenge: $ch,
        codeChallengeMethod: "S256", consent: true}')" \
    | jq -r .data.redirectTo | sed -n 's/.*[?&]code=\([^&]*\).*/\1/p')
  curl -sf $BASE/oauth2/token ${1:+-H "DPoP: $1"} -d grant_type=authorization_code \
    -d "client_id=$CLIENT_ID" -d "code=$code" -d "redirect_uri=$REDIRECT" -d "code_verifier=$VERIFIER"
}
# bearer_token, bound_token: a fresh access token of each kind, checked to be of that kind.
bearer_token() {
  local answer
  answer=$(tokens)
  [ "$(jq -r .token_type <<<"$answer")" = Bearer ] || { echo "not a bearer token: $answer" >&2; exit 1; }
  jq -r .access_token <<<"$answer"
}
bound_token() {
  local answer access
  answer=$(tokens "$(proof POST $BASE/oauth2/token)")
  [ "$(jq -r .token_type <<<"$answer")" = DPoP ] || { echo "not a DPoP token: $answer" >&2; exit 1; }
  access=$(jq -r .access_token <<<"$answer")
  [ "$(jwt_claims "$access" | jq -r .cnf.jkt)" = "$JKT" ] || { echo "the token is not bound to the key (cnf.jkt)" >&2; exit 1; }
  echo "$access"
}

# Per scenario: the path asked, the proofs' htu, and the headers beside the credential.
path_of() { case $1 in userinfo) echo /oauth2/userinfo ;; forward-auth) echo /api/v1/authz/forward-auth ;; esac; }
htu_of() { case $1 in userinfo) echo $BASE/oauth2/userinfo ;; forward-auth) echo $FORWARDED_URL ;; esac; }
headers_of() { # SCENARIO: curl's -H arguments, NUL-separated
  [ "$1" = forward-auth ] && printf -- '-H\0%s\0' "${FORWARDED[@]}"
  return 0
}

# --- Sanity: each kind is answered once; a proof is taken once; a bound token wants its proof ---
# status SCENARIO SCHEME TOKEN [PROOF]: the HTTP status of one request.
status() {
  local extra=()
  mapfile -d '' extra < <(headers_of "$1")
  curl -s -o /dev/null -w '%{http_code}' "${extra[@]}" -H "Authorization: $2 $3" \
    ${4:+-H "DPoP: $4"} "$BASE$(path_of "$1")"
}
expect() { # WANT WHAT STATUS
  [ "$3" = "$1" ] || { echo "$2: $3, not $1" >&2; exit 1; }
}
BEARER=$(bearer_token)
BOUND=$(bound_token)
for scenario in userinfo forward-auth; do
  expect 200 "$scenario, bearer token" "$(status $scenario Bearer "$BEARER")"
  once=$(proof GET "$(htu_of $scenario)" "$BOUND")
  expect 200 "$scenario, bound token with a fresh proof" "$(status $scenario DPoP "$BOUND" "$once")"
  expect 401 "$scenario, the same proof again" "$(status $scenario DPoP "$BOUND" "$once")"
  expect 401 "$scenario, bound token without a proof" "$(status $scenario DPoP "$BOUND")"
  expect 401 "$scenario, bound token as a bearer token" "$(status $scenario Bearer "$BOUND")"
done
# Forward-auth tells the upstream the key the caller proved it holds.
mapfile -d '' extra < <(headers_of forward-auth)
dpop_header=$(curl -s -D - -o /dev/null "${extra[@]}" -H "Authorization: DPoP $BOUND" \
  -H "DPoP: $(proof GET $FORWARDED_URL "$BOUND")" $BASE/api/v1/authz/forward-auth \
  | tr -d '\r' | sed -n 's/^remote-dpop: //Ip')
expect "$JKT" "forward-auth's Remote-Dpop" "$dpop_header"

# --- Measurements ----------------------------------------------------------------------------------
# make_proofs SCENARIO TOKEN COUNT: COUNT proofs for SCENARIO's URL with TOKEN's hash, in
# $WORK/proofs.1 … proofs.THREADS (one slice per wrk thread, made side by side), all issued at
# IAT_AHEAD seconds from now; sets MADE_AT (when making started) and MAKE_S (how long it took).
make_proofs() {
  local iat i pids=()
  MADE_AT=$(date +%s)
  iat=$((MADE_AT + IAT_AHEAD))
  rm -f "$WORK"/proofs.*
  for i in $(seq 1 $THREADS); do
    node bench/dpop-proofs.mjs proofs "$WORK/key.json" GET "$(htu_of "$1")" \
      $(($3 / THREADS + 1)) "$iat" "$2" >"$WORK/proofs.$i" &
    pids+=($!)
  done
  for i in "${pids[@]}"; do wait "$i"; done
  MAKE_S=$(($(date +%s) - MADE_AT))
}

# server_ticks: the server's CPU time so far (user and system, all threads), in clock ticks.
server_ticks() {
  awk '{print $14 + $15}' "/proc/$SERVER/stat"
}

# measure SCENARIO KIND [PROOFS]: "requests/s|p50|p99|errors|cpu|note" of one run of SCENARIO with a
# fresh token of KIND (bearer or dpop; for dpop, PROOFS proofs made first), after a wait for a quiet
# machine. Errors are non-2xx answers plus socket errors; the note says how many proofs were sent
# of how many made, and how many were sent again. The command line is kept for the report.
measure() {
  local scenario=$1 kind=$2 token scheme prefix=- out wrk_pid disturbed='' extra=() ticks started cpu
  wait_quiet
  [ "$scenario" = forward-auth ] && extra=("${FORWARDED[@]}")
  if [ "$kind" = dpop ]; then
    token=$(bound_token)
    scheme=DPoP prefix=$WORK/proofs
    make_proofs "$scenario" "$token" "$3"
    # The last request must still be within the set's window (its iat + 60 s).
    [ $((MAKE_S + RUN_S + SLACK)) -lt $((60 + IAT_AHEAD)) ] || {
      echo "making $3 proofs took ${MAKE_S}s: with a ${RUN_S}s run the last would be too old; set PROOFS lower" >&2
      exit 1
    }
  else
    token=$(bearer_token)
    scheme=Bearer
  fi
  {
    # shellcheck disable=SC2016 # the token stands as "$TOKEN" in the report
    printf '%s ' wrk --latency -t$THREADS -c"$CONNECTIONS" -d"$DURATION" -s bench/dpop.lua $BASE -- \
      "$(path_of "$scenario")" $scheme '"$TOKEN"' "$prefix"
    [ ${#extra[@]} = 0 ] || printf "'%s' " "${extra[@]}"
    printf ' # load average %s\n' "$(cut -d' ' -f1 /proc/loadavg)"
  } >>"$WORK/commands"
  ticks=$(server_ticks)
  started=$(date +%s.%N)
  wrk --latency -t$THREADS -c"$CONNECTIONS" -d"$DURATION" -s bench/dpop.lua $BASE -- \
    "$(path_of "$scenario")" $scheme "$token" "$prefix" "${extra[@]}" >"$WORK/wrk.out" & wrk_pid=$!
  # Looked for every second while wrk runs, so that a run starting and ending within it is seen.
  while kill -0 "$wrk_pid" 2>/dev/null; do
    [ -n "$QUIET" ] && pgrep -f "$QUIET" >/dev/null && disturbed=" (disturbed)"
    sleep 1
  done
  wait "$wrk_pid"
  out=$(<"$WORK/wrk.out")
  # Over the whole of wrk's time (its threads' start, the proofs read in, included).
  cpu=$(awk -v t="$(($(server_ticks) - ticks))" -v hz="$(getconf CLK_TCK)" -v s="$started" -v e="$(date +%s.%N)" \
    'BEGIN {printf "%.0f %%", 100 * t / hz / (e - s)}')
  awk -v disturbed="$disturbed" -v make_s="${MAKE_S:-}" -v cpu="$cpu" '
    /Requests\/sec/ {rps=$2}
    $1=="50%" {p50=$2}
    $1=="99%" {p99=$2}
    /Non-2xx/ {non2xx=$5}
    /Socket errors/ {gsub(",", ""); sock=$4+$6+$8+$10}
    $1=="proofs" {note=sprintf("%d sent of %d (made in %ss), %d reused", $2, $4, make_s, $5)}
    END {printf "%s%s|%s|%s|%d|%s|%s\n", rps, disturbed, p50, p99, sock + non2xx, cpu, note}' <<<"$out"
}

label() {
  case $1 in
  userinfo) echo "GET /oauth2/userinfo" ;;
  forward-auth) echo "forward-auth (GET https://app.example.test/orders)" ;;
  esac
}

: >"$WORK/commands"
: >"$WORK/notes"
echo "| scenario | connections | bearer ($BACKEND) /s | p50 | p99 | DPoP ($DPOP_ALG) /s | p50 | p99 | DPoP ÷ bearer | errors (bearer / DPoP) | server CPU (bearer / DPoP) | proofs |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
for round in $(seq 1 "$ROUNDS"); do
  for scenario in userinfo forward-auth; do
    # Through a file, not a pipe: a failure in the measurement stops the run (set -e).
    measure $scenario bearer >"$WORK/row"
    IFS='|' read -r b_rate b_p50 b_p99 b_err b_cpu _ <"$WORK/row"
    count=${PROOFS:-$(awk -v r="${b_rate%% *}" -v s="$RUN_S" 'BEGIN {printf "%d", r * s * 1.25 + 2000}')}
    measure $scenario dpop "$count" >"$WORK/row"
    IFS='|' read -r d_rate d_p50 d_p99 d_err d_cpu d_note <"$WORK/row"
    ratio=$(awk -v b="${b_rate%% *}" -v d="${d_rate%% *}" 'BEGIN {if (b + 0 > 0) printf "%.0f %%", 100 * d / b; else print "-"}')
    echo "| $(label $scenario) (round $round) | $CONNECTIONS | $b_rate | $b_p50 | $b_p99 | $d_rate | $d_p50 | $d_p99 | $ratio | $b_err / $d_err | $b_cpu / $d_cpu | $d_note |"
    awk -v b="${b_rate%% *}" -v d="${d_rate%% *}" -v s="$scenario" -v r="$round" 'BEGIN {
      if (b > 0) printf "- round %s, %s: DPoP ÷ bearer = %.0f %% (target: at least 70 %%): %s\n", r, s, 100 * d / b, (d >= 0.7 * b ? "met" : "NOT met")
    }' >>"$WORK/notes"
  done
done
echo
cat "$WORK/notes"
echo
echo "Proofs $DPOP_ALG, made by node $(node --version) ($THREADS processes) before each DPoP run; $(nproc) cores shared by the server and wrk; load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)."
echo
echo "Measured (wrk; \$TOKEN is a fresh access token of the kind, \$WORK/proofs.N the proofs of thread N):"
echo
echo '```sh'
sed "s|$WORK|\$WORK|g" "$WORK/commands"
echo '```'
