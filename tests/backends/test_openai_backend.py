"""The openai backend against a scripted fault server and a real `transformers serve` (both in tests/servers.py).

The fault server (http.server in a thread on 127.0.0.1) answers each request with the next step of its script
(the last step repeats) and records every request it received, so retry counts are exact. Backoff delays are
recorded, not waited: each backend's ``_sleep`` is replaced.
"""

from __future__ import annotations

import base64
import io
import json
import logging
import socket

import pytest
from PIL import Image

from evaluator.backends.base import Backend, BackendError, Query, texts_of
from evaluator.backends.openai_backend import OpenAIBackend, image_mime, parse_openai_spec
from tests.servers import Step, completion, ok, text_of, transformers_serve

pytestmark = pytest.mark.base  # also run in the base install (.ci/base-install)

SECRET = "sk-test-0123456789-very-secret"


def backend(url: str, *, retries: int = 4, timeout: float = 5.0, backoff: float = 0.01, **kw) -> OpenAIBackend:
    """A backend whose backoff pauses are recorded in ``.delays`` instead of waited."""
    b = OpenAIBackend("test-model", url, retries=retries, timeout=timeout, backoff=backoff, **kw)
    b.delays = []
    b._wait_for = lambda seconds: b.delays.append(seconds) or 0.0
    return b


def png_bytes(color=(200, 30, 30)) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (16, 12), color).save(buf, "PNG")
    return buf.getvalue()


def jpeg_bytes(color=(30, 30, 200)) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (16, 12), color).save(buf, "JPEG")
    return buf.getvalue()


# ---- what is sent ---------------------------------------------------------------------------------------


def test_request_carries_model_tokens_temperature_image_text_and_key(serve, monkeypatch, caplog):
    monkeypatch.setenv("VLMDESK_TEST_KEY", SECRET)
    server = serve([Step(500, {"error": {"message": "hiccup"}}), ok("A")])  # one retry, so something is logged
    b = parse_openai_spec(f"my-vlm@{server.url}?key_env=VLMDESK_TEST_KEY&retries=2&backoff=0.001")
    png = png_bytes()
    with caplog.at_level(logging.DEBUG):
        assert texts_of(b.generate([Query("Which option? A. cat B. dog", (png,), ("A", "B"))], max_new_tokens=7)) == [
            "A"
        ]

    assert server.count == 2
    req = server.requests[-1]
    assert req["path"] == "/v1/chat/completions"
    assert req["headers"]["authorization"] == f"Bearer {SECRET}"
    body = req["body"]
    assert body["model"] == "my-vlm"
    assert body["max_tokens"] == 7
    assert body["temperature"] == 0
    assert not body.get("stream")
    (message,) = body["messages"]
    assert message["role"] == "user"
    image_part, text_part = message["content"]
    assert image_part["type"] == "image_url"
    prefix = "data:image/png;base64,"
    assert image_part["image_url"]["url"].startswith(prefix)
    assert base64.b64decode(image_part["image_url"]["url"][len(prefix) :]) == png
    assert text_part == {"type": "text", "text": "Which option? A. cat B. dog"}

    described = json.dumps(b.describe())
    assert SECRET not in described and SECRET not in b.spec
    assert b.describe()["key_env"] == "VLMDESK_TEST_KEY"
    assert {"model", "base_url", "key_env", "concurrency", "timeout", "retries"} <= b.describe().keys()
    assert caplog.records, "the retry should have been logged"
    assert all(SECRET not in r.getMessage() for r in caplog.records)
    assert isinstance(b, Backend)


def test_jpeg_mime_several_images_and_text_only_query(serve):
    server = serve([ok("yes")])
    b = backend(server.url)
    png, jpg = png_bytes(), jpeg_bytes()
    assert texts_of(b.generate([Query("Same picture?", (jpg, png)), Query("Is the sky blue?")], 3)) == ["yes", "yes"]
    bodies = sorted(
        (r["body"] for r in server.requests), key=lambda body: isinstance(body["messages"][0]["content"], str)
    )
    parts = bodies[0]["messages"][0]["content"]
    assert [p["type"] for p in parts] == ["image_url", "image_url", "text"]
    assert parts[0]["image_url"]["url"].startswith("data:image/jpeg;base64,")
    assert parts[1]["image_url"]["url"].startswith("data:image/png;base64,")
    assert bodies[1]["messages"][0]["content"] == "Is the sky blue?"  # a text-only query sends just text


def test_unset_key_env_sends_dummy_key(serve, monkeypatch):
    monkeypatch.delenv("VLMDESK_UNSET_KEY", raising=False)
    server = serve([ok()])
    backend(server.url, key_env="VLMDESK_UNSET_KEY").generate([Query("q")], 2)
    assert server.requests[0]["headers"]["authorization"] == "Bearer EMPTY"


def test_default_key_env_is_openai_api_key(serve, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    server = serve([ok()])
    b = backend(server.url)
    b.generate([Query("q")], 2)
    assert server.requests[0]["headers"]["authorization"] == f"Bearer {SECRET}"
    assert b.describe()["key_env"] == "OPENAI_API_KEY" and SECRET not in json.dumps(b.describe())


@pytest.mark.parametrize(
    "data, mime",
    [
        (png_bytes(), "image/png"),
        (jpeg_bytes(), "image/jpeg"),
        (b"GIF89a....", "image/gif"),
        (b"RIFF\x00\x00\x00\x00WEBPVP8 ", "image/webp"),
        (b"BM\x00\x00", "image/bmp"),
    ],
)
def test_image_mime_from_bytes(data, mime):
    assert image_mime(data) == mime


def test_unknown_image_format_fails_before_any_request(serve):
    server = serve([ok()])
    with pytest.raises(BackendError, match="unknown image format"):
        backend(server.url).generate([Query("q", (png_bytes(),)), Query("q", (b"not an image",))], 2)
    assert server.count == 0


# ---- retries ----------------------------------------------------------------------------------------------


def test_429_with_retry_after_zero_is_retried_at_once(serve):
    server = serve([Step(429, {"error": {"message": "slow down"}}, {"Retry-After": "0"}), ok("C")])
    b = backend(server.url, backoff=5.0)  # a large backoff that Retry-After must override
    assert texts_of(b.generate([Query("q")], 2)) == ["C"]
    assert server.count == 2
    assert b.delays == [0.0]


def test_retry_after_is_capped(serve):
    server = serve([Step(429, {"error": {"message": "slow down"}}, {"Retry-After": "3600"}), ok("C")])
    b = backend(server.url, max_retry_after=2.0)
    assert texts_of(b.generate([Query("q")], 2)) == ["C"]
    assert b.delays == [2.0]


def test_500_twice_then_ok_with_exponential_backoff(serve):
    server = serve([Step(500, {"error": {"message": "boom"}}), Step(500, "Internal Server Error"), ok("D")])
    b = backend(server.url)
    assert texts_of(b.generate([Query("q")], 2)) == ["D"]
    assert server.count == 3
    first, second = b.delays
    assert 0.01 <= first <= 0.0125 and 0.02 <= second <= 0.025  # base·2^k plus up to 25 % jitter


def test_response_slower_than_timeout_is_retried(serve):
    server = serve([Step(200, completion("late"), delay=1.5), ok("E")])
    b = backend(server.url, timeout=0.3)
    assert texts_of(b.generate([Query("q")], 2)) == ["E"]
    assert server.count == 2


@pytest.mark.parametrize(
    "bad",
    [
        Step(200, "this is not json"),
        Step(200, {"id": "x", "object": "chat.completion"}),
        Step(200, {"choices": []}),
        Step(200, completion(None)),
    ],
    ids=["not-json", "no-choices", "empty-choices", "null-content"],
)
def test_malformed_body_is_retried(serve, bad):
    server = serve([bad, ok("F")])
    assert texts_of(backend(server.url).generate([Query("q")], 2)) == ["F"]
    assert server.count == 2


def test_always_malformed_gives_up_with_malformed_in_the_message(serve):
    server = serve([Step(200, "<html>proxy error</html>")])
    with pytest.raises(BackendError, match="malformed response") as err:
        backend(server.url, retries=1).generate([Query("q")], 2)
    assert server.count == 2
    assert "2 attempts" in str(err.value)


@pytest.mark.parametrize("status", [400, 401, 404])
def test_client_errors_are_not_retried_and_read_well(serve, status):
    server = serve(
        [
            Step(
                status,
                {"error": {"message": f"Incorrect API key provided (case {status})", "type": "invalid_request_error"}},
            )
        ]
    )
    with pytest.raises(BackendError) as err:
        backend(server.url).generate([Query("q")], 2)
    assert server.count == 1
    message = str(err.value)
    assert "\n" not in message
    assert str(status) in message
    assert f"Incorrect API key provided (case {status})" in message
    assert server.url in message and "test-model" in message


def test_fastapi_style_detail_is_the_message(serve):
    server = serve([Step(422, {"detail": "Unexpected fields in the request: {'foo'}"})])
    with pytest.raises(BackendError, match=r"HTTP 422.*Unexpected fields in the request"):
        backend(server.url).generate([Query("q")], 2)
    assert server.count == 1


def test_always_503_gives_up_after_all_attempts(serve):
    server = serve([Step(503, {"error": {"message": "model is loading"}})])
    b = backend(server.url, retries=3)
    with pytest.raises(BackendError) as err:
        b.generate([Query("q")], 2)
    assert server.count == 4  # 1 try + 3 retries
    assert len(b.delays) == 3
    message = str(err.value)
    assert "4 attempts" in message and "503" in message and "model is loading" in message


def test_unreachable_server_is_a_connection_error():
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(BackendError, match=r"after 3 attempts; last error: connection error"):
        backend(f"http://127.0.0.1:{port}/v1", retries=2).generate([Query("q")], 2)


# ---- concurrency and order --------------------------------------------------------------------------------


def test_concurrency_is_bounded_and_outputs_keep_input_order(serve):
    # Later queries answer faster, so completion order differs from input order.
    server = serve(echo=True, delay_of=lambda text: 0.3 - 0.04 * int(text.split()[-1]))
    b = backend(server.url, concurrency=2)
    prompts = [f"question {i}" for i in range(6)]
    queries = [Query(p, (png_bytes(),)) if i % 2 else Query(p) for i, p in enumerate(prompts)]
    assert texts_of(b.generate(queries, 4)) == [f"echo: {p}" for p in prompts]
    assert server.count == 6
    assert server.max_in_flight == 2


def test_one_failing_query_fails_the_batch_without_hanging(serve):
    server = serve([ok("x"), Step(400, {"error": {"message": "bad image"}}), ok("y")])
    with pytest.raises(BackendError, match="bad image"):
        backend(server.url, concurrency=1).generate([Query(f"q{i}") for i in range(5)], 2)
    assert server.count == 2  # the queries after the failing one were never sent


def test_empty_batch_sends_nothing(serve):
    server = serve()
    assert texts_of(backend(server.url).generate([], 5)) == []
    assert server.count == 0


# ---- specs ------------------------------------------------------------------------------------------------


def test_spec_defaults_and_official_endpoint():
    b = parse_openai_spec("gpt-4o-mini")
    assert b.base_url is None and b.model == "gpt-4o-mini"
    d = b.describe()
    assert (d["key_env"], d["concurrency"], d["timeout"], d["retries"], d["temperature"]) == (
        "OPENAI_API_KEY",
        8,
        60.0,
        4,
        0.0,
    )
    assert b.spec == "openai:gpt-4o-mini"


def test_spec_options_round_trip():
    spec = "openai:org/model@dev@http://127.0.0.1:9/v1?key_env=MY_KEY&concurrency=3&timeout=12.5&retries=0"
    b = parse_openai_spec(spec[len("openai:") :])
    assert (b.model, b.base_url, b.key_env, b.concurrency, b.timeout, b.retries) == (
        "org/model@dev",
        "http://127.0.0.1:9/v1",
        "MY_KEY",
        3,
        12.5,
        0,
    )
    assert b.spec == spec
    assert parse_openai_spec(b.spec[len("openai:") :]).describe() == b.describe()


@pytest.mark.parametrize(
    "rest, match",
    [
        ("m@http://h/v1?colour=red", "unknown option 'colour'"),
        ("m@http://h/v1?concurrency=0", "concurrency must be at least 1"),
        ("m@http://h/v1?concurrency=two", "concurrency must be a whole number"),
        ("m@http://h/v1?timeout=soon", "timeout must be a number"),
        ("m@localhost:8000/v1", "must start with http:// or https://"),
        ("m@http://user:pw@h/v1", "must not carry a password"),
        ("m@http://h/v1?key_env=MY-KEY!", "key_env must name an environment variable"),
        ("@http://h/v1", "needs a model name"),
    ],
)
def test_bad_specs_say_what_is_wrong(rest, match):
    with pytest.raises(BackendError, match=match):
        parse_openai_spec(rest)


# ---- a real server: transformers serve with a tiny random LLaVA -------------------------------------------


@pytest.fixture(scope="module")
def transformers_server(tiny_llava_dir, tmp_path_factory):
    """`transformers serve <tiny llava dir> --device cpu` on a free port, killed at teardown (tests/servers.py)."""
    with transformers_serve(tiny_llava_dir, tmp_path_factory.mktemp("transformers_serve")) as server:
        yield server


def test_transformers_serve_answers_image_and_text_queries(transformers_server):
    base_url, model = transformers_server.running()
    b = OpenAIBackend(model, base_url, concurrency=3, timeout=60, retries=1, backoff=0.1)
    queries = [
        Query("What is shown in the image?", (png_bytes(),)),
        Query("Is there a cat in the image? Please answer yes or no.", (jpeg_bytes(),)),
        Query("The answer is A. The answer is"),
    ]  # text-only
    answers = b.generate(queries, max_new_tokens=6)
    assert len(answers) == 3
    assert all(isinstance(a.text, str) and a.text for a in answers), answers
    # transformers serve says why each answer stopped: 6 tokens of a random model's text end at the budget
    assert all(a.finish_reason in ("length", "stop") for a in answers), answers


def test_transformers_serve_rejects_another_model_name_without_retrying(transformers_server):
    base_url, _ = transformers_server.running()
    b = backend(base_url)
    b.model = "some-other-model"
    with pytest.raises(BackendError, match=r"HTTP 400.*pinned") as err:
        b.generate([Query("q")], 2)
    assert b.delays == []
    assert base_url in str(err.value)


# ---- scheduling with the engine -------------------------------------------------------------------------


def _bench_workspace(tmp_path, n: int):
    from db import open_workspace
    from evaluator.formats.importers import import_benchmark
    from tests.evaluator.test_runner import write_jsonl_bench

    path = tmp_path / "ws.sqlite"
    with open_workspace(path) as ws:
        import_benchmark(ws, write_jsonl_bench(tmp_path / "b.jsonl", n), fmt="jsonl", name="b")
    return path


def _run(ws_path, model: str) -> None:
    from vlmdesk.cli import main

    assert main(["--workspace", str(ws_path), "run", "--bench", "b", "--model", model, "--json"]) == 0


def test_a_run_keeps_concurrency_requests_in_flight_at_the_default_batch_size(serve, tmp_path, capsys):
    # Each answer takes 0.5 s, so a call's requests overlap; the engine must hand the backend 16 queries per call
    # although --batch-size is 8 (before: 8 in flight at most).
    server = serve([Step(200, completion("A"), delay=0.5)])
    ws_path = _bench_workspace(tmp_path, 32)
    _run(ws_path, f"openai:m@{server.url}?concurrency=16&retries=0")
    assert server.max_in_flight == 16
    assert server.count > 32  # every item once, the ones answered right again


def test_a_streamed_run_finishes_an_item_before_it_starts_more_than_concurrency_at_once(serve, tmp_path, capsys):
    # An item's next pass goes before any new item (its prompt is still in the server's prefix cache), so when an
    # item is asked for the first time, the items begun and not finished hold one request in flight each. (Two
    # requests sent one after the other may reach the server in either order: the bounds allow for it; the exact
    # schedule is tested against a scripted stream in tests/evaluator/test_stream_schedule.py.)
    server = serve([ok("A")])
    ws_path = _bench_workspace(tmp_path, 30)
    _run(ws_path, f"openai:m@{server.url}?concurrency=2&retries=0")
    asked = [int(text_of(r["body"]).split("Which is item ")[1].split("?")[0]) for r in server.requests]
    first = {i: asked.index(i) for i in set(asked)}
    last = {i: len(asked) - 1 - asked[::-1].index(i) for i in set(asked)}
    order = sorted(first, key=first.get)
    assert all(abs(n - i) <= 2 for n, i in enumerate(order)), order  # new items in file order
    for t in first.values():
        assert sum(1 for j in first if first[j] < t < last[j]) <= 2, asked
    assert len(asked) > len(set(asked))  # items answered right were asked again
