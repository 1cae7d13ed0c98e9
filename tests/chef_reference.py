"""ChEF's own computations (OpenGVLab/LAMM, src/ChEF), restated over ChEF's data layout — lists of answer dicts as
its result JSON files hold them — for tests that check vlmdesk, which computes from stored runs, against them.

- `insfollow_mr`: tools/ChEF/eval_insfollow.py `compute_MR` — walk the origin and target answers in order, count an
  item once (id mod 1e6), match when the target's chosen option index equals the origin's; in percent.
- `insfollow_averages`: eval_insfollow.py's `weighted_avg_MR` / `weighted_avg_Acc` — the sum over every setting of
  every type divided by the number of settings (a plain mean over the six settings, not a mean of type means).
- `ppl_score`: models/test_llava15.py `do_ppl` — the mean over the candidate's tokens of the log of its softmax
  probability at the position before it; `ppl_confidence`: inferencer/Singleturn.py `PPL_Inferencer` — the softmax
  of a query's candidate scores, the answer its argmax (the first on a tie, as numpy's), the confidence its max.
  The calibration recipes (config/ChEF/desiderata_recipes/Calibration/*.yaml) name inferencer "Calibration", which
  the current inferencer_dict lacks; the one they were written for, ChEF v1's `Cali_inferencer` (inferencer/PPL.py,
  commit 24af9d3), computes the same: softmax of each candidate's mean token log-prob (test_llava.py `do_ppl` with
  calib), argmax, max. Both ask with CoT: True (instruction/__init__.py: "{question}\nLet's think step by step.",
  256 new tokens) and score the candidate "(A" at the end of "{CoT}\n" + "The correct option for the question is
  (A" after the query "{question}What is the correct option for this question?".
- `compute_ece`: metric/desiderata.py `compute_ECE` — answers sorted by confidence, equal-count bins (the first
  N mod B one item more), ECE = sum over bins of |bin| · |mean confidence − accuracy| / N; with its bins' means.
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def insfollow_mr(origin: list[dict], target: list[dict]) -> float:
    matched, total, seen = 0, 0, set()
    for o, t in zip(origin, target):
        main = int(o["id"]) % int(1e6)
        if main in seen:
            continue
        seen.add(main)
        total += 1
        assert o["id"] == t["id"]
        if o["options"].index(o["answer"]) == t["options"].index(t["answer"]):
            matched += 1
    return matched / total * 100


def insfollow_averages(settings: dict[tuple[str, int], tuple[float, float]]) -> tuple[float, float]:
    """(weighted_avg_MR, weighted_avg_Acc) from {(type, ids): (acc, mr)}, as eval_insfollow.py sums them."""
    types_accs: dict[str, list[float]] = {"natural": [], "neutral": [], "unnatural": []}
    types_mrs: dict[str, list[float]] = {"natural": [], "neutral": [], "unnatural": []}
    for (kind, _), (acc, mr) in settings.items():
        types_accs[kind].append(acc)
        types_mrs[kind].append(mr)
    avg_acc = sum(a for accs in types_accs.values() for a in accs) / len(settings)
    avg_mr = sum(m for mrs in types_mrs.values() for m in mrs) / len(settings)
    return avg_mr, avg_acc


def ppl_score(log_softmax_rows: Sequence[Sequence[float]], token_ids: Sequence[int]) -> float:
    """The mean log-prob of a candidate's tokens: row t is the log-softmax at the position predicting token t."""
    return sum(row[tok] for row, tok in zip(log_softmax_rows, token_ids)) / len(token_ids)


def ppl_confidence(scores: Sequence[float]) -> tuple[int, float]:
    top = max(scores)
    weights = [math.exp(s - top) for s in scores]
    probs = [w / sum(weights) for w in weights]
    best = max(range(len(probs)), key=probs.__getitem__)
    return best, probs[best]


def compute_ece(answers: list[dict], num_bins: int = 10) -> tuple[float, list[float], list[float]]:
    """(ECE, Acc_bins, Prob_bins) of answers {"prob", "correct"}, walked as ChEF's compute_ECE walks them."""
    probs, accs = [], []
    least = int(len(answers) / num_bins)
    plus_max_id = len(answers) % num_bins - 1
    cur_bin_id = 0
    cur_bin_max = least + 1 if plus_max_id >= 0 else least
    ece = 0.0
    cur_bin_probs: list[float] = []
    cur_bin_accs: list[int] = []
    total = 0
    for item in sorted(answers, key=lambda x: x["prob"]):
        cur_bin_probs.append(item["prob"])
        cur_bin_accs.append(item["correct"])
        if len(cur_bin_probs) == cur_bin_max:
            avg_p = sum(cur_bin_probs) * 1.0 / len(cur_bin_accs)
            probs.append(avg_p)
            avg_a = sum(cur_bin_accs) * 1.0 / len(cur_bin_accs)
            accs.append(avg_a)
            ece += len(cur_bin_probs) * abs(avg_p - avg_a)
            total += len(cur_bin_accs)
            cur_bin_id += 1
            cur_bin_probs, cur_bin_accs = [], []
            if cur_bin_id == plus_max_id + 1:
                cur_bin_max -= 1
    assert total == len(answers)
    return ece / len(answers), accs, probs
