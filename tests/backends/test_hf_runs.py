"""Whole runs through `vlmdesk run --model hf:<dir>`: the path a 7B model takes, on tiny random-weight VLMs."""

from __future__ import annotations

import json

import pytest

from db import open_workspace, runs
from vlmdesk.cli import main
from vlmdesk.demo import ensure_demo


@pytest.fixture
def demo_ws(tmp_path):
    path = tmp_path / "ws.sqlite"
    with open_workspace(path) as ws:
        ensure_demo(ws)
    return path


def _run(capsys, *args) -> dict:
    assert main(list(args)) == 0
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


@pytest.mark.parametrize("family", ["tiny_llava_dir", "tiny_idefics3_dir"])
def test_circular_run_on_a_tiny_vlm_stores_every_pass_and_resumes_to_nothing(family, demo_ws, capsys, request):
    model = f"hf:{request.getfixturevalue(family)}"
    args = [
        "--workspace",
        str(demo_ws),
        "run",
        "--bench",
        "demo",
        "--model",
        model,
        "--limit",
        "6",
        "--batch-size",
        "4",
        "--max-new-tokens",
        "4",
        "--full-passes",
    ]
    run_id = _run(capsys, *args, "--json")["run_id"]
    with open_workspace(demo_ws) as ws:
        run = runs.get_run(ws, run_id)
        preds = runs.predictions_of(ws, run_id)
    assert run.status == "finished" and run.versions["backend"]["kind"] == "image-text-to-text"
    assert len(preds) == run.predictions > 6  # every pass of 6 items with 2-4 options
    assert all(p.prompt.startswith(("Question:", "Hint:", "问题", "提示")) and p.latency_ms > 0 for p in preds)
    assert {p.stage for p in preds} <= {"rules", "none"}
    report = json.loads(
        (main(["--workspace", str(demo_ws), "report", str(run_id), "--json"]), capsys.readouterr().out)[1]
    )
    assert report["model_calls"] == len(preds) and report["questions"] == 6
    # The same command again: finished, no model call.
    _run(capsys, *args, "--json")
    with open_workspace(demo_ws) as ws:
        assert len(runs.list_runs(ws)) == 1


def test_likelihood_mode_picks_the_most_likely_letter(tiny_llava_dir, demo_ws, capsys):
    out = _run(
        capsys,
        "--workspace",
        str(demo_ws),
        "run",
        "--bench",
        "demo",
        "--model",
        f"hf:{tiny_llava_dir}",
        "--limit",
        "4",
        "--likelihood",
        "--strategy",
        "vanilla",
        "--json",
    )
    with open_workspace(demo_ws) as ws:
        preds = runs.predictions_of(ws, out["run_id"])
    assert len(preds) == 4
    for p in preds:
        scores = dict(part.split("=") for part in p.reason.removeprefix("log-likelihoods ").split(", "))
        best = max(scores, key=lambda k: float(scores[k]))
        assert p.stage == "likelihood" and p.choice == best == p.response


def test_pope_likelihood_on_a_tiny_vlm(tiny_idefics3_dir, demo_ws, capsys):
    out = _run(
        capsys,
        "--workspace",
        str(demo_ws),
        "run",
        "--bench",
        "demo-pope",
        "--model",
        f"hf:{tiny_idefics3_dir}",
        "--limit",
        "6",
        "--likelihood",
        "--json",
    )
    assert main(["--workspace", str(demo_ws), "report", str(out["run_id"]), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["strategy"] == "pope" and report["answered"] == 6
    assert report["pope"]["official"]["unknown"] == 0 and report["pope"]["strict"]["questions"] == 6
