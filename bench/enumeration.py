"""Timing side channels, measured: do answers that must look alike take alike long?

Against a running Gatehouse (BASE, default http://127.0.0.1:18082), interleaving the cases so
that drift in the machine's load touches them equally:

  login: an e-mail with no account  vs  an account's e-mail with a wrong password
  2FA verify: a wrong TOTP code  vs  a wrong recovery code  vs  a temp token that does not exist

Prints percentiles per case and, per pair, the difference of medians and the Kolmogorov-Smirnov
distance between the two latency distributions (0 = identical, 1 = fully apart). Standard library
only. Needs GATEHOUSE_RATE_LIMIT=off on the server (thousands of failures from one address).
"""
import base64, hashlib, hmac, http.client, json, os, random, statistics, struct, sys, time, urllib.parse

from stats import ks, percentiles

BASE = os.environ.get("BASE", "http://127.0.0.1:18082")
N = int(os.environ.get("SAMPLES", "400"))
PASSWORD = "correct horse battery staple"
url = urllib.parse.urlparse(BASE)
conn = http.client.HTTPConnection(url.hostname, url.port)


def call(method, path, body=None, token=None):
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = "Bearer " + token
    data = json.dumps(body) if body is not None else None
    started = time.perf_counter()
    conn.request(method, path, data, headers)
    response = conn.getresponse()
    raw = response.read()
    elapsed = time.perf_counter() - started
    return response.status, json.loads(raw), elapsed


def totp(secret_b32, at):
    key = base64.b32decode(secret_b32)
    digest = hmac.new(key, struct.pack(">Q", int(at // 30)), hashlib.sha1).digest()
    offset = digest[-1] & 0x0F
    return "%06d" % ((struct.unpack(">I", digest[offset:offset + 4])[0] & 0x7FFFFFFF) % 1_000_000)


# An account with 2FA (enrolled through the API, as a user would), logged in.
email = os.environ["BENCH_EMAIL"]
status, body, _ = call("POST", "/api/v1/auth/login", {"email": email, "password": PASSWORD})
assert status == 200, body
access = body["data"]["accessToken"]
status, body, _ = call("POST", "/api/v1/auth/2fa/setup", token=access)
secret = body["data"]["secret"]
status, body, _ = call("POST", "/api/v1/auth/2fa/enable", {"code": totp(secret, time.time() - 30)}, token=access)
assert status == 200, body


def challenge():
    status, body, _ = call("POST", "/api/v1/auth/login", {"email": email, "password": PASSWORD})
    assert status == 200 and body["data"]["requiresTwoFactor"], body
    return body["data"]["tempToken"]


def wrong_totp(right):
    while True:
        code = "%06d" % random.randrange(1_000_000)
        if code not in right:
            return code


samples = {k: [] for k in ["login: no account", "login: wrong password",
                           "verify: wrong TOTP", "verify: wrong recovery code", "verify: unknown temp token"]}
for i in range(N):
    cases = list(samples)
    random.shuffle(cases)
    temp = challenge()  # 5 attempts each; 2 used per round
    now = time.time()
    right = {totp(secret, now + d) for d in (-30, 0, 30)}
    for case in cases:
        if case == "login: no account":
            s, b, t = call("POST", "/api/v1/auth/login", {"email": f"nobody{i}@example.com", "password": "wrong password!"})
            assert s == 401, b
        elif case == "login: wrong password":
            s, b, t = call("POST", "/api/v1/auth/login", {"email": email, "password": "wrong password!"})
            assert s == 401, b
        elif case == "verify: wrong TOTP":
            s, b, t = call("POST", "/api/v1/auth/2fa/verify", {"tempToken": temp, "code": wrong_totp(right)})
            assert s == 401 and b["error"]["code"] == "INVALID_2FA_CODE", b
        elif case == "verify: wrong recovery code":
            s, b, t = call("POST", "/api/v1/auth/2fa/verify", {"tempToken": temp, "code": "abcde-fghjk"})
            assert s == 401 and b["error"]["code"] == "INVALID_2FA_CODE", b
        else:
            s, b, t = call("POST", "/api/v1/auth/2fa/verify", {"tempToken": "no-such-challenge-" + str(i), "code": "123456"})
            assert s == 401, b
        samples[case].append(t)

print(f"| case ({N} each) | p10 ms | p50 ms | p90 ms | p99 ms | mean ms |")
print("|---|---|---|---|---|---|")
for case, xs in samples.items():
    print("| %s | %.2f | %.2f | %.2f | %.2f | %.2f |" % ((case,) + percentiles(xs)))
print()
print("| pair | Δ median ms | KS distance |")
print("|---|---|---|")
for a, b in [("login: no account", "login: wrong password"),
             ("verify: wrong TOTP", "verify: wrong recovery code"),
             ("verify: wrong TOTP", "verify: unknown temp token")]:
    dm = (statistics.median(samples[a]) - statistics.median(samples[b])) * 1000
    print("| %s vs %s | %+.3f | %.3f |" % (a, b, dm, ks(samples[a], samples[b])))
