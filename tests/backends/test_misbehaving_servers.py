"""Servers that misbehave (issue 22 §2): a server that drips its answer a byte at a time, Cancel (SIGTERM) and
Ctrl-C (SIGINT) while requests hang or wait, and `Retry-After: 999999` — against the scripted server of
tests/servers.py on 127.0.0.1 and real `vlmdesk run` processes."""

from __future__ import annotations

import json
import os
import queue
import signal
import sqlite3
import subprocess
import sys
import threading
import time

import pytest

from evaluator.backends import BackendError, Query, load_backend
from evaluator.backends.openai_backend import MAX_TOTAL_WAIT_S, MAX_WAIT_S, parse_openai_spec
from evaluator.engine.progress import WaitEvent, read_event
from tests.servers import Step, completion, first_then, ok
from vlmdesk.demo import ensure_demo

DRIP = Step(200, completion("A"), drip=0.5)  # headers at once, then one byte every 0.5 s
SLOW_DOWN = Step(429, {"error": {"message": "slow down"}}, {"Retry-After": "999999"})


# ---- a deadline is wall time for the whole request ----------------------------------------------------------


def test_a_dripping_server_fails_the_request_after_timeout_seconds_of_wall_time(serve):
    server = serve([DRIP])
    backend = load_backend(f"openai:m@{server.url}?timeout=2&retries=0")
    started = time.monotonic()
    with pytest.raises(BackendError, match=r"after 1 attempt; last error: no answer within 2 s \(timeout\)"):
        backend.generate([Query("q")], 2)
    assert 2.0 <= time.monotonic() - started < 4.0  # the deadline, not the gap between two bytes (0.5 s)
    assert server.count == 1


def test_a_drip_is_retried_and_a_good_answer_after_it_is_taken(serve):
    server = serve([DRIP, ok("C")])
    backend = load_backend(f"openai:m@{server.url}?timeout=1&retries=1&backoff=0")
    assert backend.generate([Query("q")], 2) == ["C"]
    assert server.count == 2


# ---- Retry-After: each wait and all waits capped, and said ----------------------------------------------------


def test_retry_after_999999_waits_a_capped_minute_twice_then_fails_saying_why(serve):
    server = serve([SLOW_DOWN])
    backend = parse_openai_spec(f"m@{server.url}")  # the default retries (4)
    waits, told = [], []
    backend._wait_for = lambda seconds: waits.append(seconds) or 0.0
    backend.on_wait = told.append
    with pytest.raises(BackendError) as err:
        backend.generate([Query("q")], 2)
    assert waits == [MAX_WAIT_S, MAX_WAIT_S] and sum(waits) == MAX_TOTAL_WAIT_S == 120.0
    assert server.count == 3
    message = str(err.value)
    assert "after 3 attempts (no more retries: one request waits 120 s in all at most)" in message
    assert "HTTP 429: slow down" in message
    assert [w.line() for w in told] == [
        "server asked to retry after 999999 s; waiting 60 s (try 2 of 5)",
        "server asked to retry after 999999 s; waiting 60 s (try 3 of 5)",
    ]


def test_a_wait_without_retry_after_says_the_error():
    from evaluator.backends.base import RetryWait

    wait = RetryWait("http://h/v1", 0, "HTTP 503: model is loading", None, 2.25, 2, 5)
    assert wait.line() == "HTTP 503: model is loading; waiting 2.2 s (try 2 of 5)"
    event = WaitEvent.of(7, wait)
    assert read_event(json.loads(json.dumps(event.to_json()))) == event
    assert event.to_json()["event"] == "wait" and event.to_json()["retry_after_s"] is None


# ---- Cancel and Ctrl-C end a real `vlmdesk run` within 2 s --------------------------------------------------


def _ws(tmp_path):
    from db import open_workspace

    path = tmp_path / "ws.sqlite"
    with open_workspace(path) as ws:
        ensure_demo(ws)
    return path


def _start(path, *args, json_progress=False):
    cmd = [sys.executable, "-m", "vlmdesk", "--workspace", str(path), "run", *args]
    return subprocess.Popen(
        cmd + (["--json-progress"] if json_progress else []),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "TQDM_DISABLE": "1"},
    )


def _lines(stream) -> queue.Queue:
    """The stream's lines, read by a thread, so a test can wait for one with a bound."""
    found: queue.Queue = queue.Queue()

    def read():
        for line in stream:
            found.put(line)
        found.put(None)

    threading.Thread(target=read, daemon=True).start()
    return found


def _wait_for(lines: queue.Queue, test, timeout=60.0) -> str:
    deadline = time.monotonic() + timeout
    seen = []
    while time.monotonic() < deadline:
        try:
            line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            break
        if line is None:
            break
        seen.append(line)
        if test(line):
            return line
    pytest.fail(f"not seen within {timeout} s; lines: {seen!r}")


def _stop(proc, sig) -> float:
    """Send `sig`; seconds until the process has exited."""
    started = time.monotonic()
    proc.send_signal(sig)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        pytest.fail(f"still running 30 s after {sig!r}")
    return time.monotonic() - started


def _passes(path, run_id):
    with sqlite3.connect(path) as conn:
        return sorted(
            conn.execute(
                "SELECT item_id, pass, response, choice, correct FROM predictions WHERE run_id = ?", (run_id,)
            ).fetchall()
        )


def _status(path, run_id):
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT status FROM runs WHERE id = ?", (run_id,)).fetchone()[0]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_cancel_ends_a_run_whose_requests_drip_within_2_s_and_resume_continues_exactly(tmp_path, serve, sig):
    path = _ws(tmp_path)
    answered = 4  # the first four requests are answered: two batches of two stored; then every request drips
    first_then_drip = first_then(answered, lambda text: "A", lambda text: DRIP)

    server = serve(respond=first_then_drip)
    spec = f"openai:m@{server.url}?concurrency=2&timeout=60"  # a long deadline: only Cancel ends these requests
    args = ["--bench", "demo", "--model", spec, "--limit", "6", "--batch-size", "2"]
    proc = _start(path, *args, json_progress=True)
    out = _lines(proc.stdout)
    _wait_for(out, lambda line: '"passes_done": 4' in line)
    deadline = time.monotonic() + 30
    while server.count < answered + 2 and time.monotonic() < deadline:  # both requests of batch 3 hang
        time.sleep(0.05)
    assert server.count == answered + 2 and server.in_flight == 2
    took = _stop(proc, sig)
    err = proc.stderr.read()
    assert took < 2.0, (took, err)
    assert proc.returncode == 130, err
    assert "run 1 interrupted; continue with: vlmdesk run --resume 1" in err
    stored = _passes(path, 1)
    assert len(stored) == answered and _status(path, 1) == "interrupted"

    # Resume against a server that answers: only the passes not stored are asked, none twice.
    server.respond = lambda text: "A"
    before = server.count
    done = subprocess.run(
        [sys.executable, "-m", "vlmdesk", "--workspace", str(path), "run", "--resume", "1"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    resumed = _passes(path, 1)
    assert set(stored) <= set(resumed) and server.count - before == len(resumed) - len(stored)
    # Exactly the passes of the same run never interrupted.
    fresh = subprocess.run(
        [sys.executable, "-m", "vlmdesk", "--workspace", str(path), "run", *args, "--new", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert fresh.returncode == 0, fresh.stderr
    assert resumed == _passes(path, json.loads(fresh.stdout)["run_id"])


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_retry_after_999999_is_said_in_the_progress_events_and_cancel_ends_the_wait(tmp_path, serve, sig):
    path = _ws(tmp_path)
    server = serve([SLOW_DOWN])
    proc = _start(
        path, "--bench", "demo", "--model", f"openai:m@{server.url}?concurrency=1", "--limit", "1", "--json-progress"
    )
    out = _lines(proc.stdout)
    line = _wait_for(out, lambda line: '"event": "wait"' in line)
    event = read_event(json.loads(line))
    assert isinstance(event, WaitEvent)
    assert (event.run_id, event.retry_after_s, event.wait_s, event.attempt, event.attempts) == (1, 999999, 60, 2, 5)
    assert event.message == "server asked to retry after 999999 s; waiting 60 s (try 2 of 5)"
    assert event.reason == "HTTP 429: slow down" and event.server == server.url
    took = _stop(proc, sig)
    err = proc.stderr.read()
    assert took < 2.0 and proc.returncode == 130, (took, err)
    assert "run 1 interrupted; continue with: vlmdesk run --resume 1" in err


def test_the_terminal_says_what_a_run_waits_for(tmp_path, serve):
    path = _ws(tmp_path)
    server = serve([SLOW_DOWN])
    proc = _start(path, "--bench", "demo", "--model", f"openai:m@{server.url}?concurrency=1", "--limit", "1")
    err = _lines(proc.stderr)
    _wait_for(err, lambda line: "run 1: server asked to retry after 999999 s; waiting 60 s (try 2 of 5)" in line)
    assert _stop(proc, signal.SIGTERM) < 2.0 and proc.returncode == 130
