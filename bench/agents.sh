#!/usr/bin/env bash
# Agents and tools at the token endpoint (docs/api.md §11): token exchange (RFC 8693) against the
# client_credentials grant, whose cost it should stay within 2× of, and the polls of the device
# authorization grant (RFC 8628), against panva's oidc-provider (npm, OpenID Certified) with its
# device flow on (bench/oidc-provider-device.mjs says how it is set up). Both on this machine in
# the same run, scenario by scenario (Gatehouse, then the peer, twice), so that the machine's
# drift falls on both alike. A release build on loopback, on SQLite (default) or on the
# PostgreSQL database BENCH_DATABASE_URL names (created for the run, and dropped after it, when
# missing; an existing one is refused: the run adds an account it would already hold).
#
#   bench/agents.sh
#   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/gh_agents_bench bench/agents.sh
#
# Scenarios:
# - client_credentials: tokens issued per second to one confidential client (client_secret_basic),
#   the request of bench/oauth.sh;
# - token exchange: a confidential client registered with the grant exchanges one person's access
#   token (signed in by password) for one of scope contacts:read, again and again; the peer has no
#   such grant (oidc-provider does not implement RFC 8693);
# - device polls: CODES device authorizations (default 2000) are started before each run, then
#   wrk posts polls cycling through them. Nobody answers them: every poll is a 400
#   authorization_pending, or slow_down (Gatehouse, polled again within the interval), and is
#   counted as served; "errors" are socket errors and any other answer (expired_token included).
#   Gatehouse records each poll (one UPDATE), the peer only reads the code.
# Prints a Markdown table, the ratio client_credentials ÷ token exchange per round, and the command
# lines measured. DURATION (default 10s), CONNECTIONS (default 8) and CODES tune the runs. Needs
# wrk, jq, curl (installed if missing), node and `npm ci --prefix tests/browser`; psql with
# BENCH_DATABASE_URL.
#
# BENCH_QUIET (default: target/debug/deps/api-, the API tests of `cargo test`) is a process to
# wait for (pgrep -f, so an extended regex: 'target/debug/deps/api-|/cargo |/rustc ' waits for
# builds too) before the build and before each measurement, so that another load on the machine
# is not measured along (nor slowed by this one). A measurement during which one ran (looked for
# every second) is made again, three times at most; a figure still disturbed is marked
# "(disturbed)". Empty: do not wait.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/common.sh
source bench/common.sh
DURATION=${DURATION:-10s}
CONNECTIONS=${CONNECTIONS:-8}
CODES=${CODES:-2000}
QUIET=${BENCH_QUIET-target/debug/deps/api-}
ADDR=127.0.0.1:18290
BASE=http://$ADDR
PEER_PORT=18291
PEER=http://127.0.0.1:$PEER_PORT
PASSWORD='correct horse battery staple'
DEVICE_GRANT=urn:ietf:params:oauth:grant-type:device_code
EXCHANGE_GRANT=urn:ietf:params:oauth:grant-type:token-exchange
ACCESS_TOKEN_TYPE=urn:ietf:params:oauth:token-type:access_token

need wrk wrk
need jq jq
need curl curl
[ -z "${BENCH_DATABASE_URL:-}" ] || need psql postgresql-client
command -v node >/dev/null || { echo "node is needed (apt-get install nodejs npm)" >&2; exit 1; }
[ -d tests/browser/node_modules/oidc-provider ] || npm ci --prefix tests/browser --no-audit --no-fund

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
PEER_PID=
PGDB=
PG_ADMIN=
cleanup() {
  [ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null
  [ -n "$PEER_PID" ] && kill "$PEER_PID" 2>/dev/null
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

# --- Gatehouse: the issuer is its public URL; three clients; one person ------------------------
export GATEHOUSE_PUBLIC_URL=$BASE
serve_settings "$ADDR" "$WORK"
bench_account bench@example.com
# basic CLIENT-JSON: the HTTP Basic header of a confidential client.
basic() { echo "Basic $(printf '%s:%s' "$(jq -r .clientId <<<"$1")" "$(jq -r .clientSecret <<<"$1")" | base64 -w0)"; }
# The client of bench/oauth.sh, so that the baseline is its request.
GH_CC=$(basic "$("$BIN" clients add bench --redirect-uri http://127.0.0.1:9/callback \
  --grant authorization_code --grant refresh_token --grant client_credentials --json)")
GH_AGENT=$(basic "$("$BIN" clients add agent --grant "$EXCHANGE_GRANT" --scope contacts:read --json)")
GH_DEVICE=$("$BIN" clients add cli --public --grant "$DEVICE_GRANT" --grant refresh_token \
  --scope openid --scope profile --scope offline_access --json | jq -r .clientId)
serve_bench $BASE

# person: a fresh access token of the person (one login). Taken before each exchange run: a wait
# for a quiet machine may outlast an access token.
person() {
  curl -sf $BASE/api/v1/auth/login -H 'Content-Type: application/json' \
    -d "{\"email\":\"bench@example.com\",\"password\":\"$PASSWORD\"}" | jq -r .data.accessToken
}

# --- The peer ------------------------------------------------------------------------------------
node bench/oidc-provider-device.mjs $PEER_PORT >"$WORK/peer.out" 2>"$WORK/peer.err" & PEER_PID=$!
for _ in $(seq 1 100); do [ -s "$WORK/peer.out" ] && break; sleep 0.05; done
PEER_INFO=$(head -1 "$WORK/peer.out")
PEER_CC=$(basic "$PEER_INFO")
PEER_DEVICE=$(jq -r .deviceClientId <<<"$PEER_INFO")

# start_devices BASE-URL PATH CLIENT-ID FILE: CODES device authorizations (scope openid) started
# by one curl (one process, not CODES of them, so that starting them takes seconds); their device
# codes in FILE, one a line. Made just before each run of polls: they live 10 minutes, and a wait
# for a quiet machine may be longer.
start_devices() {
  local i
  for i in $(seq 1 "$CODES"); do
    [ "$i" = 1 ] || echo next
    echo "url = \"$1$2\""
    echo "data = \"client_id=$3&scope=openid\""
    printf '%s\n' 'write-out = "\n"'
  done >"$WORK/starts.curl"
  curl -s -K "$WORK/starts.curl" | jq -r '.device_code // empty' >"$4"
  [ "$(wc -l <"$4")" = "$CODES" ] || { echo "$1$2 started $(wc -l <"$4") of $CODES device authorizations" >&2; exit 1; }
}

# --- Sanity: each request works once before it is measured --------------------------------------
ok() { curl -sf -o /dev/null "$@" || { echo "not answered with 2xx: $*" >&2; exit 1; }; }
ok $BASE/oauth2/token -H "Authorization: $GH_CC" -d grant_type=client_credentials
ok $PEER/token -H "Authorization: $PEER_CC" -d grant_type=client_credentials
ok $BASE/oauth2/token -H "Authorization: $GH_AGENT" -d "grant_type=$EXCHANGE_GRANT" \
  -d "subject_token=$(person)" -d "subject_token_type=$ACCESS_TOKEN_TYPE" -d scope=contacts:read
# poll BASE-URL PATH CLIENT-ID DEVICE-CODE: the token endpoint's answer to one poll.
poll() {
  curl -s "$1$2" -d "grant_type=$DEVICE_GRANT" -d "client_id=$3" -d "device_code=$4"
}
CODES=1 start_devices $BASE /oauth2/device_authorization "$GH_DEVICE" "$WORK/one"
[ "$(poll $BASE /oauth2/token "$GH_DEVICE" "$(cat "$WORK/one")" | jq -r .error)" = authorization_pending ] \
  || { echo "Gatehouse's first poll is not authorization_pending" >&2; exit 1; }
CODES=1 start_devices $PEER /device/auth "$PEER_DEVICE" "$WORK/one"
[ "$(poll $PEER /token "$PEER_DEVICE" "$(cat "$WORK/one")" | jq -r .error)" = authorization_pending ] \
  || { echo "the peer's first poll is not authorization_pending" >&2; exit 1; }
# The whole grant once on Gatehouse (not measured): the person's approval, then the tokens.
started=$(curl -sf $BASE/oauth2/device_authorization -d "client_id=$GH_DEVICE" -d scope=openid)
curl -sf -o /dev/null $BASE/api/v1/oauth2/device -H "Authorization: Bearer $(person)" \
  -H 'Content-Type: application/json' -d "{\"userCode\":\"$(jq -r .user_code <<<"$started")\",\"consent\":true}" \
  || { echo "the person's approval was refused" >&2; exit 1; }
[ "$(poll $BASE /oauth2/token "$GH_DEVICE" "$(jq -r .device_code <<<"$started")" | jq -r '.access_token | length > 0')" = true ] \
  || { echo "no tokens after the approval" >&2; exit 1; }

# --- Measurements --------------------------------------------------------------------------------
# The polls' wrk script: each thread cycles through the device codes from its own place in the
# list (so that two threads seldom poll one code together) and sorts the answers; the totals are
# printed as "polls PENDING SLOW_DOWN OTHER".
cat >"$WORK/poll.lua" <<'EOF'
local threads = {}
function setup(thread)
  table.insert(threads, thread)
  thread:set("index", #threads)
end

function init(args)
  path, prefix = args[1], args[2]
  codes = {}
  for line in io.lines(args[3]) do table.insert(codes, line) end
  assert(#codes > 0, "no device codes")
  at = math.floor((index - 1) * #codes / tonumber(args[4]))
  pending, slow, other = 0, 0, 0
end

function request()
  at = at % #codes + 1
  return wrk.format("POST", path, {["Content-Type"] = "application/x-www-form-urlencoded"},
    prefix .. codes[at])
end

function response(status, headers, body)
  if status == 400 and body:find('"authorization_pending"', 1, true) then
    pending = pending + 1
  elseif status == 400 and body:find('"slow_down"', 1, true) then
    slow = slow + 1
  else
    other = other + 1
  end
end

function done(summary, latency, requests)
  local p, s, o = 0, 0, 0
  for _, thread in ipairs(threads) do
    p, s, o = p + thread:get("pending"), s + thread:get("slow"), o + thread:get("other")
  end
  io.write(string.format("polls %d %d %d\n", p, s, o))
end
EOF

# measure WRK-ARGS…: "requests/s|p50|p99|errors|note" after a wait for a quiet machine, and after
# BEFORE (a command, when set: what the run needs fresh, made after the wait, which may outlast
# device codes or an access token). Errors are non-2xx answers plus socket errors, except for the
# polls, where 400 authorization_pending and slow_down are the expected answers and only other
# answers count (the note says how many of each). A run disturbed by a BENCH_QUIET process is
# made again, up to three times in all; the command line is kept for the report.
BEFORE=()
measure() {
  local try wrk_pid disturbed
  for try in 1 2 3; do
    wait_quiet
    [ ${#BEFORE[@]} = 0 ] || "${BEFORE[@]}"
    disturbed=
    wrk --latency "$@" >"$WORK/wrk.out" & wrk_pid=$!
    # Looked for every second while wrk runs, so that a run starting and ending within it is seen.
    while kill -0 "$wrk_pid" 2>/dev/null; do
      [ -n "$QUIET" ] && pgrep -f "$QUIET" >/dev/null && disturbed=" (disturbed)"
      sleep 1
    done
    wait "$wrk_pid"
    [ -z "$disturbed" ] && break
    echo "disturbed by $QUIET (try $try): $*" >&2
  done
  BEFORE=()
  printf '%s  # try %s; load average %s\n' "wrk --latency $*" "$try" "$(cut -d' ' -f1 /proc/loadavg)" >>"$WORK/commands"
  awk -v disturbed="$disturbed" '
    /Requests\/sec/ {rps=$2}
    $1=="50%" {p50=$2}
    $1=="99%" {p99=$2}
    /Non-2xx/ {non2xx=$5}
    /Socket errors/ {gsub(",", ""); sock=$4+$6+$8+$10}
    $1=="polls" {polls=1; note=sprintf("%d pending, %d slow_down", $2, $3); other=$4}
    END {printf "%s%s|%s|%s|%d|%s\n", rps, disturbed, p50, p99, sock + (polls ? other : non2xx), note}' "$WORK/wrk.out"
}

THREADS=2
WRK=(-t"$THREADS" -c"$CONNECTIONS" -d"$DURATION")
form_lua() { # FILE BODY AUTHORIZATION: a wrk script posting one form body
  cat >"$1" <<EOF
wrk.method = "POST"
wrk.body = "$2"
wrk.headers["Content-Type"] = "application/x-www-form-urlencoded"
wrk.headers["Authorization"] = "$3"
EOF
}
form_lua "$WORK/gh-cc.lua" grant_type=client_credentials "$GH_CC"
form_lua "$WORK/peer-cc.lua" grant_type=client_credentials "$PEER_CC"
# The exchange's wrk script, with a fresh access token of the person.
exchange_lua() {
  form_lua "$WORK/gh-exchange.lua" \
    "grant_type=$EXCHANGE_GRANT&subject_token=$(person)&subject_token_type=$ACCESS_TOKEN_TYPE&scope=contacts:read" "$GH_AGENT"
}

# scenario NAME: "gatehouse" then "peer" fields for one round of NAME (the peer's "-" when it has
# no such grant).
scenario() {
  case $1 in
  client_credentials)
    measure "${WRK[@]}" -s "$WORK/gh-cc.lua" $BASE/oauth2/token
    measure "${WRK[@]}" -s "$WORK/peer-cc.lua" $PEER/token ;;
  exchange)
    BEFORE=(exchange_lua)
    measure "${WRK[@]}" -s "$WORK/gh-exchange.lua" $BASE/oauth2/token
    echo "-|-|-|-|" ;;
  polls)
    BEFORE=(start_devices "$BASE" /oauth2/device_authorization "$GH_DEVICE" "$WORK/gh-codes")
    measure "${WRK[@]}" -s "$WORK/poll.lua" $BASE/oauth2/token -- /oauth2/token \
      "grant_type=$DEVICE_GRANT&client_id=$GH_DEVICE&device_code=" "$WORK/gh-codes" "$THREADS"
    BEFORE=(start_devices "$PEER" /device/auth "$PEER_DEVICE" "$WORK/peer-codes")
    measure "${WRK[@]}" -s "$WORK/poll.lua" $PEER/token -- /token \
      "grant_type=$DEVICE_GRANT&client_id=$PEER_DEVICE&device_code=" "$WORK/peer-codes" "$THREADS" ;;
  esac
}

label() {
  case $1 in
  client_credentials) echo "client_credentials token" ;;
  exchange) echo "token exchange (RFC 8693), person's token → contacts:read" ;;
  polls) echo "device poll (RFC 8628), $CODES codes, unanswered" ;;
  esac
}

: >"$WORK/commands"
: >"$WORK/notes"
echo "| scenario | connections | Gatehouse ($BACKEND) /s | p50 | p99 | oidc-provider /s | p50 | p99 | Gatehouse ÷ peer | errors (G / peer) |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for round in 1 2; do
  for name in client_credentials exchange polls; do
    # Through a file, not a pipe: a failure in the scenario stops the run (set -e).
    scenario $name >"$WORK/rows"
    mapfile -t rows <"$WORK/rows"
    IFS='|' read -r g_rate g_p50 g_p99 g_err g_note <<<"${rows[0]}"
    IFS='|' read -r p_rate p_p50 p_p99 p_err p_note <<<"${rows[1]}"
    ratio=$(awk -v g="${g_rate%% *}" -v p="${p_rate%% *}" 'BEGIN {if (p + 0 > 0) printf "%.1f×", g / p; else print "-"}')
    echo "| $(label $name) (round $round) | $CONNECTIONS | $g_rate | $g_p50 | $g_p99 | $p_rate | $p_p50 | $p_p99 | $ratio | $g_err / $p_err |"
    case $name in
    client_credentials) cc=${g_rate%% *} ;;
    exchange)
      awk -v c="$cc" -v e="${g_rate%% *}" -v r="$round" 'BEGIN {if (e > 0) printf "- round %s: client_credentials ÷ token exchange = %.2f× (target: within 2×)\n", r, c / e}' >>"$WORK/notes" ;;
    polls) echo "- round $round, device polls' answers: Gatehouse $g_note; oidc-provider $p_note" >>"$WORK/notes" ;;
    esac
  done
done
echo
cat "$WORK/notes"
echo
echo "oidc-provider $(node -p 'require("./tests/browser/node_modules/oidc-provider/package.json").version') on node $(node --version); $(nproc) cores shared by both servers and wrk; load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)."
echo
echo "Measured (wrk; the bodies' tokens and secrets are in the scripts):"
echo
echo '```sh'
sed "s|$WORK|\$WORK|g" "$WORK/commands"
echo '```'
