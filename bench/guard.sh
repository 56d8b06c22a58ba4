#!/usr/bin/env bash
# Guarding other services (docs/api.md §6): forward-auth and introspection against healthz, and
# nginx with the tested auth_request recipe against the same nginx without it, all on loopback
# with a release build, on SQLite (default) or the PostgreSQL database named by BENCH_DATABASE_URL.
#
#   bench/guard.sh
#   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1/gh_bench bench/guard.sh
#
# Targets (issue 16): forward-auth ≥ 50 % of healthz, introspection ≥ 25 %, nginx with
# auth_request ≥ 50 % of nginx without. Prints a Markdown table; DURATION (default 10s) and
# CONNECTIONS (default 32) tune the runs.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/common.sh
source bench/common.sh
DURATION=${DURATION:-10s}
CONNECTIONS=${CONNECTIONS:-32}
ADDR=127.0.0.1:18080
BASE=http://$ADDR
PASSWORD='correct horse battery staple'

need wrk wrk
need jq jq
need nginx nginx
build_release

WORK=$(mktemp -d)
chmod 755 "$WORK"
SERVER=
NGINX=
trap '[ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null; [ -n "$NGINX" ] && kill "$NGINX" 2>/dev/null; rm -rf "$WORK"' EXIT

cat >"$WORK/rules.toml" <<'EOF'
[[rule]]
paths = ["/admin"]
policy = "roles"
roles = ["admin"]

[[rule]]
paths = ["/reports/*/export"]
policy = "two_factor"
EOF

export GATEHOUSE_TRUSTED_PROXIES=127.0.0.1/32 GATEHOUSE_ACCESS_RULES=$WORK/rules.toml
serve_settings "$ADDR" "$WORK"

bench_account
"$BIN" user roles bench@example.com --add admin >/dev/null
CLIENT=$("$BIN" clients add bench 2>/dev/null)
CLIENT_ID=$(sed -n 's/^client_id: //p' <<<"$CLIENT")
CLIENT_SECRET=$(sed -n 's/^client_secret: //p' <<<"$CLIENT")
serve_bench $BASE

ACCESS=$(curl -sf $BASE/api/v1/auth/login -H 'Content-Type: application/json' \
  -d "{\"email\":\"bench@example.com\",\"password\":\"$PASSWORD\"}" | jq -r .data.accessToken)

# A personal API key (docs/api.md §12) of the same account: forward-auth looks it up by its keyed
# hash and believes it for 1 s, where a JWT is verified by its signature.
API_KEY=$(curl -sf $BASE/api/v1/auth/api-keys -H 'Content-Type: application/json' \
  -H "Authorization: Bearer $ACCESS" \
  -d "{\"name\":\"bench\",\"password\":\"$PASSWORD\"}" | jq -r .data.key)

cat >"$WORK/introspect.lua" <<EOF
wrk.method = "POST"
wrk.body = "token=$ACCESS"
wrk.headers["Content-Type"] = "application/x-www-form-urlencoded"
wrk.headers["Authorization"] = "Basic $(printf '%s:%s' "$CLIENT_ID" "$CLIENT_SECRET" | base64 -w0)"
EOF

# nginx: an upstream answering itself, the same proxied plainly, proxied with the recipe, and
# proxied with the recipe asking an "auth server" that is nginx answering 200 at once: the floor,
# what auth_request costs nginx itself on this machine whoever answers it.
RECIPE=$(sed -e "s/127.0.0.1:8080/$ADDR/" -e 's/127.0.0.1:3000/127.0.0.1:18090/' \
  -e 's/listen 80;/listen 127.0.0.1:18092;/' docs/recipes/nginx.conf)
FLOOR=$(sed -e 's/127.0.0.1:8080/127.0.0.1:18090/' -e 's/127.0.0.1:3000/127.0.0.1:18090/' \
  -e 's/listen 80;/listen 127.0.0.1:18093;/' -e 's/upstream gatehouse/upstream floor_auth/' \
  -e 's#http://gatehouse/#http://floor_auth/#' -e 's/upstream app /upstream floor_app /' \
  -e 's#http://app;#http://floor_app;#' docs/recipes/nginx.conf)
cat >"$WORK/nginx.conf" <<EOF
worker_processes auto;
pid $WORK/nginx.pid;
error_log $WORK/error.log;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path $WORK/body; proxy_temp_path $WORK/proxy; fastcgi_temp_path $WORK/fastcgi;
  uwsgi_temp_path $WORK/uwsgi; scgi_temp_path $WORK/scgi;
  server { listen 127.0.0.1:18090; location / { return 200 "upstream\n"; } }
  server {
    listen 127.0.0.1:18091;
    location / { proxy_http_version 1.1; proxy_set_header Connection ""; proxy_pass http://app; }
  }
$RECIPE
$FLOOR
}
EOF
nginx -p "$WORK" -e "$WORK/error.log" -c "$WORK/nginx.conf" -g 'daemon off;' & NGINX=$!
for _ in $(seq 1 100); do curl -sf http://127.0.0.1:18091/ >/dev/null && break; sleep 0.05; done

FWD=(-H "Authorization: Bearer $ACCESS" -H "X-Forwarded-Method: GET" -H "X-Forwarded-Host: app.example.com"
  -H "X-Forwarded-Uri: /admin/reports?page=2")
ORIG=(-H "Authorization: Bearer $ACCESS" -H "X-Original-Method: GET"
  -H "X-Original-URL: https://app.example.com/admin/reports?page=2")
WRK=(-t2 -c"$CONNECTIONS" -d"$DURATION")

echo "| scenario ($BACKEND) | connections | requests/s | p50 | p99 | errors |"
echo "|---|---|---|---|---|---|"
echo "| healthz | $CONNECTIONS | $(wrk_row "${WRK[@]}" $BASE/healthz) |"
echo "| forward-auth (Caddy/Traefik headers, a role rule) | $CONNECTIONS | $(wrk_row "${WRK[@]}" "${FWD[@]}" $BASE/api/v1/authz/forward-auth) |"
KEY=(-H "Authorization: Bearer $API_KEY" -H "X-Forwarded-Method: GET" -H "X-Forwarded-Host: app.example.com"
  -H "X-Forwarded-Uri: /admin/reports?page=2")
echo "| forward-auth with an API key (the same rule) | $CONNECTIONS | $(wrk_row "${WRK[@]}" "${KEY[@]}" $BASE/api/v1/authz/forward-auth) |"
echo "| auth-request (nginx headers, a role rule) | $CONNECTIONS | $(wrk_row "${WRK[@]}" "${ORIG[@]}" $BASE/api/v1/authz/auth-request) |"
echo "| introspection (client_secret_basic) | $CONNECTIONS | $(wrk_row "${WRK[@]}" -s "$WORK/introspect.lua" $BASE/oauth2/introspect) |"
echo "| nginx → upstream | $CONNECTIONS | $(wrk_row "${WRK[@]}" http://127.0.0.1:18091/admin/reports) |"
echo "| nginx + auth_request → upstream | $CONNECTIONS | $(wrk_row "${WRK[@]}" -H "Authorization: Bearer $ACCESS" http://127.0.0.1:18092/admin/reports) |"
echo "| nginx + auth_request to nginx's own 200 → upstream (the floor) | $CONNECTIONS | $(wrk_row "${WRK[@]}" -H "Authorization: Bearer $ACCESS" http://127.0.0.1:18093/admin/reports) |"
