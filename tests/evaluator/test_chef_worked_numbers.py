"""ChEF's calibration worked through by ChEF's own code, its numbers held here as data.

The expected figures were computed once by ChEF's code itself (OpenGVLab/LAMM, src/ChEF at ea57136): `compute_ECE`
exec'd from metric/desiderata.py, the softmax / argmax / max lines of inferencer/Singleturn.py `PPL_Inferencer`
(torch, float64 from numpy) and the score lines of models/test_llava15.py `do_ppl` (torch float32) on the inputs
below. vlmdesk's confidence, ECE and desiderata report must give the same numbers, and tests/chef_reference.py's
restatements too.
"""

from __future__ import annotations

import math

import pytest

from db import open_workspace
from evaluator.analysis.desiderata import desiderata_report
from evaluator.analysis.desiderata_metrics import confidence_of, ece
from tests.chef_reference import compute_ece, ppl_confidence, ppl_score
from tests.evaluator.desiderata_runs import mcq_bench, stored_run

# do_ppl on fixed logits: three positions over a vocabulary of 5; the candidate's tokens [2, 4] are predicted by
# positions 0 and 1. ChEF: torch.log(F.softmax(logits[0:2])[[0, 1], [2, 4]]).mean() in float32.
LOGITS = [[0.5, 1.0, 2.0, -1.0, 0.0], [1.5, -0.5, 0.0, 0.3, 2.5], [0.1, 0.2, 0.3, 0.4, 0.5]]
CANDIDATE_IDS = [2, 4]
CHEF_PPL_SCORE = -0.5255082845687866

# Twelve queries, four candidates each: their mean token log-probs (what do_ppl returns) and the key's index.
SCORES = [
    [-0.2, -2.1, -3.0, -2.5],
    [-1.0, -0.9, -1.2, -3.0],
    [-0.05, -4.0, -4.0, -4.0],
    [-2.0, -0.3, -1.9, -2.2],
    [-1.5, -1.4, -0.2, -2.8],
    [-0.7, -0.8, -0.75, -0.9],
    [-3.0, -2.0, -1.0, -0.1],
    [-0.4, -0.5, -2.0, -2.0],
    [-1.1, -3.3, -0.6, -1.0],
    [-0.01, -5.0, -6.0, -5.5],
    [-2.2, -2.1, -2.3, -0.4],
    [-0.9, -1.6, -1.3, -0.95],
]
KEYS = [0, 1, 0, 2, 2, 1, 3, 0, 0, 0, 1, 3]
# PPL_Inferencer's answer_dict['prob'] (max of the softmax) and the argmax, per query; right when argmax == key.
CHEF_PROB = [
    0.7629874625820713,
    0.36125705022281507,
    0.9453903710332943,
    0.6518273132488757,
    0.6067962699858157,
    0.27212383103585264,
    0.6206702435531629,
    0.43315724188616894,
    0.4266109285744973,
    0.9867409908789241,
    0.6677568770397074,
    0.32070454690836436,
]
CHEF_PRED = [0, 1, 0, 1, 2, 0, 3, 0, 2, 0, 3, 0]
CHEF_CORRECT = [1, 1, 1, 0, 1, 0, 1, 1, 0, 1, 0, 0]
# compute_ECE(answers), 10 bins: 12 answers, so the first two bins hold two.
CHEF_ECE = 0.3140668341263375
CHEF_ACC_BINS = [0.0, 0.5, 1.0, 1.0, 1.0, 0.0, 0.0, 1.0, 1.0, 1.0]
CHEF_PROB_BINS = [
    0.29641418897210847,
    0.3939339893986562,
    0.43315724188616894,
    0.6067962699858157,
    0.6206702435531629,
    0.6518273132488757,
    0.6677568770397074,
    0.7629874625820713,
    0.9453903710332943,
    0.9867409908789241,
]


def log_softmax(row: list[float]) -> list[float]:
    top = max(row)
    total = math.log(sum(math.exp(x - top) for x in row)) + top
    return [x - total for x in row]


def test_the_reference_restates_chefs_code_on_its_worked_numbers():
    assert ppl_score([log_softmax(r) for r in LOGITS[:2]], CANDIDATE_IDS) == pytest.approx(CHEF_PPL_SCORE, abs=1e-6)
    assert [ppl_confidence(s) for s in SCORES] == [pytest.approx((p, c)) for p, c in zip(CHEF_PRED, CHEF_PROB)]
    answers = [{"prob": p, "correct": c} for p, c in zip(CHEF_PROB, CHEF_CORRECT)]
    got_ece, accs, probs = compute_ece(answers)
    assert got_ece == CHEF_ECE and accs == CHEF_ACC_BINS and probs == CHEF_PROB_BINS


def test_vlmdesk_confidence_and_ece_are_chefs_numbers():
    found = [confidence_of(s) for s in SCORES]
    assert [conf for conf, _ in found] == pytest.approx(CHEF_PROB, abs=1e-15)
    assert [best for _, best in found] == CHEF_PRED
    right = [best == key for (_, best), key in zip(found, KEYS)]
    assert right == [bool(c) for c in CHEF_CORRECT]
    cal = ece([conf for conf, _ in found], right, bins=10)
    assert cal.ece == pytest.approx(CHEF_ECE, abs=1e-15) and cal.n == 12
    assert [b.accuracy for b in cal.bins] == CHEF_ACC_BINS
    assert [b.confidence for b in cal.bins] == pytest.approx(CHEF_PROB_BINS, abs=1e-15)


def test_the_desiderata_report_of_a_chef_scored_run_is_chefs_ece(tmp_path):
    with open_workspace(tmp_path / "ws.sqlite") as ws:
        bench = mcq_bench(ws, tmp_path, n=12)
        # The bench's item i has key i mod 4; the stored scores are put in that item's shown order so that the
        # candidate at KEYS[i] of SCORES[i] lands on the item's key.
        shifted, chosen = [], []
        for i, (scores, key) in enumerate(zip(SCORES, KEYS)):
            shift = (i % 4) - key
            moved = [scores[(j - shift) % 4] for j in range(4)]
            shifted.append(moved)
            chosen.append("ABCD"[(CHEF_PRED[i] + shift) % 4])
        chef = stored_run(ws, bench, chosen, config={"likelihood": True, "likelihood_score": "chef"}, scores=shifted)
        plain_sum = stored_run(ws, bench, ["A"] * 12, config={"likelihood": True}, scores=[[0.0, -9, -9, -9]] * 12)
        report = desiderata_report(ws, [plain_sum, chef])
    cal = report.models[0].dimensions["calibration"]
    assert cal.value == pytest.approx(CHEF_ECE, abs=1e-15)
    # ChEF's definition is the figure when a ChEF-scored run is given; a summed-letter run is not averaged in.
    assert cal.runs == (chef,) and cal.extra["confidence"] == "chef"
    assert cal.entries[0]["confidence"] == "chef" and "mean token log-prob" in cal.entries[0]["confidence_is"]
    assert [b["accuracy"] for b in cal.entries[0]["bins"]] == CHEF_ACC_BINS
