"""How soon a change made through one instance (or the CLI) reaches another (docs/api.md §2: within
2 s), for bench/spread.sh. Standard library only.

  spread.py A B BIN TRIALS   A, B: the two instances' base URLs on one database; BIN: the CLI

Per trial, two changes, each timed from the moment it is made (the sign-out's answer, the CLI's
exit) to the first answer of the other instance that shows it, polled every 5 ms:
  sign-out   POST /api/v1/auth/logout on A; B refuses the access token (401 on /auth/me)
  role       `gatehouse user roles --add` (another process); B's forward-auth names the role
Prints one Markdown row per change: trials, p50, p90, p99, max (ms).
"""
import json, random, subprocess, sys, time

from stats import percentiles
from tools import PASSWORD, conn
EMAIL = "bench@example.com"
POLL = 0.005
# The instances poll every 500 ms: each change waits a random part of that first, or every trial
# would fall at the same point of the poll (the one after the last trial's detection).
SYNC_INTERVAL = 0.5


def call(c, method, path, body=None, headers=None):
    """tools.call, with the answer's headers (forward-auth answers in them, without a body)."""
    h = {"Content-Type": "application/json", **(headers or {})}
    c.request(method, path, json.dumps(body) if body is not None else None, h)
    r = c.getresponse()
    return r.status, r.getheaders(), r.read()


def bearer(token):
    return {"Authorization": "Bearer " + token}


def until(check):
    """Seconds from now until check() is true (30 s at most: past that the change is lost)."""
    started = time.perf_counter()
    while not check():
        if time.perf_counter() - started > 30:
            sys.exit("a change did not arrive within 30 s")
        time.sleep(POLL)
    return time.perf_counter() - started


def sign_out(a, b):
    status, _, body = call(a, "POST", "/api/v1/auth/login", {"email": EMAIL, "password": PASSWORD})
    assert status == 200, body
    token = json.loads(body)["data"]["accessToken"]
    assert call(b, "GET", "/api/v1/auth/me", headers=bearer(token))[0] == 200
    time.sleep(random.random() * SYNC_INTERVAL)
    status, _, body = call(a, "POST", "/api/v1/auth/logout", {}, bearer(token))
    assert status == 200, body
    return until(lambda: call(b, "GET", "/api/v1/auth/me", headers=bearer(token))[0] == 401)


def role(a, b, binary, n):
    status, _, body = call(a, "POST", "/api/v1/auth/login", {"email": EMAIL, "password": PASSWORD})
    assert status == 200, body
    token = json.loads(body)["data"]["accessToken"]
    forwarded = {
        **bearer(token),
        "X-Forwarded-Method": "GET",
        "X-Forwarded-Host": "app.example.com",
        "X-Forwarded-Uri": "/",
    }
    name = "r%d" % n

    def shows():
        status, headers, _ = call(b, "GET", "/api/v1/authz/forward-auth", headers=forwarded)
        groups = dict((k.lower(), v) for k, v in headers).get("remote-groups", "")
        assert status == 200, status
        return name in groups.split(",")

    assert not shows()
    time.sleep(random.random() * SYNC_INTERVAL)
    subprocess.run([binary, "user", "roles", EMAIL, "--add", name], check=True,
                   stdout=subprocess.DEVNULL)
    took = until(shows)
    subprocess.run([binary, "user", "roles", EMAIL, "--remove", name], check=True,
                   stdout=subprocess.DEVNULL)
    return took


def main():
    base_a, base_b, binary, trials = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    a, b = conn(base_a), conn(base_b)
    results = {"sign-out on A, refused by B": [], "role added by the CLI, named by B": []}
    for n in range(trials):
        results["sign-out on A, refused by B"].append(sign_out(a, b))
        results["role added by the CLI, named by B"].append(role(a, b, binary, n))
    for what, xs in results.items():
        _, p50, p90, p99, _ = percentiles(xs)
        print("| %s | %d | %.0f | %.0f | %.0f | %.0f |" % (what, len(xs), p50, p90, p99, max(xs) * 1000))


main()
