"""Helpers for bench/suite.sh (standard library, plus argon2-cffi for the reference rate).

  tools.py ready BIN            spawn `BIN serve` (settings from the environment) and print the
                                milliseconds from spawn to the first 200 from /readyz; leaves the
                                server running and prints its pid on a second line
  tools.py argon2 SECONDS PROCS hashes/s of libargon2 (argon2-cffi) at m=19 MiB, t=2, p=1,
                                PROCS processes in parallel
  tools.py tokens BASE N FILE   N distinct valid access tokens (chained refreshes of 8 sessions)
  tools.py twofactor BASE N     N accounts with 2FA; prints "email code" lines, ten recovery codes
                                each (the password is the suite's)
  tools.py table ROWS SIZES     the suite's Markdown table from its rows file
                                (scenario|backend|size|req/s|p50|p99|errors|peak MiB|note), one
                                row per scenario and backend, the database sizes side by side
"""
import http.client, json, multiprocessing, os, socket, subprocess, sys, time, urllib.parse

PASSWORD = "correct horse battery staple"


def conn(base):
    url = urllib.parse.urlparse(base)
    return http.client.HTTPConnection(url.hostname, url.port)


def call(c, method, path, body=None, token=None):
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = "Bearer " + token
    c.request(method, path, json.dumps(body) if body is not None else None, headers)
    r = c.getresponse()
    return r.status, json.loads(r.read())


def ready(binary):
    addr = os.environ["GATEHOUSE_LISTEN"]
    host, port = addr.rsplit(":", 1)
    started = time.perf_counter()
    proc = subprocess.Popen([binary, "serve"], stdout=subprocess.DEVNULL)
    request = b"GET /readyz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    while True:
        try:
            with socket.create_connection((host, int(port)), timeout=1) as s:
                s.sendall(request)
                if s.recv(64).startswith(b"HTTP/1.1 200"):
                    break
        except OSError:
            pass
        if proc.poll() is not None:
            sys.exit("the server exited")
        time.sleep(0.0005)
    print("%.1f" % ((time.perf_counter() - started) * 1000))
    print(proc.pid)


def _hash_for(seconds, counter):
    from argon2.low_level import Type, hash_secret_raw
    end = time.perf_counter() + seconds
    n = 0
    while time.perf_counter() < end:
        hash_secret_raw(b"correct horse battery staple", os.urandom(16), time_cost=2,
                        memory_cost=19 * 1024, parallelism=1, hash_len=32, type=Type.ID)
        n += 1
    with counter.get_lock():
        counter.value += n


def argon2_rate(seconds, procs):
    counter = multiprocessing.Value("i", 0)
    workers = [multiprocessing.Process(target=_hash_for, args=(seconds, counter)) for _ in range(procs)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    print("%.1f" % (counter.value / seconds))


def tokens(base, n, path):
    c = conn(base)
    refresh = []
    for _ in range(8):
        status, body = call(c, "POST", "/api/v1/auth/login", {"email": "bench@example.com", "password": PASSWORD})
        assert status == 200, body
        refresh.append(body["data"]["refreshToken"])
    out = []
    i = 0
    while len(out) < n:
        status, body = call(c, "POST", "/api/v1/auth/refresh", {"refreshToken": refresh[i % 8]})
        assert status == 200, body
        refresh[i % 8] = body["data"]["refreshToken"]
        out.append(body["data"]["accessToken"])
        i += 1
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def twofactor(base, n):
    import base64, hashlib, hmac, struct

    def totp(secret, at):
        digest = hmac.new(base64.b32decode(secret), struct.pack(">Q", int(at // 30)), hashlib.sha1).digest()
        o = digest[-1] & 0x0F
        return "%06d" % ((struct.unpack(">I", digest[o:o + 4])[0] & 0x7FFFFFFF) % 1_000_000)

    c = conn(base)
    for i in range(n):
        email = f"tf{i}@example.com"
        status, body = call(c, "POST", "/api/v1/auth/register", {"email": email, "password": PASSWORD, "fullName": "Bench"})
        assert status == 201, body
        status, body = call(c, "POST", "/api/v1/auth/login", {"email": email, "password": PASSWORD})
        token = body["data"]["accessToken"]
        status, body = call(c, "POST", "/api/v1/auth/2fa/setup", {"password": PASSWORD}, token=token)
        assert status == 200, body
        secret = body["data"]["secret"]
        status, body = call(c, "POST", "/api/v1/auth/2fa/enable", {"code": totp(secret, time.time() - 30)}, token=token)
        if status == 400 and body["error"]["code"] == "INVALID_2FA_CODE":
            # The 30 s step turned between reading the clock and the server checking the code.
            status, body = call(c, "POST", "/api/v1/auth/2fa/enable", {"code": totp(secret, time.time())}, token=token)
        assert status == 200, body
        for code in body["data"]["recoveryCodes"]:
            print(email, code)


def size_name(size):
    return f"{int(size):,}".replace(",", " ")


def table(rows_path, sizes):
    sizes = sizes.split()
    cells, order = {}, []
    for line in open(rows_path):
        scenario, backend, size, *rest = line.rstrip("\n").split("|")
        key = (scenario, backend)
        if key not in cells:
            cells[key] = {}
            order.append(key)
        cells[key][size] = rest
    head = ["scenario", "backend"]
    for size in sizes:
        head += [f"{size_name(size)} rows: req/s", "p50", "p99", "errors", "peak MiB"]
    if len(sizes) > 1:
        head.append(f"{size_name(sizes[-1])} vs {size_name(sizes[0])}")
    head.append("note")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for key in order:
        out, notes, values = list(key), [], []
        for size in sizes:
            rps, p50, p99, errors, peak, note = ((cells[key].get(size) or []) + [""] * 6)[:6]
            # Start-up time and idle memory have one figure, in the note or the peak column.
            figure = rps or peak or note.strip().removesuffix(" ms")
            try:
                values.append(float(figure))
            except ValueError:
                values.append(None)
            out += [rps or note.strip(), p50, p99, errors, peak]
            if note.strip() and rps:
                notes.append(note.strip())
        if len(sizes) > 1:
            first, last = values[0], values[-1]
            out.append(f"{(last / first - 1) * 100:+.0f} %" if first and last else "")
        out.append(notes[0] if notes else "")
        print("| " + " | ".join(out) + " |")


if __name__ == "__main__":
    verb = sys.argv[1]
    if verb == "ready":
        ready(sys.argv[2])
    elif verb == "argon2":
        argon2_rate(float(sys.argv[2]), int(sys.argv[3]))
    elif verb == "tokens":
        tokens(sys.argv[2], int(sys.argv[3]), sys.argv[4])
    elif verb == "table":
        table(sys.argv[2], sys.argv[3])
    elif verb == "twofactor":
        twofactor(sys.argv[2], int(sys.argv[3]))
    else:
        sys.exit(__doc__)
