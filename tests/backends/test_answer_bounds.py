"""A model's answer is bounded where it enters vlmdesk (issue 40, docs/adr/0048): the door keeps at most
MAX_ANSWER_CHARS of it, cut with CUT_MARK, whatever path it takes (a run's passes, the live arena, streamed or not);
the openai backend reads at most MAX_STREAM_BYTES of a response body, so a server answering without end is a failed
attempt after 16 MB, never read whole. Scripted servers (tests/servers.py)."""

from __future__ import annotations

import json
import sqlite3
import time

import pytest

from db.workspace import open_workspace
from evaluator.backends import BackendError, Query, load_backend
from evaluator.backends.door import CUT_MARK, MAX_ANSWER_CHARS
from evaluator.engine.live import ask
from tests.factories import png_bytes
from tests.server_process import completion
from tests.servers import Step
from vlmdesk.cli import main
from vlmdesk.demo import ensure_demo

HUGE = "word " * (2 * 2**20)  # a 10 MB answer


def cut(text: str) -> str:
    return text[:MAX_ANSWER_CHARS] + CUT_MARK


def test_a_10_mb_answer_is_stored_cut_with_its_mark_in_a_run(serve, tmp_path, capsys):
    server = serve([Step(200, completion(HUGE))])
    ws = tmp_path / "ws.sqlite"
    with open_workspace(ws) as w:
        ensure_demo(w)
    code = main(["--workspace", str(ws), "run", "--bench", "demo", "--model", f"openai:m@{server.url}", "--limit", "2"])
    assert code == 0, capsys.readouterr().err
    stored = sqlite3.connect(ws).execute("SELECT response FROM predictions").fetchall()
    assert stored and all(r == cut(HUGE) for (r,) in stored)


def test_an_answer_within_the_bound_is_kept_whole(serve):
    whole = "x" * MAX_ANSWER_CHARS
    server = serve([Step(200, completion(whole))])
    assert load_backend(f"openai:m@{server.url}").generate([Query("q")], 2) == [whole]


def test_a_body_without_end_is_a_failed_attempt_after_16_mb(serve):
    """The server sends a chat completion followed by spaces, 1 TB announced: before, httpx read it whole."""
    server = serve([Step(200, completion("B"), endless=True)])
    backend = load_backend(f"openai:m@{server.url}?timeout=60&retries=0")
    started = time.monotonic()
    with pytest.raises(BackendError, match=r"after 1 attempt; last error: an answer of over 16 MB"):
        backend.generate([Query("q")], 2)
    assert time.monotonic() - started < 30 and server.count == 1


def sse(*pieces: str) -> str:
    events = [{"choices": [{"index": 0, "delta": {"content": p}}]} for p in pieces]
    return "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"


def test_a_live_battle_stores_a_10_mb_answer_cut_with_its_mark(serve, tmp_path, capsys):
    big, small = serve([Step(200, completion(HUGE))]), serve([Step(200, completion("A cat."))])
    ws = tmp_path / "live.sqlite"
    image = tmp_path / "photo.png"
    image.write_bytes(png_bytes())
    for name, server in (("big", big), ("small", small)):
        assert main(["--workspace", str(ws), "models", "add", name, f"openai:m@{server.url}"]) == 0
    capsys.readouterr()
    code = main(["--workspace", str(ws), "arena", "ask", "--image", str(image), "--question", "What?", "--json"])
    assert code == 0, capsys.readouterr().err
    battle = json.loads(capsys.readouterr().out)
    answers = sorted(battle[side]["answer"] for side in ("left", "right"))  # anonymous until a vote
    assert answers == sorted(["A cat.", cut(HUGE)])
    stored = sqlite3.connect(ws).execute("SELECT response FROM predictions").fetchall()
    assert sorted(r for (r,) in stored) == answers


def test_a_streamed_live_answer_stops_at_the_bound(serve):
    """The live arena's streamed path (the app's): each text shown and the answer kept are within the bound."""
    huge = "word " * 2**18  # 1.3 MB in events of 64 KB
    server = serve([Step(200, sse(*[huge[i : i + 2**16] for i in range(0, len(huge), 2**16)]))])
    seen: list[str] = []
    answer = ask(f"openai:m@{server.url}", png_bytes(), "What?", on_text=seen.append)
    assert answer.streamed and answer.text == cut(huge)
    assert all(len(text) <= MAX_ANSWER_CHARS for text in seen[:-1]) and seen[-1] == cut(huge)
