"""A server that repeats its API key inside a normal 200 answer (issue 22 §2): the key never reaches the workspace,
a written file, the output or the log, whatever path the answer takes — the run's responses, an LLM extractor's
reasons and raw replies, a multi-turn dialogue's turns, a language judge's judgements, export-predictions. Every
backend is loaded behind one door (evaluator/backends/door.py) that redacts what comes in."""

from __future__ import annotations

import json
import sqlite3

import pytest

from db import open_workspace
from evaluator.backends import BackendError, Query, load_backend
from evaluator.backends.secrets import REDACTED
from tests.servers import Step, completion
from vlmdesk.cli import main
from vlmdesk.demo import ensure_demo

KEY = "plainKEYSECRETvalue42"  # not key-shaped: only the value of the variable key_env names can find it
MARK = "KEYSECRET"


def spec(server, model: str) -> str:
    return f"openai:{model}@{server.url}?key_env=VLMDESK_TEST_KEY&retries=0&concurrency=2"


@pytest.fixture
def echoing(serve, monkeypatch, tmp_path):
    """Servers for every role, each answering normally with the key inside; the log written under tmp_path."""
    monkeypatch.setenv("VLMDESK_TEST_KEY", KEY)
    monkeypatch.setenv("VLMDESK_LOG_DIR", str(tmp_path / "log"))

    def asker(text: str) -> str:
        if "Reply with the list only" in text:
            return f"Sub-question 1: Is {KEY} in the image?"
        return f"Analysis: the assistant said {KEY}.\nAnswer: A"

    return {
        "model": serve(respond=lambda text: f"B. By the way, my key is {KEY}."),
        "extractor": serve(respond=lambda text: KEY),  # never one letter: undecided, every reply kept as raw
        "asker": serve(respond=asker),
        "judge": serve(respond=lambda text: f"[Explanation] Fluent, says {KEY}.\n[Overall Score] 7"),
    }


def cli(capsys, *args) -> tuple[int, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    assert MARK not in out + err, out + err
    return code, out


def test_a_key_echoed_in_normal_answers_reaches_no_stored_or_written_text(tmp_path, capsys, echoing):
    path = tmp_path / "ws.sqlite"
    with open_workspace(path) as ws:
        ensure_demo(ws)
    ws_arg = ("--workspace", str(path))
    model = spec(echoing["model"], "m")
    base = ("run", "--bench", "demo", "--model", model, "--strategy", "vanilla")
    # run 1: the responses, read by an LLM extractor; run 2: multi-turn dialogues; then a language judge on run 1.
    assert cli(capsys, *ws_arg, *base, "--limit", "2", "--extractor", f"llm:{spec(echoing['extractor'], 'x')}")[0] == 0
    assert (
        cli(capsys, *ws_arg, *base, "--limit", "1", "--multi-turn", spec(echoing["asker"], "a"), "--rounds", "1")[0]
        == 0
    )
    judge = spec(echoing["judge"], "j")
    code, out = cli(capsys, *ws_arg, "desiderata", "language", "1", "--judge", judge, "--json")
    assert code == 0 and json.loads(out)["passes_judged"] == 2
    for run_id, name in ((1, "p1.tsv"), (1, "p1.csv"), (2, "p2.jsonl")):
        extra = ("--layout", "lmms-eval") if name.endswith(".jsonl") else ()
        assert cli(capsys, *ws_arg, "export-predictions", str(run_id), "--out", str(tmp_path / name), *extra)[0] == 0
    for server in echoing.values():
        assert server.requests and all(r["headers"]["authorization"] == f"Bearer {KEY}" for r in server.requests)

    conn = sqlite3.connect(path)
    responses = [r for (r,) in conn.execute("SELECT response FROM predictions WHERE run_id = 1")]
    assert responses == [f"B. By the way, my key is {REDACTED}."] * 2
    reasons = [r for (r,) in conn.execute("SELECT reason FROM predictions WHERE run_id = 1")]
    assert all(REDACTED in r and "last reply" in r for r in reasons), reasons
    extractions = conn.execute("SELECT reason, raw FROM extractions").fetchall()
    assert len(extractions) == 2  # one cached extraction per question
    assert all(REDACTED in reason and json.loads(raw) == [REDACTED] * 3 for reason, raw in extractions)
    (turns,) = conn.execute("SELECT turns FROM predictions WHERE run_id = 2").fetchone()
    texts = [t["text"] for t in json.loads(turns)]
    assert f"Is {REDACTED} in the image?" in texts and any(REDACTED in t and "Analysis" in t for t in texts)
    judged = [r for (r,) in conn.execute("SELECT raw FROM judgements")]
    assert len(judged) == 2 and all(REDACTED in r for r in judged)
    conn.close()
    # Nowhere on disk: the database, its WAL and shared memory, the exported files, the log folder.
    files = [f for f in tmp_path.rglob("*") if f.is_file()]
    assert any(f.name == "p2.jsonl" for f in files)
    for file in files:
        assert MARK.encode() not in file.read_bytes(), file


def test_the_door_redacts_answers_errors_and_retry_notices(serve, monkeypatch):
    from evaluator.backends.door import telling_waits_to

    monkeypatch.setenv("VLMDESK_TEST_KEY", KEY)
    server = serve(
        [
            Step(503, {"error": {"message": f"overloaded, key {KEY}"}}),
            Step(200, completion(f"A {KEY}")),
            Step(400, {"error": {"message": f"bad key {KEY}"}}),
        ]
    )
    backend = load_backend(f"openai:m@{server.url}?key_env=VLMDESK_TEST_KEY&retries=1&backoff=0&concurrency=1")
    told = []
    with telling_waits_to(told.append):
        assert backend.generate([Query("q")], 2) == [f"A {REDACTED}"]
    assert [w.error for w in told] == [f"HTTP 503: overloaded, key {REDACTED}"]
    with pytest.raises(BackendError, match=r"HTTP 400 for model .m.: bad key \[redacted\]") as err:
        backend.generate([Query("q")], 2)
    assert MARK not in str(err.value)


def test_a_key_in_a_thought_is_redacted_whether_the_server_or_the_text_holds_it(serve, monkeypatch):
    monkeypatch.setenv("VLMDESK_TEST_KEY", KEY)
    apart = completion(f"B {KEY}")
    apart["choices"][0]["message"]["reasoning_content"] = f"my key is {KEY}"
    server = serve([Step(200, apart), Step(200, completion(f"<think>{KEY} again</think>A"))])
    backend = load_backend(f"openai:m@{server.url}?key_env=VLMDESK_TEST_KEY&retries=0&concurrency=1")
    (first,) = backend.generations([Query("q")], 2)
    (second,) = backend.generations([Query("q")], 2)
    assert (first.text, first.thought) == (f"B {REDACTED}", f"my key is {REDACTED}")
    assert (second.text, second.thought) == ("A", f"{REDACTED} again")
