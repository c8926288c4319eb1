#!/usr/bin/python3
"""Abusive clients for `nvsmi-agent serve` tests. Prints one JSON object of what it saw.

  serve_abuse.py PORT many N        N connections at once, each sending a whole request as soon
                                    as it is open (on a busy machine, opening all N first could
                                    outlast the server's request timeout)
  serve_abuse.py PORT loris N SECS  N connections that send half a request head and then wait;
                                    a normal request is made meanwhile; reports how many of the
                                    half-open ones the server closed within SECS
  serve_abuse.py PORT cap N SECS    N idle connections, then a normal request while they are
                                    open, and then normal requests until one is answered (200)
                                    or SECS have passed; reports the first and the last
  serve_abuse.py PORT stall N PATH  N connections that ask for PATH and read only the status
                                    line; then reports those statuses and the server's own
                                    nvsmi_serve_pending_body_bytes while they are held
  serve_abuse.py PORT hold N SECS READY [HOST]
                                    N idle connections to HOST (127.0.0.1) held open for SECS
                                    (or until killed), each one the server closes opened again
                                    at once; writes READY (a file) once all N have been asked for
  serve_abuse.py PORT stallmetrics N PATH TRIES
                                    N connections that ask for PATH and never read, then
                                    TRIES requests for /metrics while they are held; reports
                                    each one's status and seconds
  serve_abuse.py PORT flood N SECS USER READY
                                    N threads asking /metrics as USER with wrong passwords for
                                    SECS or until SIGTERM; writes READY (a file) once answers
                                    come; reports the statuses they got (basic auth, plain HTTP)
  serve_abuse.py PORT badauth N SECS USER:PASSWORD
                                    N threads asking /metrics with wrong passwords for SECS,
                                    while the right USER:PASSWORD asks every 0.1 s; reports the
                                    statuses each got (basic auth; plain HTTP)
"""
import base64
import collections
import threading
import json
import os
import resource
import selectors
import signal
import socket
import sys
import time
import urllib.request

port = int(sys.argv[1])
mode = sys.argv[2]


def connect():
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    return s


def normal_request_or_refused():
    try:
        return normal_request()[0]
    except OSError:  # urllib's errors derive from it: reset, closed, refused
        return "refused"


def normal_request():
    start = time.monotonic()
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=60) as r:
        body = r.read()
        return r.status, len(body), time.monotonic() - start


if mode == "many":
    n = int(sys.argv[3])
    sockets = []
    for _ in range(n):
        s = connect()
        s.sendall(b"GET /api/v1/legacy HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        sockets.append(s)
    ok = 0
    for s in sockets:
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
        if data.startswith(b"HTTP/1.1 200"):
            ok += 1
        s.close()
    status, size, took = normal_request()
    print(json.dumps({"ok": ok, "after": status}))
elif mode == "loris":
    n, seconds = int(sys.argv[3]), float(sys.argv[4])
    sockets = [connect() for _ in range(n)]
    for s in sockets:
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
    status, size, took = normal_request()
    deadline = time.monotonic() + seconds
    closed = 0
    for s in sockets:
        s.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            s.sendall(b"a")
            if s.recv(1) == b"":
                closed += 1
        except (socket.timeout, TimeoutError):
            pass
        except OSError:
            closed += 1
        s.close()
    print(json.dumps({"status": status, "size": size, "took": took, "closed": closed}))
elif mode == "cap":
    n, seconds = int(sys.argv[3]), float(sys.argv[4])
    sockets = [connect() for _ in range(n)]
    time.sleep(0.3)
    while_held = normal_request_or_refused()
    deadline = time.monotonic() + seconds
    after = normal_request_or_refused()
    while after != 200 and time.monotonic() < deadline:
        time.sleep(0.1)
        after = normal_request_or_refused()
    print(json.dumps({"while_held": while_held, "after": after}))
elif mode == "hold":
    n, seconds, ready = int(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
    host = sys.argv[6] if len(sys.argv) > 6 else "127.0.0.1"
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, n + 64)), hard))
    selector = selectors.DefaultSelector()
    opened = 0

    def open_one():
        global opened
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        s.connect_ex((host, port))
        selector.register(s, selectors.EVENT_READ)  # data, the end, or an error: never while idle
        opened += 1

    for _ in range(n):
        open_one()
    with open(ready + ".part", "w") as f:
        f.write("holding\n")
    os.rename(ready + ".part", ready)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for key, _ in selector.select(timeout=1):
            s = key.fileobj
            try:
                if s.recv(4096):
                    continue
            except BlockingIOError:
                continue
            except OSError:
                pass
            selector.unregister(s)
            s.close()
            open_one()
    print(json.dumps({"opened": opened}))
elif mode == "stallmetrics":
    n, path, tries = int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
    sockets = []
    for _ in range(n):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.settimeout(30)
        s.connect(("127.0.0.1", port))
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
        sockets.append(s)
    seen = []
    for _ in range(tries):
        try:
            status, size, took = normal_request()
        except OSError as error:
            status, took = str(error), None
        seen.append([status, took])
    for s in sockets:
        s.close()
    print(json.dumps({"metrics": seen}))
elif mode in ("badauth", "flood"):
    n, seconds = int(sys.argv[3]), float(sys.argv[4])
    right = sys.argv[5] if mode == "badauth" else sys.argv[5] + ":"
    deadline = time.monotonic() + seconds
    wrong_seen, right_seen = collections.Counter(), collections.Counter()
    lock = threading.Lock()

    def ask(credentials):
        token = base64.b64encode(credentials.encode()).decode()
        request = urllib.request.Request(f"http://127.0.0.1:{port}/metrics",
                                         headers={"Authorization": "Basic " + token})
        try:
            with urllib.request.urlopen(request, timeout=60) as r:
                r.read()
                return r.status
        except urllib.error.HTTPError as error:
            return error.code
        except OSError:
            return "refused"

    stopped = threading.Event()  # flood: SIGTERM ends it early, with its report
    if mode == "flood":
        signal.signal(signal.SIGTERM, lambda *_: stopped.set())

    def flood(number):
        count = 0
        while time.monotonic() < deadline and not stopped.is_set():
            status = ask(f"{right.split(':')[0]}:wrong{number}-{count}")
            count += 1
            with lock:
                wrong_seen[str(status)] += 1
                if mode == "flood" and sum(wrong_seen.values()) == n:
                    with open(sys.argv[6] + ".part", "w") as f:
                        f.write("flooding\n")
                    os.rename(sys.argv[6] + ".part", sys.argv[6])

    threads = [threading.Thread(target=flood, args=(i,)) for i in range(n)]
    for thread in threads:
        thread.start()
    while mode == "badauth" and time.monotonic() < deadline:
        right_seen[str(ask(right))] += 1
        time.sleep(0.1)
    while any(thread.is_alive() for thread in threads):
        for thread in threads:
            thread.join(timeout=0.1)  # the main thread stays free to take the signal
    print(json.dumps({"wrong": wrong_seen, "right": right_seen}))
elif mode == "stall":
    n, path = int(sys.argv[3]), sys.argv[4]
    sockets = []
    for _ in range(n):
        # A small receive window, set before connecting, so that little of the body leaves
        # the server's side.
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.settimeout(30)
        s.connect(("127.0.0.1", port))
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
        sockets.append(s)
    statuses = collections.Counter()
    for s in sockets:
        line = b""
        while len(line) < 12:
            chunk = s.recv(12 - len(line))
            if not chunk:
                break
            line += chunk
        statuses[line.decode(errors="replace")[9:12] or "closed"] += 1
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=60) as r:
        metrics = r.read().decode()
    pending = [float(l.split()[1]) for l in metrics.splitlines()
               if l.startswith("nvsmi_serve_pending_body_bytes ")]
    for s in sockets:
        s.close()
    print(json.dumps({"statuses": statuses, "pending": pending[0] if pending else None}))
