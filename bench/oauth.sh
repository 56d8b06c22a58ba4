#!/usr/bin/env bash
# The OpenID provider (docs/api.md §11) against panva's oidc-provider (npm, OpenID Certified),
# both on this machine in the same run, scenario by scenario (Gatehouse, then the peer, twice), so
# that the machine's drift falls on both alike. A release build on loopback, on SQLite (default)
# or the PostgreSQL database named by BENCH_DATABASE_URL; the peer keeps everything in memory
# (bench/oidc-provider.mjs says how it is set up).
#
#   bench/oauth.sh
#   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1/gh_oauth_bench bench/oauth.sh
#
# Scenarios, each with one confidential client (client_secret_basic):
# - client_credentials: tokens issued per second;
# - code exchange: the person's authorization (Gatehouse: POST /api/v1/oauth2/authorize with the
#   person's token, consent given before; the peer: GET /auth with the person's session cookie,
#   consent given before), then the token request with the PKCE verifier; exchanges per second;
# - userinfo with one access token;
# - refresh, chained: each connection presents the refresh token it got last (both rotate).
# Prints a Markdown table; DURATION (default 10s) and CONNECTIONS (default 8) tune the runs. Needs
# wrk, jq, curl, openssl (installed if missing), node and `npm ci --prefix tests/browser`.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/common.sh
source bench/common.sh
DURATION=${DURATION:-10s}
CONNECTIONS=${CONNECTIONS:-8}
ADDR=127.0.0.1:18280
BASE=http://$ADDR
PEER_PORT=18281
PEER=http://127.0.0.1:$PEER_PORT
PASSWORD='correct horse battery staple'
REDIRECT=http://127.0.0.1:9/callback
REDIRECT_ENC=http%3A%2F%2F127.0.0.1%3A9%2Fcallback
# PKCE (S256): one verifier for every authorization of the run (each code is still single use).
VERIFIER=bench-verifier-0123456789-0123456789-0123456789
CHALLENGE=$(printf %s "$VERIFIER" | openssl dgst -sha256 -binary | base64 | tr '+/' '-_' | tr -d '=')

need wrk wrk
need jq jq
need curl curl
need openssl openssl
command -v node >/dev/null || { echo "node is needed (apt-get install nodejs npm)" >&2; exit 1; }
[ -d tests/browser/node_modules/oidc-provider ] || npm ci --prefix tests/browser --no-audit --no-fund
build_release

WORK=$(mktemp -d)
SERVER=
PEER_PID=
trap '[ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null; [ -n "$PEER_PID" ] && kill "$PEER_PID" 2>/dev/null; rm -rf "$WORK"' EXIT

# --- Gatehouse: the issuer is its public URL; one client; one person who consented -------------
export GATEHOUSE_PUBLIC_URL=$BASE
serve_settings "$ADDR" "$WORK"
bench_account
CLIENT=$("$BIN" clients add bench --redirect-uri "$REDIRECT" --grant authorization_code \
  --grant refresh_token --grant client_credentials --json)
GH_ID=$(jq -r .clientId <<<"$CLIENT")
GH_BASIC="Basic $(printf '%s:%s' "$GH_ID" "$(jq -r .clientSecret <<<"$CLIENT")" | base64 -w0)"
serve_bench $BASE

PERSON=$(curl -sf $BASE/api/v1/auth/login -H 'Content-Type: application/json' \
  -d "{\"email\":\"bench@example.com\",\"password\":\"$PASSWORD\"}" | jq -r .data.accessToken)
# gh_authorize SCOPE [CONSENT]: the authorization's JSON body.
gh_authorize() {
  jq -nc --arg c "$GH_ID" --arg r "$REDIRECT" --arg s "$1" --arg ch "$CHALLENGE" --argjson consent "${2:-false}" \
    '{clientId: $c, redirectUri: $r, scope: $s, state: "bench", codeChallenge: $ch,
      codeChallengeMethod: "S256"} + (if $consent then {consent: true} else {} end)'
}
# gh_tokens SCOPE: one authorization (consenting) and its exchange; prints the token answer.
gh_tokens() {
  local code
  code=$(curl -sf $BASE/api/v1/oauth2/authorize -H 'Content-Type: application/json' \
    -H "Authorization: Bearer $PERSON" -d "$(gh_authorize "$1" true)" \
    | jq -r .data.redirectTo | sed -n 's/.*[?&]code=\([^&]*\).*/\1/p')
  curl -sf $BASE/oauth2/token -H "Authorization: $GH_BASIC" -d grant_type=authorization_code \
    -d "code=$code" -d "redirect_uri=$REDIRECT" -d "code_verifier=$VERIFIER"
}
GH_ACCESS=$(gh_tokens "openid profile email" | jq -r .access_token)
# One set of chains per round: wrk stops with a request in flight on each connection, whose answer
# (the chain's next token) it never reads; presenting that consumed token again in the next round
# would be reuse, and both providers end the session for it.
for round in 1 2; do
  : >"$WORK/gh-refresh-$round"
  for _ in $(seq 1 "$CONNECTIONS"); do
    gh_tokens "openid profile email offline_access" | jq -r .refresh_token >>"$WORK/gh-refresh-$round"
  done
done

# --- The peer: the same client and person, the person signed in and consenting once ----------
node bench/oidc-provider.mjs $PEER_PORT >"$WORK/peer.out" 2>"$WORK/peer.err" & PEER_PID=$!
for _ in $(seq 1 100); do [ -s "$WORK/peer.out" ] && break; sleep 0.05; done
PEER_INFO=$(head -1 "$WORK/peer.out")
PEER_BASIC="Basic $(printf '%s:%s' "$(jq -r .clientId <<<"$PEER_INFO")" "$(jq -r .clientSecret <<<"$PEER_INFO")" | base64 -w0)"
peer_auth() { # SCOPE [PROMPT]: the authorization's path and query
  local scope=${1// /%20}
  echo "/auth?response_type=code&client_id=bench&redirect_uri=$REDIRECT_ENC&scope=$scope&state=bench&code_challenge=$CHALLENGE&code_challenge_method=S256${2:+&prompt=$2}"
}
# peer_tokens JAR SCOPE [PROMPT]: the browser's redirects (the interactions answer by themselves)
# up to the code, and its exchange; prints the token answer.
peer_tokens() {
  local url=$PEER$(peer_auth "$2" "${3:-}") location
  for _ in 1 2 3 4 5 6; do
    location=$(curl -s -o /dev/null -b "$1" -c "$1" -w '%{redirect_url}' "$url")
    case $location in "$REDIRECT"*) break ;; esac
    url=$location
  done
  curl -sf $PEER/token -H "Authorization: $PEER_BASIC" -d grant_type=authorization_code \
    -d "code=$(sed -n 's/.*[?&]code=\([^&]*\).*/\1/p' <<<"$location")" \
    -d "redirect_uri=$REDIRECT" -d "code_verifier=$VERIFIER"
}
PEER_ACCESS=$(peer_tokens "$WORK/jar" "openid profile email" | jq -r .access_token)
PEER_COOKIE=$(awk -F'\t' 'NF==7 && $3=="/" {printf "%s%s=%s", sep, $6, $7; sep="; "}' "$WORK/jar")
for round in 1 2; do
  : >"$WORK/peer-refresh-$round"
  for i in $(seq 1 "$CONNECTIONS"); do
    # oidc-provider grants offline_access only with prompt=consent (OIDC Core §11).
    peer_tokens "$WORK/jar$round-$i" "openid profile email offline_access" consent | jq -r .refresh_token >>"$WORK/peer-refresh-$round"
  done
done

# --- Sanity: each scenario's request works once on both before it is measured -----------------
ok() { curl -sf -o /dev/null "$@" || { echo "not answered with 2xx: $*" >&2; exit 1; }; }
ok $BASE/oauth2/token -H "Authorization: $GH_BASIC" -d grant_type=client_credentials
ok $PEER/token -H "Authorization: $PEER_BASIC" -d grant_type=client_credentials
ok $BASE/oauth2/userinfo -H "Authorization: Bearer $GH_ACCESS"
ok $PEER/me -H "Authorization: Bearer $PEER_ACCESS"
grep -qv null "$WORK/gh-refresh-2" && grep -qv null "$WORK/peer-refresh-2" \
  || { echo "no refresh tokens to start the chains with" >&2; exit 1; }

# measure WRK-ARGS…: "rate|p50|p99|errors", the rate being requests/s, or exchanges/s where the
# script counts exchanges (bench/oauth-code.lua), whose failures are counted as errors.
measure() {
  local out
  out=$(wrk --latency "$@")
  awk -v seconds="${DURATION%s}" '
    /Requests\/sec/ {rps=$2}
    $1=="50%" {p50=$2}
    $1=="99%" {p99=$2}
    /Non-2xx/ {err+=$5}
    /Socket errors/ {gsub(",", ""); err+=$4+$6+$8+$10}
    $1=="exchanges" {rps=sprintf("%.0f", $2/seconds); err+=$4}
    END {printf "%s|%s|%s|%d\n", rps, p50, p99, err}' <<<"$out"
}

WRK=(-t2 -c"$CONNECTIONS" -d"$DURATION")
CHAINED=(-t"$CONNECTIONS" -c"$CONNECTIONS" -d"$DURATION")
cat >"$WORK/gh-cc.lua" <<EOF
wrk.method = "POST"
wrk.body = "grant_type=client_credentials"
wrk.headers["Content-Type"] = "application/x-www-form-urlencoded"
wrk.headers["Authorization"] = "$GH_BASIC"
EOF
sed -e "s|$GH_BASIC|$PEER_BASIC|" "$WORK/gh-cc.lua" >"$WORK/peer-cc.lua"

# scenario NAME: "gatehouse|peer" fields for one round of NAME.
scenario() {
  case $1 in
  client_credentials)
    measure "${WRK[@]}" -s "$WORK/gh-cc.lua" $BASE/oauth2/token
    measure "${WRK[@]}" -s "$WORK/peer-cc.lua" $PEER/token ;;
  code)
    measure "${CHAINED[@]}" -s bench/oauth-code.lua $BASE -- gatehouse \
      "$(gh_authorize "openid profile email")" "Bearer $PERSON" /oauth2/token "$GH_BASIC" \
      "&redirect_uri=$REDIRECT_ENC&code_verifier=$VERIFIER"
    measure "${CHAINED[@]}" -s bench/oauth-code.lua $PEER -- peer \
      "$(peer_auth "openid profile email")" "$PEER_COOKIE" /token "$PEER_BASIC" \
      "&redirect_uri=$REDIRECT_ENC&code_verifier=$VERIFIER" ;;
  userinfo)
    measure "${WRK[@]}" -H "Authorization: Bearer $GH_ACCESS" $BASE/oauth2/userinfo
    measure "${WRK[@]}" -H "Authorization: Bearer $PEER_ACCESS" $PEER/me ;;
  refresh)
    measure "${CHAINED[@]}" -s bench/oauth-refresh.lua $BASE -- /oauth2/token "$GH_BASIC" "$WORK/gh-refresh-$round"
    measure "${CHAINED[@]}" -s bench/oauth-refresh.lua $PEER -- /token "$PEER_BASIC" "$WORK/peer-refresh-$round" ;;
  esac
}

label() {
  case $1 in
  client_credentials) echo "client_credentials token" ;;
  code) echo "code exchange (authorization + token, PKCE), per exchange" ;;
  userinfo) echo "userinfo, one access token" ;;
  refresh) echo "refresh_token, chained (rotated each time)" ;;
  esac
}

echo "| scenario | connections | Gatehouse ($BACKEND) /s | p50 | p99 | oidc-provider /s | p50 | p99 | Gatehouse ÷ peer | errors (G / peer) |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for round in 1 2; do
  for name in client_credentials code userinfo refresh; do
    mapfile -t rows < <(scenario $name)
    IFS='|' read -r g_rate g_p50 g_p99 g_err <<<"${rows[0]}"
    IFS='|' read -r p_rate p_p50 p_p99 p_err <<<"${rows[1]}"
    ratio=$(awk -v g="$g_rate" -v p="$p_rate" 'BEGIN {if (p > 0) printf "%.1f×", g / p; else print "-"}')
    echo "| $(label $name) (round $round) | $CONNECTIONS | $g_rate | $g_p50 | $g_p99 | $p_rate | $p_p50 | $p_p99 | $ratio | $g_err / $p_err |"
  done
done
echo
echo "oidc-provider $(node -p 'require("./tests/browser/node_modules/oidc-provider/package.json").version') on node $(node --version); $(nproc) cores shared by both servers and wrk."
