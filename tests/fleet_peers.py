"""Hostile peers on loopback for `fleet`, `serve --fleet-hosts` and
`fleet --prometheus` (issue 40, item 2): what tests/test_fleet_peers.py attacks the fleet client
with. Each peer is a listening socket of its own; a connection gets its request read, then the
peer's answer, as fast as loopback takes it, until the client hangs up or the peer is closed.

- `chunk_line`: a chunked answer whose first chunk-size line never ends (hex digits forever);
- `trailer`: a chunked answer whose trailer never ends (a field line after another, forever);
- `headers`: headers that never end;
- `many_gpus`: a well-formed snapshot of GPU_COUNT tiny GPUs (`{"index":0}` each: 1.2 MB);
- `prometheus`: a Prometheus HTTP API whose answers are ~4 MB each (PROMETHEUS_ANSWER_BYTES):
  two agents of 8 GPUs each answer as a real one would, and a third, `hostile`, has as many
  GPUs as fit (about 25,000 series an answer), and `up` and the targets carry thousands of
  targets of another job.
"""
import json
import socket
import threading
import time
import urllib.parse

GPU_COUNT = 100_000
PROMETHEUS_ANSWER_BYTES = 4_000_000
PROMETHEUS_GOOD = ("good-1:9437", "good-2:9437")
PROMETHEUS_HOSTILE = "hostile:9437"

_FOREVER_BLOCK = 64 * 1024


def _chunk_line():
    yield (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
           b"Transfer-Encoding: chunked\r\n\r\n1")
    while True:
        yield b"0" * _FOREVER_BLOCK


def _trailer():
    yield (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
           b"Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n")
    while True:
        yield b"X-More: and more\r\n" * (_FOREVER_BLOCK // 18)


def _headers():
    yield b"HTTP/1.1 200 OK\r\n"
    while True:
        yield b"X-More: and more\r\n" * (_FOREVER_BLOCK // 18)


def many_gpus_body(count=GPU_COUNT):
    gpus = ",".join('{"index":0}' for _ in range(count))
    return ('{"schema":"nvsmi-agent.snapshot/1","timestamp":"2026-11-27T10:00:00Z",'
            f'"gpus":[{gpus}]}}').encode()


def _answer(body, status=200):
    return (f"HTTP/1.1 {status} X\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode() + body


class Peer:
    """A loopback listener that answers every connection with `answer(request)`: an iterable of
    byte blocks, sent until it ends, the client hangs up or the peer is closed."""

    def __init__(self, answer):
        self.answer = answer
        self.closing = threading.Event()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(0.2)
        self.port = self.listener.getsockname()[1]
        self.connections = 0
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def host(self):
        return f"127.0.0.1:{self.port}"

    def _accept(self):
        while not self.closing.is_set():
            try:
                connection, _ = self.listener.accept()
            except OSError:
                continue
            self.connections += 1
            threading.Thread(target=self._serve, args=(connection,), daemon=True).start()

    def _serve(self, connection):
        with connection:
            connection.settimeout(10)
            request = b""
            try:
                while b"\r\n\r\n" not in request:
                    block = connection.recv(4096)
                    if not block:
                        return
                    request += block
                for block in self.answer(request):
                    if self.closing.is_set():
                        return
                    connection.sendall(block)
            except OSError:
                pass  # the client hung up: what the agent does at its bound

    def close(self):
        self.closing.set()
        self.listener.close()


def chunk_line_peer():
    return Peer(lambda request: _chunk_line())


def trailer_peer():
    return Peer(lambda request: _trailer())


def headers_peer():
    return Peer(lambda request: _headers())


def many_gpus_peer():
    body = _answer(many_gpus_body())
    return Peer(lambda request: [body])


# ---------------------------------------------------------------------------------------------
# The Prometheus

_GPU_QUERIES = {
    "nvsmi_gpu_state == 1": None,
    "nvsmi_gpu_utilization_ratio": "0.25",
    "nvsmi_gpu_memory_used_bytes": str(1024 * 1024 * 1024),
    "nvsmi_gpu_memory_total_bytes": str(80 * 1024 * 1024 * 1024),
    "nvsmi_gpu_power_draw_watts": "100",
    "nvsmi_gpu_temperature_celsius": "40",
    "nvsmi_gpu_user_processes": "1",
}


def _series(metric, value, now):
    return {"metric": metric, "value": [now, value]}


def _vector(series):
    return {"status": "success", "data": {"resultType": "vector", "result": series}}


def _padded(make_one, fixed, budget=PROMETHEUS_ANSWER_BYTES):
    """`fixed` series, then make_one(i) for i = 0, 1, ... while the answer stays in budget."""
    series = list(fixed)
    size = len(json.dumps(_vector(series)))
    index = 0
    while True:
        one = make_one(index)
        grown = size + len(json.dumps(one)) + 1
        if grown > budget:
            return series
        series.append(one)
        size = grown
        index += 1


def prometheus_answer(query, now):
    agents = PROMETHEUS_GOOD + (PROMETHEUS_HOSTILE,)
    if query == "nvsmi_up":
        return _vector([_series({"__name__": "nvsmi_up", "job": "nvsmi", "instance": i}, "1", now)
                        for i in agents])
    if query in ("up", "timestamp(up)"):
        value = str(now) if query == "timestamp(up)" else "1"
        fixed = [_series({"__name__": "up", "job": "nvsmi", "instance": i}, value, now)
                 for i in agents]
        return _vector(_padded(lambda n: _series(
            {"__name__": "up", "job": "node", "instance": f"node-{n}:9100"}, value, now), fixed))
    if query in _GPU_QUERIES:
        value = _GPU_QUERIES[query]

        def metric(instance, gpu):
            labels = {"job": "nvsmi", "instance": instance, "gpu": str(gpu),
                      "uuid": f"GPU-{instance}-{gpu}", "name": "NVIDIA H100 80GB HBM3"}
            if value is None:
                labels["state"] = "free"
            if query == "nvsmi_gpu_user_processes":
                labels["user"] = "alice"
            return labels

        fixed = [_series(metric(i, gpu), value or "1", now)
                 for i in PROMETHEUS_GOOD for gpu in range(8)]
        return _vector(_padded(
            lambda n: _series(metric(PROMETHEUS_HOSTILE, n), value or "1", now), fixed))
    return {"status": "error", "errorType": "bad_data", "error": "unknown query"}


def prometheus_targets(now):
    def target(instance, job):
        return {"labels": {"job": job, "instance": instance}, "lastError": "", "health": "up",
                "scrapeInterval": "15s", "lastScrape": now}

    fixed = [target(i, "nvsmi") for i in PROMETHEUS_GOOD + (PROMETHEUS_HOSTILE,)]
    targets = list(fixed)
    size = 100
    index = 0
    while True:
        one = target(f"node-{index}:9100", "node")
        size += len(json.dumps(one)) + 1
        if size > PROMETHEUS_ANSWER_BYTES:
            break
        targets.append(one)
        index += 1
    return {"status": "success", "data": {"activeTargets": targets, "droppedTargets": []}}


def prometheus_peer():
    """Answers are built once (they are the same whenever asked) and sent whole."""
    now = time.time()
    answers = {}
    for query in ("nvsmi_up", "up", "timestamp(up)", *_GPU_QUERIES):
        answers[query] = _answer(json.dumps(prometheus_answer(query, now)).encode())
    targets = _answer(json.dumps(prometheus_targets(now)).encode())

    def answer(request):
        target = request.split(b" ", 2)[1].decode("latin-1")
        path, _, query = target.partition("?")
        if path.endswith("/api/v1/targets"):
            return [targets]
        asked = urllib.parse.parse_qs(query).get("query", [""])[0]
        return [answers.get(asked, _answer(b'{"status":"error","error":"unknown"}', 400))]

    return Peer(answer)
