"""A suite table: a plan's models (rows) × benchmarks (columns), one figure a cell, and each model's average
(`vlmdesk report --plan`, the app's plan dialog; docs/guide/suites.md).

A cell is the run the plan names for that model and benchmark (found by its identity by the caller: the plan is read
in vlmdesk/cmd_plan.py). Its figure is the benchmark's official one when it has one (report.OfficialFigure: MMMU's
accuracy, OCRBench's score…), else its headline figure (groups.headline_metric: CircularEval accuracy — VanillaEval's
for a vanilla run —, POPE F1 under the official parser, open answers: word match), with its 95 % interval when the
report gives one. A run that is not finished shows its status ("running 42 %": the share of its items with a stored
pass); a run never started shows "not run".

The average is the OpenVLM leaderboard's: the mean of the model's figures each on a 0–100 scale — a fraction ×100, a
score out of 100 as it is, OCRBench's score out of 1000 divided by 10 (the leaderboard's gen_table.py, BUILD_L1_DF) —
given only when every benchmark of the row has a finished run with a figure (the leaderboard leaves a model's average
blank where a benchmark is missing).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from db import runs
from db.workspace import Workspace
from evaluator.analysis.intervals import Interval

if TYPE_CHECKING:
    from evaluator.analysis.report import RunReport

AVERAGE_RULE: Final = (
    "the mean of the row's figures on a 0–100 scale (fractions ×100, OCRBench's score out of 1000 ÷10), as the "
    "OpenVLM leaderboard averages; given only when every benchmark of the row has a finished run"
)
HEADLINE_WORDS: Final = {
    "circular": "CircularEval accuracy",
    "vanilla": "VanillaEval accuracy",
    "pope_f1": "POPE F1 (official parser)",
    "pope_accuracy": "POPE accuracy (official parser)",
}
NOT_RUN: Final = "not run"


@dataclass(frozen=True)
class SuiteCell:
    """What the caller found for one cell: the model's row label, the benchmark, the stored run that is the plan's
    run there (None: never started) and the `vlmdesk run` arguments that run it."""

    model: str
    benchmark: str
    run_id: int | None
    command: tuple[str, ...] = ()


@dataclass(frozen=True)
class CellFigure:
    model: str
    benchmark: str
    run_id: int | None
    status: str  # a run's status (finished, running, interrupted, failed), or "not run"
    progress: float | None  # unfinished runs: the share of the run's items with a stored pass
    metric: str | None  # the metric the figure is (evaluator/analysis/metrics.py), None without a figure
    label: str | None  # its words: "MMMU accuracy (official)", "CircularEval accuracy"
    official: bool
    value: float | None  # on the metric's own scale (a fraction, OCRBench's count, a score out of 100)
    score: float | None  # on 0–100, as the average takes it
    interval: Interval | None  # on 0–100
    command: tuple[str, ...] = ()

    @property
    def finished(self) -> bool:
        return self.status == "finished"

    def text(self) -> str:
        """As the table prints it: `74.3 [71.2, 77.1]`, `74.3`, `running 42 %`, `not run`."""
        if self.status == NOT_RUN:
            return NOT_RUN
        if not self.finished:
            done = f" {100 * self.progress:.0f} %" if self.progress is not None else ""
            return f"{self.status}{done}"
        if self.score is None:
            return "-"
        return f"{self.score:.1f}" + (f" {self.interval.shown(1.0)}" if self.interval is not None else "")

    def to_json(self) -> dict[str, Any]:
        return {
            "benchmark": self.benchmark,
            "run_id": self.run_id,
            "status": self.status,
            "progress": self.progress,
            "metric": self.metric,
            "label": self.label,
            "official": self.official,
            "value": self.value,
            "score": self.score,
            "interval": None if self.interval is None else self.interval.to_json(),
            "text": self.text(),
            "command": list(self.command),
        }


@dataclass(frozen=True)
class SuiteRow:
    model: str
    cells: tuple[CellFigure, ...]
    average: float | None  # 0–100; None unless every cell is finished with a figure

    def to_json(self) -> dict[str, Any]:
        return {"model": self.model, "cells": [c.to_json() for c in self.cells], "average": self.average}


@dataclass(frozen=True)
class SuiteTable:
    benchmarks: tuple[str, ...]
    rows: tuple[SuiteRow, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "benchmarks": list(self.benchmarks),
            "average_rule": AVERAGE_RULE,
            "rows": [r.to_json() for r in self.rows],
            "figures": self.figures(),
        }

    def figures(self) -> dict[str, str]:
        """Each benchmark's figure in words (the first finished cell's), for the table's legend."""
        found: dict[str, str] = {}
        for row in self.rows:
            for c in row.cells:
                if c.label is not None:
                    found.setdefault(c.benchmark, c.label)
        return {b: found[b] for b in self.benchmarks if b in found}


def suite_table(ws: Workspace, models: list[str], benchmarks: list[str], cells: list[SuiteCell]) -> SuiteTable:
    """The suite table of `cells` (one per model × benchmark; rows and columns in the order given)."""
    by = {(c.model, c.benchmark): c for c in cells}
    rows = []
    for model in models:
        figures = tuple(_cell(ws, by.get((model, b)) or SuiteCell(model, b, None)) for b in benchmarks)
        scores = [c.score for c in figures if c.finished]
        complete = len(scores) == len(figures) and all(s is not None for s in scores)
        average = sum(s for s in scores if s is not None) / len(scores) if complete and scores else None
        rows.append(SuiteRow(model, figures, average))
    return SuiteTable(tuple(benchmarks), tuple(rows))


def _cell(ws: Workspace, cell: SuiteCell) -> CellFigure:
    from evaluator.analysis.report import run_report

    run = runs.get_run(ws, cell.run_id) if cell.run_id is not None else None
    if run is None:
        return CellFigure(cell.model, cell.benchmark, None, NOT_RUN, None, None, None, False, None, None, None,
                          cell.command)  # fmt: skip
    if run.status != "finished":
        return CellFigure(cell.model, cell.benchmark, run.id, run.status, _progress(ws, run), None, None, False, None,
                          None, None, cell.command)  # fmt: skip
    report = run_report(ws, run.id)
    assert report is not None  # the run was just read
    metric, label, official, value, interval, factor = _figure(report)
    score = None if value is None else value * factor
    scaled = None if interval is None else interval.scaled(factor)
    return CellFigure(cell.model, cell.benchmark, run.id, run.status, None, metric, label, official, value, score,
                      scaled, cell.command)  # fmt: skip


def _figure(report: RunReport) -> tuple[str, str, bool, float | None, Interval | None, float]:
    """(metric, its words, official?, value on its own scale, its interval, the factor to 0–100)."""
    from evaluator.analysis import metrics
    from evaluator.analysis.groups import headline_metric

    off = report.official
    if off is not None and off.value is not None:
        entry = metrics.REGISTRY.get(off.metric)
        shown = entry.official.shown if entry is not None and entry.official is not None else "percent"
        # "count" is OCRBench's score out of 1000: the leaderboard divides it by 10; "points" are out of 100 already.
        factor = {"percent": 100.0, "points": 1.0, "count": 0.1}[shown]
        return off.metric, f"{off.label} (official)", True, off.value, getattr(off, "interval", None), factor
    if report.mcq is not None:
        metric = headline_metric("mcq", mcq_figure="vanilla" if report.strategy == "vanilla" else "circular")
        overall = report.mcq.overall
        return (metric, HEADLINE_WORDS[metric], False, getattr(overall, metric),
                getattr(overall, f"{metric}_ci", None), 100.0)  # fmt: skip
    if report.pope is not None:
        metric = headline_metric("yesno")
        key = metric.removeprefix("pope_")
        ci = getattr(getattr(report.pope, "intervals", {}).get("official"), key, None)
        return metric, HEADLINE_WORDS[metric], False, getattr(report.pope.pope["official"], key), ci, 100.0
    metric = headline_metric("open")
    o = report.open
    value = o.metrics.get(metric) if o is not None else None
    ci = getattr(o, "intervals", {}).get(metric) if o is not None else None
    return metric, metric.replace("_", " "), False, value, ci, 100.0


def _progress(ws: Workspace, run: runs.Run) -> float | None:
    """The share of the run's items with a stored pass (its own rows: run_item_figures keeps one per such item)."""
    row = ws.conn.execute("SELECT items FROM benchmark_counts WHERE benchmark_id = ?", (run.benchmark_id,)).fetchone()
    total = min(row[0], run.limit) if row and run.limit is not None else (row[0] if row else 0)
    if not total:
        return None
    (started,) = ws.conn.execute("SELECT count(*) FROM run_item_figures WHERE run_id = ?", (run.id,)).fetchone()
    return min(1.0, int(started) / total)


def format_suite(table: SuiteTable) -> str:
    """The table as text: a column per benchmark and the average; then what each column's figure is, the rule of the
    average and the interval's method."""
    head = ["model", *table.benchmarks, "Average"]
    body = [
        [row.model, *(c.text() for c in row.cells), "-" if row.average is None else f"{row.average:.1f}"]
        for row in table.rows
    ]
    widths = [max(len(r[i]) for r in [head, *body]) for i in range(len(head))]
    lines = ["  ".join(f"{v:<{w}}" if i == 0 else f"{v:>{w}}" for i, (v, w) in enumerate(zip(r, widths, strict=True)))
             for r in [head, *body]]  # fmt: skip
    lines.insert(1, "  ".join("-" * w for w in widths))
    lines.append("")
    for bench, words in table.figures().items():
        lines.append(f"{bench}: {words}")
    methods = sorted({c.interval.method for r in table.rows for c in r.cells if c.interval is not None})
    if methods:
        lines.append(f"[low, high]: 95 % interval ({'; '.join(methods)}), on the 0–100 scale")
    lines.append(f"Average: {AVERAGE_RULE}")
    return "\n".join(lines)


CSV_COLUMNS: Final = ("model", "benchmark", "run_id", "status", "metric", "official", "value", "score", "low", "high")


def write_suite_csv(table: SuiteTable, path: Path) -> None:
    """The table in long form, a row per cell and one per model's average (benchmark "Average"), through the bounded
    output door (evaluator/formats/outfiles.py)."""
    from evaluator.formats.outfiles import AtomicOutput, csv_cell

    with AtomicOutput(path, newline="") as f:
        out = csv.writer(f)
        out.writerow(CSV_COLUMNS)
        for row in table.rows:
            for c in row.cells:
                low, high = (c.interval.low, c.interval.high) if c.interval is not None else (None, None)
                values = [row.model, c.benchmark, c.run_id, c.status, c.metric, c.official, c.value, c.score, low, high]
                out.writerow([csv_cell("" if v is None else str(v)) for v in values])
            average = [row.model, "Average", "", "", "average", "", "", row.average, "", ""]
            out.writerow([csv_cell("" if v is None else str(v)) for v in average])
