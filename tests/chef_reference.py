"""ChEF's own computations (OpenGVLab/LAMM, src/ChEF), restated over ChEF's data layout — lists of answer dicts as
its result JSON files hold them — for tests that check vlmdesk, which computes from stored runs, against them.

- `insfollow_mr`: tools/ChEF/eval_insfollow.py `compute_MR` — walk the origin and target answers in order, count an
  item once (id mod 1e6), match when the target's chosen option index equals the origin's; in percent.
- `insfollow_averages`: eval_insfollow.py's `weighted_avg_MR` / `weighted_avg_Acc` — the sum over every setting of
  every type divided by the number of settings (a plain mean over the six settings, not a mean of type means).
- `ppl_score`: models/test_llava15.py `do_ppl` — the mean over the candidate's tokens of the log of its softmax
  probability at the position before it; `ppl_confidence`: inferencer/Singleturn.py `PPL_Inferencer` — the softmax
  of a query's candidate scores, the answer its argmax, the confidence its max.
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
