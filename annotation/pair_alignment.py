"""Judges held against people's votes on the arena's pairs (`vlmdesk align pairs`, the Alignment tab's Pairs page).

The unit is a **pair** (annotation/arena.py) of the benchmark with both a human label and a judge label:

- **Human label**: the majority of the pair's standing votes (one per annotator); a pair whose votes tie between
  verdicts (one left, one right, say) has none — left out and counted (`human_ties`). A single vote is its label.
- **Judge label**: with one order, the judge's verdict (mapped to the pair's sides). With both orders, a side wins
  only when both orders chose it; orders that disagree make a tie (Zheng et al. 2023, "Judging LLM-as-a-judge",
  MT-bench's rule for a judge that changes its mind with the order). A pair with an undecided order has none
  (counted with the undecided).
- **Accuracy** (four-way: left / right / tie / both bad, a tie counted as any other verdict) with its Wilson 95 %
  interval, and **Cohen's κ** over the same four categories with a percentile bootstrap 95 % interval over pairs
  (evaluator/analysis/intervals.bootstrap; None when κ is undefined in some resample).
- **Decisive agreement**: over the pairs where both people and the judge chose a side, the share where they chose
  the same (Wilson), and κ of that binary choice (bootstrap as the open-answer study draws it,
  open_alignment.bootstrap_kappa).
- **Position bias**: over every decisive judgement (each order a unit), the share that chose the answer shown first,
  against 0.5 by scipy's exact binomial test; with both orders, the **consistency** (pairs whose two orders name the
  same verdict on the pair's sides, Wilson) and, among the inconsistent pairs that chose a side both times, the share
  that chose the first-shown answer both times.
- **Rankings**: Bradley–Terry ratings (evaluator/analysis/ratings.py, as Chatbot Arena fits them) from the judge's
  decided judgements (each one a battle, both orders included) and from the standing votes (arena.battles), and
  Spearman's ρ between them (scipy) over the models rated by both; n models is stated, and with fewer than
  MIN_MODELS_FOR_RHO there is no ρ ("n too small").
Undefined figures are None, never NaN.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from annotation import agreement, arena
from annotation.open_alignment import bootstrap_kappa, spearman
from db import catalog, runs
from db import pair_judgements as store
from db.errors import InvalidInput, NotFound
from db.workspace import Workspace
from evaluator.analysis.ratings import Battle

LABELS = arena.VOTES  # left, right, tie, bothbad
BOOTSTRAP = 2000
MIN_MODELS_FOR_RHO = 3  # a rank correlation of two models is ±1 whatever they did
RULE = (
    "human label: the majority of a pair's standing votes (tied votes: no label, counted); judge label: its verdict, "
    "with both orders a side only when both orders chose it, else a tie (undecided when an order is undecided); "
    "accuracy and kappa over left/right/tie/bothbad; decisive: pairs where both chose a side; position bias over "
    "decisive judgements, each order a unit; ratings: Bradley-Terry of the judge's judgements and of the votes"
)


@dataclass(frozen=True)
class Figure:
    """A share with its Wilson 95 % interval (n its units)."""

    k: int
    n: int
    value: float | None
    wilson_95: tuple[float, float] | None

    @classmethod
    def of(cls, k: int, n: int) -> Figure:
        return cls(k, n, k / n if n else None, agreement.wilson_interval(k, n))

    def to_json(self) -> dict[str, Any]:
        return {
            "k": self.k,
            "n": self.n,
            "value": self.value,
            "wilson_95": list(self.wilson_95) if self.wilson_95 else None,
        }


@dataclass(frozen=True)
class ModelRatings:
    model: str
    judge: float | None
    votes: float | None
    judge_rank: int | None
    votes_rank: int | None

    def to_json(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "judge_rating": None if self.judge is None else round(self.judge, 3),
            "votes_rating": None if self.votes is None else round(self.votes, 3),
            "judge_rank": self.judge_rank,
            "votes_rank": self.votes_rank,
        }


@dataclass(frozen=True)
class PairAlignmentReport:
    """`vlmdesk align pairs`; to_json() is its --json object."""

    benchmark: str
    judge_set: store.JudgeSet
    both_orders: bool  # every judged pair was asked in both orders
    pairs: int  # in the benchmark's queue
    voted: int  # pairs with at least one standing vote
    votes: int  # standing votes
    human_ties: int  # voted pairs whose votes tie between verdicts (no human label)
    judged: int  # pairs with a judge label
    judge_undecided: int  # pairs judged but without a label (an undecided order)
    human_labels: dict[str, int]
    judge_labels: dict[str, int]  # over the compared pairs
    n: int  # pairs compared: a human label and a judge label
    accuracy: Figure
    kappa: float | None
    kappa_95: tuple[float, float] | None
    confusion: dict[str, dict[str, int]]  # human label → judge label → pairs
    decisive: Figure
    decisive_kappa: float | None
    decisive_kappa_95: tuple[float, float] | None
    first_choices: Figure  # decisive judgements that chose the answer shown first
    first_binomial_p: float | None
    consistency: Figure | None  # both orders: pairs whose orders agree
    inconsistent_first: Figure | None  # both orders: inconsistent decisive pairs that chose the first shown twice
    models: tuple[ModelRatings, ...]
    rated_models: int  # rated by both
    spearman: float | None
    spearman_note: str
    bootstrap: int
    seed: int
    rule: str = RULE
    units: tuple[tuple[int, str, str], ...] = field(default=(), repr=False)  # (pair id, human, judge) compared

    def to_json(self) -> dict[str, Any]:
        def ci(v: tuple[float, float] | None) -> list[float] | None:
            return list(v) if v else None

        return {
            "benchmark": self.benchmark,
            "judge_set": self.judge_set.to_json(),
            "both_orders": self.both_orders,
            "pairs": self.pairs,
            "voted": self.voted,
            "votes": self.votes,
            "human_ties": self.human_ties,
            "judged": self.judged,
            "judge_undecided": self.judge_undecided,
            "human_labels": self.human_labels,
            "judge_labels": self.judge_labels,
            "n": self.n,
            "accuracy": self.accuracy.to_json(),
            "kappa": self.kappa,
            "kappa_95": ci(self.kappa_95),
            "confusion": self.confusion,
            "decisive": self.decisive.to_json(),
            "decisive_kappa": self.decisive_kappa,
            "decisive_kappa_95": ci(self.decisive_kappa_95),
            "position_bias": {
                "first_choices": self.first_choices.to_json(),
                "binomial_p": self.first_binomial_p,
                "consistency": self.consistency.to_json() if self.consistency else None,
                "inconsistent_first": self.inconsistent_first.to_json() if self.inconsistent_first else None,
            },
            "ratings": {
                "models": [m.to_json() for m in self.models],
                "rated_models": self.rated_models,
                "spearman": self.spearman,
                "note": self.spearman_note,
            },
            "bootstrap": self.bootstrap,
            "seed": self.seed,
            "rule": self.rule,
        }


def human_label(votes: Sequence[str]) -> str | None:
    """The majority of a pair's standing votes; None when the most frequent verdicts tie (or no vote)."""
    counts = Counter(votes).most_common()
    if not counts or (len(counts) > 1 and counts[0][1] == counts[1][1]):
        return None
    return counts[0][0]


def judge_label(first: str | None, swapped: str | None, both_orders: bool) -> str | None:
    """The judge's label of a pair from its verdicts in the shown order and (both orders) the swapped one."""
    if first is None or (both_orders and swapped is None):
        return None
    if not both_orders or first == swapped:
        return first
    return "tie"  # the orders disagree: no side won both


def find_set(ws: Workspace, bench: catalog.Benchmark, key: str) -> store.JudgeSet:
    """The benchmark's judgement set of this key (a prefix of 4+ characters will do when it names one)."""
    sets = store.sets_of(ws, bench.id)
    found = [s for s in sets if s.key == key] or ([s for s in sets if s.key.startswith(key)] if len(key) >= 4 else [])
    if len(found) != 1:
        known = ", ".join(f"{s.key} ({s.judge[:60]}{', image' if s.with_image else ''})" for s in sets) or "none"
        what = "several judgement sets start with" if found else "no judgement set"
        raise NotFound(f"{what} {key!r} on {bench.name} (known: {known}); judge first: vlmdesk judge-pairs")
    return found[0]


def _kappa_rows(a: Any, b: Any, axis: int = -1) -> Any:
    """Cohen's κ of each resample (a row of codes), by agreement.cohen_kappa (scikit-learn); NaN where undefined."""
    import numpy as np

    return np.array([_kappa_or_nan(x, y) for x, y in zip(a, b)])


def _kappa_or_nan(x: Any, y: Any) -> float:
    value = agreement.cohen_kappa(list(x), list(y))
    return float("nan") if value is None else value


def pair_alignment(
    ws: Workspace,
    bench: catalog.Benchmark,
    key: str,
    *,
    resamples: int = BOOTSTRAP,
    seed: int = 0,
) -> PairAlignmentReport:
    """The judgement set `key` against the standing votes on the benchmark's pairs."""
    from scipy.stats import binomtest

    from evaluator.analysis.intervals import bootstrap
    from evaluator.analysis.ratings import bradley_terry

    if bench.kind != "open":
        raise InvalidInput(f"benchmark {bench.name!r} is {bench.kind}; arena pairs are drawn on open benchmarks")
    judge_set = find_set(ws, bench, key)
    queue = {p.id: p for p in arena.pairs(ws, bench.id)}
    votes: dict[int, list[str]] = {}
    standing = arena.standing_votes(ws, benchmark_id=bench.id)
    for v in standing:
        votes.setdefault(v.pair_id, []).append(str(v.vote))
    said: dict[int, dict[bool, str | None]] = {}
    rows = store.judgements_of(ws, judge_set.key, bench.id)
    for row in rows:
        said.setdefault(row.pair_id, {})[row.swapped] = row.verdict
    both_orders = bool(said) and all(len(s) == 2 for s in said.values())
    human = {p: human_label(v) for p, v in votes.items()}
    judged = {p: judge_label(s.get(False), s.get(True), both_orders) for p, s in said.items() if False in s}
    units = [(p, a, b) for p in sorted(queue) if (a := human.get(p)) is not None and (b := judged.get(p)) is not None]
    people = [u[1] for u in units]
    machine = [u[2] for u in units]
    hits = sum(x == y for x, y in zip(people, machine))
    code: dict[str, int] = {label: i for i, label in enumerate(LABELS)}
    kappa_95 = None
    if units and resamples > 0:
        found = bootstrap(
            ([code[x] for x in people], [code[x] for x in machine]),
            _kappa_rows,
            paired=True,
            resamples=resamples,
            seed=seed,
        )
        kappa_95 = None if found is None else (found.low, found.high)
    sides = [(x, y) for x, y in zip(people, machine) if x in ("left", "right") and y in ("left", "right")]
    side_h, side_j = [x == "left" for x, _ in sides], [y == "left" for _, y in sides]
    decisive_95 = bootstrap_kappa(side_h, side_j, resamples=resamples, seed=seed)[0] if sides else None

    # Position bias: what the judge said of the answers as shown (swapped: the right answer was shown first).
    shown_first = [
        (r.verdict == "left") != r.swapped for r in rows if r.verdict in ("left", "right") and r.pair_id in queue
    ]
    first = sum(shown_first)
    p_value = float(binomtest(first, len(shown_first), 0.5).pvalue) if shown_first else None
    consistency = inconsistent_first = None
    if both_orders:
        twice = [(s[False], s[True]) for s in said.values() if s.get(False) is not None and s.get(True) is not None]
        consistent = sum(a == b for a, b in twice)
        consistency = Figure.of(consistent, len(twice))
        flips = [(a, b) for a, b in twice if a != b and a in ("left", "right") and b in ("left", "right")]
        # Both orders chose the answer shown first: left when the left was first, right when the right was first.
        inconsistent_first = Figure.of(sum(a == "left" and b == "right" for a, b in flips), len(flips))

    # Ratings: the judge's decided judgements as battles (left run's model = model_a), the votes as arena rates them.
    models = {r.id: r.model_spec for r in runs.list_runs(ws) if r.benchmark_id == bench.id}
    judge_battles = [
        Battle(a, b, arena.WINNER[r.verdict])
        for r in rows
        if r.verdict is not None
        and (p := queue.get(r.pair_id)) is not None
        and (a := models.get(p.left_run_id)) is not None
        and (b := models.get(p.right_run_id)) is not None
        and a != b
    ]
    by_judge = bradley_terry(judge_battles) if judge_battles else {}
    by_votes = bradley_terry(arena.battles(ws, bench.id)) if standing else {}
    both = sorted(set(by_judge) & set(by_votes))
    # No interval on ρ: over a handful of models a resampled ρ says little (and each resample is two fits).
    rho, note = None, f"over {len(both)} models rated by both; no interval (n too small for one)"
    if len(both) < MIN_MODELS_FOR_RHO:
        note = f"n too small: {len(both)} models rated by both (at least {MIN_MODELS_FOR_RHO} for a rank correlation)"
    else:
        rho = spearman([by_judge[m] for m in both], [by_votes[m] for m in both])

    def ranks(r: dict[str, float]) -> dict[str, int]:
        return {m: i for i, m in enumerate(sorted(r, key=lambda m: (-r[m], m)), start=1)}

    jr, vr = ranks(by_judge), ranks(by_votes)
    table = tuple(
        ModelRatings(m, by_judge.get(m), by_votes.get(m), jr.get(m), vr.get(m))
        for m in sorted(set(by_judge) | set(by_votes), key=lambda m: (-(by_votes.get(m) or -1e9), m))
    )
    return PairAlignmentReport(
        benchmark=bench.name,
        judge_set=judge_set,
        both_orders=both_orders,
        pairs=len(queue),
        voted=len(votes),
        votes=len(standing),
        human_ties=sum(1 for label in human.values() if label is None),
        judged=sum(1 for label in judged.values() if label is not None),
        judge_undecided=sum(1 for p, s in said.items() if judged.get(p) is None),
        human_labels={v: sum(1 for label in human.values() if label == v) for v in LABELS},
        judge_labels={v: machine.count(v) for v in LABELS},
        n=len(units),
        accuracy=Figure.of(hits, len(units)),
        kappa=agreement.cohen_kappa(people, machine),
        kappa_95=kappa_95,
        confusion={x: {y: sum(1 for u in units if u[1:] == (x, y)) for y in LABELS} for x in LABELS},
        decisive=Figure.of(sum(x == y for x, y in sides), len(sides)),
        decisive_kappa=agreement.cohen_kappa(side_h, side_j),
        decisive_kappa_95=decisive_95,
        first_choices=Figure.of(first, len(shown_first)),
        first_binomial_p=p_value,
        consistency=consistency,
        inconsistent_first=inconsistent_first,
        models=table,
        rated_models=len(both),
        spearman=rho,
        spearman_note=note,
        bootstrap=resamples,
        seed=seed,
        units=tuple(units),
    )
