#!/usr/bin/env bash
# The Debian package, built and tried as a person with Debian would: `cargo deb`, then installed
# on this machine with apt, started, checked, the first admin made, signed in, backed up, purged.
# Run as root, by hand (a release build takes ~10 minutes on 2 cores): not part of `cargo test`.
#
#   sudo scripts/package-test.sh            # PORT=18480 by default (not 8080: another server may hold it)
#
# Where systemd is not PID 1 (a container), the unit cannot be started with systemctl: the script
# then starts the installed binary as the unit says (User, Group, WorkingDirectory, Environment,
# EnvironmentFile, ExecStart), read from the installed unit file, and says so; the unit's
# sandboxing is then not applied (systemd-analyze verify checks the unit).
set -euo pipefail
cd "$(dirname "$0")/.."
PORT=${PORT:-18480}
URL=http://127.0.0.1:$PORT
PASSWORD='correct horse battery staple'
step() { printf '\n== %s\n' "$*"; }

[ "$(id -u)" = 0 ] || { echo "run as root: it installs a package" >&2; exit 1; }
if dpkg -s gatehouse >/dev/null 2>&1; then
    echo "a gatehouse package is installed already: purge it first (dpkg --purge gatehouse)" >&2
    exit 1
fi
if getent passwd gatehouse >/dev/null || [ -e /var/lib/gatehouse ]; then
    echo "a gatehouse user or /var/lib/gatehouse exists already: this script would mix with it" >&2
    exit 1
fi

step "mdbook build docs (the package carries the book)"
mdbook build docs

step "cargo deb"
cargo deb --version >/dev/null 2>&1 || cargo install cargo-deb --locked
# (Not `tee /dev/stderr`: where stderr is a file, tee would reopen it and truncate the log.)
DEB=$(cargo deb --locked 2>&1 | tee >(cat >&2) | tail -n 1)
[ -f "$DEB" ] || { echo "no package built" >&2; exit 1; }
ls -l "$DEB"
dpkg-deb --info "$DEB"
dpkg-deb --contents "$DEB"

SERVER=
cleanup() {
    [ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null && wait "$SERVER" 2>/dev/null
    if dpkg -s gatehouse >/dev/null 2>&1; then dpkg --purge gatehouse >/dev/null || true; fi
    rm -f /etc/default/gatehouse
    rm -rf /var/lib/gatehouse
    getent passwd gatehouse >/dev/null && deluser --system gatehouse >/dev/null 2>&1 || true
    getent group gatehouse >/dev/null && delgroup --system gatehouse >/dev/null 2>&1 || true
}
trap cleanup EXIT

step "apt-get install $DEB"
apt-get install -y -q "$DEB"
id gatehouse
ls -ld /etc/gatehouse /etc/gatehouse/gatehouse.toml /var/lib/gatehouse
UNIT=$(dpkg -L gatehouse | grep '/gatehouse.service$')
echo "unit: $UNIT"
systemd-analyze verify "$UNIT" && echo "systemd-analyze verify: no complaint"

step "what the package gives the operator"
# The secrets file the unit reads, root only; the book and the recipes it names.
[ "$(stat -c '%a %U:%G' /etc/default/gatehouse)" = "600 root:root" ] \
    || { stat /etc/default/gatehouse; echo "/etc/default/gatehouse is not root's 0600" >&2; exit 1; }
grep -q '^EnvironmentFile=-/etc/default/gatehouse' "$UNIT"
test -f /usr/share/doc/gatehouse/book/index.html
test -f /usr/share/doc/gatehouse/book/guide/deployment.html
test -f /usr/share/doc/gatehouse/recipes/nginx-web-apps.conf
test -f /usr/share/doc/gatehouse/recipes/Caddyfile-web-apps
# The CLI finds the package's settings by itself, from any folder: nothing made where it runs.
checked=$(cd /tmp && gatehouse check)
echo "$checked"
grep -q 'the file /etc/gatehouse/gatehouse.toml' <<<"$checked"
[ ! -e /tmp/gatehouse.db ] || { echo "gatehouse check made /tmp/gatehouse.db" >&2; exit 1; }

step "the operator's settings: the port and the public URL, in /etc/default/gatehouse"
# The public URL is the address people open; the OpenID provider's issuer defaults to it (without
# one the provider is off and the start says so: docs/guide/oidc.md, "Turning it on").
printf 'GATEHOUSE_LISTEN=127.0.0.1:%s\nGATEHOUSE_PUBLIC_URL=%s\n' "$PORT" "$URL" > /etc/default/gatehouse
chmod 600 /etc/default/gatehouse

# The unit's own values, as the installed file has them.
unit() { sed -n "s/^$1=//p" "$UNIT" | head -n 1; }
as_service() {
    # The unit's user, folder and environment (Environment=, then EnvironmentFile=).
    local environment
    environment=$(unit Environment)
    # setpriv execs (runuser would stay as the service's parent); with AS_EXEC=exec the whole
    # chain replaces the caller, so its pid is the service's own.
    ${AS_EXEC:-} setpriv --reuid="$(unit User)" --regid="$(unit Group)" --init-groups \
        env -i PATH=/usr/bin:/bin "$environment" \
        $(cat /etc/default/gatehouse) sh -c "cd $(unit WorkingDirectory) && exec \"\$@\"" sh "$@"
}

step "gatehouse check, as the service's user, before the first start"
as_service /usr/bin/gatehouse check

step "start"
if [ -d /run/systemd/system ]; then
    systemctl start gatehouse
    systemctl --no-pager status gatehouse | head -n 5
else
    echo "systemd is not PID 1 here ($(cat /proc/1/comm)): starting the unit's ExecStart by hand,"
    echo "as $(unit User) in $(unit WorkingDirectory) with $(unit Environment) and /etc/default/gatehouse"
    read -r -a EXEC <<< "$(unit ExecStart)"
    (AS_EXEC=exec; as_service "${EXEC[@]}") > /tmp/gatehouse-package-test.log 2>&1 &
    SERVER=$!
fi
for _ in $(seq 100); do
    curl -fsS "$URL/healthz" >/dev/null 2>&1 && break
    sleep 0.1
done
curl -fsS "$URL/healthz"; echo
[ -n "$SERVER" ] && cat /tmp/gatehouse-package-test.log
ls -l /var/lib/gatehouse

step "the first admin, with the command the start printed"
echo "$PASSWORD" | as_service /usr/bin/gatehouse user add --email admin@example.com \
    --name "First Admin" --role admin --password-stdin

step "the pages and a sign-in"
curl -sS -o /dev/null -w 'GET / -> %{http_code} %{redirect_url}\n' "$URL/"
curl -sS -o /dev/null -w 'GET /sign-in -> %{http_code} %{content_type}\n' "$URL/sign-in"
curl -sS -H 'content-type: application/json' \
    -d "{\"email\":\"admin@example.com\",\"password\":\"$PASSWORD\"}" "$URL/api/v1/auth/login" |
    python3 -c 'import json,sys; d=json.load(sys.stdin)["data"]; print("login -> accessToken", len(d["accessToken"]), "chars, roles", d.get("user", {}).get("roles", "in the token"))'

step "the book's OpenID Connect example (docs/guide/oidc.md), with openid-client"
# A web application and a machine client registered as the chapter says; openid-client (panva's,
# OpenID Certified; tests/browser/node_modules) discovers the provider, builds the sign-in URL
# (which lands on /sign-in) and gets the machine client a token. http only because this is
# loopback: openid-client refuses it elsewhere, as it should.
APP=$(as_service /usr/bin/gatehouse clients add "Example app" \
    --redirect-uri http://localhost:3000/callback --json)
JOB=$(as_service /usr/bin/gatehouse clients add "Nightly job" \
    --grant client_credentials --scope contacts:read --json)
(cd tests/browser && node --input-type=module - "$URL" "$APP" "$JOB" <<'JS'
import * as oidc from "openid-client";
const [url, app, job] = process.argv.slice(2);
const insecure = { execute: [oidc.allowInsecureRequests] };
const web = JSON.parse(app);
const config = await oidc.discovery(new URL(url), web.clientId, undefined,
  oidc.ClientSecretBasic(web.clientSecret), insecure);
console.log("discovery -> issuer", config.serverMetadata().issuer);
const verifier = oidc.randomPKCECodeVerifier();
const signIn = oidc.buildAuthorizationUrl(config, {
  redirect_uri: "http://localhost:3000/callback", scope: "openid profile email",
  code_challenge: await oidc.calculatePKCECodeChallenge(verifier), code_challenge_method: "S256",
  nonce: oidc.randomNonce(), state: oidc.randomState(),
});
const page = await fetch(signIn, { redirect: "manual" });
console.log("authorization URL ->", page.status, page.headers.get("location") ?? "(the page itself)");
if (page.status >= 400) throw new Error(`the authorization URL failed: ${page.status}`);
const machine = JSON.parse(job);
const jobConfig = await oidc.discovery(new URL(url), machine.clientId, undefined,
  oidc.ClientSecretBasic(machine.clientSecret), insecure);
const tokens = await oidc.clientCredentialsGrant(jobConfig, { scope: "contacts:read" });
console.log("client_credentials ->", tokens.token_type, "token,", tokens.expires_in, "s, scope", tokens.scope);
JS
)

step "gatehouse check and backup while serving"
as_service /usr/bin/gatehouse check
as_service /usr/bin/gatehouse backup /var/lib/gatehouse/backup-test.db
ls -l /var/lib/gatehouse

step "stop, purge"
if [ -n "$SERVER" ]; then
    kill -TERM "$SERVER"; wait "$SERVER" || true; SERVER=
    tail -n 2 /tmp/gatehouse-package-test.log
    if pgrep -u gatehouse >/dev/null; then echo "the service did not stop" >&2; exit 1; fi
else
    systemctl stop gatehouse
fi
dpkg --purge gatehouse
echo "after purge: $(ls /var/lib/gatehouse | tr '\n' ' ')(the data stays, as postrm says)"
echo "package test: passed"
