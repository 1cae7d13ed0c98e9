"""Capability groups: LVLM-eHub's six (Xu et al. 2023) as a tag on a benchmark, and a model's figure per group.

A benchmark's groups live in its meta (`groups`, a list of the short ids below): set by `vlmdesk benchmarks tag` or
the app's benchmark menu, by the catalog on `vlmdesk import NAME`, and POPE's formats default to hallucination.
A benchmark stored without the key reads with the default of its format; a stored list, empty included, is what
someone chose and is kept.

A model's figure per group (`vlmdesk report --groups`, the Groups page of Results) is the plain mean, over the
group's benchmarks that the model has a counted run on, of each benchmark's headline figure for that run:

- multiple choice: CircularEval accuracy (the metric `circular`), or VanillaEval's (`vanilla`) when asked;
- yes/no (POPE): F1 with yes as positive under the official parser (`pope_f1`), or accuracy (`pope_accuracy`);
- open answers: the run's value of an open metric (evaluator/scoring/open_metrics.py: the mean of its items' scores) —
  LVLM-eHub's word match by default (its rule for VQA and OCR), or exact_match, vqa_accuracy, anls; CIDEr is on
  its own scale and is not averaged with fractions.

A counted run is finished, asks every item (no --limit) with the image, and is plain
(evaluator.analysis.desiderata.is_plain:
no label map, corruption, k-shot examples or chain of thought); the CircularEval figure needs a circular run.
Of a model's several counted runs on one benchmark the latest finished one is taken (ties: the higher id).
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from typing import Any, Literal

from db import catalog, models, runs
from db.catalog import Benchmark
from db.errors import InvalidInput, NotFound
from db.workspace import Workspace
from evaluator.formats import registry as formats

GROUPS: dict[str, str] = {
    "perception": "Visual perception",
    "knowledge": "Visual knowledge acquisition",
    "reasoning": "Visual reasoning",
    "commonsense": "Visual commonsense",
    "hallucination": "Object hallucination",
    "embodied": "Embodied intelligence",
}
META_KEY = "groups"

McqFigure = Literal["circular", "vanilla"]
PopeFigure = Literal["f1", "accuracy"]
DEFAULT_OPEN_FIGURE = "word_match"


def open_figure_problem(name: str) -> str | None:
    """Why `name` cannot be an open benchmark's figure (an open metric scored as a fraction), or None."""
    from evaluator.scoring import open_metrics

    entry = open_metrics.REGISTRY.get(name)
    fractions = [e.name for e in open_metrics.REGISTRY.entries() if e.scale == "fraction"]
    if entry is None or entry.scale != "fraction":
        return f"{name[:40]!r} is not an open metric scored as a fraction ({', '.join(fractions)})"
    return None


def group_names() -> str:
    return ", ".join(GROUPS)


def check_groups(names: list[str] | tuple[str, ...], where: str = "group") -> tuple[str, ...]:
    """The groups named, checked at the door (the six short ids; case and surrounding spaces ignored), each once
    in the order of GROUPS. InvalidInput naming the first unknown one."""
    wanted = set()
    for name in names:
        key = name.strip().lower() if isinstance(name, str) else ""
        if key not in GROUPS:
            shown = repr(name[:40]) if isinstance(name, str) else type(name).__name__
            raise InvalidInput(f"{where}: {shown} is not a capability group ({group_names()})")
        wanted.add(key)
    return tuple(g for g in GROUPS if g in wanted)


def default_groups(bench: Benchmark) -> tuple[str, ...]:
    """The groups of a benchmark nobody tagged: POPE's formats are object hallucination; anything else none."""
    entry = formats.get(bench.format)
    return ("hallucination",) if entry is not None and entry.takes_setting else ()


def benchmark_groups(bench: Benchmark) -> tuple[str, ...]:
    """The benchmark's groups: as stored (ids no longer known are dropped), else its format's default."""
    stored = bench.meta.get(META_KEY)
    if not isinstance(stored, list):
        return default_groups(bench)
    return tuple(g for g in GROUPS if g in stored)


def tag_benchmark(ws: Workspace, name: str, groups: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """Set benchmark `name`'s groups to exactly `groups` (checked; an empty list clears them) in one transaction;
    returns what is stored. NotFound for an unknown benchmark."""
    checked = check_groups(groups, "--group")
    with ws.db.atomic():
        bench = catalog.benchmark_by_name(ws, name)
        if bench is None:
            raise NotFound(f"no benchmark named {name[:80]!r} in {ws.path} (vlmdesk benchmarks)")
        catalog.set_benchmark_meta(ws, bench.id, {**bench.meta, META_KEY: list(checked)})
    return checked


# --- a model's figure per group -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Entry:
    """One benchmark's headline figure for one model: the run it came from and the metric it is."""

    benchmark: str
    run_id: int
    metric: str
    value: float

    def to_json(self) -> dict[str, Any]:
        return {"benchmark": self.benchmark, "run_id": self.run_id, "metric": self.metric, "value": self.value}


@dataclass(frozen=True)
class GroupFigure:
    group: str
    value: float | None  # the plain mean of the entries' values; None over none
    entries: tuple[Entry, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "group": self.group,
            "title": GROUPS[self.group],
            "value": self.value,
            "benchmarks": len(self.entries),
            "entries": [e.to_json() for e in self.entries],
        }


@dataclass(frozen=True)
class ModelGroups:
    model: str
    groups: tuple[GroupFigure, ...]  # every group, in GROUPS order (value None where the model ran nothing)

    def figure(self, group: str) -> GroupFigure:
        return next(g for g in self.groups if g.group == group)

    def to_json(self) -> dict[str, Any]:
        return {"model": self.model, "groups": [g.to_json() for g in self.groups]}


@dataclass(frozen=True)
class GroupsReport:
    models: tuple[ModelGroups, ...]
    mcq_figure: McqFigure
    pope_figure: PopeFigure
    open_figure: str
    untagged: tuple[str, ...]  # benchmarks with runs but no group
    left_out: tuple[dict[str, str], ...]  # {"benchmark", "model", "why"}: a tagged benchmark's runs not counted

    def to_json(self) -> dict[str, Any]:
        return {
            "rule": RULE,
            "figures": {"mcq": self.mcq_figure, "yesno": f"pope_{self.pope_figure}", "open": self.open_figure},
            "models": [m.to_json() for m in self.models],
            "untagged_benchmarks": list(self.untagged),
            "left_out": list(self.left_out),
        }


RULE = (
    "per group, the plain mean over its benchmarks of each benchmark's headline figure for the model's latest "
    "finished plain run there (all items, with images, no label map, corruption, k-shot or chain of thought)"
)


def headline_metric(
    kind: str,
    *,
    mcq_figure: McqFigure = "circular",
    pope_figure: PopeFigure = "f1",
    open_figure: str = DEFAULT_OPEN_FIGURE,
) -> str:
    """The metric that is a benchmark's headline figure by its kind (`mcq`, `yesno`, `open`): the module's rule, also
    the suite table's figure where a benchmark has no official one (evaluator/analysis/suite.py)."""
    return {"mcq": mcq_figure, "yesno": f"pope_{pope_figure}", "open": open_figure}[kind]


def _counted(run: runs.Run, bench: Benchmark, mcq_figure: McqFigure) -> str | None:
    """Why the run is not counted, or None when it is."""
    from evaluator.analysis.desiderata import is_plain

    if run.status != "finished":
        return f"run {run.id} is {run.status}"
    if run.problems:
        return f"run {run.id} has unreadable stored values"
    if run.limit is not None:
        return f"run {run.id} asked only {run.limit} items (--limit)"
    if run.config.get("text_only"):
        return f"run {run.id} is text-only"
    if not is_plain(run):
        return f"run {run.id} is a variant run (label map, corruption, k-shot or chain of thought)"
    if bench.kind == "mcq" and mcq_figure == "circular" and run.strategy != "circular":
        return f"run {run.id} is {run.strategy}: no CircularEval figure (--mcq-figure vanilla takes it)"
    return None


def _value(ws: Workspace, run_id: int, metric: str, kind: str) -> float | None:
    """A run's headline figure: a registered metric (multiple choice, POPE), or an open metric's run value."""
    from evaluator.analysis import metrics
    from evaluator.scoring import open_metrics

    if kind != "open":
        return metrics.compute(ws, metric, run_id)
    scores = open_metrics.item_scores(ws, run_id, [metric]).get(metric, {})
    return sum(scores.values()) / len(scores) if scores else None


def groups_report(
    ws: Workspace,
    *,
    model: str | None = None,
    mcq_figure: McqFigure = "circular",
    pope_figure: PopeFigure = "f1",
    open_figure: str = DEFAULT_OPEN_FIGURE,
) -> GroupsReport:
    """Every model's figure per group (only `model`'s: a saved model's name or a spec), from the stored runs."""
    if mcq_figure not in ("circular", "vanilla") or pope_figure not in ("f1", "accuracy"):
        raise InvalidInput(f"figures: mcq {mcq_figure!r} / pope {pope_figure!r} (circular|vanilla, f1|accuracy)")
    if problem := open_figure_problem(open_figure):
        raise InvalidInput(f"--open-figure: {problem}")
    metric_of = {
        kind: headline_metric(kind, mcq_figure=mcq_figure, pope_figure=pope_figure, open_figure=open_figure)
        for kind in ("mcq", "yesno", "open")
    }
    spec = models.resolve_spec(ws, model.strip()) if model is not None else None
    benches = {b.id: b for b in catalog.list_benchmarks(ws)}
    chosen: dict[tuple[str, int], runs.Run] = {}  # (model, benchmark) -> its latest counted run
    why_not: dict[tuple[str, int], str] = {}
    untagged: set[str] = set()
    for run in sorted(runs.list_runs(ws), key=lambda r: r.id):
        bench = benches.get(run.benchmark_id)
        if bench is None or (spec is not None and run.model_spec != spec):
            continue
        if not benchmark_groups(bench):
            untagged.add(bench.name)
            continue
        key = (run.model_spec, bench.id)
        reason = _counted(run, bench, mcq_figure)
        if reason is not None:
            why_not[key] = reason  # the newest uncounted run says why, when no run counts
            continue
        best = chosen.get(key)
        if best is None or (run.finished_at or "", run.id) > (best.finished_at or "", best.id):
            chosen[key] = run
    entries: dict[str, dict[str, list[Entry]]] = {}
    left_out = []
    for (model_spec, bench_id), reason in sorted(why_not.items()):
        if (model_spec, bench_id) not in chosen:
            left_out.append({"benchmark": benches[bench_id].name, "model": model_spec, "why": reason})
    for (model_spec, bench_id), run in sorted(chosen.items(), key=lambda kv: (kv[0][0], benches[kv[0][1]].name)):
        bench = benches[bench_id]
        metric = metric_of[bench.kind]
        value = _value(ws, run.id, metric, bench.kind)
        if value is None:
            why = "no item with a reference answer" if bench.kind == "open" else "no scored item"
            left_out.append({"benchmark": bench.name, "model": model_spec, "why": f"run {run.id}: {why}"})
            continue
        for group in benchmark_groups(bench):
            entries.setdefault(model_spec, {}).setdefault(group, []).append(Entry(bench.name, run.id, metric, value))
    if spec is not None and spec not in entries and not any(m["model"] == spec for m in left_out):
        raise NotFound(f"no run of model {spec[:80]!r} on a tagged benchmark in {ws.path} (vlmdesk runs)")
    found = tuple(
        ModelGroups(
            model_spec,
            tuple(GroupFigure(g, _mean([e.value for e in per.get(g, [])]), tuple(per.get(g, []))) for g in GROUPS),
        )
        for model_spec, per in sorted(entries.items())
    )
    return GroupsReport(found, mcq_figure, pope_figure, open_figure, tuple(sorted(untagged)), tuple(left_out))


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def format_groups(report: GroupsReport) -> str:
    """The report as text: a table per model (group, figure, benchmarks averaged), then what was left out."""
    mcq = "CircularEval" if report.mcq_figure == "circular" else "VanillaEval"
    pope = "F1" if report.pope_figure == "f1" else "accuracy"
    head = (
        f"capability groups (LVLM-eHub): multiple choice {mcq} accuracy, POPE {pope} (official parser), "
        f"open answers {report.open_figure}"
    )
    lines = [
        *textwrap.wrap(head, 110, subsequent_indent="  "),
        *textwrap.wrap(f"rule: {RULE}", 110, subsequent_indent="  "),
    ]
    if not report.models:
        lines.append("no model has a counted run on a tagged benchmark (vlmdesk benchmarks tag BENCH --group G)")
    for m in report.models:
        lines.append("")
        lines.append(f"model {m.model}")
        for g in m.groups:
            value = "     -" if g.value is None else f"{100 * g.value:5.1f}%"
            names = ", ".join(f"{e.benchmark} (run {e.run_id})" for e in g.entries)
            lines.append(f"  {GROUPS[g.group]:<30} {value}  n={len(g.entries):<3} {names}".rstrip())
    if report.untagged:
        lines.append("")
        lines.append(f"benchmarks with runs but no group: {', '.join(report.untagged)}")
    for item in report.left_out:
        lines.append(f"left out: {item['benchmark']} for {item['model']}: {item['why']}")
    return "\n".join(lines)
