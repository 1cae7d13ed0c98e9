"""tests/server_process.py: the scripted server in a process of its own answers the real openai client, counts what
it served, and a kill() ends it (the next request is a connection error)."""

from __future__ import annotations

import json
import time
import urllib.request

import pytest

from evaluator.backends.base import BackendError, Query, texts_of
from evaluator.backends.openai_backend import OpenAIBackend
from tests.server_process import ServerProcess, words_of


def test_answers_the_openai_client_and_counts_it_then_a_kill_ends_it():
    with ServerProcess(latency_ms=50, answer="B") as server:
        assert server.url.startswith("http://127.0.0.1:") and server.url.endswith("/v1")
        backend = OpenAIBackend("m", server.url, retries=0, timeout=10)
        t0 = time.monotonic()
        assert texts_of(backend.generate([Query("q one"), Query("q two")], 2)) == ["B", "B"]
        assert time.monotonic() - t0 >= 0.05

        stats = server.stats()
        assert stats["requests"] == 2
        assert 1 <= stats["max_in_flight"] <= 2
        assert stats["in_flight"] == 0
        assert stats["in_flight_seconds"] >= 2 * 0.05
        assert stats["first_arrival"] <= stats["last_done"]

        body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "three words here"}]}).encode()
        request = urllib.request.Request(server.url + "/chat/completions", data=body, method="POST")
        request.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(request, timeout=10) as response:
            answer = json.loads(response.read())
        assert answer["choices"][0]["message"]["content"] == "B"
        assert answer["usage"] == {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}

        server.reset()
        after = server.stats()
        assert 0 <= after.pop("cpu_seconds") < 1
        assert after == {
            "requests": 0,
            "in_flight": 0,
            "max_in_flight": 0,
            "in_flight_seconds": 0.0,
            "first_arrival": None,
            "last_done": None,
        }

        server.kill()
        assert server.proc.returncode is not None
        with pytest.raises(BackendError):
            backend.generate([Query("q")], 2)


def test_a_slowed_server_answers_later_after_n_requests():
    with ServerProcess(latency_ms=0, slow_after=1, slow_ms=300) as server:
        backend = OpenAIBackend("m", server.url, retries=0, concurrency=1)
        t0 = time.monotonic()
        backend.generate([Query("first")], 2)
        fast = time.monotonic() - t0
        t0 = time.monotonic()
        backend.generate([Query("second")], 2)
        assert time.monotonic() - t0 >= 0.3 > fast


def test_prompt_tokens_are_the_words_of_the_request_text():
    body = {"messages": [{"role": "user", "content": [{"type": "image_url"}, {"type": "text", "text": "a b  c"}]}]}
    assert words_of(body) == 3
    assert words_of({"messages": [{"role": "user", "content": "one two"}]}) == 2
    assert words_of({"nonsense": 1}) == 0 and words_of([1]) == 0


def test_a_kept_alive_connection_answers_without_a_delayed_ack():
    # The answer goes in one send: in two, the body would wait for the client's delayed ACK (40 ms on Linux) on
    # every request after a connection's first.
    with ServerProcess(latency_ms=0) as server:
        backend = OpenAIBackend("m", server.url, retries=0, concurrency=1)
        times = []
        for _ in range(20):
            t0 = time.perf_counter()
            backend.generate([Query("q")], 2)
            times.append(time.perf_counter() - t0)
        assert min(times[1:]) < 0.03, times
