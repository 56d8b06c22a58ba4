#!/usr/bin/env bash
# `gatehouse import --from csv` at scale, and what an imported person's first sign-in costs.
#
#  1. A CSV of USERS people (imp1@example.com …; header email,name,password_hash,email_verified,
#     roles; every tenth person with two roles) with real bcrypt cost-10 hashes: HASHES of them
#     (Python's `bcrypt`, in a throwaway venv), cycled. Person i's password is
#     `import-bench-password-NN`, NN = (i - 1) % HASHES, and their hash is hash number NN.
#  2. `gatehouse import --from csv` of it into a fresh SQLite database, timed with /usr/bin/time -v
#     (wall and CPU time, peak RSS); first of its first USERS/10 people into another fresh
#     database, for comparison: the importer streams, so the two peaks should differ by little.
#     With BENCH_DATABASE_URL=postgres://… the whole file also goes into a throwaway database on
#     that server (gh_import_PID, made with psql and dropped at the end; the URL's own database
#     name is not used).
#  3. `gatehouse serve` on each imported database (a fixed random sample of distinct imported
#     people, each signing in once per row, on one keep-alive connection, in turn):
#     - first sign-in, back to back: bcrypt verified, the hash replaced by Argon2id after the
#       answer, while the next person's sign-in already runs (a burst of returning people);
#     - first sign-in, paced (other people): before each, `bcrypt.checkpw` of that person's
#       password and hash in Python (the yardstick: the goal is a first sign-in within 10 % of
#       one bcrypt verify) and libxcrypt's crypt() of them (a C implementation, through Python's
#       `crypt` module where it still exists); a pause of PACE seconds after each sign-in, so
#       that its background rehash is done before the next measurement;
#     - the back-to-back people again (now Argon2id), for reference;
#     - ENUM_SAMPLES wrong passwords for imported people not yet signed in (bcrypt), interleaved
#       with as many unknown addresses (a dummy Argon2id): what someone timing answers sees.
#     Afterwards, the database must hold exactly one Argon2id hash and one password.rehashed
#     event per person who signed in.
#
#   bench/import.sh                                         # USERS=1000000, SQLite
#   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres bench/import.sh   # and PostgreSQL
#   USERS=20000 GATEHOUSE_BIN=target/debug/gatehouse bench/import.sh                 # a smoke run
#
# The binary is GATEHOUSE_BIN (default target/release/gatehouse; this script builds nothing).
# SIGNINS (default 200 per row), PACE (0.25), HASHES (64), ENUM_SAMPLES (50) tune the rest. Needs
# python3 (with venv; bcrypt comes from PyPI), curl, GNU time (/usr/bin/time), and psql for
# PostgreSQL. Prints two Markdown tables, the ratios and the command line.
set -euo pipefail
cd "$(dirname "$0")/.."
USERS=${USERS:-1000000}
SIGNINS=${SIGNINS:-200}
PACE=${PACE:-0.25}
HASHES=${HASHES:-64}
ENUM_SAMPLES=${ENUM_SAMPLES:-50}
COST=10
BIN=${GATEHOUSE_BIN:-target/release/gatehouse}
ADDR=127.0.0.1:18420
BASE=http://$ADDR

[ -x "$BIN" ] || { echo "no gatehouse binary at $BIN: build it (cargo build --release) or set GATEHOUSE_BIN" >&2; exit 2; }
BIN=$(realpath "$BIN")
[ -x /usr/bin/time ] || { echo "needs GNU time at /usr/bin/time (Debian: apt-get install time)" >&2; exit 2; }
[ "$USERS" -ge $((2 * SIGNINS + ENUM_SAMPLES + 2)) ] || { echo "USERS must be at least 2 × SIGNINS + ENUM_SAMPLES + 2" >&2; exit 2; }
if [ -n "${BENCH_DATABASE_URL:-}" ]; then
  case "$BENCH_DATABASE_URL" in
  postgres://*|postgresql://*) command -v psql >/dev/null || { echo "PostgreSQL needs psql" >&2; exit 2; } ;;
  *) echo "BENCH_DATABASE_URL must be a postgres:// URL" >&2; exit 2 ;;
  esac
fi

WORK=$(mktemp -d)
SERVER=
PGDB=
PG_ADMIN=${BENCH_DATABASE_URL:-}
PG_ADMIN=${PG_ADMIN%/*}/postgres
cleanup() {
  if [ -n "$SERVER" ]; then kill "$SERVER" 2>/dev/null || true; wait "$SERVER" 2>/dev/null || true; fi
  if [ -n "$PGDB" ]; then psql -q "$PG_ADMIN" -c "DROP DATABASE IF EXISTS $PGDB WITH (FORCE)" >/dev/null 2>&1 || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT
# The service's settings for a measurement from one address (a public URL with a host name: an
# IP address would turn passkeys off with a warning at each start).
export GATEHOUSE_LISTEN=$ADDR GATEHOUSE_PUBLIC_URL=http://localhost:${ADDR#*:}
export GATEHOUSE_RATE_LIMIT=off GATEHOUSE_MAX_CONNECTIONS_PER_CLIENT=1024 GATEHOUSE_MAIL_DIR=$WORK/mail
unset GATEHOUSE_DATABASE_URL GATEHOUSE_MASTER_KEY GATEHOUSE_CONFIG

# Python with bcrypt: tests/python/.venv when it has it, else a venv of our own.
PY=$WORK/venv/bin/python
if [ -x tests/python/.venv/bin/python ] && tests/python/.venv/bin/python -c 'import bcrypt' 2>/dev/null; then
  PY=$PWD/tests/python/.venv/bin/python
else
  python3 -m venv "$WORK/venv"
  "$WORK/venv/bin/pip" install -q --disable-pip-version-check bcrypt
fi

# The helpers, in Python: the CSV, the sign-ins, the yardstick. Settings from the environment.
cat >"$WORK/tools.py" <<'PY'
import http.client, json, math, os, random, statistics, sys, time, warnings
sys.path.insert(0, os.environ["BENCH_DIR"])
from stats import ks

USERS, SIGNINS, N = int(os.environ["USERS"]), int(os.environ["SIGNINS"]), int(os.environ["ENUM_SAMPLES"])
HASHFILE = os.environ["HASHFILE"]


def password(i, hashes):
    return "import-bench-password-%02d" % ((i - 1) % hashes)


def groups():
    """Distinct people, the same on every run: back to back, paced, wrong passwords, warm-up."""
    picked = random.Random(1).sample(range(1, USERS + 1), 2 * SIGNINS + N + 2)
    return {"a": picked[:SIGNINS], "b": picked[SIGNINS:2 * SIGNINS],
            "wrong": picked[2 * SIGNINS:2 * SIGNINS + N], "warm": picked[2 * SIGNINS + N:]}


def people(group):
    made = [line.rstrip("\n").split("\t")[2] for line in open(HASHFILE)]
    return [(i, password(i, len(made)), made[(i - 1) % len(made)]) for i in groups()[group]]


def stats(ms):
    """median|p95|mean, in ms."""
    xs = sorted(ms)
    if not xs:
        return "||"
    p95 = xs[max(0, math.ceil(0.95 * len(xs)) - 1)]
    return "%.2f|%.2f|%.2f" % (statistics.median(xs), p95, statistics.mean(xs))


def make(csv_path, hashes, cost):
    import bcrypt
    made = []
    with open(HASHFILE, "w") as f:
        for k in range(hashes):
            pw = password(k + 1, hashes)
            made.append(bcrypt.hashpw(pw.encode(), bcrypt.gensalt(cost)).decode())
            f.write("%d\t%s\t%s\n" % (k, pw, made[-1]))
    with open(csv_path, "w", buffering=1 << 20) as f:
        f.write("email,name,password_hash,email_verified,roles\n")
        for i in range(1, USERS + 1):
            roles = "billing support" if i % 10 == 0 else ""
            f.write("imp%d@example.com,Imported Person %d,%s,true,%s\n" % (i, i, made[(i - 1) % hashes], roles))


class Client:
    def __init__(self):
        host, port = os.environ["BASE"].split("//")[1].split(":")
        self.conn = http.client.HTTPConnection(host, int(port))
        self.errors = 0

    def login(self, email, pw, expect=200):
        """The answer's time in ms, or None (counted as an error) when it is not `expect`."""
        body = json.dumps({"email": email, "password": pw})
        t = time.perf_counter()
        self.conn.request("POST", "/api/v1/auth/login", body, {"Content-Type": "application/json"})
        r = self.conn.getresponse()
        raw = r.read()
        took = (time.perf_counter() - t) * 1000
        if r.status != expect or (expect == 200 and b'"accessToken"' not in raw):
            self.errors += 1
            if self.errors <= 3:
                print("%s: %d %s" % (email, r.status, raw[:300].decode(errors="replace")), file=sys.stderr)
            return None
        return took


def signins(group, label):
    """Each person of `group` signs in once, back to back. Prints label|samples|median|p95|mean|errors."""
    c = Client()
    ms = [m for i, pw, _ in people(group) if (m := c.login("imp%d@example.com" % i, pw)) is not None]
    print("%s|%d|%s|%d" % (label, len(ms), stats(ms), c.errors))


def paced(pace):
    """Per person of group b: bcrypt.checkpw and crypt() of their password and hash, their first
    sign-in, a pause. Prints the yardsticks' rows and the sign-ins' row."""
    import bcrypt
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import crypt
    except ImportError:
        crypt = None
    c = Client()
    checkpw, crypts, ms = [], [], []
    for i, pw, h in people("b"):
        t = time.perf_counter()
        ok = bcrypt.checkpw(pw.encode(), h.encode())
        checkpw.append((time.perf_counter() - t) * 1000)
        assert ok, "bcrypt.checkpw refused a hash it made"
        if crypt:
            t = time.perf_counter()
            ok = crypt.crypt(pw, h) == h
            crypts.append((time.perf_counter() - t) * 1000)
            if not ok:
                crypt, crypts = None, []
        m = c.login("imp%d@example.com" % i, pw)
        if m is not None:
            ms.append(m)
        time.sleep(pace)
    print("checkpw|%d|%s|0|%s" % (len(checkpw), stats(checkpw), bcrypt.__version__))
    if crypts:
        print("crypt|%d|%s|0|libxcrypt" % (len(crypts), stats(crypts)))
    print("paced|%d|%s|%d" % (len(ms), stats(ms), c.errors))


def warm():
    """First sign-ins of two people outside the samples: hash threads' memory, caches."""
    c = Client()
    for i, pw, _ in people("warm"):
        if c.login("imp%d@example.com" % i, pw) is None:
            sys.exit("the warm-up sign-in failed")
    print(len(groups()["warm"]))


def enumeration():
    """Wrong passwords for imported people (bcrypt, never signed in) interleaved with unknown
    addresses (decoys: an imported hash for the imported share of addresses); then the difference of medians and KS distance."""
    c = Client()
    wrong, unknown = [], []
    for k, (i, _, _) in enumerate(people("wrong")):
        cases = [(wrong, "imp%d@example.com" % i), (unknown, "nobody%d@example.com" % k)]
        for into, email in cases[::1 if k % 2 else -1]:
            m = c.login(email, "not the password", expect=401)
            if m is not None:
                into.append(m)
    print("wrong|%d|%s|%d" % (len(wrong), stats(wrong), c.errors))
    print("unknown|%d|%s|0" % (len(unknown), stats(unknown)))
    print("delta|%+.2f|%.3f" % (statistics.median(wrong) - statistics.median(unknown), ks(wrong, unknown)))


if __name__ == "__main__":
    what, args = sys.argv[1], sys.argv[2:]
    if what == "make":
        make(args[0], int(args[1]), int(args[2]))
    elif what == "signins":
        signins(args[0], args[1])
    elif what == "paced":
        paced(float(args[0]))
    elif what == "warm":
        warm()
    elif what == "enumeration":
        enumeration()
PY
CSV=$WORK/users.csv
export USERS SIGNINS ENUM_SAMPLES BASE HASHFILE=$WORK/hashes.tsv BENCH_DIR=$PWD/bench
tools() { "$PY" "$WORK/tools.py" "$@"; }

started=$(date +%s.%N)
tools make "$CSV" "$HASHES" "$COST"
echo "CSV of $USERS people ($HASHES bcrypt cost-$COST hashes, cycled): $(du -h "$CSV" | cut -f1), made in $(awk -v s="$started" -v e="$(date +%s.%N)" 'BEGIN {printf "%.1f", e - s}') s" >&2
head -n $((USERS / 10 + 1)) "$CSV" >"$WORK/tenth.csv"

IMPORTS=$WORK/imports   # label|backend|people|wall|cpu|rss|MiB|extra lines|summary
SIGNS=$WORK/signins     # backend|kind|samples|median|p95|mean|errors[|version]
CHECKS=$WORK/checks     # backend|argon2id|bcrypt|rehashed events|people signed in
: >"$IMPORTS"
: >"$SIGNS"
: >"$CHECKS"

# "seconds|user+sys seconds|peak RSS MiB" of a /usr/bin/time -v report.
time_fields() {
  awk -F': ' '
    /Elapsed \(wall clock\)/ {n = split($2, p, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + p[i]}
    /User time/ {cpu += $2}
    /System time/ {cpu += $2}
    /Maximum resident set size/ {rss = $2 / 1024}
    END {printf "%.2f|%.1f|%.1f", s, cpu, rss}' "$1"
}

# query URL SQL: one value.
query() {
  case "$1" in
  sqlite://*) "$PY" -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute(sys.argv[2]).fetchone()[0])' "${1#sqlite://}" "$2" ;;
  *) psql -Atq "$1" -c "$2" ;;
  esac
}

# database_size URL: the SQLite file with its WAL, or pg_database_size, in MiB.
database_size() {
  case "$1" in
  sqlite://*) "$PY" -c 'import glob, os, sys; print("%.1f" % (sum(map(os.path.getsize, glob.glob(sys.argv[1] + "*"))) / 1048576))' "${1#sqlite://}" ;;
  *) query "$1" 'SELECT round(pg_database_size(current_database()) / 1048576.0, 1)' ;;
  esac
}

# import_into BACKEND URL FILE PEOPLE LABEL: migrate URL, then time the import of FILE into it.
import_into() {
  local backend=$1 url=$2 file=$3 people=$4 label=$5
  local out=$WORK/import-$1-$4 rc=0 summary counted extra
  GATEHOUSE_DATABASE_URL=$url GATEHOUSE_LOG=error "$BIN" migrate >"$out.migrate" 2>&1 || { cat "$out.migrate" >&2; exit 1; }
  GATEHOUSE_DATABASE_URL=$url /usr/bin/time -v -o "$out.time" "$BIN" import --from csv "$file" >"$out.out" 2>"$out.err" || rc=$?
  summary=$(tail -n 1 "$out.out")
  if [ "$rc" != 0 ] || ! grep -q "^imported $people of $people records" <<<"$summary"; then
    echo "the import into $backend failed (exit $rc):" >&2
    tail -n 20 "$out.out" "$out.err" >&2
    exit 1
  fi
  counted=$(query "$url" "SELECT COUNT(*) FROM users")
  [ "$counted" = "$people" ] || { echo "$backend: $counted accounts after importing $people" >&2; exit 1; }
  # What the import printed besides its summary line (it prints only refusals and notes).
  extra=$(($(wc -l <"$out.out") - 1 + $(wc -l <"$out.err")))
  echo "$label|$backend|$people|$(time_fields "$out.time")|$(database_size "$url")|$extra|$summary" >>"$IMPORTS"
  echo "$backend: $summary" >&2
}

# measure_signins BACKEND URL: the service on URL, the sign-ins, then the check of the rehashes.
measure_signins() {
  local backend=$1 url=$2 warmed argon bcrypts rehashed
  GATEHOUSE_DATABASE_URL=$url GATEHOUSE_LOG=warn "$BIN" serve & SERVER=$!
  for _ in $(seq 1 200); do curl -sf "$BASE/healthz" >/dev/null && break; sleep 0.05; done
  curl -sf "$BASE/healthz" >/dev/null || { echo "the server did not come up at $BASE" >&2; exit 1; }
  warmed=$(tools warm)
  tools signins a first | sed "s/^/$backend|/" >>"$SIGNS"
  tools paced "$PACE" | sed "s/^/$backend|/" >>"$SIGNS"
  sleep 1 # the last rehash, in the background
  tools signins a second | sed "s/^/$backend|/" >>"$SIGNS"
  tools enumeration | sed "s/^/$backend|/" >>"$SIGNS"
  kill "$SERVER"; wait "$SERVER" 2>/dev/null || true; SERVER=
  argon=$(query "$url" "SELECT COUNT(*) FROM users WHERE password_hash LIKE '\$argon2id\$%'")
  bcrypts=$(query "$url" "SELECT COUNT(*) FROM users WHERE password_hash LIKE '\$2b\$%'")
  rehashed=$(query "$url" "SELECT COUNT(*) FROM audit_events WHERE event = 'password.rehashed'")
  echo "$backend|$argon|$bcrypts|$rehashed|$((2 * SIGNINS + warmed))" >>"$CHECKS"
}

mkdir -p "$WORK/sqlite" "$WORK/sqlite-tenth"
import_into sqlite "sqlite://$WORK/sqlite-tenth/gatehouse.db" "$WORK/tenth.csv" $((USERS / 10)) "import of the first tenth (memory comparison)"
rm -rf "$WORK/sqlite-tenth"
import_into sqlite "sqlite://$WORK/sqlite/gatehouse.db" "$CSV" "$USERS" "import"
measure_signins sqlite "sqlite://$WORK/sqlite/gatehouse.db"
rm -rf "$WORK/sqlite"

if [ -n "${BENCH_DATABASE_URL:-}" ]; then
  PGDB=gh_import_$$
  psql -q "$PG_ADMIN" -c "CREATE DATABASE $PGDB" >/dev/null
  GATEHOUSE_MASTER_KEY=$(head -c 32 /dev/urandom | base64)
  export GATEHOUSE_MASTER_KEY
  import_into postgres "${BENCH_DATABASE_URL%/*}/$PGDB" "$CSV" "$USERS" "import"
  measure_signins postgres "${BENCH_DATABASE_URL%/*}/$PGDB"
fi

# The tables.
echo
echo '```sh'
echo "USERS=$USERS SIGNINS=$SIGNINS PACE=$PACE HASHES=$HASHES ENUM_SAMPLES=$ENUM_SAMPLES GATEHOUSE_BIN=${GATEHOUSE_BIN:-target/release/gatehouse}${BENCH_DATABASE_URL:+ BENCH_DATABASE_URL=$BENCH_DATABASE_URL} bench/import.sh"
echo '```'
echo
echo "$(date -u +%Y-%m-%d), $(nproc) vCPU ($(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)), load average $(cut -d' ' -f1-3 /proc/loadavg); $("$BIN" --version) at $BIN; tree $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet HEAD 2>/dev/null || echo ' with changes'); CSV $(du -h "$CSV" | cut -f1)."
echo
echo "| step | backend | people | wall s | people/s | CPU s (user+sys) | peak RSS MiB | database MiB | lines besides the summary |"
echo "|---|---|---|---|---|---|---|---|---|"
while IFS='|' read -r label backend people wall cpu rss size extra _; do
  rate=$(awk -v n="$people" -v s="$wall" 'BEGIN {if (s > 0) printf "%.0f", n / s; else printf "–"}')
  echo "| $label | $backend | $people | $wall | $rate | $cpu | $rss | $size | $extra |"
done <"$IMPORTS"
echo
echo "| measurement (one at a time, one keep-alive connection) | backend | samples | median ms | p95 ms | mean ms | errors |"
echo "|---|---|---|---|---|---|---|"
for kind in checkpw crypt paced first second wrong unknown; do
  while IFS='|' read -r backend k samples median p95 mean errors version; do
    [ "$k" = "$kind" ] || continue
    case "$kind" in
    checkpw) name="bcrypt.checkpw (pyca bcrypt $version), cost $COST: the yardstick" ;;
    crypt) name="crypt() ($version, C), cost $COST" ;;
    paced) name="first sign-in, paced (after each, a pause of ${PACE} s for the background rehash)" ;;
    first) name="first sign-in, back to back (each rehash runs during the next sign-in)" ;;
    second) name="second sign-in of the back-to-back people (Argon2id)" ;;
    wrong) name="wrong password, imported person not yet signed in (bcrypt)" ;;
    unknown) name="unknown address (verified against an imported hash in the imported share, else the Argon2id dummy)" ;;
    esac
    echo "| $name | $backend | $samples | $median | $p95 | $mean | $errors |"
  done <"$SIGNS"
done
echo
while IFS='|' read -r backend kind _ median _ _ errors; do
  case "$kind" in paced|first) ;; *) continue ;; esac
  ref=$(awk -F'|' -v b="$backend" '$1 == b && $2 == "checkpw" {print $4}' "$SIGNS")
  awk -v b="$backend" -v k="$kind" -v m="$median" -v r="$ref" -v e="$errors" 'BEGIN {
    ratio = m / r
    printf "- %s, first sign-in %s: median ÷ bcrypt.checkpw median = %.3f (%+.1f %%; goal ≤ +10 %%: %s); %d errors.\n",
      b, (k == "paced" ? "paced" : "back to back"), ratio, (ratio - 1) * 100, (ratio <= 1.10 ? "met" : "missed"), e}'
done <"$SIGNS"
while IFS='|' read -r backend kind delta distance; do
  [ "$kind" = delta ] || continue
  echo "- $backend: a wrong password for an imported person who has not signed in yet against an unknown address: medians differ by $delta ms, KS distance $distance."
done <"$SIGNS"
while IFS='|' read -r backend argon bcrypts rehashed expected; do
  verdict="as expected"
  [ "$argon" = "$expected" ] && [ "$rehashed" = "$expected" ] || verdict="NOT as expected"
  echo "- $backend: afterwards $argon Argon2id hashes, $bcrypts bcrypt, $rehashed password.rehashed events; $expected people signed in ($verdict)."
done <"$CHECKS"
