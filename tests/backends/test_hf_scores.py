"""LVLM-eHub's prefix score (`--likelihood-score prefix`) and `--no-share-prefix` through whole `vlmdesk run`s."""

from __future__ import annotations

import json
import math

import pytest

from db import open_workspace, runs
from evaluator.engine.runner import RunSettings
from evaluator.scoring.choices import prefix_candidates, prefix_scores
from vlmdesk.cli import main
from vlmdesk.demo import ensure_demo


def test_prefix_scores_are_the_softmax_of_inverse_first_token_losses():
    scores = prefix_scores([math.log(0.5), math.log(0.25), math.log(0.125)])
    assert scores == pytest.approx([0.5352, 0.2602, 0.2046], abs=1e-4)
    assert prefix_scores([0.0, math.log(0.5)]) == pytest.approx([1.0, 0.0])  # a certain first token wins
    assert prefix_candidates(["a red car", " Yes "]) == (" a red car.", " Yes.")


def test_prefix_score_is_a_likelihood_setting():
    RunSettings(likelihood=True, likelihood_score="prefix").check()
    assert "likelihood_score" not in RunSettings(likelihood=True).identity()  # old runs keep their key
    for bad in (RunSettings(likelihood_score="prefix"), RunSettings(likelihood=True, likelihood_score="mean")):
        with pytest.raises(ValueError, match="likelihood_score"):
            bad.check()


@pytest.fixture
def demo_ws(tmp_path):
    path = tmp_path / "ws.sqlite"
    with open_workspace(path) as ws:
        ensure_demo(ws)
    return path


def _run(capsys, *args) -> int:
    assert main(list(args)) == 0
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])["run_id"]


def test_prefix_score_run_and_no_share_prefix_run_on_a_tiny_vlm(tiny_llava_dir, demo_ws, capsys):
    common = ["--workspace", str(demo_ws), "run", "--bench", "demo", "--model", f"hf:{tiny_llava_dir}", "--limit", "5"]
    prefix_run = _run(capsys, *common, "--likelihood-score", "prefix", "--strategy", "vanilla", "--json")
    shared = _run(capsys, *common, "--max-new-tokens", "6", "--full-passes", "--batch-size", "3", "--json")
    unshared = _run(
        capsys, *common, "--max-new-tokens", "6", "--full-passes", "--batch-size", "3", "--no-share-prefix", "--json"
    )
    with open_workspace(demo_ws) as ws:
        run = runs.get_run(ws, prefix_run)
        preds = runs.predictions_of(ws, prefix_run)
        a, b = runs.predictions_of(ws, shared), runs.predictions_of(ws, unshared)
        specs = runs.get_run(ws, shared).model_spec, runs.get_run(ws, unshared).model_spec
        sharing = runs.get_run(ws, shared).versions["backend"]["share_prefix"]
    assert run.config["likelihood"] is True and run.config["likelihood_score"] == "prefix"
    assert len(preds) == 5
    for p in preds:
        scores = dict(part.split("=") for part in p.reason.removeprefix("prefix scores ").split(", "))
        assert p.reason.startswith("prefix scores ") and sum(map(float, scores.values())) == pytest.approx(1, abs=3e-3)
        # The highest score (shown to 3 decimals, so a near tie may show equal ones) is the choice.
        assert p.stage == "likelihood" and p.choice == p.response in scores
        assert float(scores[p.choice]) == max(map(float, scores.values()))
    # Sharing prefixes changes nothing a run stores but the spec that names it.
    assert specs == (f"hf:{tiny_llava_dir}", f"hf:{tiny_llava_dir}?share_prefix=0")
    assert [(p.item_id, p.pass_, p.response) for p in a] == [(p.item_id, p.pass_, p.response) for p in b]
    assert len(a) > 5 and sharing == "on"


def test_no_share_prefix_is_for_hf_models_only(demo_ws, capsys):
    code = main(
        ["--workspace", str(demo_ws), "run", "--bench", "demo", "--model", "baseline:first", "--no-share-prefix"]
    )
    assert code == 2 and "hf: models only" in capsys.readouterr().err


def test_the_launcher_offers_the_prefix_score():
    from gui.run_queue import run_args
    from gui.runs_view import STRATEGIES

    assert ("Prefix score · CircularEval", "circular", "prefix") in STRATEGIES["mcq"]
    args = run_args(bench="demo", model="hf:./m", likelihood="prefix")
    assert args[-2:] == ("--likelihood-score", "prefix") and "--likelihood" not in args
    assert run_args(bench="demo", model="hf:./m", likelihood=True)[-1] == "--likelihood"
