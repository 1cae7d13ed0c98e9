"""Which open metric to trust, measured: each metric's agreement with people's verdicts on the same answers.

The units are answers (run, item) with a human label (annotation/open_verdicts.py: adjudicated, else the majority of
the standing verdicts; ties are left out and counted). People judge right / partly / wrong; a metric gives a number.

- Binary view: human **right** against **not right** (partly and wrong together: a partly right answer is not one a
  metric should count as right). The metric says right when its score is ≥ a threshold, chosen on these data: of
  the distinct scores, and "no answer counts as right" (threshold null), the one that maximises accuracy (the lowest
  score on a tie). Chosen on the data it is judged on, the accuracy is optimistic; the threshold is printed so it
  can be carried to other data.
- Accuracy with its Wilson 95 % interval (annotation/agreement.py); Cohen's κ of the thresholded metric against the
  human binary label, with a seeded percentile bootstrap 95 % interval (units resampled with replacement, the
  threshold held fixed, resamples where κ is undefined dropped and counted).
- Graded view: Spearman's ρ between the score and the human label as a rank (wrong < partly < right), scipy's.
- The annotators' own agreement on the three verdicts: percent agreement, Cohen's κ (exactly two annotators, over the
  answers both judged) and Krippendorff's α (nominal, any number of annotators, missing verdicts allowed).
Undefined figures are None, never NaN.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, TypeVar

from annotation import agreement
from annotation.open_verdicts import HumanLabel, Unit, human_labels, standing_verdicts
from db import catalog
from db.workspace import Workspace

K = TypeVar("K", bound=Hashable)
RANK = {"wrong": 0, "partly": 1, "right": 2}
"""The human verdict as a rank, for Spearman's ρ."""
BOOTSTRAP = 2000
ScoresOf = Callable[[Workspace, int], Mapping[str, Mapping[int, float]]]
"""run id → metric → item id → score (evaluator/scoring/open_metrics.py's item_scores)."""


def stored_scores(ws: Workspace, run_id: int) -> Mapping[str, Mapping[int, float]]:
    """The open metrics' per-item scores of a run (evaluator/scoring/open_metrics.py: every metric that applies)."""
    from evaluator.scoring.open_metrics import item_scores

    return item_scores(ws, run_id)


@dataclass(frozen=True)
class MetricAgreement:
    """One metric held against the human labels."""

    n: int  # answers with a human label and this metric's score
    threshold: float | None  # score ≥ threshold counts as right; None (with n > 0): no answer does
    accuracy: float | None
    wilson_95: tuple[float, float] | None
    cohen_kappa: float | None
    kappa_95: tuple[float, float] | None  # percentile bootstrap
    bootstrap: int  # resamples drawn
    bootstrap_undefined: int  # resamples where κ was undefined (dropped)
    spearman: float | None

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        for key in ("wilson_95", "kappa_95"):
            out[key] = list(out[key]) if out[key] is not None else None
        return out


def best_threshold(scores: Sequence[float], right: Sequence[bool]) -> tuple[float, int]:
    """(threshold, answers classified alike): of the distinct scores and +inf (no answer counts as right), the t
    maximising agreement of `score ≥ t` with `right`, the lowest on a tie; (inf, 0) without scores."""
    if len(scores) != len(right):
        raise ValueError("scores and labels must have the same length")
    best = (math.inf, sum(not r for r in right))
    for t in sorted(set(scores)):
        hits = sum((s >= t) == r for s, r in zip(scores, right))
        if hits >= best[1] and (hits > best[1] or t < best[0]):
            best = (t, hits)
    return best


def bootstrap_kappa(
    a: Sequence[bool], b: Sequence[bool], *, resamples: int = BOOTSTRAP, seed: int = 0
) -> tuple[tuple[float, float] | None, int]:
    """Percentile bootstrap 95 % interval of Cohen's κ of two binary raters, and how many resamples had κ undefined.
    numpy.random.default_rng(seed).integers(0, n, size=(resamples, n)) draws the resamples, one row each; κ =
    (po − pe) / (1 − pe) per row; np.percentile (linear) of the defined ones at 2.5 and 97.5."""
    import numpy as np

    n = len(a)
    if n == 0 or resamples <= 0:
        return None, 0
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    idx = np.random.default_rng(seed).integers(0, n, size=(resamples, n))
    xs, ys = x[idx], y[idx]
    po = (xs == ys).mean(axis=1)
    px, py = xs.mean(axis=1), ys.mean(axis=1)
    pe = px * py + (1 - px) * (1 - py)
    defined = pe < 1
    kappas = (po[defined] - pe[defined]) / (1 - pe[defined])
    undefined = int(resamples - defined.sum())
    if kappas.size == 0:
        return None, undefined
    low, high = np.percentile(kappas, [2.5, 97.5])
    return (float(low), float(high)), undefined


def spearman(x: Sequence[float], y: Sequence[float]) -> float | None:
    if len(x) < 2 or len(set(x)) < 2 or len(set(y)) < 2:
        return None  # a constant side has no ranks to correlate
    from scipy.stats import spearmanr

    value = float(spearmanr(x, y).statistic)
    return None if math.isnan(value) else value


def metric_agreement(
    human: Mapping[K, str], scores: Mapping[K, float], *, resamples: int = BOOTSTRAP, seed: int = 0
) -> MetricAgreement:
    """One metric's agreement with human verdicts over the units both have (in the order of `human`)."""
    units = [u for u in human if u in scores and not math.isnan(scores[u])]
    values = [float(scores[u]) for u in units]
    right = [human[u] == "right" for u in units]
    threshold, hits = best_threshold(values, right)
    said = [v >= threshold for v in values]
    kappa = agreement.cohen_kappa(right, said)
    interval, undefined = bootstrap_kappa(right, said, resamples=resamples, seed=seed) if units else (None, 0)
    return MetricAgreement(
        len(units),
        threshold if units and math.isfinite(threshold) else None,
        hits / len(units) if units else None,
        agreement.wilson_interval(hits, len(units)),
        kappa,
        interval,
        resamples if units else 0,
        undefined,
        spearman(values, [RANK[human[u]] for u in units]),
    )


@dataclass(frozen=True)
class Annotators:
    names: tuple[str, ...]
    answers_with_two_or_more: int
    percent_agreement: float | None
    cohen_kappa: float | None  # only with exactly two annotators
    krippendorff_alpha: float | None

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "names": list(self.names)}


def annotator_agreement(verdicts: Mapping[K, Mapping[str, str]]) -> Annotators:
    """The annotators' own agreement on right / partly / wrong."""
    names = sorted({a for v in verdicts.values() for a in v})
    multi = [v for v in verdicts.values() if len(v) >= 2]
    kappa = None
    if len(names) == 2:
        both = [v for v in multi if set(v) == set(names)]
        kappa = agreement.cohen_kappa([v[names[0]] for v in both], [v[names[1]] for v in both])
    return Annotators(
        tuple(names),
        len(multi),
        sum(len(set(v.values())) == 1 for v in multi) / len(multi) if multi else None,
        kappa,
        agreement.krippendorff_alpha(list(verdicts.values())),
    )


@dataclass(frozen=True)
class OpenAlignmentReport:
    """`vlmdesk align open`; to_json() is its --json object."""

    benchmark: str
    runs: tuple[int, ...]
    answers: int  # answers of the runs
    judged: int  # answers with at least one standing verdict or adjudication
    labels: dict[str, int]  # human label → answers
    ties: int  # judged answers whose verdicts tie (left out until adjudicated)
    adjudicated: int
    progress: dict[str, int]  # annotator → answers with their standing verdict
    metrics: dict[str, MetricAgreement]
    annotators: Annotators
    seed: int
    # Answers whose annotators' standing verdicts differ: (run, item, annotator → verdict, the adjudication or None)
    disagreements: tuple[tuple[int, int, dict[str, str], str | None], ...] = ()
    rule: str = (
        "human label: the newest adjudication, else the majority of standing verdicts (ties left out); "
        "right vs partly-or-wrong; a metric says right when score >= threshold, the threshold maximising accuracy "
        "on these answers (lowest on a tie; none: no answer counts as right)"
    )

    def to_json(self) -> dict[str, Any]:
        return {
            "benchmark": self.benchmark,
            "runs": list(self.runs),
            "answers": self.answers,
            "judged": self.judged,
            "labels": self.labels,
            "ties": self.ties,
            "adjudicated": self.adjudicated,
            "progress": self.progress,
            "metrics": {name: m.to_json() for name, m in self.metrics.items()},
            "annotators": self.annotators.to_json(),
            "seed": self.seed,
            "rule": self.rule,
            "disagreements": [
                {"run": run, "item_id": item, "verdicts": verdicts, "adjudicated": adjudicated}
                for run, item, verdicts, adjudicated in self.disagreements
            ],
        }


def open_alignment(
    ws: Workspace,
    bench: catalog.Benchmark,
    run_ids: Sequence[int],
    scores_of: ScoresOf,
    *,
    resamples: int = BOOTSTRAP,
    seed: int = 0,
) -> OpenAlignmentReport:
    """Every metric the runs were scored with, held against the human labels of their answers."""
    from annotation.open_verdicts import chosen_runs, queue

    run_ids = chosen_runs(ws, bench, run_ids)
    labels: dict[Unit, HumanLabel] = human_labels(ws, run_ids)
    decided = {u: h.verdict for u, h in sorted(labels.items()) if h.verdict is not None}
    by_metric: dict[str, dict[Unit, float]] = {}
    for run_id in run_ids:
        for name, per_item in scores_of(ws, run_id).items():
            target = by_metric.setdefault(name, {})
            for item_id, value in per_item.items():
                if value is not None:
                    target[(run_id, item_id)] = float(value)
    verdicts = standing_verdicts(ws, run_ids)
    return OpenAlignmentReport(
        bench.name,
        tuple(run_ids),
        len(queue(ws, run_ids)),
        len(labels),
        {v: sum(d == v for d in decided.values()) for v in RANK},
        sum(h.source == "tie" for h in labels.values()),
        sum(h.source == "adjudicated" for h in labels.values()),
        {a: sum(a in v for v in verdicts.values()) for a in sorted({a for v in verdicts.values() for a in v})},
        {
            name: metric_agreement(decided, scores, resamples=resamples, seed=seed)
            for name, scores in sorted(by_metric.items())
        },
        annotator_agreement(verdicts),
        seed,
        tuple(
            (u[0], u[1], dict[str, str](v), labels[u].verdict if labels[u].source == "adjudicated" else None)
            for u, v in sorted(verdicts.items())
            if len(set(v.values())) > 1
        ),
    )
