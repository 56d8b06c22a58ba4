# Sourced by bench/suite.sh: the surfaces of issue 29, measured like the suite's other scenarios
# (one server per database size, every size back to back): forward-auth with a bearer token and
# with the browser session cookie and with an API key, the OAuth token endpoint (client
# credentials, code exchange, chained refresh), userinfo, and the contacts list in an active
# organisation. The requests are
# those of bench/browser-sessions.sh, bench/oauth.sh and bench/orgs.sh; the Lua scripts are
# theirs. 32 connections each (the issue's targets are at 32), the chained ones one per thread.
#
# Needs from suite.sh: BIN, BASE, DIR, PASSWORD, DURATION, `each`, `use` and `row`.

SURFACE_CONNECTIONS=32
OAUTH_REDIRECT=http://127.0.0.1:9/callback
OAUTH_REDIRECT_ENC=http%3A%2F%2F127.0.0.1%3A9%2Fcallback
# PKCE (S256): one verifier for every authorization of the run (each code is still single use).
OAUTH_VERIFIER=bench-verifier-0123456789-0123456789-0123456789
OAUTH_CHALLENGE=$(printf %s "$OAUTH_VERIFIER" | openssl dgst -sha256 -binary | base64 | tr '+/' '-_' | tr -d '=')

# The settings the surfaces need, for every server of the suite: an https public URL (the browser
# cookie is Secure; it is also the issuer of OAuth tokens) and loopback as the trusted proxy that
# sends forward-auth's X-Forwarded-* headers.
surfaces_env() {
  export GATEHOUSE_PUBLIC_URL=https://login.example.com GATEHOUSE_COOKIE_DOMAIN=example.com
  export GATEHOUSE_TRUSTED_PROXIES=127.0.0.1/32
}

# surfaces_client: before the server of DIR starts, the OAuth client (confidential, every grant).
surfaces_client() {
  local client
  client=$("$BIN" clients add bench --redirect-uri "$OAUTH_REDIRECT" --grant authorization_code \
    --grant refresh_token --grant client_credentials --json)
  jq -r .clientId <<<"$client" >"$DIR/client-id"
  printf 'Basic %s' "$(printf '%s:%s' "$(jq -r .clientId <<<"$client")" \
    "$(jq -r .clientSecret <<<"$client")" | base64 -w0)" >"$DIR/client-basic"
}

# The authorization's JSON body for SCOPE, consenting.
surfaces_authorize() {
  jq -nc --arg c "$(cat "$DIR/client-id")" --arg r "$OAUTH_REDIRECT" --arg s "$1" \
    --arg ch "$OAUTH_CHALLENGE" --argjson consent "${2:-false}" \
    '{clientId: $c, redirectUri: $r, scope: $s, state: "bench", codeChallenge: $ch,
      codeChallengeMethod: "S256"} + (if $consent then {consent: true} else {} end)'
}

# One authorization (consenting) and its exchange for SCOPE; prints the token answer.
surfaces_tokens() {
  local code
  code=$(curl -sf $BASE/api/v1/oauth2/authorize -H 'Content-Type: application/json' \
    -H "Authorization: Bearer $(cat "$DIR/access")" -d "$(surfaces_authorize "$1" true)" \
    | jq -r .data.redirectTo | sed -n 's/.*[?&]code=\([^&]*\).*/\1/p')
  curl -sf $BASE/oauth2/token -H "Authorization: $(cat "$DIR/client-basic")" \
    -d grant_type=authorization_code -d "code=$code" -d "redirect_uri=$OAUTH_REDIRECT" \
    -d "code_verifier=$OAUTH_VERIFIER"
}

# surfaces_prepare: once the server of DIR answers, the credentials each scenario presents.
surfaces_prepare() {
  local access
  access=$(cat "$DIR/access")
  json() { curl -sf "$@" -H 'Content-Type: application/json'; }
  curl -sf -D - -o /dev/null -X POST $BASE/api/v1/auth/browser-session \
    -H "Authorization: Bearer $access" | sed -n 's/^[Ss]et-[Cc]ookie: \([^;]*\);.*/\1/p' >"$DIR/cookie"
  # A second session switched into an organisation of 20 shared contacts (the first keeps none).
  local org second
  org=$(json $BASE/api/v1/orgs -H "Authorization: Bearer $access" -d '{"name":"Bench","slug":"bench"}' \
    | jq -r .data.id)
  second=$(json $BASE/api/v1/auth/login -d "{\"email\":\"bench@example.com\",\"password\":\"$PASSWORD\"}" \
    | jq -r .data.accessToken)
  json $BASE/api/v1/auth/org -H "Authorization: Bearer $second" -d "{\"orgId\":\"$org\"}" \
    | jq -r .data.accessToken >"$DIR/org-access"
  for i in $(seq 1 20); do
    json $BASE/api/v1/crm/contacts -H "Authorization: Bearer $(cat "$DIR/org-access")" \
      -d "{\"fullName\":\"Shared $i\"}" >/dev/null
  done
  surfaces_tokens "openid profile email" | jq -r .access_token >"$DIR/client-access"
  : >"$DIR/oauth-refresh"
  for _ in $(seq 1 8); do
    surfaces_tokens "openid profile email offline_access" | jq -r .refresh_token >>"$DIR/oauth-refresh"
  done
  cat >"$DIR/cc.lua" <<EOF
wrk.method = "POST"
wrk.body = "grant_type=client_credentials"
wrk.headers["Content-Type"] = "application/x-www-form-urlencoded"
wrk.headers["Authorization"] = "$(cat "$DIR/client-basic")"
EOF
  # A personal API key of the same account (docs/api.md §12), for forward-auth.
  json $BASE/api/v1/auth/api-keys -H "Authorization: Bearer $access" \
    -d "{\"name\":\"bench\",\"password\":\"$PASSWORD\"}" | jq -r .data.key >"$DIR/api-key"
}

# wrk's summary for the code exchanges of bench/oauth-code.lua: exchanges/s, not requests/s.
surfaces_exchanges() {
  local out
  out=$(wrk --latency "$@")
  awk -v seconds="${DURATION%s}" '
    $1=="50%" {p50=$2}
    $1=="99%" {p99=$2}
    /Non-2xx/ {err+=$5}
    /Socket errors/ {gsub(",", ""); err+=$4+$6+$8+$10}
    $1=="exchanges" {rps=sprintf("%.0f", $2/seconds); err+=$4}
    END {printf "%s|%s|%s|%d\n", rps, p50, p99, err}' <<<"$out"
}

surfaces_run() {
  local c=$SURFACE_CONNECTIONS size
  local fwd=(-H "X-Forwarded-Method: GET" -H "X-Forwarded-Proto: https" -H "X-Forwarded-Host: app.example.com"
    -H "X-Forwarded-Uri: /reports?page=2")
  # The issue's targets are ratios to healthz at 32 connections; the suite's own rows are at 64.
  each "healthz (32 connections)" "the yardstick of the rows below" -t2 -c$c -d"$DURATION" "{BASE}/healthz"
  for size in $SIZES; do
    use "$size"; reset_peak
    row "contacts (32 connections)" "$(wrk_fields -t2 -c$c -d"$DURATION" -H "Authorization: Bearer $(cat "$DIR/access")" $BASE/api/v1/crm/contacts)|$(peak)|"
  done
  for size in $SIZES; do
    use "$size"; reset_peak
    row "forward-auth, bearer token" "$(wrk_fields -t2 -c$c -d"$DURATION" "${fwd[@]}" -H "Authorization: Bearer $(cat "$DIR/access")" $BASE/api/v1/authz/forward-auth)|$(peak)|32 connections"
  done
  for size in $SIZES; do
    use "$size"; reset_peak
    row "forward-auth, session cookie" "$(wrk_fields -t2 -c$c -d"$DURATION" "${fwd[@]}" -H "Cookie: theme=dark; $(cat "$DIR/cookie")" $BASE/api/v1/authz/forward-auth)|$(peak)|32 connections"
  done
  for size in $SIZES; do
    use "$size"; reset_peak
    row "forward-auth, API key" "$(wrk_fields -t2 -c$c -d"$DURATION" "${fwd[@]}" -H "Authorization: Bearer $(cat "$DIR/api-key")" $BASE/api/v1/authz/forward-auth)|$(peak)|32 connections"
  done
  for size in $SIZES; do
    use "$size"; reset_peak
    row "contacts, active organisation" "$(wrk_fields -t2 -c$c -d"$DURATION" -H "Authorization: Bearer $(cat "$DIR/org-access")" $BASE/api/v1/crm/contacts)|$(peak)|32 connections"
  done
  each "oauth: client_credentials" "32 connections" -t2 -c$c -d"$DURATION" -s "{DIR}/cc.lua" "{BASE}/oauth2/token"
  for size in $SIZES; do
    use "$size"; reset_peak
    row "oauth: code exchange (authorize + token, PKCE)" "$(surfaces_exchanges -t8 -c8 -d"$DURATION" -s bench/oauth-code.lua $BASE -- gatehouse \
      "$(surfaces_authorize "openid profile email")" "Bearer $(cat "$DIR/access")" /oauth2/token "$(cat "$DIR/client-basic")" \
      "&redirect_uri=$OAUTH_REDIRECT_ENC&code_verifier=$OAUTH_VERIFIER")|$(peak)|exchanges/s, chained, 8 connections"
  done
  for size in $SIZES; do
    use "$size"; reset_peak
    row "oauth: refresh_token" "$(wrk_fields -t8 -c8 -d"$DURATION" -s bench/oauth-refresh.lua $BASE -- /oauth2/token "$(cat "$DIR/client-basic")" "$DIR/oauth-refresh")|$(peak)|chained, 8 connections"
  done
  for size in $SIZES; do
    use "$size"; reset_peak
    row "oauth: userinfo" "$(wrk_fields -t2 -c$c -d"$DURATION" -H "Authorization: Bearer $(cat "$DIR/client-access")" $BASE/oauth2/userinfo)|$(peak)|32 connections"
  done
}
