"""Runs with an LLM extractor, re-scoring without calling the evaluated model, and reports per scoring.

The evaluated "model" is a fault server that echoes its prompt (every option named: the rules are undecided), the
extractor model a fault server that always answers "A"; both count their requests.
"""

from __future__ import annotations

import json

import pytest

from annotation.alignment import add_label, build_set, next_for
from db import open_workspace, runs
from db.extractions import scorings_of
from evaluator.formats.importers import import_benchmark
from evaluator.scoring.llm_extraction import load_extractor
from tests.backend_plugins import slow_backend  # noqa: F401 (fixture)
from tests.factories import png_bytes
from tests.servers import FaultServer, ok
from vlmdesk.cli import main

N = 6
ANSWERS = "ABC"


@pytest.fixture
def setup(tmp_path):
    (tmp_path / "img.png").write_bytes(png_bytes())
    with open(tmp_path / "b.jsonl", "w") as f:
        for i in range(N):
            f.write(
                json.dumps(
                    {
                        "index": i,
                        "question": f"Which is item {i}?",
                        "image": "img.png",
                        "options": [f"thing {i} {j}" for j in range(3)],
                        "answer": ANSWERS[i % 3],
                    }
                )
                + "\n"
            )
    ws_path = tmp_path / "ws.sqlite"
    with open_workspace(ws_path) as ws:
        import_benchmark(ws, tmp_path / "b.jsonl", fmt="jsonl", name="b")
    model, judge = FaultServer(echo=True), FaultServer([ok("A")])
    yield ws_path, model, judge
    model.close()
    judge.close()


def cli(capsys, ws_path, *args) -> tuple[int, str, str]:
    code = main(["--workspace", str(ws_path), *map(str, args)])
    out = capsys.readouterr()
    return code, out.out, out.err


def report(capsys, ws_path, run_id, *extra) -> dict:
    code, out, err = cli(capsys, ws_path, "report", run_id, "--json", *extra)
    assert code == 0, err
    return json.loads(out)


def test_run_with_rules_then_llm_extractor_stores_spec_and_stages(setup, capsys):
    ws_path, model, judge = setup
    judge_spec = f"rules+llm:openai:judge@{judge.url}?retries=0"
    code, out, err = cli(
        capsys,
        ws_path,
        "run",
        "--bench",
        "b",
        "--model",
        f"openai:m@{model.url}?retries=0",
        "--extractor",
        judge_spec,
        "--json",
    )
    assert code == 0, err
    run_id = json.loads(out)["run_id"]
    with open_workspace(ws_path) as ws:
        run = runs.get_run(ws, run_id)
        preds = runs.predictions_of(ws, run_id)
    assert run.extractor == judge_spec and run.config["extractor"] == judge_spec
    assert {(p.choice, p.stage) for p in preds} == {("A", "llm")}
    # Items whose answer is A are right at pass 0, then wrong at pass 1 (A is shown as C there): 6 + 2 passes.
    assert len(preds) == N + N // 3 and model.count == len(preds) and judge.count == len(preds)
    # The extractor is part of the run's identity: the same command with rules is another run.
    code, out, _ = cli(capsys, ws_path, "run", "--bench", "b", "--model", f"openai:m@{model.url}?retries=0", "--json")
    assert json.loads(out)["run_id"] != run_id
    code, _, err = cli(capsys, ws_path, "run", "--bench", "b", "--model", "baseline:first", "--extractor", "gpt")
    assert code == 2 and "unknown extractor" in err


def test_rescore_never_calls_the_model_and_reports_each_scoring_separately(setup, capsys):
    ws_path, model, judge = setup
    code, out, err = cli(capsys, ws_path, "run", "--bench", "b", "--model", f"openai:m@{model.url}?retries=0", "--json")
    run_id = json.loads(out)["run_id"]
    assert model.count == N  # every response undecided by the rules: each item stops after pass 0
    own = report(capsys, ws_path, run_id)
    assert (own["scoring"], own["scoring_source"]) == ("rules", "run")
    assert own["overall"]["vanilla"] == 0 and own["undecided"] == N

    spec = f"rules+llm:openai:judge@{judge.url}?retries=0"
    for _ in range(2):  # the second re-scoring replaces the first and pays nothing
        code, out, err = cli(capsys, ws_path, "rescore", run_id, "--extractor", spec, "--json")
        assert code == 0, err
        summary = json.loads(out)
        assert summary["scoring"] == spec and summary["passes"] == N and summary["changed_from_run"] == N
        assert model.count == N and judge.count == N
    llm_rep = report(capsys, ws_path, run_id, "--scoring", spec)
    assert (llm_rep["scoring"], llm_rep["scoring_source"]) == (spec, "rescore")
    assert llm_rep["overall"]["vanilla"] == pytest.approx(2 / N)  # the two items whose answer is A
    # Their passes 1 and 2 were never asked (the run's own reading ended them): counted wrong, and reported.
    assert llm_rep["overall"]["circular"] == 0
    assert llm_rep["circular_unasked_items"] == 2 and llm_rep["circular_upper"] == pytest.approx(2 / N)
    after = report(capsys, ws_path, run_id)  # the run's own scoring is untouched
    assert {k: v for k, v in after.items() if k != "scorings"} == {k: v for k, v in own.items() if k != "scorings"}

    code, out, _ = cli(capsys, ws_path, "rescore", run_id, "--extractor", "rules")
    assert code == 0 and "0 read differently" in out
    assert report(capsys, ws_path, run_id, "--scoring", "rules")["scoring_source"] == "rescore"

    # Human scoring: labels for 5 of the 6 responses; the sixth keeps the run's own (undecided) reading.
    with open_workspace(ws_path) as ws:
        build_set(ws, "s", [run_id], [load_extractor(spec, ws)], size=0, seed=0)
        for _ in range(N - 1):
            task = next_for(ws, "s", "ana")
            item = int(task.question.split()[-1].rstrip("?"))
            add_label(ws, task.item_id, "ana", ANSWERS[item % 3])
    assert judge.count == N  # the set re-used the cached LLM readings
    code, out, err = cli(capsys, ws_path, "rescore", run_id, "--extractor", "human", "--json")
    assert code == 0, err
    summary = json.loads(out)
    assert summary["kept_from_run"] == 1 and summary["by_stage"] == {"human": N - 1, "run:none": 1}
    human = report(capsys, ws_path, run_id, "--scoring", "human")
    assert human["scoring"] == "human" and human["overall"]["vanilla"] == pytest.approx((N - 1) / N)
    assert human["circular_unasked_items"] == N - 1
    assert human["scorings"] == ["run", spec, "rules", "human"]
    assert model.count == N
    with open_workspace(ws_path) as ws:
        assert len(scorings_of(ws, run_id)) == 3

    code, out, _ = cli(capsys, ws_path, "report", run_id, "--scoring", "human")
    assert code == 0 and "scoring human (rescore)" in out and "passes never asked: 5" in out
    code, _, err = cli(capsys, ws_path, "report", run_id, "--scoring", "llm:openai:other")
    assert code == 2 and err.startswith("error: run") and "no scoring" in err
    code, _, err = cli(capsys, ws_path, "rescore", 99, "--extractor", "rules")
    assert code == 2 and "no run 99" in err


def test_rescore_of_a_baseline_run_with_rules_changes_nothing(setup, capsys):
    ws_path, _, _ = setup
    code, out, _ = cli(capsys, ws_path, "run", "--bench", "b", "--model", "baseline:random", "--json")
    run_id = json.loads(out)["run_id"]
    cli(capsys, ws_path, "rescore", run_id, "--extractor", "rules")
    own, again = report(capsys, ws_path, run_id), report(capsys, ws_path, run_id, "--scoring", "rules")
    for key in ("overall", "by_l2", "by_category", "undecided", "model_calls", "consistency"):
        assert own[key] == again[key]
    assert again["circular_unasked_items"] == 0


@pytest.mark.usefixtures("slow_backend")
def test_an_unfinished_run_cannot_be_rescored(tmp_path, capsys):
    import json
    import signal
    import subprocess
    import sys

    from db import open_workspace
    from vlmdesk.cli import main
    from vlmdesk.demo import ensure_demo

    path = tmp_path / "ws.sqlite"
    with open_workspace(path) as ws:
        ensure_demo(ws)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "vlmdesk",
            "--workspace",
            str(path),
            "run",
            "--bench",
            "demo",
            "--model",
            "slow:first?delay_ms=200",
            "--batch-size",
            "2",
            "--json-progress",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    while json.loads(proc.stdout.readline())["event"] != "progress":
        pass
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=30)
    capsys.readouterr()
    assert main(["--workspace", str(path), "rescore", "1", "--extractor", "rules"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: run 1 is interrupted: finish it first") and err.count("\n") == 1
