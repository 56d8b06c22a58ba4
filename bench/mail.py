"""Mail (docs/api.md §7), measured against a running Gatehouse (BASE) with open registration and
throttling off, whose mail goes to the aiosmtpd server on SMTP_PORT, writing into MAILDIR:

  forgot-password: an account's address  vs  an address with no account
  registration: a taken address  vs  a free one

interleaved (SAMPLES each), with the percentiles per case and, per pair, the difference of medians
and the Kolmogorov-Smirnov distance; then the outbox's delivery rate: DELIVERY mails queued while
the SMTP server is stopped (registrations), the server started, and the rate at which they arrive.
Standard library only.
"""
import http.client, json, os, random, statistics, subprocess, sys, time, urllib.parse

from stats import ks, percentiles

BASE = os.environ.get("BASE", "http://127.0.0.1:18083")
N = int(os.environ.get("SAMPLES", "400"))
DELIVERY = int(os.environ.get("DELIVERY", "300"))
SMTP_PORT = os.environ["SMTP_PORT"]
MAILDIR = os.environ["MAILDIR"]
PASSWORD = "correct horse battery staple"
url = urllib.parse.urlparse(BASE)
conn = http.client.HTTPConnection(url.hostname, url.port)


def call(path, body):
    started = time.perf_counter()
    conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
    response = conn.getresponse()
    raw = response.read()
    return response.status, json.loads(raw), time.perf_counter() - started


def smtp_server():
    return subprocess.Popen(["/usr/bin/python3", "-m", "aiosmtpd", "-n", "-l", f"127.0.0.1:{SMTP_PORT}",
                             "-c", "aiosmtpd.handlers.Mailbox", MAILDIR],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def delivered():
    try:
        return len(os.listdir(os.path.join(MAILDIR, "new")))
    except FileNotFoundError:
        return 0


smtp = smtp_server()
time.sleep(1)
known = "known@example.com"
s, b, _ = call("/api/v1/auth/register", {"email": known, "password": PASSWORD, "fullName": "Known"})
assert s == 201, b

cases = ["forgot: account", "forgot: no account", "register: taken", "register: free"]
samples = {k: [] for k in cases}
for i in range(N):
    order = list(cases)
    random.shuffle(order)
    for case in order:
        if case == "forgot: account":
            s, b, t = call("/api/v1/auth/password/forgot", {"email": known})
            assert s == 202, b
        elif case == "forgot: no account":
            s, b, t = call("/api/v1/auth/password/forgot", {"email": f"nobody{i}@example.com"})
            assert s == 202, b
        elif case == "register: taken":
            s, b, t = call("/api/v1/auth/register", {"email": known, "password": PASSWORD, "fullName": "X"})
            assert s == 409, b
        else:
            s, b, t = call("/api/v1/auth/register", {"email": f"free{i}@example.com", "password": PASSWORD, "fullName": "X"})
            assert s == 201, b
        samples[case].append(t)

print(f"| case ({N} each) | p10 ms | p50 ms | p90 ms | p99 ms | mean ms |")
print("|---|---|---|---|---|---|")
for case, xs in samples.items():
    print("| %s | %.2f | %.2f | %.2f | %.2f | %.2f |" % ((case,) + percentiles(xs)))
print()
print("| pair | Δ median ms | KS distance |")
print("|---|---|---|")
for a, b in [("forgot: account", "forgot: no account"), ("register: taken", "register: free")]:
    d = statistics.median(samples[a]) - statistics.median(samples[b])
    print("| %s vs %s | %+.2f | %.3f |" % (a, b, d * 1000, ks(samples[a], samples[b])))

# Delivery rate: a backlog queued while the server is down, drained when it is back.
time.sleep(3)
smtp.terminate()
smtp.wait()
before = delivered()
for i in range(DELIVERY):
    s, b, _ = call("/api/v1/auth/register", {"email": f"rate{i}@example.com", "password": PASSWORD, "fullName": "R"})
    assert s == 201, b
time.sleep(2)  # every mail has failed once and waits for its retry
smtp = smtp_server()
first = last = None
deadline = time.time() + 300
while delivered() - before < DELIVERY and time.time() < deadline:
    n = delivered() - before
    now = time.perf_counter()
    if n > 0 and first is None:
        first = now
    time.sleep(0.01)
last = time.perf_counter()
n = delivered() - before
smtp.terminate()
print()
print(f"outbox delivery: {n} of {DELIVERY} mails delivered, {n - 1} after the first in "
      f"{last - first:.2f} s: {(n - 1) / (last - first):.0f} mails/s (one instance, one SMTP connection per mail)")
