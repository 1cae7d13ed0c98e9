"""The metric registry: figures computed over a run's stored passes, by name.

An entry names a metric, says in a line what it measures, which runs it needs (benchmark kind, strategy,
--full-passes) and how to compute it from a run (``compute(ws, run_id, scoring) -> float | None``; None when the
run has nothing to count). Built-ins are today's report figures; new metrics (calibration, robustness, arena
ratings…) are added as modules declaring ``METRICS = (MetricEntry(…),)``, built in or named in VLMDESK_PLUGINS
(docs/architecture.md, "How to add a metric").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from db import catalog, runs
from db.errors import UserError
from db.workspace import Workspace
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

    kind: Literal["mcq", "yesno"] | None = None
    strategies: tuple[str, ...] = ()
    full_passes: bool = False

    def missing(self, run: runs.Run, kind: str) -> str | None:
        """Why `run` (on a benchmark of `kind`) cannot give the metric, or None when it can."""
        if self.kind is not None and kind != self.kind:
            return f"needs a {'multiple-choice' if self.kind == 'mcq' else 'yes/no'} benchmark"
        if self.strategies and run.strategy not in self.strategies:
            return f"needs a {' or '.join(self.strategies)} run, not {run.strategy}"
        if self.full_passes and not run.config.get("full_passes"):
            return "needs a run with --full-passes"
        return None


@dataclass(frozen=True)
class MetricEntry:
    name: str
    help: str
    needs: Needs
    compute: Compute
    higher_is_better: bool = True


def _report(ws: Workspace, run_id: int, scoring: str | None) -> RunReport:
    from evaluator.analysis.report import run_report

    report = run_report(ws, run_id, scoring=scoring)
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
REGISTRY: Registry[MetricEntry] = Registry("metric", "METRICS", builtins=(__name__,))


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
