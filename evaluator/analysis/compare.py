"""Two runs of one benchmark compared item by item (`vlmdesk compare`, the app's Results › Compare; issue 38).

The units are the items both runs asked that have an answer key (an open run: the items both runs' metric scored),
each run's outcome read as its report counts it (evaluator/scoring/choices.py's run result under the run's scoring,
evaluator/analysis/report.py's passes and open scores). An item whose outcome a run has not decided yet (a
CircularEval pass still to ask) is left out of that figure and counted. Which figures:

- two multiple-choice runs: VanillaEval; CircularEval too when both are CircularEval runs;
- two POPE runs: accuracy and F1, under the official parser (the one behind published POPE figures);
- two open runs: each open metric both runs have (a run's own scores: CIDEr's IDF is each run's).

A right/wrong figure (VanillaEval, CircularEval, POPE accuracy) gives the paired difference of accuracies A − B =
(right in A only − right in B only) / n with Newcombe's hybrid score interval (method 10) and McNemar's exact test on
the discordant pairs; a graded one (an open metric's mean, POPE's F1, which is not a mean over items) the difference
with a paired percentile bootstrap interval over items, and no p-value. The functions are
evaluator/analysis/intervals.py's. Cost: the two runs' passes and their benchmark's items, whatever else is stored.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import Any, Final, Literal

from db import catalog, runs
from db.errors import InvalidInput, NotFound
from db.workspace import Workspace
from evaluator.analysis.intervals import (
    BOOTSTRAP,
    MCNEMAR,
    NEWCOMBE,
    Interval,
    mcnemar_exact,
    paired_bootstrap_difference,
    paired_difference,
)
from evaluator.analysis.labels import short_model
from evaluator.analysis.report import open_group_items, passes_under
from evaluator.scoring.choices import item_result, marks_of, pope_reading, vanilla_result

VANILLA: Final = "VanillaEval"
CIRCULAR: Final = "CircularEval"
POPE_ACCURACY: Final = "POPE accuracy"
POPE_F1: Final = "POPE F1"
QUESTION_CHARS: Final = 120  # of an item's question in the JSON (whitespace folded); the text prints fewer
NAMED: Final = 10  # items only one run asked, named by index in the text (--json lists them all)
Kind = Literal["right/wrong", "graded"]


@dataclasses.dataclass(frozen=True)
class ItemRef:
    """An item as the comparison names it: id (to open it), index in its file, the question shortened."""

    item_id: int
    index: int | str
    question: str

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class Side:
    """One of the two runs."""

    run_id: int
    model: str
    strategy: str
    scoring: str | None  # None: an open run (no scoring)

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class Figure:
    """One figure of both runs over the items both decided (`items`): A's, B's, A − B with its interval; for a
    right/wrong figure the 2×2 counts and McNemar's exact p. `a_better` / `b_better`: the items right in A only /
    in B only (graded: scored higher in A / in B; POPE's F1 none, its accuracy lists them). `left_out`: items both
    asked, with a key, whose outcome a run has not decided (a CircularEval pass still to ask). `scale`: what the
    text multiplies by (fractions ×100, CIDEr its own)."""

    name: str
    kind: Kind
    items: int
    a: float | None
    b: float | None
    difference: float | None
    interval: Interval | None
    p: float | None
    test: str | None
    a_better: tuple[ItemRef, ...]
    b_better: tuple[ItemRef, ...]
    both_right: int | None = None
    neither_right: int | None = None
    left_out: int = 0
    scale: float = 100.0

    def to_json(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out["interval"] = self.interval and self.interval.to_json()
        out["a_better"] = [r.to_json() for r in self.a_better]
        out["b_better"] = [r.to_json() for r in self.b_better]
        return out


@dataclasses.dataclass(frozen=True)
class Comparison:
    """`vlmdesk compare A B --json`: the two runs, the items both asked and those only one asked, the figures."""

    benchmark: str
    a: Side
    b: Side
    both: int
    only_in_a: tuple[ItemRef, ...]
    only_in_b: tuple[ItemRef, ...]
    figures: tuple[Figure, ...]
    scoring: str | None = None  # the scoring asked of both (--scoring), None for each run's own

    @property
    def headline(self) -> Figure | None:
        """The figure whose flipped items the text and the app show first (CircularEval, POPE accuracy, the first
        open metric): the first that lists items."""
        return next((f for f in self.figures if f.name != POPE_F1), None)

    def figure(self, name: str) -> Figure | None:
        return next((f for f in self.figures if f.name == name), None)

    def to_json(self) -> dict[str, Any]:
        return {
            "benchmark": self.benchmark,
            "a": self.a.to_json(),
            "b": self.b.to_json(),
            "both": self.both,
            "only_in_a": [r.to_json() for r in self.only_in_a],
            "only_in_b": [r.to_json() for r in self.only_in_b],
            "figures": [f.to_json() for f in self.figures],
            "scoring": self.scoring,
            "methods": {"right/wrong": {"interval": NEWCOMBE, "test": MCNEMAR}, "graded": {"interval": BOOTSTRAP}},
        }


def _ref(item_id: int, index: int | str, question: str) -> ItemRef:
    folded = " ".join(question.split())
    return ItemRef(item_id, index, folded if len(folded) <= QUESTION_CHARS else folded[: QUESTION_CHARS - 1] + "…")


def _item_ref(item: catalog.Item) -> ItemRef:
    return _ref(item.id, item.index, item.question)


def _run(ws: Workspace, run_id: int) -> runs.Run:
    run = runs.get_run(ws, run_id)
    if run is None:
        raise NotFound(f"no run {run_id} in {ws.path}")
    return run


def compare_runs(ws: Workspace, run_a: int, run_b: int, *, scoring: str | None = None) -> Comparison:
    """Run `run_a` against run `run_b`, item by item, each under its scoring `scoring` (default: its own).
    NotFound for an unknown run or scoring; InvalidInput for the same run twice, runs of two benchmarks, or
    strategies that share no figure."""
    a, b = _run(ws, run_a), _run(ws, run_b)
    if a.id == b.id:
        raise InvalidInput(f"compare needs two runs; run {a.id} was named twice")
    if a.benchmark_id != b.benchmark_id:
        raise InvalidInput(
            f"run {a.id} is on {a.benchmark} and run {b.id} on {b.benchmark}: compare needs two runs of one benchmark"
        )
    if comparable_kind(a.strategy) != comparable_kind(b.strategy):
        raise InvalidInput(f"run {a.id} is a {a.strategy} run and run {b.id} a {b.strategy} one: no figure to compare")
    if a.strategy == "open":
        if scoring is not None:
            raise InvalidInput("--scoring names a re-scoring of multiple-choice or POPE runs; open runs have none")
        return _compare_open(ws, a, b)
    return _compare_choices(ws, a, b, scoring)


# --- multiple-choice and POPE runs ----------------------------------------------------------------------------


def _outcomes(
    ws: Workspace, run: runs.Run, scoring: str | None
) -> tuple[str, dict[int, catalog.Item], dict[int, dict[str, bool]]]:
    """(scoring name, the items the run asked (pass 0 stored) by id, item id -> figure -> right) — a figure only
    where the run decided it: keyed, and (CircularEval) every rotation right or one wrong. The run result is
    choices.py's, over the passes as the report reads them under this scoring."""
    name, by_item = passes_under(ws, run, scoring)
    asked: dict[int, catalog.Item] = {}
    decided: dict[int, dict[str, bool]] = {}
    for item in runs.items_of(ws, run):
        passes = by_item.get(item.id, {})
        if 0 not in passes:
            continue
        asked[item.id] = item
        if item.answer is None:
            continue
        found: dict[str, bool] = {}
        if run.strategy == "pope":
            # The official parser reads every answer as yes or no: a wrong one is the other label (F1 needs it).
            found[POPE_ACCURACY] = pope_reading(passes[0], "official") == item.answer
        else:
            marks = marks_of(passes)
            found[VANILLA] = vanilla_result(marks) == "right"
            if run.strategy == "circular":
                result = item_result("circular", len(item.options), marks)
                if result in ("right", "wrong"):
                    found[CIRCULAR] = result == "right"
        decided[item.id] = found
    return name, asked, decided


def _compare_choices(ws: Workspace, a: runs.Run, b: runs.Run, scoring: str | None) -> Comparison:
    name_a, asked_a, decided_a = _outcomes(ws, a, scoring)
    name_b, asked_b, decided_b = _outcomes(ws, b, scoring)
    both = [i for i in asked_a if i in asked_b]  # file order
    keyed = [i for i in both if asked_a[i].answer is not None]
    if a.strategy == "pope":
        names: tuple[str, ...] = (POPE_ACCURACY,)
    else:
        names = (CIRCULAR, VANILLA) if a.strategy == b.strategy == "circular" else (VANILLA,)
    figures = []
    for name in names:
        units = [i for i in keyed if name in decided_a[i] and name in decided_b[i]]
        figures.append(
            _right_wrong(
                name,
                [asked_a[i] for i in units],
                [decided_a[i][name] for i in units],
                [decided_b[i][name] for i in units],
                left_out=len(keyed) - len(units),
            )
        )
        if name == POPE_ACCURACY:
            labels = [asked_a[i].answer == "yes" for i in units]
            figures.append(_pope_f1(labels, [decided_a[i][name] for i in units], [decided_b[i][name] for i in units]))
    return Comparison(
        a.benchmark,
        Side(a.id, a.model_spec, a.strategy, name_a),
        Side(b.id, b.model_spec, b.strategy, name_b),
        len(both),
        tuple(_item_ref(asked_a[i]) for i in asked_a if i not in asked_b),
        tuple(_item_ref(asked_b[i]) for i in asked_b if i not in asked_a),
        tuple(figures),
        scoring,
    )


def _right_wrong(
    name: str, items: Sequence[catalog.Item], right_a: Sequence[bool], right_b: Sequence[bool], *, left_out: int = 0
) -> Figure:
    """A right/wrong figure over paired outcomes: accuracies, Newcombe's interval of A − B, McNemar's exact p."""
    n = len(items)
    both = sum(1 for x, y in zip(right_a, right_b) if x and y)
    a_only = [_item_ref(it) for it, x, y in zip(items, right_a, right_b) if x and not y]
    b_only = [_item_ref(it) for it, x, y in zip(items, right_a, right_b) if y and not x]
    neither = n - both - len(a_only) - len(b_only)
    return Figure(
        name,
        "right/wrong",
        n,
        (both + len(a_only)) / n if n else None,
        (both + len(b_only)) / n if n else None,
        (len(a_only) - len(b_only)) / n if n else None,
        paired_difference(both, len(a_only), len(b_only), neither),
        mcnemar_exact(len(a_only), len(b_only)) if n else None,
        MCNEMAR,
        tuple(a_only),
        tuple(b_only),
        both_right=both,
        neither_right=neither,
        left_out=left_out,
    )


def f1_of_counts(true_yes: Any, said_yes: Any, labelled_yes: Any, axis: int = -1) -> Any:
    """POPE's F1 from per-item indicator columns (right yes, answered yes, labelled yes), vectorized along `axis`:
    2·P·R / (P + R) = 2·tp / (answered yes + labelled yes), P = tp / answered yes and R = tp / labelled yes
    (evaluator/scoring/pope.py's); NaN where undefined (no yes said or labelled, or tp = 0 with P + R = 0)."""
    import numpy as np

    tp = np.sum(true_yes, axis=axis)
    denominator = np.sum(said_yes, axis=axis) + np.sum(labelled_yes, axis=axis)
    with np.errstate(divide="ignore", invalid="ignore"):
        f1 = np.where(tp > 0, 2 * tp / np.where(denominator > 0, denominator, 1), np.nan)
    return f1


def _pope_f1(labelled_yes: Sequence[bool], right_a: Sequence[bool], right_b: Sequence[bool]) -> Figure:
    """POPE's F1 under the official parser (its answers are yes or no: a wrong one is the other label), A − B with a
    paired bootstrap over items; no p-value, no item list (the accuracy lists the flipped items)."""

    def columns(right: Sequence[bool]) -> tuple[list[float], list[float], list[float]]:
        said_yes = [float(r == y) for r, y in zip(right, labelled_yes)]  # right on a yes, or wrong on a no
        return [float(r and y) for r, y in zip(right, labelled_yes)], said_yes, [float(y) for y in labelled_yes]

    ca, cb = columns(right_a), columns(right_b)
    fa, fb = (_value(f1_of_counts(*c)) if labelled_yes else None for c in (ca, cb))
    return Figure(
        POPE_F1,
        "graded",
        len(labelled_yes),
        fa,
        fb,
        None if fa is None or fb is None else fa - fb,
        paired_bootstrap_difference(ca, cb, f1_of_counts) if fa is not None and fb is not None else None,
        None,
        None,
        (),
        (),
    )


def _value(x: Any) -> float | None:
    import math

    value = float(x)
    return None if math.isnan(value) else value


# --- open runs -------------------------------------------------------------------------------------------------


def _compare_open(ws: Workspace, a: runs.Run, b: runs.Run) -> Comparison:
    from evaluator.scoring import open_metrics

    found_a = {r.item_id: r for r in open_group_items(ws, a.id)}
    found_b = {r.item_id: r for r in open_group_items(ws, b.id)}
    both = [i for i in found_a if i in found_b]
    figures = []
    for entry in open_metrics.REGISTRY.entries():
        metric = entry.name
        if not any(metric in r.scores for r in found_a.values()) or not any(
            metric in r.scores for r in found_b.values()
        ):
            continue  # a metric one run lacks (no judgement set, no references) is not compared
        units = [i for i in both if metric in found_a[i].scores and metric in found_b[i].scores]
        figures.append(
            _graded(
                metric,
                [found_a[i] for i in units],
                [found_a[i].scores[metric] for i in units],
                [found_b[i].scores[metric] for i in units],
                1.0 if entry.scale == "cider" else 100.0,
            )
        )
    return Comparison(
        a.benchmark,
        Side(a.id, a.model_spec, a.strategy, None),
        Side(b.id, b.model_spec, b.strategy, None),
        len(both),
        tuple(_ref(r.item_id, r.index, r.question) for i, r in found_a.items() if i not in found_b),
        tuple(_ref(r.item_id, r.index, r.question) for i, r in found_b.items() if i not in found_a),
        tuple(figures),
    )


def _graded(name: str, items: Sequence[Any], a: Sequence[float], b: Sequence[float], scale: float) -> Figure:
    """A mean of per-item scores: A − B with a paired percentile bootstrap over items, no p-value."""
    import numpy as np

    n = len(items)
    mean_a, mean_b = (sum(a) / n, sum(b) / n) if n else (None, None)
    return Figure(
        name,
        "graded",
        n,
        mean_a,
        mean_b,
        None if mean_a is None or mean_b is None else mean_a - mean_b,
        paired_bootstrap_difference((a,), (b,), np.mean) if n else None,
        None,
        None,
        tuple(_ref(it.item_id, it.index, it.question) for it, x, y in zip(items, a, b) if x > y),
        tuple(_ref(it.item_id, it.index, it.question) for it, x, y in zip(items, a, b) if y > x),
        scale=scale,
    )


# --- text ------------------------------------------------------------------------------------------------------


def format_p(p: float) -> str:
    """`p = 0.0213`, `p = 3.1e-07` under 0.0001, `p = 1`."""
    return "p = 1" if p >= 1 else f"p = {p:.4f}" if p >= 1e-4 else f"p = {p:.1e}"


def _points(value: float | None, scale: float, *, sign: bool = False) -> str:
    if value is None:
        return "–"
    digits = 1 if scale == 100 else 3
    return f"{value * scale:+.{digits}f}" if sign else f"{value * scale:.{digits}f}"


def format_interval(f: Figure) -> str:
    if f.interval is None:
        return "[–]"
    return f"[{_points(f.interval.low, f.scale, sign=True)}, {_points(f.interval.high, f.scale, sign=True)}]"


def figure_line(f: Figure, width: int = 14) -> str:
    """`CircularEval  A 74.1  B 70.3  A−B +3.8 [+2.1, +5.5]  McNemar exact p = 0.0002 (…)` over n items."""
    head = (
        f"{f.name:<{width}} A {_points(f.a, f.scale)}  B {_points(f.b, f.scale)}  "
        f"A−B {_points(f.difference, f.scale, sign=True)} {format_interval(f)}"
    )
    if f.kind == "right/wrong":
        tail = f"McNemar exact {format_p(f.p) if f.p is not None else 'p –'} (A only right {len(f.a_better):,}, "
        tail += f"B only right {len(f.b_better):,})"
    elif f.name == POPE_F1:
        tail = "paired bootstrap"
    else:
        tail = f"paired bootstrap (higher in A {len(f.a_better):,}, in B {len(f.b_better):,})"
    more = f"; {f.left_out:,} left out, a pass still to ask" if f.left_out else ""
    return f"{head}  {tail}  over {f.items:,} items{more}"


def _named(refs: Sequence[ItemRef]) -> str:
    shown = ", ".join(str(r.index) for r in refs[:NAMED])
    return shown + (", …" if len(refs) > NAMED else "")


def flipped_lines(f: Figure) -> list[str]:
    """`--flipped`: the items right in A only, then in B only (graded: scored higher), one line each."""
    words = ("right in A only", "right in B only") if f.kind == "right/wrong" else ("higher in A", "higher in B")
    out = []
    for title, refs in zip(words, (f.a_better, f.b_better)):
        out.append(f"{title} ({f.name}): {len(refs):,}")
        out += [f"{str(r.index):>12}  {r.question[:90]}" for r in refs]
    return out


def format_comparison(c: Comparison, *, flipped: str | None = None) -> str:
    """The text of `vlmdesk compare`; `flipped`: a figure's name whose flipped items to print as well."""
    a, b = c.a.run_id, c.b.run_id
    lines = [
        f"compare run {a} ({short_model(c.a.model, 40)}) vs run {b} ({short_model(c.b.model, 40)}) on {c.benchmark}: "
        f"{c.both:,} items both asked (only in {a}: {len(c.only_in_a):,}, only in {b}: {len(c.only_in_b):,})"
    ]
    for run_id, refs in ((a, c.only_in_a), (b, c.only_in_b)):
        if refs:
            lines.append(f"  only in {run_id}: index {_named(refs)}")
    if c.scoring is not None:
        lines.append(f"  both runs under scoring {c.scoring}")
    width = max((len(f.name) for f in c.figures), default=0) + 1
    lines += [figure_line(f, width) for f in c.figures]
    if not c.figures:
        lines.append("no figure: the runs scored no item in common")
    kinds = {f.kind for f in c.figures}
    methods = ([f"right/wrong: {NEWCOMBE}, {MCNEMAR} on the discordant items"] if "right/wrong" in kinds else []) + (
        [f"graded: {BOOTSTRAP}, no p-value"] if "graded" in kinds else []
    )
    if methods:
        lines.append("95 % intervals of A−B; " + "; ".join(methods))
    head = c.headline
    if head is not None:
        a_n, b_n = len(head.a_better), len(head.b_better)
        counts = (
            f"{a_n:,} right in A only, {b_n:,} right in B only"
            if head.kind == "right/wrong"
            else f"{a_n:,} scored higher in A, {b_n:,} in B"
        )
        lines.append(f"flipped ({head.name}): {counts} (--json lists them; --flipped to print them)")
    if flipped is not None:
        figure = c.figure(flipped)
        if figure is None or figure.name == POPE_F1:
            listed = ", ".join(f.name for f in c.figures if f.name != POPE_F1)
            raise InvalidInput(f"--figure {flipped!r}: one of {listed}")
        lines += flipped_lines(figure)
    return "\n".join(lines)


def comparable_kind(strategy: str) -> str:
    """Runs of one benchmark share a figure when their strategies have the same kind: multiple choice (VanillaEval
    and CircularEval runs share VanillaEval), POPE, open."""
    return "mcq" if strategy in ("vanilla", "circular") else strategy


def comparable_runs(candidates: Iterable[runs.Run], run: runs.Run) -> list[runs.Run]:
    """The runs `run` can be compared with: another run of its benchmark whose strategy shares a figure."""
    kind = comparable_kind(run.strategy)
    return [
        r
        for r in candidates
        if r.id != run.id and r.benchmark_id == run.benchmark_id and comparable_kind(r.strategy) == kind
    ]
