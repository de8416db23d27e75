#!/usr/bin/env python3
"""Hostile clients of castline's control API, on raw sockets (no HTTP library
smooths anything over). Each mode prints one JSON object on stdout.

  control_abuse.py PORT big-body MB          POST /swap announcing and streaming MB of body
  control_abuse.py PORT bad                  malformed and wrong requests, each on its own connection
  control_abuse.py PORT slow N SECONDS       N clients trickling a request head a byte at a time,
                                             while GET /status is timed beside them
  control_abuse.py PORT half-open SECONDS    a POST whose body never comes, held open SECONDS
  control_abuse.py PORT load RATE SECONDS    GET /status at a fixed rate over keep-alive connections
"""
import json
import socket
import sys
import threading
import time

HOST = "127.0.0.1"


def connect(port, timeout=10.0):
    s = socket.create_connection((HOST, port), timeout=timeout)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def read_response(s):
    """Status code and body of one response (Content-Length framing; chunked read to close)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(65536)
        if not chunk:
            return None, data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ")[1])
    length = None
    for line in lines[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length":
            length = int(value.strip())
    if length is not None:
        while len(body) < length:
            chunk = s.recv(65536)
            if not chunk:
                break
            body += chunk
        return status, body[:length]
    return status, body


def one_request(port, raw, timeout=10.0):
    started = time.monotonic()
    try:
        with connect(port, timeout) as s:
            s.sendall(raw)
            status, body = read_response(s)
    except (OSError, ValueError, IndexError) as error:
        return {"status": None, "error": str(error), "seconds": time.monotonic() - started}
    return {"status": status, "body": body[:300].decode("utf-8", "replace"), "seconds": time.monotonic() - started}


def big_body(port, megabytes):
    size = megabytes << 20
    started = time.monotonic()
    sent = 0
    status, body, error = None, b"", None
    with connect(port, 30) as s:
        s.sendall(b"POST /swap HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/yaml\r\n"
                  b"Content-Length: %d\r\n\r\n" % size)
        block = b"a: " + b"x" * 65530 + b"\n"
        try:
            while sent < size:
                s.sendall(block)
                sent += len(block)
        except OSError as e:  # the server answered and closed before the body was all sent
            error = str(e)
        try:
            status, body = read_response(s)
        except OSError as e:
            error = str(e)
    return {"status": status, "body": body[:300].decode("utf-8", "replace"), "sent_mb": sent / (1 << 20),
            "seconds": time.monotonic() - started, "error": error}


def bad(port):
    nested = b"[" * 100000 + b"]" * 100000
    # The YAML alias bomb: nine levels of nine aliases (9^9 nodes if expanded).
    bomb_lines = ["a: &a [" + ",".join(["x"] * 9) + "]"]
    for prev, cur in zip("abcdefghi", "bcdefghij"):
        bomb_lines.append(f"{cur}: &{cur} [" + ",".join(["*" + prev] * 9) + "]")
    bomb = "\n".join(bomb_lines).encode() + b"\n"
    cases = {
        "delete-status": b"DELETE /status HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
        "get-swap": b"GET /swap HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
        "no-route": b"GET /nope HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
        "not-http": b"HELLO THERE\r\n\r\n",
        "long-path": b"GET /" + b"a" * 100000 + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
        "huge-header": b"GET /status HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"b" * 200000 + b"\r\n\r\n",
        "delay-not-json": b"POST /delay HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5\r\n\r\nhello",
        "delay-nested-json": b"POST /delay HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: %d\r\n\r\n" % len(nested) + nested,
        "swap-alias-bomb": b"POST /swap HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: %d\r\n\r\n" % len(bomb) + bomb,
        # A file that is not a pipeline (a key file, /etc/passwd): refused unread, never quoted.
        "swap-not-pipeline": b"POST /swap HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
        % len(b'{"path": "/etc/passwd"}') + b'{"path": "/etc/passwd"}',
    }
    return {name: one_request(port, raw) for name, raw in cases.items()}


def slow(port, clients, seconds):
    head = b"GET /status HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"s" * 1000
    stop = threading.Event()
    closed_after = []
    started = time.monotonic()

    def trickle():
        try:
            with connect(port) as s:
                s.settimeout(0.05)
                for byte in head:
                    if stop.is_set():
                        return
                    s.sendall(bytes([byte]))
                    try:  # anything back (the end, or a 408) means the server has had enough
                        s.recv(4096)
                        closed_after.append(time.monotonic() - started)
                        return
                    except socket.timeout:
                        pass
                    time.sleep(0.05)
        except OSError:
            closed_after.append(time.monotonic() - started)

    threads = [threading.Thread(target=trickle, daemon=True) for _ in range(clients)]
    for t in threads:
        t.start()
    timings = []
    statuses = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        result = one_request(port, b"GET /status HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        timings.append(result["seconds"])
        statuses.append(result["status"])
        time.sleep(0.1)
    stop.set()
    return {"requests": len(timings), "statuses": sorted(set(map(str, statuses))), "max_seconds": max(timings),
            "closed": len(closed_after), "first_closed_s": min(closed_after) if closed_after else None}


def half_open(port, seconds):
    s = connect(port)
    s.sendall(b"POST /swap HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000\r\n\r\nversion: 1")
    print(json.dumps({"open": True}), flush=True)
    time.sleep(seconds)
    s.close()
    return {"closed": True}


def load(port, rate, seconds, connections=8):
    """GET /status at `rate` per second in total, spread over keep-alive connections."""
    lock = threading.Lock()
    latencies, statuses, errors = [], {}, []
    per_connection = rate / connections
    start = time.monotonic() + 0.2

    def client(index):
        interval = 1.0 / per_connection
        next_at = start + index * interval / connections
        s = None
        sent = 0
        while True:
            now = time.monotonic()
            if next_at >= start + seconds:
                break
            if now < next_at:
                time.sleep(next_at - now)
            try:
                if s is None:
                    s = connect(port, 5)
                began = time.monotonic()
                s.sendall(b"GET /status HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                status, _ = read_response(s)
                took = time.monotonic() - began
                with lock:
                    latencies.append(took)
                    statuses[str(status)] = statuses.get(str(status), 0) + 1
                if status is None:
                    s.close()
                    s = None
            except OSError as error:
                with lock:
                    errors.append(str(error))
                if s is not None:
                    s.close()
                s = None
            sent += 1
            next_at += interval
        if s is not None:
            s.close()

    threads = [threading.Thread(target=client, args=(i,)) for i in range(connections)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - start
    latencies.sort()

    def pick(q):
        return latencies[min(len(latencies) - 1, int(q * len(latencies)))] if latencies else None

    return {"requests": len(latencies), "rate": len(latencies) / elapsed, "statuses": statuses,
            "errors": len(errors), "first_error": errors[0] if errors else None,
            "p50_ms": pick(0.5) * 1000 if latencies else None, "p99_ms": pick(0.99) * 1000 if latencies else None,
            "max_ms": latencies[-1] * 1000 if latencies else None}


def main():
    port, mode, rest = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
    if mode == "big-body":
        result = big_body(port, int(rest[0]))
    elif mode == "bad":
        result = bad(port)
    elif mode == "slow":
        result = slow(port, int(rest[0]), float(rest[1]))
    elif mode == "half-open":
        result = half_open(port, float(rest[0]))
    elif mode == "load":
        result = load(port, float(rest[0]), float(rest[1]))
    else:
        sys.exit("unknown mode " + mode)
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
