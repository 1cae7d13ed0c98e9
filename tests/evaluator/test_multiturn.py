"""Multi-turn reasoning runs (evaluator/engine/multiturn.py): a scripted local chat-completions server is the asking
LLM,
a baseline or a tiny LLaVA the evaluated model; turn and request counts are exact, every turn is stored in SQLite
with its pass, and the final answer is read by the run's extractor as the letter of the shown option."""

from __future__ import annotations

import csv
import json
import re
import sqlite3
import threading
from collections import Counter
from pathlib import Path

import pytest

from db import open_workspace, runs, schema
from evaluator.engine.multiturn import DESCRIBE, MAX_SUB_QUESTIONS, committed, read_reasoning, sub_questions
from tests.factories import png_bytes
from tests.servers import Step
from vlmdesk.cli import main

# question -> (how many "not sure" replies before answering, whether it answers only when forced)
PLAN = {"Which fruit is red?": (2, False), "Which animal barks?": (0, True), "Which shape is round?": (0, False)}
ITEMS = [
    ("Which fruit is red?", ["banana", "apple", "lime"], "B"),
    ("Which animal barks?", ["cat", "cow", "dog", "owl"], "C"),
    ("Which shape is round?", ["circle", "square"], "A"),
]
RIGHT = {"Which fruit is red?": "apple", "Which animal barks?": "dog", "Which shape is round?": "circle"}


def write_bench(folder: Path) -> Path:
    (folder / "img.png").write_bytes(png_bytes())
    path = folder / "mt.jsonl"
    rows = [
        {"index": i, "question": question, "options": options, "answer": answer, "image": "img.png"}
        for i, (question, options, answer) in enumerate(ITEMS)
    ]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


class Asker:
    """The scripted asking LLM: lists two new sub-questions per round; reasons "not sure" as its plan says, then
    answers with the letter the right option has in the prompt (so rotations are followed)."""

    def __init__(self, plan=PLAN):
        self.plan, self.lock = plan, threading.Lock()
        self.listings: Counter = Counter()
        self.reasonings: Counter = Counter()

    def __call__(self, text: str) -> str:
        question = re.search(r"Main question: (.*)", text).group(1)
        key = (question, re.findall(r"^[A-Z]\. .*$", text, re.MULTILINE).__repr__())
        with self.lock:
            if "Reply with the list only" in text:
                self.listings[key] += 1
                n = self.listings[key]
                return f"Sub-question 1: What is thing {n} in the image?\nSub-question 2: What colour is thing {n}?"
            self.reasonings[key] += 1
            count = self.reasonings[key]
        unsure, only_forced = self.plan[question]
        forced = "do not answer" in text
        if (only_forced and not forced) or count <= unsure:
            return "Analysis: the answers do not tell yet.\nAnswer: not sure"
        letter = re.search(rf"^([A-Z])\. {RIGHT[question]}$", text, re.MULTILINE).group(1)
        return f"Analysis: the assistant's answers point to {RIGHT[question]}.\nAnswer: {letter}"


@pytest.fixture
def mt_ws(tmp_path):
    path = tmp_path / "ws.sqlite"
    assert main(["--workspace", str(path), "import", str(write_bench(tmp_path)), "--name", "mt"]) == 0
    return path


def run(ws_path, *args) -> int:
    try:
        return main(["--workspace", str(ws_path), "run", "--bench", "mt", *args])
    except SystemExit as exc:  # argparse's refusals
        return int(exc.code or 0)


def passes(ws_path, run_id=1) -> dict[str, list[runs.Prediction]]:
    with open_workspace(ws_path) as ws:
        items = {i.id: i.question for i in runs.items_of(ws, runs.get_run(ws, run_id))}
        found: dict[str, list[runs.Prediction]] = {}
        for p in runs.predictions_of(ws, run_id):
            found.setdefault(items[p.item_id], []).append(p)
        return found


def test_turn_counts_are_exact_and_the_answer_is_read_by_the_extractor(mt_ws, serve):
    asker = Asker()
    server = serve(respond=asker)
    spec = f"openai:asker@{server.url}"
    assert run(mt_ws, "--model", "baseline:first", "--strategy", "vanilla", "--multi-turn", spec) == 0
    found = passes(mt_ws)
    # 2 turns describing the image, then per round 2 sub-questions (asker + model each) and the asker's reasoning.
    rounds = {"Which fruit is red?": 3, "Which animal barks?": 4, "Which shape is round?": 1}
    for question, (p,) in found.items():
        assert p.turns is not None and len(p.turns) == 2 + rounds[question] * (2 * 2 + 1), question
        assert p.turns[0].role == "asker" and p.turns[0].text == DESCRIBE and p.turns[1].role == "model"
        assert [t.role for t in p.turns[2:7]] == ["asker", "model", "asker", "model", "asker"]
        assert p.turns[3].text == "A"  # baseline:first's answer to a sub-question
        assert p.turns[-1].text.endswith(f"Answer: {p.choice}")
        assert p.stage == "rules" and p.correct is True and p.choice == p.answer
    # Every round is two requests (the listing, the reasoning); the forced round is the 4th of "barks".
    assert server.count == 2 * sum(rounds.values())
    forced = [r for r in server.requests if "do not answer" in r["body"]["messages"][0]["content"]]
    assert len(forced) == 1 and "Which animal barks?" in forced[0]["body"]["messages"][0]["content"]
    assert all(r["body"].get("temperature") == 0 for r in server.requests)
    # Stored as the contract says: a JSON list of {"role", "text"} in predictions.turns.
    with sqlite3.connect(mt_ws) as conn:
        stored = [json.loads(t) for (t,) in conn.execute("SELECT turns FROM predictions")]
    assert all(set(turn) == {"role", "text"} for turns in stored for turn in turns)
    # export-predictions adds the dialogue as a column, one JSON list per row
    out = mt_ws.parent / "preds.tsv"
    assert main(["--workspace", str(mt_ws), "export-predictions", "1", "--out", str(out)]) == 0
    with open(out, newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    assert [len(json.loads(r["turns"])) for r in rows] == [17, 22, 7]
    assert [r["prediction"] for r in rows] == ["B", "C", "A"]


def test_circular_passes_store_the_letter_of_the_shown_option(mt_ws, serve):
    asker = Asker({q: (0, False) for q in PLAN})
    server = serve(respond=asker)
    ws_args = ["--workspace", str(mt_ws), "models"]
    assert main([*ws_args, "add", "asker", f"openai:asker@{server.url}"]) == 0  # a saved model's name works too
    assert run(mt_ws, "--model", "baseline:first", "--multi-turn", "asker", "--rounds", "2") == 0
    found = passes(mt_ws)
    assert {q: len(ps) for q, ps in found.items()} == {q: len(o) for q, o, _ in ITEMS}  # every rotation right
    for question, ps in found.items():
        for p in ps:
            options = dict(zip("ABCD", [o for q, o, _ in ITEMS if q == question][0]))
            shown = [options["ABCD"[j]] for j in p.option_order]
            assert shown["ABCD".index(p.choice)] == RIGHT[question] and p.correct
            assert len(p.turns) == 2 + 5  # answered in the first round
    with open_workspace(mt_ws) as ws:
        config = runs.get_run(ws, 1).config
    assert config["multi_turn"] == f"openai:asker@{server.url}" and config["rounds"] == 2


def test_a_failed_dialogue_stores_nothing_half_and_the_run_resumes(mt_ws, serve):
    asker = Asker()
    server = serve(respond=asker)
    spec = f"openai:asker@{server.url}?retries=0"
    args = ("--model", "baseline:first", "--strategy", "vanilla", "--batch-size", "1", "--multi-turn", spec)
    real = asker.__call__

    def fail_on_the_last_item(text):  # batches go shortest prompt first: "fruit" is the last item asked
        if "Which fruit is red?" in text:
            return Step(400, {"error": {"message": "scripted failure"}})
        return real(text)

    server.respond = fail_on_the_last_item
    assert run(mt_ws, *args) == 1
    first = passes(mt_ws)
    assert {q: [len(p.turns) for p in ps] for q, ps in first.items()} == {
        "Which animal barks?": [22],
        "Which shape is round?": [7],
    }
    with open_workspace(mt_ws) as ws:
        assert runs.get_run(ws, 1).status == "failed"
    server.respond = asker
    assert run(mt_ws, *args) == 0  # the same command continues the run
    done = passes(mt_ws)
    assert len(done) == 3 and all(len(ps) == 1 for ps in done.values())
    assert len(done["Which fruit is red?"][0].turns) == 17
    assert {q: ps[0].turns for q, ps in first.items()} == {q: done[q][0].turns for q in first}


@pytest.mark.parametrize(
    "extra, message",
    [
        (("--rounds", "11"), "at most 10"),
        (("--rounds", "0"), "at least 1"),
        (("--rounds", "3"), "--rounds needs --multi-turn"),
        (("--multi-turn", "openai:x@http://127.0.0.1:9/v1", "--likelihood"), "not with likelihood"),
        (("--multi-turn", "openai:x@http://127.0.0.1:9/v1", "--label-map", "natural:0"), "label_map: not with multi"),
        (("--multi-turn", "openai:x@http://127.0.0.1:9/v1", "--shots", "1"), "shots: not with multi_turn"),
        (("--multi-turn", "openai:x@http://127.0.0.1:9/v1", "--cot"), "cot: not with multi_turn"),
        (("--multi-turn", "nonsense"), "multi_turn"),
        (("--multi-turn", "openai:x@http://127.0.0.1:9/v1?api_key=sk-abcdefabcdefabcdefabcdef"), "key"),
    ],
)
def test_bad_multi_turn_settings_are_refused_at_the_door(mt_ws, capsys, extra, message):
    assert run(mt_ws, "--model", "baseline:first", *extra) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and message in err and "sk-abc" not in err
    with open_workspace(mt_ws) as ws:
        assert runs.list_runs(ws) == []


def test_the_asker_reads_the_question_and_options_as_corrupted(mt_ws, serve):
    def asker(text: str) -> str:
        if "Reply with the list only" in text:
            return "Sub-question 1: What is in the image?"
        right = {"which fruit is red?": "apple", "which animal barks?": "dog", "which shape is round?": "circle"}
        question = re.search(r"Main question: (.*)", text).group(1)
        letter = re.search(rf"^([A-Z])\. {right[question]}$", text, re.MULTILINE).group(1)
        return f"Answer: {letter}"

    server = serve(respond=asker)
    spec = f"openai:asker@{server.url}"
    extra = ["--corrupt", "text:lowercase", "--corrupt-options", "--corrupt", "image:brightness:2"]
    assert run(mt_ws, "--model", "baseline:first", "--multi-turn", spec, *extra) == 0
    found = passes(mt_ws)
    # Lower-cased question and options reached the asker (the scripted asker knows no other), every pass right.
    assert all(p.correct is True and p.choice == p.answer for ps in found.values() for p in ps)
    assert sum(len(ps) for ps in found.values()) > 3  # CircularEval: the rotations too
    assert all("Main question: which" in r["body"]["messages"][0]["content"] for r in server.requests)


def test_yes_no_benchmarks_are_refused_and_leave_no_run(tmp_path, capsys):
    path = tmp_path / "ws.sqlite"
    assert main(["--workspace", str(path), "demo"]) == 0
    capsys.readouterr()
    code = main(
        ["--workspace", str(path), "run", "--bench", "demo-pope", "--model", "baseline:first"]
        + ["--multi-turn", "openai:x@http://127.0.0.1:9/v1"]
    )
    assert code == 2 and "multiple-choice" in capsys.readouterr().err
    with open_workspace(path) as ws:
        assert runs.list_runs(ws) == []


def test_reading_the_askers_replies():
    reply = "Sub-question 1: What is on the table?\nAdditional Sub-question 2:  What colour is it?\nnoise"
    assert sub_questions(reply) == ["What is on the table?", "What colour is it?"]
    assert sub_questions(reply, ["what is on the table?"]) == ["What colour is it?"]  # asked already: not again
    assert sub_questions("1. Is it big?\n2) Is it red?\nThanks.") == ["Is it big?", "Is it red?"]
    many = "\n".join(f"Sub-question {i}: Q{i}?" for i in range(9))
    assert len(sub_questions(many)) == MAX_SUB_QUESTIONS
    analysis, answer = read_reasoning("Analysis: the answer: maybe B.\nIt is red.\n**Answer:** B.")
    assert answer == "** B." and analysis.startswith("the answer: maybe B.")
    assert read_reasoning("no marker at all") == ("no marker at all", None)
    options = {"A": "cat", "B": "dog"}
    assert committed("B.", options) and committed("dog", options)
    assert not committed("not sure", options) and not committed(None, options) and not committed("", options)
    assert not committed("We are Not Sure which option is correct", options)


def test_turns_column_is_added_to_an_older_workspace(tmp_path):
    from sqlite_utils import Database

    path = tmp_path / "old.sqlite"
    db = Database(path)
    schema.migrations.apply(db, stop_before="0013_pass_turns")
    db.conn.close()
    with open_workspace(path, upgrade=True) as ws:
        columns = {c.name for c in ws.db["predictions"].columns}
        assert "turns" in columns
        with pytest.raises(sqlite3.IntegrityError):  # the column holds JSON or NULL
            ws.conn.execute(
                "INSERT INTO predictions (run_id, item_id, pass, option_order, prompt, response, stage, created_at, "
                "turns) VALUES (1, 1, 0, '[]', '', '', 'none', '', 'not json')"
            )


def test_tiny_llava_answers_the_sub_questions(tmp_path, serve, tiny_llava_dir, mt_ws):
    asker = Asker({q: (0, False) for q in PLAN})
    server = serve(respond=asker)
    code = run(
        mt_ws,
        *("--model", f"hf:{tiny_llava_dir}", "--strategy", "vanilla", "--max-new-tokens", "4"),
        *("--multi-turn", f"openai:asker@{server.url}"),
    )
    assert code == 0
    found = passes(mt_ws)
    assert len(found) == 3
    for (p,) in found.values():
        assert len(p.turns) == 7 and p.correct  # the scripted asker decides; the model's words are stored
        assert [t.role for t in p.turns] == ["asker", "model", "asker", "model", "asker", "model", "asker"]
    texts = [r["body"]["messages"][0]["content"] for r in server.requests]
    sub_prompts = [t for t in texts if "Sub-questions and the assistant's answers" in t]
    assert len(sub_prompts) == 3  # each reasoning saw the model's answers


def test_check_reports_turns_of_the_wrong_shape(mt_ws, capsys):
    with sqlite3.connect(mt_ws) as conn:
        conn.execute(
            "INSERT INTO runs (benchmark_id, model_spec, strategy, prompt_template, extractor, config_key, status, "
            "created_at, updated_at) VALUES (1, 'baseline:first', 'vanilla', '{}', 'rules', 'k', 'finished', '', '')"
        )
        row = (
            "INSERT INTO predictions (run_id, item_id, pass, option_order, prompt, response, stage, created_at, turns) "
        )
        conn.execute(row + "VALUES (1, 1, 0, '[]', '', '', 'none', '', ?)", ('[{"role": "asker", "text": "ok"}]',))
        conn.execute(row + "VALUES (1, 2, 0, '[]', '', '', 'none', '', ?)", ('[{"role": "judge", "text": "x"}]',))
        conn.execute(row + "VALUES (1, 3, 0, '[]', '', '', 'none', '', ?)", ('{"role": "model"}',))
    assert main(["--workspace", str(mt_ws), "check", "--json"]) == 1
    found = next(c for c in json.loads(capsys.readouterr().out)["checks"] if c["name"] == "pass_turns")
    assert found["problems"] == [
        "run 1 item 2 pass 0: turns are not a list of {role, text}",
        "run 1 item 3 pass 0: turns are not a list of {role, text}",
    ]
    with open_workspace(mt_ws) as ws:  # the app reads what it can
        turns = {p.item_id: p.turns for p in runs.predictions_of(ws, 1)}
    assert turns == {1: (runs.Turn("asker", "ok"),), 2: (), 3: None}
