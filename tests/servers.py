"""Local servers for tests: a scripted OpenAI-compatible fault server, and a real `transformers serve` process.

The fault server (http.server in a thread on 127.0.0.1) answers each request with the next step of its script
(the last step repeats) and records every request it received, so request and retry counts are exact. A step may
misbehave: wait before answering (`delay`), send its headers and then drip the body a byte at a time (`drip`), or
send a body without end (`endless`).
`transformers_serve` starts `transformers serve <model dir> --device cpu` on a free port and stops it afterwards.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from evaluator.backends.managed import free_port  # a port of 127.0.0.1 free now
from tests.server_process import QuietServer, completion

# ---- the fault server -------------------------------------------------------------------------------------


@dataclass
class Step:
    """One scripted answer: status, body (dict → JSON, str → as is), headers, a delay before answering, and `drip`:
    when set, the headers go at once and then the body one byte every `drip` seconds (until the server closes)."""

    status: int = 200
    body: dict | str | None = None
    headers: dict = field(default_factory=dict)
    delay: float = 0.0
    drip: float = 0.0
    endless: bool = False  # the body: `body`'s bytes, then spaces 64 KB at a time until the client goes away


def ok(text: str = "B") -> Step:
    return Step(200, completion(text))


class FaultServer:
    """Answers POSTs with its script's steps in order (the last one repeats); ``echo=True`` answers each request
    with its own last text part after ``delay_of(text)`` seconds; ``respond`` answers each with
    ``respond(its last text part)`` (a text, or a Step). Records requests and the most in flight at once."""

    def __init__(
        self, script: list[Step] | None = None, *, echo: bool = False, delay_of=lambda text: 0.0, respond=None
    ):
        self.script = list(script or [ok()])
        self.echo, self.delay_of = echo, delay_of
        self.respond = respond  # respond(text of the request) -> the reply's text: a scripted chat partner
        self.requests: list[dict] = []
        self.in_flight = self.max_in_flight = 0
        self.closed = threading.Event()  # ends every drip still going
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 (http.server's naming)
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                body = json.loads(raw) if raw else None
                with server._lock:
                    n = len(server.requests)
                    server.requests.append(
                        {"path": self.path, "body": body, "headers": {k.lower(): v for k, v in self.headers.items()}}
                    )
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                counted = True
                try:
                    if server.respond is not None:
                        reply = server.respond(text_of(body))
                        step = reply if isinstance(reply, Step) else Step(200, completion(reply))
                    elif server.echo:
                        text = text_of(body)
                        step = Step(200, completion(f"echo: {text}"), delay=server.delay_of(text))
                    else:
                        step = server.script[min(n, len(server.script) - 1)]
                    time.sleep(step.delay)
                    # Counted out before a whole answer leaves: the client may send its next request the moment it
                    # has this one, and that one must not find this one still counted (max_in_flight one too many).
                    # A dripping answer is still being given: it stays counted until it ends.
                    if not step.drip:
                        with server._lock:
                            server.in_flight -= 1
                            counted = False
                    self._answer(step)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up waiting (the timeout test): nothing to answer
                finally:
                    if counted:
                        with server._lock:
                            server.in_flight -= 1

            def _answer(self, step: Step):
                if isinstance(step.body, dict):
                    payload, ctype = json.dumps(step.body).encode(), "application/json"
                else:
                    payload, ctype = (step.body or "").encode(), "text/plain"
                self.send_response(step.status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(2**40 if step.endless else len(payload)))
                for key, value in step.headers.items():
                    self.send_header(key, value)
                self.end_headers()
                if step.endless:
                    self.wfile.write(payload)
                    while not server.closed.is_set():
                        self.wfile.write(b" " * 2**16)
                    return
                if not step.drip:
                    self.wfile.write(payload)
                    return
                self.wfile.flush()
                for i in range(len(payload)):
                    if server.closed.wait(step.drip):
                        return
                    self.wfile.write(payload[i : i + 1])
                    self.wfile.flush()

            def log_message(self, *args):  # keep the test output quiet
                pass

        self._httpd = QuietServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
        self._thread.start()

    def close(self):
        self.closed.set()
        self._httpd.shutdown()
        self._httpd.server_close()

    @property
    def count(self) -> int:
        return len(self.requests)


def first_then(n: int, first, then):
    """A `respond` function for FaultServer: `first(text)` answers the first n requests, `then(text)` the rest
    (counted across the server's threads)."""
    count = {"n": 0}
    lock = threading.Lock()

    def respond(text):
        with lock:
            count["n"] += 1
            seen = count["n"]
        return first(text) if seen <= n else then(text)

    return respond


def text_of(body: dict) -> str:
    """The question a chat request asks: its last message's text (a system message may come first)."""
    content = body["messages"][-1]["content"]
    if isinstance(content, str):
        return content
    return next((part["text"] for part in reversed(content) if part.get("type") == "text"), "")  # images may end it


@dataclass
class ServeProcess:
    base_url: str
    model: str
    error: str | None  # why the server is not answering, with its output; None when it is

    def running(self) -> tuple[str, str]:
        """(base_url, model) — or the test FAILS (never skips) with the server's output."""
        if self.error:
            pytest.fail(self.error, pytrace=False)
        return self.base_url, self.model


# No hub, and no PyPI "newer version available" check at CLI start (huggingface_hub's check_cli_update).
OFFLINE_ENV = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_HUB_DISABLE_UPDATE_CHECK": "1",
    "TOKENIZERS_PARALLELISM": "false",
}


def serve_command(python: str, model: str, port: int) -> list[str]:
    """`transformers serve <model> --device cpu` on 127.0.0.1:port, run by the Python `python`."""
    return [python, "-m", "transformers.cli.transformers", "serve", model, "--device", "cpu", "--host", "127.0.0.1",
            "--port", str(port)]  # fmt: skip


@contextlib.contextmanager
def transformers_serve(model_dir, log_dir: Path, *, startup_s: float = 120):
    """`transformers serve <model dir> --device cpu` on a free port; yields a ServeProcess, stops it at exit.

    The model is pinned on the command line (and preloaded), so requests must name it by that same path.
    """
    model = str(model_dir)
    port = free_port()
    log_path = Path(log_dir) / "server.log"
    env = dict(os.environ, **OFFLINE_ENV)
    cmd = serve_command(sys.executable, model, port)
    with open(log_path, "wb") as log_file:
        proc = subprocess.Popen(cmd, stdout=log_file, stderr=subprocess.STDOUT, env=env)
    base_url = f"http://127.0.0.1:{port}/v1"
    error = None
    deadline = time.monotonic() + startup_s
    try:
        while error is None:
            if proc.poll() is not None:
                error = f"exited with status {proc.returncode} before answering"
                break
            try:
                with urllib.request.urlopen(f"{base_url}/models", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                error = f"did not answer GET /v1/models within {startup_s:g} s"
            time.sleep(0.25)
        if error:
            output = log_path.read_text(errors="replace")[-4000:]
            error = f"`{' '.join(cmd)}` {error}; its output:\n{output}"
        yield ServeProcess(base_url, model, error)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
