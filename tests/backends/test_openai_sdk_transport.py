"""The openai backend's transport is the openai SDK (issue 36, docs/adr/0052): AsyncOpenAI clients on one event loop,
the SDK's own retries off. Through that path, against scripted servers on 127.0.0.1 (tests/servers.py): only the
bearer key is sent, a deadline is wall time and a request past it is cancelled (its connection closed), close()
cancels what is in flight, Retry-After is capped and told, an error body without end is cut, a failing replica is
set aside, usage is read, the live arena's streamed answer comes through the SDK, and the door still redacts."""

from __future__ import annotations

import json
import time

import pytest

from evaluator.backends import BackendError, Query, load_backend
from evaluator.backends.base import Answer, RetryWait, ServersDown
from evaluator.backends.openai_backend import MAX_WAIT_S, parse_openai_spec
from evaluator.backends.openai_stream import _Clients, sdk_version
from tests.server_process import completion
from tests.servers import Step, free_port, ok

SECRET = "sk-test-0123456789abcdefghijklmnop"
ADMIN = "sk-admin-0123456789abcdefghijklmnop"
DRIP = Step(200, completion("A"), drip=0.2)  # headers at once, then a byte every 0.2 s


def ask(backend, prompts: list[str], max_new_tokens: int = 4, timeout_s: float = 60.0):
    """Every prompt through the backend's stream (as the engine streams), the answers by key."""
    stream = backend.open_stream(max_new_tokens)
    got: dict[int, Answer] = {}
    try:
        for key, prompt in enumerate(prompts):
            stream.send(key, Query(prompt))
        deadline = time.monotonic() + timeout_s
        while len(got) < len(prompts) and time.monotonic() < deadline:
            for answer in stream.answers(0.1):
                got[answer.key] = answer
    finally:
        stream.close()
    return got


def eventually(condition, timeout_s: float = 15.0) -> bool:
    """Whether `condition()` holds within the bound (a behaviour that takes a moment, not a measured time)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def test_requests_go_through_the_sdk_with_the_bearer_key_only(serve, monkeypatch):
    """The SDK would also send $OPENAI_ADMIN_KEY to whatever server the spec names, and its platform report."""
    import openai

    monkeypatch.setenv("VLMDESK_TEST_KEY", SECRET)
    monkeypatch.setenv("OPENAI_ADMIN_KEY", ADMIN)
    server = serve([ok("C")])
    backend = parse_openai_spec(f"m@{server.url}?key_env=VLMDESK_TEST_KEY")
    assert isinstance(backend._clients, _Clients) and SECRET not in repr(backend._clients)
    assert ask(backend, ["Which one?"])[0].text == "C"
    assert isinstance(backend._clients[0], openai.AsyncOpenAI) and backend._clients[0].max_retries == 0
    headers = server.requests[0]["headers"]
    assert headers["authorization"] == f"Bearer {SECRET}"
    assert not any(ADMIN in value for value in headers.values())
    assert not any(name.startswith("x-stainless") for name in headers)
    assert headers["user-agent"] == "vlmdesk"
    assert sdk_version() == openai.__version__


def test_the_sdk_never_retries_by_itself(serve):
    server = serve([Step(500, {"error": {"message": "down for a moment"}})])
    backend = parse_openai_spec(f"m@{server.url}?retries=0")
    with pytest.raises(ServersDown, match=r"after 1 attempt; last error: HTTP 500: down for a moment"):
        ask(backend, ["q"])
    assert server.count == 1


def test_a_drip_past_the_deadline_fails_in_wall_time_and_its_connection_is_closed(serve):
    """The old transport left a dripping attempt's thread and socket behind; a cancelled task closes it."""
    server = serve([DRIP])
    backend = parse_openai_spec(f"m@{server.url}?timeout=1&retries=0")
    with pytest.raises(BackendError, match=r"after 1 attempt; last error: no answer within 1 s \(timeout\)"):
        ask(backend, ["q"])
    assert server.count == 1
    assert eventually(lambda: server.in_flight == 0), "the abandoned request still holds the server"


def test_close_cancels_the_requests_in_flight_without_waiting(serve):
    server = serve([DRIP])
    backend = parse_openai_spec(f"m@{server.url}?timeout=600&concurrency=3")
    stream = backend.open_stream(4)
    for key in range(3):
        stream.send(key, Query(f"q{key}"))
    assert eventually(lambda: server.in_flight == 3)
    stream.close()
    assert stream.load() == 0 and stream.answers(0.0) == []
    assert eventually(lambda: server.in_flight == 0), "close() left requests running"


def test_retry_after_is_capped_and_told_not_obeyed_by_the_sdk(serve):
    server = serve([Step(429, {"error": {"message": "slow down"}}, {"Retry-After": "999999"}), ok("D")])
    backend = parse_openai_spec(f"m@{server.url}?retries=2")
    waits: list[float] = []
    told: list[RetryWait] = []
    backend._wait_for = lambda seconds: waits.append(seconds) or 0.0  # type: ignore[method-assign,func-returns-value]
    backend.on_wait = told.append
    assert ask(backend, ["q"])[0].text == "D"
    assert waits == [MAX_WAIT_S] and server.count == 2
    assert [w.line() for w in told] == ["server asked to retry after 999999 s; waiting 60 s (try 2 of 3)"]


def test_an_error_body_without_end_is_cut_and_its_message_kept(serve):
    """A 500 announcing 1 TB: the SDK reads an error body whole before raising; ours is read to 64 KB."""
    server = serve([Step(500, {"error": {"message": "overloaded"}}, endless=True)])
    backend = parse_openai_spec(f"m@{server.url}?retries=0&timeout=60")
    with pytest.raises(ServersDown, match=r"last error: HTTP 500: overloaded"):
        ask(backend, ["q"])
    assert server.count == 1


def test_a_body_without_end_is_a_failed_attempt_after_16_mb(serve):
    server = serve([Step(200, completion("B"), endless=True), ok("B")])
    backend = parse_openai_spec(f"m@{server.url}?retries=1&backoff=0")
    assert ask(backend, ["q"])[0].text == "B"
    assert server.count == 2


def test_a_replica_that_refuses_is_set_aside_and_the_other_answers_everything(serve):
    live = serve([ok("A")])
    dead = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    backend = parse_openai_spec(f"m@{dead},{live.url}?concurrency=2&retries=3&backoff=30")
    backend._wait_for = lambda seconds: seconds  # type: ignore[method-assign]  # set aside for the whole back-off: no probe within the test
    got = ask(backend, [f"q{i}" for i in range(8)])
    assert sorted(got) == list(range(8)) and {a.text for a in got.values()} == {"A"}
    assert live.count == 8


def test_token_usage_comes_through(serve):
    server = serve([Step(200, completion("A", prompt_tokens=37))])
    (answer,) = ask(parse_openai_spec(f"m@{server.url}"), ["q"]).values()
    assert (answer.usage.prompt_tokens, answer.usage.completion_tokens) == (37, 1)


def sse(*pieces: str) -> str:
    events = [{"choices": [{"index": 0, "delta": {"content": p}}]} for p in pieces]
    return "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"


def test_the_live_arena_streams_through_the_sdk(serve):
    server = serve([Step(200, sse("A ", "cat ", "on a mat."))])
    backend = parse_openai_spec(f"m@{server.url}")
    assert list(backend.stream_text(Query("What?"), 16)) == ["A ", "A cat ", "A cat on a mat."]
    assert server.requests[0]["body"]["stream"] is True


def test_a_live_answer_that_fails_says_the_status_and_the_server(serve):
    server = serve([Step(503, {"error": {"message": "model is loading"}})])
    backend = parse_openai_spec(f"m@{server.url}")
    with pytest.raises(BackendError, match=r"answered HTTP 503 for model 'm': model is loading"):
        list(backend.stream_text(Query("What?"), 16))
    assert server.count == 1


def test_a_live_answer_past_its_deadline_fails_and_is_cancelled(serve):
    server = serve([Step(200, sse("A", "B", "C") * 50, drip=0.2)])
    backend = parse_openai_spec(f"m@{server.url}?timeout=1")
    with pytest.raises(BackendError, match=r"the streamed answer was not done within 1 s"):
        list(backend.stream_text(Query("What?"), 16))
    assert eventually(lambda: server.in_flight == 0)


def test_a_key_echoed_in_an_answer_is_redacted_at_the_door(serve, monkeypatch):
    monkeypatch.setenv("VLMDESK_TEST_KEY", SECRET)
    server = serve([ok(f"my key is {SECRET}")])
    door = load_backend(f"openai:m@{server.url}?key_env=VLMDESK_TEST_KEY")
    (said,) = door.generate([Query("q")], 8)
    text = str(said)
    assert SECRET not in text and text.startswith("my key is ")
