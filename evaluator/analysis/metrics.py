"""The metric registry: figures computed over a run's stored passes, by name.

An entry names a metric, says in a line what it measures, which runs it needs (benchmark kind, strategy,
--full-passes) and how to compute it from a run (``compute(ws, run_id, scoring) -> float | None``; None when the
run has nothing to count). Built-ins are today's report figures; new metrics (calibration, robustness, arena
ratings…) are added as modules declaring ``METRICS = (MetricEntry(…),)``, built in or named in VLMDESK_PLUGINS
(docs/architecture.md, "How to add a metric").

A metric that is a benchmark's official figure (the number its leaderboard prints: MMMU's accuracy, OCRBench's
score…) says so with ``official=Official(benchmarks=…, label=…, shown=…)``: the benchmark names it is the figure of,
as VLMEvalKit and lmms-eval name them. ``official_metric(benchmark)`` finds it by the benchmark's name or the name of
the file it was imported from (a catalog file is cached as NAME.tsv, so a benchmark imported under another --name is
still found); the report shows it first (evaluator/analysis/report.py, docs/guide/leaderboard.md).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import PurePath
from typing import TYPE_CHECKING, Any, Literal

from db import catalog, runs
from db.errors import UserError
from db.workspace import Workspace
from evaluator.analysis.intervals import Interval
from evaluator.registry import Registry

if TYPE_CHECKING:
    from evaluator.analysis.report import McqFigures, RunReport

Compute = Callable[[Workspace, int, str | None], float | None]
"""A metric's value for one run under a scoring (None when the run has none)."""


class MetricUnavailable(UserError):
    """The metric does not apply to this run (unknown name, wrong benchmark kind or strategy, no such run)."""


@dataclass(frozen=True)
class Needs:
    """What a run must be for a metric to apply; empty means anything goes."""

    kind: Literal["mcq", "yesno", "open"] | None = None
    strategies: tuple[str, ...] = ()
    full_passes: bool = False

    def missing(self, run: runs.Run, kind: str) -> str | None:
        """Why `run` (on a benchmark of `kind`) cannot give the metric, or None when it can."""
        if self.kind is not None and kind != self.kind:
            what = {"mcq": "multiple-choice", "yesno": "yes/no", "open": "open"}[self.kind]
            return f"needs a {what} benchmark"
        if self.strategies and run.strategy not in self.strategies:
            return f"needs a {' or '.join(self.strategies)} run, not {run.strategy}"
        if self.full_passes and not run.config.get("full_passes"):
            return "needs a run with --full-passes"
        return None


@dataclass(frozen=True)
class Units:
    """What an official figure is over, unit by unit, so that it has a 95 % interval (evaluator/analysis/intervals.py):
    a proportion (`right` of `n` units: Wilson), or one column of numbers per unit-level quantity and the statistic
    of them (`columns`, `statistic(*columns, axis=-1)` vectorized: a percentile bootstrap resampling whole units,
    named by `unit`). `scale` takes the statistic's scale to the figure's (100 for points, n for a count).
    A new official metric gets its interval by returning its Units from its details function."""

    unit: str = "items"
    right: int | None = None
    n: int | None = None
    columns: tuple[Sequence[float], ...] = ()
    statistic: Callable[..., Any] | None = None
    scale: float = 1.0

    @classmethod
    def proportion(cls, right: int, n: int, *, scale: float = 1.0) -> Units:
        return cls(right=right, n=n, scale=scale)

    @classmethod
    def mean(cls, values: Sequence[float], *, scale: float = 1.0) -> Units:
        """A mean of per-item values (graded scores)."""
        import numpy as np

        return cls(columns=(values,), statistic=np.mean, scale=scale)

    @classmethod
    def clusters(cls, unit: str, columns: tuple[Sequence[float], ...], statistic: Callable[..., Any]) -> Units:
        """A figure of sums over clusters (e.g. HallusionBench's question sets): each column one number per cluster,
        resampled together."""
        return cls(unit=unit, columns=columns, statistic=statistic)

    def interval(self) -> Interval | None:
        from evaluator.analysis.intervals import bootstrap, wilson

        if self.right is not None and self.n is not None:
            found = wilson(self.right, self.n)
        elif self.statistic is not None:
            found = bootstrap(self.columns, self.statistic, paired=len(self.columns) > 1, unit=self.unit)
        else:
            found = None
        return found if found is None or self.scale == 1.0 else found.scaled(self.scale)


Details = Callable[[Workspace, int], "tuple[float | None, dict[str, Any], Units | None]"]
"""An official figure's value for one run with what stands behind it (counts, per-split or per-group figures) and
the units it is over (None: the figure has no interval)."""


@dataclass(frozen=True)
class Official:
    """What makes a metric a benchmark's official figure: the benchmarks it is the figure of (names as VLMEvalKit and
    lmms-eval give them; case ignored), its label in the report ("accuracy", "score"), how the leaderboard prints it
    ("percent": a fraction shown ×100 with one decimal; "count": a whole number), and optionally `details` (the value,
    its breakdown and its Units at once; without it the report shows the value alone, with no interval)."""

    benchmarks: tuple[str, ...]
    label: str
    shown: Literal["percent", "count", "points"] = "percent"
    details: Details | None = None

    def format(self, value: float | None) -> str:
        if value is None:
            return "-"
        if self.shown == "points":  # a score already out of 100 (MathVista's, MMVet's as VLMEvalKit prints them)
            return f"{value:.1f}"
        return f"{100 * value:.1f}" if self.shown == "percent" else f"{value:.0f}"


@dataclass(frozen=True)
class MetricEntry:
    name: str
    help: str
    needs: Needs
    compute: Compute
    higher_is_better: bool = True
    official: Official | None = None  # set when this metric is some benchmarks' official figure


def _report(ws: Workspace, run_id: int, scoring: str | None) -> RunReport:
    from evaluator.analysis.report import run_report

    # The figure of one metric: neither the official figure nor the intervals.
    report = run_report(ws, run_id, scoring=scoring, official=False, intervals=False)
    if report is None:
        raise RuntimeError(f"no run {run_id}")  # the caller looked the run up first
    return report


def _mcq(ws: Workspace, run_id: int, scoring: str | None) -> McqFigures:
    mcq = _report(ws, run_id, scoring).mcq
    if mcq is None:  # a metric's Needs keep it to runs of its kind
        raise RuntimeError(f"run {run_id} has no multiple-choice figures")
    return mcq


def _overall(key: str) -> Compute:
    return lambda ws, run_id, scoring: getattr(_mcq(ws, run_id, scoring).overall, key)


def _pope(key: str) -> Compute:
    def compute(ws: Workspace, run_id: int, scoring: str | None) -> float | None:
        pope = _report(ws, run_id, scoring).pope
        if pope is None:  # a metric's Needs keep it to runs of its kind
            raise RuntimeError(f"run {run_id} has no POPE figures")
        value: float | None = getattr(pope.pope["official"], key)
        return value

    return compute


METRICS = (
    MetricEntry(
        "vanilla",
        "VanillaEval: the share of items right on pass 0 (the original option order)",
        Needs(kind="mcq"),
        _overall("vanilla"),
    ),
    MetricEntry(
        "circular",
        "CircularEval: the share of items right on every rotation of their options",
        Needs(kind="mcq", strategies=("circular",)),
        _overall("circular"),
    ),
    MetricEntry(
        "consistency",
        "the share of fully asked items whose every pass chose the same option text",
        Needs(kind="mcq", strategies=("circular",), full_passes=True),
        lambda ws, run_id, scoring: _mcq(ws, run_id, scoring).consistency,
    ),
    MetricEntry("pope_accuracy", "POPE accuracy under the official parser", Needs(kind="yesno"), _pope("accuracy")),
    MetricEntry("pope_f1", "POPE F1 with yes as positive, official parser", Needs(kind="yesno"), _pope("f1")),
    MetricEntry(
        "pope_yes_ratio",
        "the share of POPE answers read as yes (official parser): 0.5 is unbiased",
        Needs(kind="yesno"),
        _pope("yes_ratio"),
        higher_is_better=False,
    ),
)
# The official figures of the leaderboard's benchmarks live beside (evaluator/analysis/official.py).
REGISTRY: Registry[MetricEntry] = Registry(
    "metric", "METRICS", builtins=(__name__, "evaluator.analysis.official", "evaluator.analysis.official_llm_metrics")
)


def official_metric(benchmark: str, source_file: object = None) -> MetricEntry | None:
    """The metric that is the official figure of the benchmark named `benchmark` (or imported from the file named
    `source_file`, its stem compared: MMMU_DEV_VAL.tsv), or None. The first entry in registry order wins."""
    names = {benchmark.casefold()}
    if isinstance(source_file, str) and source_file:
        names.add(PurePath(source_file).stem.casefold())
    for entry in REGISTRY.entries():
        if entry.official is not None and names & {b.casefold() for b in entry.official.benchmarks}:
            return entry
    return None


def metric_help() -> str:
    return ", ".join(entry.name for entry in REGISTRY.help_entries())


def compute(ws: Workspace, name: str, run_id: int, *, scoring: str | None = None) -> float | None:
    """The metric `name` of a run (under a stored re-scoring when `scoring` is given). MetricUnavailable when
    the name is unknown or the run is not one the metric applies to."""
    entry = REGISTRY.get(name)
    if entry is None:
        raise MetricUnavailable(f"unknown metric {name[:80]!r}; one of {metric_help()}")
    run = runs.get_run(ws, run_id)
    if run is None:
        raise MetricUnavailable(f"no run {run_id} in {ws.path}")
    bench = next(b for b in catalog.list_benchmarks(ws) if b.id == run.benchmark_id)
    why = entry.needs.missing(run, bench.kind)
    if why is not None:
        raise MetricUnavailable(f"metric {name}: run {run_id} {why}")
    return entry.compute(ws, run_id, scoring)
