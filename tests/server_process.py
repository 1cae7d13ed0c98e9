"""A scripted OpenAI-compatible server in a process of its own, for benches and tests that must not share the
client's CPU (tests/servers.py's FaultServer runs in a thread of the client's process).

    python -m tests.server_process --port 0 --latency-ms 100 [--jitter-mean-ms 160 --seed 1] [--answer A]
                                   [--slow-after N --slow-ms M]

`POST /v1/chat/completions` answers a chat completion with `--answer` (`hash`: a letter A–D by a hash of the
request's text; its `usage`: the words of the request's text
as prompt tokens, one completion token) after latency + Exp(mean = jitter) seconds (seeded; no jitter when its
mean is 0); after `--slow-after` requests every answer takes `--slow-ms` more (a slowed replica). When listening,
it prints one line `READY http://127.0.0.1:PORT/v1` to stdout. `GET /stats` answers JSON: requests, max_in_flight,
in_flight_seconds (the integral of the in-flight count over time: the sum of each request's time from arrival to the
end of its answer), first_arrival and last_done (time.monotonic() seconds, system-wide on Linux, so comparable
between processes; null before the first request) and cpu_seconds (this process's CPU time); `POST /reset` zeroes
them and seeds the latencies afresh, so every run after a reset meets the same sequence. Bodies over MAX_BODY
bytes, or without a Content-Length, are refused; any other path is a 404.

`ServerProcess(latency_ms=..., jitter_mean_ms=..., seed=...)` starts one (a context manager): `.url`, `.stats()`,
`.reset()`, `.kill()` (SIGKILL: a replica that dies mid-run), `.close()`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

MAX_BODY = 8 * 1024 * 1024  # bytes of one request body (an image or two as base64)
READY_TIMEOUT_S = 10.0
ROOT = Path(__file__).resolve().parents[1]


class Stats:
    """What the server saw, under one lock."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        self.cpu_at_reset = time.process_time()
        self.requests = self.in_flight = self.max_in_flight = 0
        self.in_flight_seconds = 0.0
        self.first_arrival: float | None = None
        self.last_done: float | None = None

    def arrive(self) -> tuple[float, int]:
        """(the arrival time, how many requests came before this one)."""
        now = time.monotonic()
        with self.lock:
            n = self.requests
            self.requests += 1
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            if self.first_arrival is None:
                self.first_arrival = now
        return now, n

    def done(self, arrived: float) -> None:
        now = time.monotonic()
        with self.lock:
            self.in_flight = max(self.in_flight - 1, 0)
            self.in_flight_seconds += now - arrived
            self.last_done = now if self.last_done is None else max(self.last_done, now)

    def as_dict(self) -> dict[str, Any]:
        with self.lock:
            return {
                "requests": self.requests,
                "in_flight": self.in_flight,
                "max_in_flight": self.max_in_flight,
                "in_flight_seconds": self.in_flight_seconds,
                "first_arrival": self.first_arrival,
                "last_done": self.last_done,
                "cpu_seconds": time.process_time() - self.cpu_at_reset,
            }


class QuietServer(ThreadingHTTPServer):
    """The tests' threaded HTTP server. Quiet about a client that hung up: http.server prints the traceback to
    sys.stderr from its own thread, where it lands in whatever a test is capturing at that moment (an error line
    compared whole). Its listen backlog lets 128 clients connect at once without waiting for SYN retries."""

    daemon_threads = True
    request_queue_size = 256

    def handle_error(self, request, client_address) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


def answer_for(answer: str, body: Any) -> str:
    """The answer to a request: `answer` itself, or for "hash" a letter A–D chosen by a hash of the request's last
    text part (tests/backends/test_replicas.letter_for), so each pass has an answer of its own."""
    if answer != "hash":
        return answer
    text = ""
    messages = body.get("messages") if isinstance(body, dict) else None
    content = (
        messages[-1].get("content")
        if isinstance(messages, list) and messages and isinstance(messages[-1], dict)
        else None
    )
    if isinstance(content, str):
        text = content
    elif isinstance(content, list):
        texts = [p.get("text") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)]
        text = texts[-1] if texts else ""
    return "ABCD"[hashlib.sha256(text.encode()).digest()[0] % 4]


def words_of(body: Any) -> int:
    """The words in the text parts of a chat request's messages."""
    words = 0
    messages = body.get("messages") if isinstance(body, dict) else None
    for message in messages if isinstance(messages, list) else ():
        content = message.get("content") if isinstance(message, dict) else None
        parts = [content] if isinstance(content, str) else content if isinstance(content, list) else []
        for part in parts:
            text = part if isinstance(part, str) else part.get("text") if isinstance(part, dict) else None
            if isinstance(text, str):
                words += len(text.split())
    return words


def completion(text: str | None, prompt_tokens: int = 1) -> dict[str, Any]:
    """A chat completion answering `text` (None: a malformed one), its usage `prompt_tokens` + 1 completion token
    (tests/servers.py's scripted answers are these too)."""
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": 1, "total_tokens": prompt_tokens + 1},
    }


def make_server(
    port: int,
    *,
    latency_ms: float,
    jitter_mean_ms: float = 0.0,
    seed: int = 0,
    answer: str = "A",
    slow_after: int | None = None,
    slow_ms: float = 0.0,
) -> tuple[QuietServer, Stats]:
    stats = Stats()
    rng = random.Random(seed)
    rng_lock = threading.Lock()

    def delay_for(n: int) -> float:
        seconds = latency_ms / 1000
        if jitter_mean_ms > 0:
            with rng_lock:
                seconds += rng.expovariate(1000 / jitter_mean_ms)
        if slow_after is not None and n >= slow_after:
            seconds += slow_ms / 1000
        return seconds

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as vLLM's server: the client does not reconnect per request
        # One send per answer, at once: with the headers and the body in two sends, the body waits (Nagle) for the
        # client's ACK of the headers, which a kept-alive connection delays up to 40 ms.
        wbufsize = -1  # buffered; http.server flushes after each request
        disable_nagle_algorithm = True

        def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
            if self.path.rstrip("/") in ("/stats", "/v1/stats"):
                self._json(200, stats.as_dict())
            elif self.path.rstrip("/") == "/v1/models":
                self._json(200, {"object": "list", "data": [{"id": "m", "object": "model"}]})
            else:
                self._json(404, {"error": {"message": f"no {self.path}"}})

        def do_POST(self) -> None:  # noqa: N802
            path = self.path.split("?", 1)[0].rstrip("/")
            if path in ("/reset", "/v1/reset"):
                self._read_body()
                with stats.lock:
                    stats.reset()
                with rng_lock:
                    rng.seed(seed)  # each run after a reset meets the same latencies, in order of arrival
                self._json(200, {"reset": True})
                return
            if path not in ("/v1/chat/completions", "/chat/completions"):  # exactly: a mangled base URL is a 404
                self.close_connection = True
                self._json(404, {"error": {"message": f"no {self.path}"}})
                return
            arrived, n = stats.arrive()
            try:
                raw = self._read_body()
                if raw is None:
                    return
                try:
                    body = json.loads(raw)
                except ValueError:
                    self._json(400, {"error": {"message": "the body is not JSON"}})
                    return
                time.sleep(delay_for(n))
                self._json(200, completion(answer_for(answer, body), words_of(body)))
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True  # the client gave up: nothing to answer
            finally:
                stats.done(arrived)

        def _read_body(self) -> bytes | None:
            """The body, or None when it was refused (answered, connection to be closed)."""
            length = self.headers.get("Content-Length")
            if length is None or not length.strip().isdigit():
                self.close_connection = True
                self._json(411, {"error": {"message": "a Content-Length is required"}})
                return None
            size = int(length)
            if size > MAX_BODY:
                self.close_connection = True
                self._json(413, {"error": {"message": f"body of {size} bytes; at most {MAX_BODY}"}})
                return None
            return self.rfile.read(size)

        def _json(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            if self.close_connection:
                self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:  # quiet: stdout carries the READY line only
            pass

    return QuietServer(("127.0.0.1", port), Handler), stats


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m tests.server_process", description=__doc__.split("\n\n")[0])
    ap.add_argument("--port", type=int, default=0, help="0: a free port")
    ap.add_argument("--latency-ms", type=float, default=100.0)
    ap.add_argument("--jitter-mean-ms", type=float, default=0.0, help="mean of the exponential added (0: none)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--answer", default="A")
    ap.add_argument("--slow-after", type=int, default=None, help="after this many requests, answers take longer")
    ap.add_argument("--slow-ms", type=float, default=0.0)
    args = ap.parse_args(argv)
    if args.latency_ms < 0 or args.jitter_mean_ms < 0 or args.slow_ms < 0:
        ap.error("times must not be negative")
    server, _ = make_server(
        args.port,
        latency_ms=args.latency_ms,
        jitter_mean_ms=args.jitter_mean_ms,
        seed=args.seed,
        answer=args.answer,
        slow_after=args.slow_after,
        slow_ms=args.slow_ms,
    )
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    print(f"READY http://127.0.0.1:{server.server_address[1]}/v1", flush=True)
    try:
        server.serve_forever(poll_interval=0.05)
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


# ---- the helper that starts one ---------------------------------------------------------------------------


class ServerProcess:
    """`python -m tests.server_process ...` in a child process; a context manager that stops it at exit."""

    def __init__(
        self,
        *,
        latency_ms: float = 100.0,
        jitter_mean_ms: float = 0.0,
        seed: int = 0,
        answer: str = "A",
        slow_after: int | None = None,
        slow_ms: float = 0.0,
        ready_timeout: float = READY_TIMEOUT_S,
    ):
        cmd = [sys.executable, "-m", "tests.server_process", "--port", "0", "--latency-ms", str(latency_ms)]
        cmd += ["--jitter-mean-ms", str(jitter_mean_ms), "--seed", str(seed), "--answer", answer]
        if slow_after is not None:
            cmd += ["--slow-after", str(slow_after), "--slow-ms", str(slow_ms)]
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
        self._stderr = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=self._stderr)
        try:
            self.url = self._ready(ready_timeout)
        except BaseException:
            self.close()
            raise
        self.root = self.url.removesuffix("/v1")

    def _ready(self, timeout: float) -> str:
        """The URL from the READY line, read within `timeout` seconds of wall time."""
        assert self.proc.stdout is not None
        fd, line, deadline = self.proc.stdout.fileno(), b"", time.monotonic() + timeout
        while b"\n" not in line:
            left = deadline - time.monotonic()
            if left <= 0:
                raise RuntimeError(f"server process: no READY line within {timeout:g} s{self._errors()}")
            readable, _, _ = select.select([fd], [], [], left)
            if readable:
                chunk = os.read(fd, 4096)
                if not chunk:
                    raise RuntimeError(f"server process exited ({self.proc.wait()}) before READY{self._errors()}")
                line += chunk
        first = line.split(b"\n", 1)[0].decode(errors="replace")
        if not first.startswith("READY "):
            raise RuntimeError(f"server process said {first!r}, not READY{self._errors()}")
        return first.removeprefix("READY ").strip()

    def _errors(self) -> str:
        self._stderr.seek(0)
        text = self._stderr.read()[-4000:].decode(errors="replace")
        return f"; its stderr:\n{text}" if text else ""

    def _call(self, method: str, path: str) -> dict[str, Any]:
        request = urllib.request.Request(self.root + path, method=method, data=b"" if method == "POST" else None)
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read())

    def stats(self) -> dict[str, Any]:
        return self._call("GET", "/stats")

    def reset(self) -> None:
        self._call("POST", "/reset")

    def kill(self) -> None:
        """SIGKILL: the server ends at once, its connections reset."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.kill()
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self._stderr.close()

    def __enter__(self) -> ServerProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


if __name__ == "__main__":
    main()
