"""Fills the databases of an earlier build for scripts/upgrade-fixture.sh (standard library only).

  upgrade_fixture.py BIN COMMIT WORK OUT POSTGRES_URL

For each backend: `BIN migrate`, then the service (`BIN serve`) and the CLI make what a deployment
keeps, through the interfaces an operator and a person use. OUT gets sqlite.db (a consistent copy,
VACUUM INTO), postgres.sql (pg_dump of the schema, INSERTs, the schema named gatehouse_fixture)
and fixture.json (the master key and the secrets a test needs, per backend).
"""
import base64, hashlib, hmac, http.client, json, os, socket, sqlite3, struct, subprocess, sys, time
import urllib.parse

PASSWORD = "correct horse battery staple"
SCHEMA = "gatehouse_fixture"
PUBLIC_URL = "http://localhost:8080"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def totp(secret, at):
    digest = hmac.new(base64.b32decode(secret), struct.pack(">Q", int(at // 30)), hashlib.sha1).digest()
    o = digest[-1] & 0x0F
    return "%06d" % ((struct.unpack(">I", digest[o:o + 4])[0] & 0x7FFFFFFF) % 1_000_000)


class Service:
    def __init__(self, binary, env):
        self.binary, self.env = binary, env
        self.port = int(env["GATEHOUSE_LISTEN"].rsplit(":", 1)[1])

    def cli(self, *args, stdin=None):
        done = subprocess.run([self.binary, *args], env=self.env, input=stdin, capture_output=True,
                              text=True)
        if done.returncode != 0:
            sys.exit(f"gatehouse {' '.join(args)}: {done.stderr}")
        return done.stdout

    def try_cli(self, *args):
        """The output, or None when this build has no such command or flag."""
        done = subprocess.run([self.binary, *args], env=self.env, capture_output=True, text=True)
        return done.stdout if done.returncode == 0 else None

    def start(self):
        self.proc = subprocess.Popen([self.binary, "serve"], env=self.env)
        for _ in range(200):
            try:
                if self.call("GET", "/healthz")[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.05)
        sys.exit("the old build did not come up")

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=30)

    def call(self, method, path, body=None, token=None, form=None, basic=None):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        headers = {}
        data = None
        if form is not None:
            headers["Content-Type"] = "application/x-www-form-urlencoded"
            data = urllib.parse.urlencode(form)
        elif body is not None:
            headers["Content-Type"] = "application/json"
            data = json.dumps(body)
        if token:
            headers["Authorization"] = "Bearer " + token
        if basic:
            headers["Authorization"] = "Basic " + base64.b64encode(":".join(basic).encode()).decode()
        c.request(method, path, data, headers)
        r = c.getresponse()
        raw = r.read()
        return r.status, (json.loads(raw) if raw else None)

    def ok(self, status, method, path, **kw):
        got, body = self.call(method, path, **kw)
        if got != status:
            sys.exit(f"{method} {path}: {got} {body}")
        return body["data"] if body and "data" in body else body


def fill(svc):
    """What a deployment keeps, made the ways people make it; the secrets a test needs. An older
    build may lack a part (organisations, API keys, clients for client_credentials): the part is
    then left out of the fixture, and the test checks what is there."""
    made = {}
    svc.cli("migrate")
    for who in ("ann", "bo"):
        svc.cli("user", "add", "--email", f"{who}@example.com", "--name", f"{who.title()} Old",
                "--password-stdin", stdin=PASSWORD + "\n")
    made["ann"] = {"email": "ann@example.com", "password": PASSWORD}
    if svc.try_cli("user", "roles", "ann@example.com", "--add", "ops") is not None:
        made["ann"]["roles"] = ["ops"]
    client = svc.try_cli("clients", "add", "Fixture CRM", "--grant", "client_credentials", "--json")
    if client is not None:
        client = json.loads(client)
        made["client"] = {"id": client["clientId"], "secret": client["clientSecret"]}
    svc.start()
    try:
        ann = svc.ok(200, "POST", "/api/v1/auth/login",
                     body={"email": "ann@example.com", "password": PASSWORD})
        status, body = svc.call("POST", "/api/v1/orgs", body={"name": "Old Org", "slug": "old-org"},
                                token=ann["accessToken"])
        if status == 201:
            made["org"] = {"id": body["data"]["id"], "slug": "old-org"}
        contact = svc.ok(201, "POST", "/api/v1/crm/contacts", body={"fullName": "Kept Contact"},
                         token=ann["accessToken"])
        made["contact"] = {"id": contact["id"], "fullName": "Kept Contact"}
        status, body = svc.call("POST", "/api/v1/auth/api-keys",
                                body={"name": "old key", "password": PASSWORD},
                                token=ann["accessToken"])
        if status == 201:
            made["ann"]["apiKey"] = body["data"]["key"]
        bo = svc.ok(200, "POST", "/api/v1/auth/login",
                    body={"email": "bo@example.com", "password": PASSWORD})
        setup = svc.ok(200, "POST", "/api/v1/auth/2fa/setup", body={"password": PASSWORD},
                       token=bo["accessToken"])
        # The code of the step before: the current one stays unused, for the test to sign in with.
        enabled = svc.ok(200, "POST", "/api/v1/auth/2fa/enable",
                         body={"code": totp(setup["secret"], time.time() - 30)},
                         token=bo["accessToken"])
        made["bo"] = {"email": "bo@example.com", "password": PASSWORD,
                      "totpSecret": setup["secret"], "recoveryCode": enabled["recoveryCodes"][0]}
        # The session the test refreshes: signed in after everything else was made.
        session = svc.ok(200, "POST", "/api/v1/auth/login",
                         body={"email": "ann@example.com", "password": PASSWORD})
        made["ann"]["refreshToken"] = session["refreshToken"]
    finally:
        svc.stop()
    return made


def environment(work, database_url, master_key):
    env = dict(os.environ)
    env = {k: v for k, v in env.items() if not k.startswith("GATEHOUSE_")}
    port = free_port()
    env.update({
        "GATEHOUSE_LISTEN": f"127.0.0.1:{port}",
        "GATEHOUSE_DATABASE_URL": database_url,
        "GATEHOUSE_MASTER_KEY": master_key,
        # The issuer of every token made (and so of the refresh tokens the test uses): an operator
        # keeps it through an upgrade, so it is fixed, whatever port the build listens on.
        "GATEHOUSE_PUBLIC_URL": PUBLIC_URL,
        "GATEHOUSE_MAIL_DIR": os.path.join(work, "mail"),
        "GATEHOUSE_RATE_LIMIT": "off",
        "GATEHOUSE_LOG": "warn",
        # The session the test refreshes must outlive the fixture in the repository (ten years, the
        # longest allowed); the settings
        # go with the database (tests/api/upgrades.rs uses the same).
        "GATEHOUSE_REFRESH_TOKEN_TTL": "3650d",
    })
    return env


def main():
    binary, commit, work, out, pg = sys.argv[1:6]
    made = {"commit": commit, "madeAt": int(time.time()), "publicUrl": PUBLIC_URL}

    key = base64.b64encode(os.urandom(32)).decode()
    db = os.path.join(work, "gatehouse.db")
    made["sqlite"] = {"masterKey": key, **fill(Service(binary, environment(work, "sqlite://" + db, key)))}
    with sqlite3.connect(db) as conn:
        conn.execute("VACUUM INTO ?", (os.path.join(out, "sqlite.db"),))

    key = base64.b64encode(os.urandom(32)).decode()
    quiet = "SET client_min_messages = warning; "
    subprocess.run(["psql", pg, "-qc", f"{quiet}DROP SCHEMA IF EXISTS {SCHEMA} CASCADE; "
                    f"CREATE SCHEMA {SCHEMA}"], check=True)
    url = pg + ("&" if "?" in pg else "?") + f"options=-c%20search_path%3D{SCHEMA}"
    try:
        made["postgres"] = {"masterKey": key, **fill(Service(binary, environment(work, url, key)))}
        dump = subprocess.run(["pg_dump", pg, f"--schema={SCHEMA}", "--inserts", "--no-owner",
                               "--no-privileges"], check=True, capture_output=True, text=True).stdout
        # psql's own commands (\restrict …) are no SQL: the test runs the dump through a driver.
        dump = "\n".join(l for l in dump.splitlines() if not l.startswith("\\")) + "\n"
        with open(os.path.join(out, "postgres.sql"), "w") as f:
            f.write(dump)
    finally:
        subprocess.run(["psql", pg, "-qc", f"{quiet}DROP SCHEMA IF EXISTS {SCHEMA} CASCADE"],
                       check=True)

    with open(os.path.join(out, "fixture.json"), "w") as f:
        json.dump(made, f, indent=2)
        f.write("\n")


main()
