"""K samples per item (issue 38, docs/adr/0057): the figures of a sample group, mean@K and pass@k.

`vlmdesk run --samples K` stores K ordinary runs, a **sample group**: sample 0 is the plain run, sample s >= 1 the
same run asked again with the backend's sampling seed + s (db.runs.sample_group finds them). Per item i, of the n_i
samples that decided it, c_i were right:

- multiple choice: VanillaEval per sample (its pass 0 right), and CircularEval per sample — a sample is right under
  CircularEval iff every one of its rotations is right (each sample is its own CircularEval, early stop included);
  an item a sample has not decided yet (rotations pending) is not one of its n_i;
- POPE: the official parser's reading equals the label;
- open runs: each open metric's mean over the item's samples (mean@K only: a graded score has no pass@k).

mean@K is the mean over items of c_i / n_i, pass@k the mean over items of the unbiased estimator
1 − C(n_i − c_i, k) / C(n_i, k) (intervals.pass_at_k), over the items with n_i >= k (the others are left out and
counted). Each has a percentile bootstrap interval over items (intervals.bootstrap_mean): an item, with all its
samples, is the unit resampled. Read from the kept figures of each sample run (one row per item and run) under the
runs' own scoring.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from db import runs
from db.workspace import Workspace
from evaluator.analysis.intervals import BOOTSTRAP, Interval, bootstrap_mean, pass_at_k

if TYPE_CHECKING:
    from evaluator.analysis.report import RunReport

POPE_FIGURE = "POPE accuracy (official)"


def pass_ks(k: int) -> tuple[int, ...]:
    """The k of pass@k a group of K samples reports: 1, 2, 4, … below K, and K."""
    found, step = [], 1
    while step < k:
        found.append(step)
        step *= 2
    return (*found, k)


@dataclasses.dataclass(frozen=True)
class PassAt:
    """pass@k over the items with at least k samples (`items`), with its interval; `left_out` items had fewer."""

    k: int
    value: float | None
    interval: Interval | None
    items: int
    left_out: int

    def to_json(self) -> dict[str, Any]:
        return {
            "k": self.k,
            "value": self.value,
            "interval": self.interval and self.interval.to_json(),
            "items": self.items,
            "left_out": self.left_out,
        }


@dataclasses.dataclass(frozen=True)
class SampleFigure:
    """One figure over a group's samples: mean@K (the mean over items of an item's mean over its samples) with its
    interval, over `items` items, and pass@k for each k (none for a graded open metric). `scale` "cider" for CIDEr,
    else a fraction."""

    name: str
    items: int
    mean: float | None
    interval: Interval | None
    pass_at: tuple[PassAt, ...] = ()
    scale: str = "fraction"

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "items": self.items,
            "mean": self.mean,
            "interval": self.interval and self.interval.to_json(),
            "pass_at": [p.to_json() for p in self.pass_at],
            "scale": self.scale,
        }


@dataclasses.dataclass(frozen=True)
class SampleFigures:
    """A sample group's figures: its K samples present (`samples`: their numbers; `run_ids` in that order), how many
    are finished, and each figure (CircularEval first where there is one)."""

    k: int
    samples: tuple[int, ...]
    run_ids: tuple[int, ...]
    finished: int
    figures: tuple[SampleFigure, ...]
    method: str = BOOTSTRAP

    def to_json(self) -> dict[str, Any]:
        return {
            "k": self.k,
            "samples": list(self.samples),
            "run_ids": list(self.run_ids),
            "finished": self.finished,
            "method": self.method,
            "figures": [f.to_json() for f in self.figures],
        }


def right_of(counts: dict[int, tuple[int, int]], name: str, k: int) -> SampleFigure:
    """A right/wrong figure from item id -> (n_i samples that decided it, c_i right): mean@K and pass@k for each k of
    pass_ks(k) (items with n_i < k left out of that pass@k)."""
    decided = [(n, c) for n, c in counts.values() if n > 0]
    means = [c / n for n, c in decided]
    passes = []
    for kk in pass_ks(k):
        values = [pass_at_k(n, c, kk) for n, c in decided if n >= kk]
        passes.append(
            PassAt(
                kk,
                sum(values) / len(values) if values else None,
                bootstrap_mean(values),
                len(values),
                len(decided) - len(values),
            )
        )
    return SampleFigure(
        name, len(decided), sum(means) / len(means) if means else None, bootstrap_mean(means), tuple(passes)
    )


def mean_of(scores: dict[int, list[float]], name: str, scale: str = "fraction") -> SampleFigure:
    """A graded figure from item id -> its scores over the samples that scored it: mean@K with its interval."""
    means = [sum(v) / len(v) for v in scores.values() if v]
    return SampleFigure(name, len(means), sum(means) / len(means) if means else None, bootstrap_mean(means), (), scale)


def _tally(outcomes: Iterable[Iterable[runs.ItemOutcome]], strategy: str) -> dict[str, dict[int, tuple[int, int]]]:
    """figure name -> item id -> (n_i, c_i) over the samples' kept outcomes."""
    tallies: dict[str, dict[int, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    for sample in outcomes:
        for o in sample:
            if strategy == "pope":
                if o.pope_label is not None:
                    t = tallies[POPE_FIGURE][o.item_id]
                    t[0], t[1] = t[0] + 1, t[1] + (o.official == o.pope_label)
                continue
            if o.result == "unscored":  # no answer key
                continue
            if strategy == "circular" and o.result in ("right", "wrong"):  # pending: not decided by this sample yet
                t = tallies["CircularEval"][o.item_id]
                t[0], t[1] = t[0] + 1, t[1] + (o.result == "right")
            t = tallies["VanillaEval"][o.item_id]
            t[0], t[1] = t[0] + 1, t[1] + o.vanilla
    order = ("CircularEval", "VanillaEval", POPE_FIGURE)
    return {name: {i: (n, c) for i, (n, c) in tallies[name].items()} for name in order if name in tallies}


def _open_scores(ws: Workspace, group: list[runs.Run]) -> tuple[dict[str, dict[int, list[float]]], dict[str, str]]:
    from evaluator.scoring import open_metrics

    scores: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for run in group:
        answers, _ = open_metrics.answers_of(ws, run)
        for name, by_item in open_metrics.score_answers(ws, run.id, answers).items():
            for item_id, value in by_item.items():
                scores[name][item_id].append(value)
    return scores, {name: open_metrics.REGISTRY[name].scale for name in scores}


def sample_figures(ws: Workspace, run: runs.Run) -> SampleFigures | None:
    """The figures of the sample group `run` belongs to; None for a run without siblings. The group is found in O(K)
    index seeks; each sample's figures are its kept rows (one per item), an open run's answers are scored."""
    group = runs.sample_group(ws, runs.group_key(run))
    if len(group) < 2:
        return None
    members = list(group.values())
    k = len(members)
    figures: list[SampleFigure]
    if run.strategy == "open":
        scores, scales = _open_scores(ws, members)
        figures = [mean_of(scores[name], name, scales[name]) for name in scores]
    else:
        tallies = _tally((runs.item_outcomes(ws, r.id) for r in members), run.strategy)
        figures = [right_of(counts, name, k) for name, counts in tallies.items()]
    return SampleFigures(
        k,
        tuple(group),
        tuple(r.id for r in members),
        sum(r.status == "finished" for r in members),
        tuple(figures),
    )


def _value(value: float | None, scale: str) -> str:
    return "-" if value is None else f"{value:.3f}" if scale == "cider" else f"{100 * value:.1f}"


def _with_interval(value: float | None, interval: Interval | None, scale: str) -> str:
    shown = _value(value, scale)
    if interval is None or value is None:
        return shown
    return f"{shown} {interval.shown(1.0, 3) if scale == 'cider' else interval.shown()}"


def sample_lines(report: RunReport) -> list[str]:
    """What a report's text says of a sampled run's group: `samples: K=4 (runs 3, 8, 9, 10; 4 finished) …`, then per
    figure `mean@4 71.9 [69.8, 73.9] · pass@1 … · pass@4 79.3 [77.0, 81.5]`. Nothing for a run without siblings."""
    s: SampleFigures | None = getattr(report, "samples", None)
    if s is None:
        return []
    runs_shown = ", ".join(map(str, s.run_ids))
    lines = [f"samples: K={s.k} (runs {runs_shown}; {s.finished} finished); intervals: 95 % {s.method}"]
    for f in s.figures:
        parts = [f"mean@{s.k} {_with_interval(f.mean, f.interval, f.scale)}"]
        parts += [f"pass@{p.k} {_with_interval(p.value, p.interval, f.scale)}" for p in f.pass_at]
        left = [f"pass@{p.k} leaves out {p.left_out}" for p in f.pass_at if p.left_out]
        tail = f"  ({f.items} items" + (f"; {', '.join(left)} with fewer samples" if left else "") + ")"
        lines.append(f"  {f.name}: " + " · ".join(parts) + tail)
    return lines
