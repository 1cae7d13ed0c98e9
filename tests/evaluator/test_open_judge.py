"""The LLM judge of open answers (evaluator/scoring/open_judge.py, `vlmdesk judge`): verdicts read strictly, stored per
(run, item, pass, judge, rubric) with the rubric's text, asked once, asked anew under another rubric, keys redacted,
a failed or cancelled judging resumed; against the scripted OpenAI-compatible server (tests/servers.py) and a real
`transformers serve` of a tiny random model."""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from db import open_judgements, open_workspace, runs
from evaluator.scoring import open_judge
from evaluator.scoring.open_judge import DEFAULT_RUBRIC, parse_verdict, reason_of
from tests.backends.test_misbehaving_servers import DRIP, _lines, _stop, _wait_for
from tests.factories import png_bytes
from tests.servers import first_then, transformers_serve
from vlmdesk.cli import main

REFERENCED = 10  # items 1..10 have reference answers; 11 and 12 have none


def cli(capsys, ws_path, *args) -> tuple[int, str, str]:
    code = main(["--workspace", str(ws_path), *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def make_open_run(tmp_path, capsys, referenced: int = REFERENCED):
    """A workspace with an open benchmark (`referenced` items with references, the first with two, then two
    without) and one finished open run of baseline:first (run 1)."""
    (tmp_path / "img.png").write_bytes(png_bytes())
    lines = []
    for i in range(1, referenced + 3):
        line = {"index": i, "question": f"What is in picture {i}?", "image": "img.png"}
        if i <= referenced:
            line["answer"] = [f"a cat {i}", f"one cat {i}"] if i == 1 else f"a cat {i}"
        lines.append(json.dumps(line))
    (tmp_path / "o.jsonl").write_text("\n".join(lines) + "\n")
    ws_path = tmp_path / "ws.sqlite"
    assert cli(capsys, ws_path, "import", str(tmp_path / "o.jsonl"), "--name", "o")[0] == 0
    assert cli(capsys, ws_path, "run", "--bench", "o", "--model", "baseline:first", "--json")[0] == 0
    return ws_path


@pytest.fixture
def open_run(tmp_path, capsys):
    return make_open_run(tmp_path, capsys)


def _picture(text: str) -> int:
    return int(re.search(r"picture (\d+)\?", text).group(1))


def scripted(text: str) -> str:
    """The judge's reply by picture number: 1-3 right, 4-5 partly, 6-7 wrong, 8 unreadable until reminded,
    9-10 never readable."""
    n = _picture(text)
    if n <= 3:
        return "[Reason] Says a cat, as the reference.\n[Verdict] right"
    if n <= 5:
        return "Reason: half of it.\n**Verdict:** partly"
    if n <= 7:
        return "[Reason] A dog is not a cat.\n[Verdict] wrong"
    if n == 8:
        return "[Verdict] right" if "must end with a line" in text else "I would say it is fine."
    return "[Verdict] right or wrong, hard to say"


# ---------------------------------------------------------------------------------------------------- parsing
@pytest.mark.parametrize(
    ("reply", "verdict"),
    [
        ("[Reason] fine\n[Verdict] right", "right"),
        ("Verdict: **Partly**", "partly"),
        ("**Verdict:** wrong.", "wrong"),
        ("[VERDICT]: The answer is correct.", "right"),
        ("[Verdict] partially correct", "partly"),
        ("[Verdict] incorrect", "wrong"),
        ("Right.", "right"),
        ("[Verdict] right, because it names the cat", "right"),
        ("[Verdict] right\n[Verdict] right", "right"),
        ("Reason: the verdict depends on the colour.\nVerdict: wrong", "wrong"),
        # Never guessed: no marker and more than a word, another word first, a hedge, two verdicts.
        ("I think it is right", None),
        ("right\nwrong", None),
        ("[Verdict] maybe", None),
        ("[Verdict] right or wrong", None),
        ("[Verdict] right, not wrong", None),
        ("[Verdict] right\n[Verdict] wrong", None),
        ("", None),
        ("[Verdict]", None),
    ],
)
def test_a_verdict_is_read_only_when_the_reply_commits_to_one(reply, verdict):
    assert parse_verdict(reply) == verdict


def test_the_reason_is_the_judges_own_words_bounded():
    assert reason_of("[Reason]  It names\n the cat.\n[Verdict] right") == "It names the cat."
    assert reason_of("Because it is a cat.\nVerdict: right") == "Because it is a cat."
    assert reason_of("right") == "(no reason given)"
    assert len(reason_of("[Reason] " + "x" * 5000 + "\n[Verdict] wrong")) == open_judgements.REASON_MAX


def test_the_prompt_shows_the_rubric_question_every_reference_and_a_bounded_answer(open_run):
    with open_workspace(open_run) as ws:
        (run,) = runs.list_runs(ws)
        item = runs.items_of(ws, run)[0]
        prompt = open_judge.judge_prompt("RUBRIC TEXT", item, "y" * (open_judge.MAX_ANSWER_CHARS + 10))
    assert prompt.startswith("RUBRIC TEXT\n\n[Question]\nWhat is in picture 1?")
    assert "[Reference answers]\n- a cat 1\n- one cat 1\n" in prompt
    assert prompt.endswith("y" * open_judge.MAX_ANSWER_CHARS + " […cut: 10 more characters]")


# ------------------------------------------------------------------------------------ the scripted judge server
def test_verdicts_are_stored_scored_cached_and_asked_anew_under_another_rubric(open_run, serve, tmp_path, capsys):
    server = serve(respond=scripted)
    judge = f"openai:judge@{server.url}?concurrency=2&retries=0"
    args = ["judge", "1", "--judge", judge, "--json"]
    code, out, err = cli(capsys, open_run, *args)
    assert code == 0, err
    found = json.loads(out)
    # 10 answers asked once; 8 reminded once (readable then); 9 and 10 asked three times, undecided.
    assert server.count == REFERENCED + 1 + 2 * 2 == found["calls"]
    assert found["verdicts"] == {"right": 4, "partly": 2, "wrong": 2, "undecided": 2}
    assert (found["answers"], found["left"], found["no_reference"], found["items_scored"]) == (10, 0, 2, 8)
    assert found["score"] == pytest.approx((4 * 1 + 2 * 0.5 + 2 * 0) / 8)
    assert found["rubric_sha256"] == open_judgements.rubric_sha256(DEFAULT_RUBRIC)
    first = server.requests[0]["body"]["messages"][0]["content"]
    text = first if isinstance(first, str) else first[-1]["text"]
    assert text.startswith(DEFAULT_RUBRIC.rstrip()) and "[Model's answer]" in text
    with open_workspace(open_run) as ws:
        stored = {j.item_id: j for j in open_judgements.judgements_of(ws, 1)}
        index = {i.id: int(i.index) for i in runs.items_of(ws, runs.get_run(ws, 1))}
        assert open_judgements.rubric_text(ws, found["rubric_sha256"]) == DEFAULT_RUBRIC
    by_picture = {index[i]: j for i, j in stored.items()}
    assert sorted(by_picture) == list(range(1, REFERENCED + 1))  # items without a reference are never asked
    assert (by_picture[1].verdict, by_picture[1].reason, by_picture[1].attempts) == (
        "right",
        "Says a cat, as the reference.",
        1,
    )
    assert (by_picture[8].verdict, by_picture[8].attempts) == ("right", 2)
    assert by_picture[9].verdict is None and by_picture[9].attempts == 3
    assert by_picture[9].raw == "[Verdict] right or wrong, hard to say"  # the raw reply kept, undecided
    assert by_picture[9].reason.startswith("no readable verdict in 3 attempts")
    assert {j.judge for j in stored.values()} == {judge}

    # Asked again: nothing is sent, the same score.
    code, out, _ = cli(capsys, open_run, *args)
    assert code == 0 and server.count == 15 and json.loads(out)["calls"] == 0
    assert json.loads(out)["score"] == found["score"]

    # Another rubric: every answer is asked again, and stored beside the first set with its own text.
    rubric = tmp_path / "strict.txt"
    rubric.write_text("Be strict.\nReply with [Verdict] right, partly or wrong.\n")
    code, out, _ = cli(capsys, open_run, *args, "--rubric", str(rubric))
    again = json.loads(out)
    assert code == 0 and again["calls"] == 15 and server.count == 30
    assert again["rubric_sha256"] == open_judgements.rubric_sha256(rubric.read_text())
    last = server.requests[-1]["body"]["messages"][0]["content"]
    assert (last if isinstance(last, str) else last[-1]["text"]).startswith("Be strict.")
    with open_workspace(open_run) as ws:
        sets = open_judgements.judgement_sets(ws, 1)
        assert [(s.rubric_sha256, s.judged) for s in sets] == [
            (again["rubric_sha256"], 10),
            (found["rubric_sha256"], 10),
        ]
        assert open_judgements.rubric_text(ws, again["rubric_sha256"]) == rubric.read_text()
    code, out, _ = cli(capsys, open_run, "judge", "1", "--judge", judge)
    assert code == 0 and "judge score 0.625 over 8 items (right 4, partly 2, wrong 2, undecided 2; 0 left" in out


def test_report_shows_the_judge_metric_of_the_set_stored_last_and_names_it(open_run, serve, tmp_path, capsys):
    code, out, _ = cli(capsys, open_run, "report", "1", "--json")
    assert code == 0 and "judge" not in json.loads(out)["metrics"] and json.loads(out)["judge_set"] is None
    server = serve(respond=scripted)
    judge = f"openai:judge@{server.url}?retries=0"
    assert cli(capsys, open_run, "judge", "1", "--judge", judge)[0] == 0
    report = json.loads(cli(capsys, open_run, "report", "1", "--json")[1])
    assert report["metrics"]["judge"] == pytest.approx(0.625) and report["metric_items"]["judge"] == 8
    assert report["metric_scales"]["judge"] == "fraction"
    assert report["judge_set"] == {
        "judge": judge,
        "rubric_sha256": open_judgements.rubric_sha256(DEFAULT_RUBRIC),
        "verdicts": {"right": 4, "partly": 2, "wrong": 2, "undecided": 2},
        "other_sets": [],
    }
    # Per category, the judge's mean over the category's judged items (all items here: no category).
    assert [g["metrics"]["judge"] for g in report["by_category"].values()] == [pytest.approx(0.625)]
    # A second set (another rubric, every answer wrong) is the one reported now; the first is named beside it.
    rubric = tmp_path / "harsh.txt"
    rubric.write_text("Everything is wrong.\n")
    server.respond = lambda text: "[Verdict] wrong"
    assert cli(capsys, open_run, "judge", "1", "--judge", judge, "--rubric", str(rubric))[0] == 0
    report = json.loads(cli(capsys, open_run, "report", "1", "--json")[1])
    assert report["metrics"]["judge"] == 0.0 and report["metric_items"]["judge"] == REFERENCED
    assert report["judge_set"]["rubric_sha256"] == open_judgements.rubric_sha256("Everything is wrong.\n")
    assert [s["rubric_sha256"] for s in report["judge_set"]["other_sets"]] == [
        open_judgements.rubric_sha256(DEFAULT_RUBRIC)
    ]
    with open_workspace(open_run) as ws:
        from evaluator.scoring.open_metrics import item_scores

        assert set(item_scores(ws, 1, ["judge"])["judge"].values()) == {0.0}
    text = cli(capsys, open_run, "report", "1")[1]
    assert f"judge: {judge}, rubric {report['judge_set']['rubric_sha256'][:12]} (right 0, partly 0, wrong 10" in text
    assert "1 other judgement set(s)" in text


def test_a_key_the_judge_server_echoes_never_reaches_the_workspace(open_run, serve, monkeypatch, capsys):
    secret = "plain-looking-judge-key-42"
    monkeypatch.setenv("VLMDESK_JUDGE_KEY", secret)
    server = serve(respond=lambda text: f"[Reason] my key is {secret}, sk-{'a' * 24}\n[Verdict] wrong")
    judge = f"openai:judge@{server.url}?key_env=VLMDESK_JUDGE_KEY&retries=0"
    code, out, err = cli(capsys, open_run, "judge", "1", "--judge", judge, "--json")
    assert code == 0, err
    assert server.requests[0]["headers"]["authorization"] == f"Bearer {secret}"  # the key was sent ...
    assert secret not in out + err
    with sqlite3.connect(open_run) as conn:  # ... and is nowhere in the file
        dump = "\n".join(conn.iterdump())
    assert secret not in dump and "sk-aaaa" not in dump and "[redacted]" in dump
    assert json.loads(out)["verdicts"]["wrong"] == REFERENCED


def test_a_judge_that_times_out_keeps_what_was_judged_and_the_next_call_asks_the_rest(
    open_run, serve, monkeypatch, capsys
):
    monkeypatch.setattr(open_judge, "CHUNK", 4)
    server = serve(respond=first_then(4, scripted, lambda text: DRIP))
    judge = f"openai:judge@{server.url}?concurrency=4&retries=0&timeout=1"
    code, out, err = cli(capsys, open_run, "judge", "1", "--judge", judge)
    assert code == 1 and "failed" in err and "run the same command again" in err and out == ""
    with open_workspace(open_run) as ws:
        assert len(open_judgements.judgements_of(ws, 1)) == 4  # the first chunk, stored whole
    server.respond = scripted
    before = server.count
    code, out, _ = cli(capsys, open_run, "judge", "1", "--judge", judge, "--json")
    found = json.loads(out)
    assert code == 0 and found["left"] == 0 and found["calls"] == server.count - before
    assert found["verdicts"] == {"right": 4, "partly": 2, "wrong": 2, "undecided": 2}


def test_cancel_keeps_the_stored_chunks_and_the_same_command_continues(tmp_path, serve, capsys):
    chunk = open_judge.CHUNK
    ws_path = make_open_run(tmp_path, capsys, referenced=chunk + 4)
    # The first chunk is answered; the second one's requests drip (a long deadline: only Cancel ends them).
    server = serve(respond=first_then(chunk, lambda text: "[Verdict] right", lambda text: DRIP))
    judge = f"openai:judge@{server.url}?concurrency=2&retries=0&timeout=600"
    cmd = [sys.executable, "-m", "vlmdesk", "--workspace", str(ws_path), "judge", "1", "--judge", judge]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _wait_for(_lines(proc.stderr), lambda line: f"judged {chunk} of {chunk + 4} answers" in line)
    deadline = time.monotonic() + 60
    while server.in_flight < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.in_flight == 2 and server.count == chunk + 2
    _stop(proc, signal.SIGTERM)
    assert proc.returncode == 130
    with open_workspace(ws_path) as ws:
        kept = open_judgements.judgements_of(ws, 1)
    assert len(kept) == chunk and {j.verdict for j in kept} == {"right"}  # the chunk in flight: nothing of it
    server.respond = lambda text: "[Verdict] wrong"
    before = server.count
    done = subprocess.run([*cmd, "--json"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert server.count - before == 4 == found["calls"]  # exactly the answers not judged
    assert found["verdicts"] == {"right": chunk, "partly": 0, "wrong": 4, "undecided": 0} and found["left"] == 0


def test_bad_input_is_one_line_and_asks_nothing(open_run, serve, tmp_path, capsys):
    server = serve(respond=scripted)
    judge = f"openai:judge@{server.url}?retries=0"
    fifo = tmp_path / "r.txt"
    os.mkfifo(fifo)
    big = tmp_path / "big.txt"
    big.write_text("x" * (open_judge.MAX_RUBRIC_BYTES + 1))
    empty = tmp_path / "empty.txt"
    empty.write_text("  \n")
    cases = [
        (["judge", "1"], "give one RUN and --judge SPEC"),
        (["judge", "2", "--judge", judge], "no run 2"),
        (["judge", "1", "--judge", judge, "--rubric", str(fifo)], f"{fifo}: rubric:"),
        (["judge", "1", "--judge", judge, "--rubric", str(big)], f"{big}: rubric:"),
        (["judge", "1", "--judge", judge, "--rubric", str(empty)], f"{empty}: rubric: the file is empty"),
        (["judge", "1", "--judge", "openai:m@http://127.0.0.1:9/v1?key_env=sk-abcdefabcdefabcdefabcdef"], "error:"),
    ]
    for args, message in cases:
        code, out, err = cli(capsys, open_run, *args)
        assert code == 2 and out == "" and message in err and len(err.strip().splitlines()) == 1, (args, err)
        assert "abcdefabcdef" not in err
    code, _, err = cli(capsys, open_run, "--read-only", "judge", "1", "--judge", judge)
    assert code == 2 and "workspace is read-only: 10 answer(s) to judge" in err
    assert server.count == 0
    code, out, _ = cli(capsys, open_run, "judge", "--print-rubric")
    assert code == 0 and out == DEFAULT_RUBRIC


def test_a_multiple_choice_run_is_refused(tmp_path, capsys):
    from vlmdesk.demo import ensure_demo

    ws_path = tmp_path / "ws.sqlite"
    with open_workspace(ws_path) as ws:
        ensure_demo(ws)
    assert cli(capsys, ws_path, "run", "--bench", "demo", "--model", "baseline:first", "--limit", "2")[0] == 0
    code, _, err = cli(capsys, ws_path, "judge", "1", "--judge", "openai:m@http://127.0.0.1:9/v1")
    assert code == 2 and "run 1 is a circular run: the judge reads answers to open questions" in err


# ---------------------------------------------------------------------------- a real judge: transformers serve
def test_a_random_judge_through_transformers_serve_is_stored_as_it_answered(open_run, tiny_text_lm_dir, tmp_path):
    with transformers_serve(tiny_text_lm_dir, tmp_path) as server:
        base_url, model = server.running()
        judge = f"openai:{model}@{base_url}?concurrency=4&retries=0&timeout=120"
        cmd = [sys.executable, "-m", "vlmdesk", "--workspace", str(open_run), "judge", "1", "--judge", judge]
        done = subprocess.run([*cmd, "--max-new-tokens", "8", "--json"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    with open_workspace(open_run) as ws:
        stored = open_judgements.judgements_of(ws, 1)
    assert len(stored) == REFERENCED and found["left"] == 0 and found["calls"] == sum(j.attempts for j in stored)
    # A random-weight judge: each stored verdict is what the parser reads in its raw reply, an undecided one was
    # asked three times — never a value invented for it.
    for j in stored:
        assert j.verdict == parse_verdict(j.raw) and (j.verdict is not None or j.attempts == 3)
    undecided = sum(j.verdict is None for j in stored)
    assert found["verdicts"]["undecided"] == undecided and sum(found["verdicts"].values()) == REFERENCED
