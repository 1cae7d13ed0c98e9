"""`vlmdesk desiderata` end to end: ECE of a file, calibration of a tiny VLM's likelihood run, a judge's language
scores through a scripted OpenAI-compatible server."""

from __future__ import annotations

import json
import math
import os

import pytest

from db import judgements, open_workspace, runs
from evaluator.desiderata_metrics import confidence_of, ece
from tests.evaluator.desiderata_runs import mcq_bench, stored_run
from tests.servers import ok
from vlmdesk.cli import main
from vlmdesk.demo import ensure_demo

ROWS = [(0.30, 0), (0.35, 1), (0.40, 0), (0.45, 0), (0.50, 1), (0.55, 1)]
ROWS += [(0.60, 0), (0.70, 1), (0.80, 1), (0.90, 1), (0.95, 1), (0.99, 1)]


def cli(capsys, *args) -> tuple[int, str, str]:
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_ece_of_a_file_both_binnings(tmp_path, capsys):
    path = tmp_path / "c.jsonl"
    path.write_text("\n".join(json.dumps({"confidence": c, "correct": bool(k)}) for c, k in ROWS) + "\n\n")
    code, out, _ = cli(capsys, "desiderata", "ece", "--input", str(path), "--json")
    found = json.loads(out)
    assert code == 0 and found["n"] == 12 and found["ece"] == pytest.approx(0.284167, abs=5e-7)
    assert found["bins"][0] == {"count": 2, "confidence": pytest.approx(0.325), "accuracy": 0.5}
    code, out, _ = cli(
        capsys,
        "desiderata",
        "ece",
        "--input",
        str(path),
        "--binning",
        "equal-width",
        "--json",
        "--plot",
        str(tmp_path / "r.png"),
    )
    assert json.loads(out)["ece"] == pytest.approx(0.1175) and (tmp_path / "r.png").stat().st_size > 1000
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert cli(capsys, "desiderata", "ece", "--input", str(empty), "--json")[1].strip() == (
        '{"ece": null, "n": 0, "binning": "equal-count", "bins": []}'
    )


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"confidence": 1.5, "correct": 1}', "2: confidence: 1.5 is not in [0, 1]"),
        ('{"confidence": NaN, "correct": 1}', "2: confidence: nan is not in [0, 1]"),
        ('{"confidence": true, "correct": 1}', "2: confidence: expected a number in [0, 1], got true"),
        ('{"confidence": 0.5, "correct": "yes"}', '2: correct: expected true/false or 1/0, got "yes"'),
        ('{"confidence": 0.5, "correct": 2}', "2: correct: expected true/false or 1/0, got 2"),
        ("[0.5, 1]", "2: line: not a JSON object"),
        ("{nope", "2: line: not valid JSON (Expecting property name enclosed in double quotes)"),
    ],
)
def test_ece_bad_lines_are_one_line_errors(tmp_path, capsys, line, message):
    path = tmp_path / "c.jsonl"
    path.write_text('{"confidence": 0.5, "correct": 1}\n' + line + "\n")
    code, out, err = cli(capsys, "desiderata", "ece", "--input", str(path))
    assert code == 2 and out == "" and err == f"error: {path}:{message}\n"


def test_ece_refuses_a_fifo_and_bad_usage(tmp_path, capsys):
    fifo = tmp_path / "f.jsonl"
    os.mkfifo(fifo)
    code, _, err = cli(capsys, "desiderata", "ece", "--input", str(fifo))
    assert code == 2 and err.startswith(f"error: {fifo}:0: file: is a FIFO")
    assert cli(capsys, "desiderata", "ece")[0] == 2
    with pytest.raises(SystemExit) as exit_:
        main(["desiderata", "ece", "--input", str(fifo), "--bins", "0"])
    assert exit_.value.code == 2 and "--bins: must be at least 1" in capsys.readouterr().err
    code, _, err = cli(capsys, "desiderata", "x1")
    assert code == 2 and "not a run id" in err


def test_calibration_of_a_tiny_vlm_likelihood_run(tiny_llava_dir, tmp_path, capsys):
    ws_path = tmp_path / "ws.sqlite"
    with open_workspace(ws_path) as ws:
        ensure_demo(ws)
    args = ["--workspace", str(ws_path)]
    code, out, _ = cli(
        capsys,
        *args,
        "run",
        "--bench",
        "demo",
        "--model",
        f"hf:{tiny_llava_dir}",
        "--limit",
        "6",
        "--likelihood",
        "--strategy",
        "vanilla",
        "--json",
    )
    run_id = json.loads(out)["run_id"]
    with open_workspace(ws_path) as ws:
        preds = runs.predictions_of(ws, run_id)
    assert len(preds) == 6
    for p in preds:  # one log-likelihood per option shown, the choice their argmax
        assert p.scores is not None and len(p.scores) == len(p.option_order)
        assert "ABCDEFGH"[max(range(len(p.scores)), key=lambda i: p.scores[i])] == p.choice
    expected = ece([confidence_of(p.scores)[0] for p in preds], [bool(p.correct) for p in preds])
    code, out, _ = cli(
        capsys,
        *args,
        "desiderata",
        str(run_id),
        "--json",
        "--figure",
        "reliability",
        "--plot",
        str(tmp_path / "rel.png"),
    )
    (model,) = json.loads(out)["models"]
    cal = model["calibration"]
    assert code == 0 and cal["runs"] == [run_id] and cal["entries"][0]["n"] == 6
    assert cal["value"] == pytest.approx(expected.ece) and 0 <= cal["value"] <= 1
    assert (tmp_path / "rel.png").stat().st_size > 1000
    assert cli(capsys, *args, "check")[0] == 0


def test_language_judge_through_a_scripted_server(serve, tmp_path, capsys):
    ws_path = tmp_path / "ws.sqlite"
    with open_workspace(ws_path) as ws:
        bench = mcq_bench(ws, tmp_path, n=3)
        cot = ["Step 1: look. So the answer is A.", "It is B because of the shape.", "C, clearly."]
        run_id = stored_run(ws, bench, ["A", "B", "C"], config={"cot": True}, responses=cot)
    # Item 1 and 3 are read at once; item 2's replies never give a score in 0..10 (3 attempts), so it is missing.
    server = serve(
        [
            ok("[Explanation] Fine.\n[Overall Score] 8"),
            ok("Good."),
            ok("[Overall Score]: 6"),
            ok("Still no score"),
            ok("[Overall Score] 11"),
        ]
    )
    judge = f"openai:judge@{server.url}?concurrency=1&retries=0"
    args = ["--workspace", str(ws_path), "desiderata", "language", str(run_id), "--judge", judge, "--json"]
    code, out, _ = cli(capsys, *args)
    found = json.loads(out)
    assert code == 0 and server.count == 5
    assert found["score"] == pytest.approx(7.0) and found["items_scored"] == 2
    assert (found["passes_judged"], found["passes_missing"], found["passes_left"], found["calls"]) == (3, 1, 0, 5)
    first = server.requests[0]["body"]["messages"][0]["content"]
    text = first if isinstance(first, str) else first[-1]["text"]
    assert "[Overall Score]" in text and "Step 1: look. So the answer is A." in text and "Fluency" in text
    # Asked again: nothing is sent, the stored judgements give the same score.
    code, out, _ = cli(capsys, *args)
    assert server.count == 5 and json.loads(out)["score"] == pytest.approx(7.0) and json.loads(out)["calls"] == 0
    with open_workspace(ws_path) as ws:
        stored = judgements.judgements_of(ws, run_id)
        assert [(j.score, j.attempts) for j in stored] == [(8.0, 1), (None, 3), (6.0, 1)]
    code, out, _ = cli(capsys, "--workspace", str(ws_path), "desiderata", str(run_id), "--json")
    lang = json.loads(out)["models"][0]["language"]
    assert lang["value"] == pytest.approx(7.0) and lang["runs"] == [run_id] and lang["radar"] == pytest.approx(70.0)
    assert not math.isnan(lang["value"])
