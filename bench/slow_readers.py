"""The two sides of bench/slow-readers.sh (standard library only; loopback only).

  slow_readers.py attack ADDR PATH SECONDS SOCKETS [TOKEN]
      From 127.0.0.1, keeps SOCKETS sockets that pipeline `GET PATH` and never read an answer,
      opening a new one whenever the server lets one go, for SECONDS. Then prints how the sockets
      it opened ended: closed without an answer (over the per-client cap), or answered and then
      cut (the write timeout), and how many the server was answering at most at once.
  slow_readers.py probe ADDR SECONDS
      From 127.0.0.2 (another client), a fresh connection asks for /healthz every 50 ms for
      SECONDS; prints the count, p50, p99, max, how many took over 100 ms, and failures (no
      200 within 5 s).
  slow_readers.py memory PID
      The peak resident memory (VmHWM) and open descriptors of process PID.
  slow_readers.py overflows
      The kernel's count of connections dropped because a listen queue was full (TcpExt
      ListenOverflows, for the whole machine): a client whose SYN is dropped waits 1 s to retry.
"""
import os, socket, sys, time

ATTACKER = "127.0.0.1"
OTHER = "127.0.0.2"


def server(addr):
    host, port = addr.rsplit(":", 1)
    assert host.startswith("127."), "loopback only"
    return host, int(port)


def attack(addr, path, seconds, sockets, token=None):
    target = server(addr)
    auth = f"Authorization: Bearer {token}\r\n" if token else ""
    batch = f"GET {path} HTTP/1.1\r\nHost: bench\r\n{auth}\r\n".encode() * 16
    opened = unserved = 0
    cut_after = []  # ages of sockets the server answered, then let go
    live = {}  # socket -> [when it was opened, whether the server has answered on it]
    peak_served = 0

    def open_one():
        nonlocal opened
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.bind((ATTACKER, 0))
        s.setblocking(False)
        s.connect_ex(target)
        live[s] = [time.monotonic(), False]
        opened += 1

    for _ in range(sockets):
        open_one()
    stop = time.monotonic() + seconds
    while time.monotonic() < stop:
        for s, state in list(live.items()):
            try:
                # Peeking leaves the answer unread: it only tells whether one has come.
                state[1] = state[1] or bool(s.recv(1, socket.MSG_PEEK))
            except (BlockingIOError, InterruptedError):
                pass
            except OSError:
                pass  # reset: the send below says so too
            try:
                s.send(batch)
            except (BlockingIOError, InterruptedError):
                pass  # the server reads no more: its answers are stuck behind ours
            except OSError:
                if state[1]:
                    cut_after.append(time.monotonic() - state[0])
                else:
                    unserved += 1
                s.close()
                del live[s]
                open_one()
        peak_served = max(peak_served, sum(served for _, served in live.values()))
        time.sleep(0.2)
    cut_after.sort()
    median = f"{cut_after[len(cut_after) // 2]:.1f} s" if cut_after else "-"
    print(
        f"attack: {opened} sockets opened from {ATTACKER} ({sockets} at a time); "
        f"{unserved} closed by the server without an answer, {len(cut_after)} answered and then "
        f"cut (median {median} after opening); at most {peak_served} being answered at once"
    )
    for s in live:
        s.close()


def probe(addr, seconds):
    target = server(addr)
    request = b"GET /healthz HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n"
    times, failures = [], 0
    stop = time.monotonic() + seconds
    while time.monotonic() < stop:
        started = time.perf_counter()
        try:
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                s.bind((OTHER, 0))
                s.settimeout(5)
                s.connect(target)
                s.sendall(request)
                answer = b""
                while chunk := s.recv(4096):
                    answer += chunk
            if answer.startswith(b"HTTP/1.1 200"):
                times.append((time.perf_counter() - started) * 1000)
            else:
                failures += 1
        except OSError:
            failures += 1
        time.sleep(0.05)
    times.sort()
    pick = lambda q: times[min(len(times) - 1, int(q * len(times)))] if times else float("nan")
    slow = sum(t > 100 for t in times)
    print(
        f"healthz from {OTHER}: {len(times)} answered, p50 {pick(0.5):.2f} ms, "
        f"p99 {pick(0.99):.2f} ms, max {times[-1] if times else float('nan'):.2f} ms, "
        f"{slow} over 100 ms, {failures} failed"
    )


def memory(pid):
    status = open(f"/proc/{pid}/status").read()
    peak = next(l.split()[1] for l in status.splitlines() if l.startswith("VmHWM"))
    fds = len(os.listdir(f"/proc/{pid}/fd"))
    print(f"server: peak RSS {int(peak) // 1024} MiB, {fds} open descriptors")


def overflows():
    lines = [l.split() for l in open("/proc/net/netstat") if l.startswith("TcpExt:")]
    print(dict(zip(lines[0], lines[1]))["ListenOverflows"])


if __name__ == "__main__":
    command, args = sys.argv[1], sys.argv[2:]
    if command == "attack":
        attack(args[0], args[1], float(args[2]), int(args[3]), *args[4:])
    elif command == "probe":
        probe(args[0], float(args[1]))
    elif command == "memory":
        memory(args[0])
    elif command == "overflows":
        overflows()
    else:
        sys.exit(__doc__)
