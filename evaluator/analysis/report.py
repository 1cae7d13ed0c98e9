"""Scores of a stored run, computed from its predictions alone (no model is called).

A run can carry several scorings: its own (the extractor it ran with, stored in predictions) and re-scorings
(`vlmdesk rescore`, stored in scored_passes) that read the same responses with another extractor or with human
labels. A report is always of one scoring, and says which.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from typing import TYPE_CHECKING, Any, Final, Literal
from urllib.parse import parse_qsl

from db import catalog, extractions, runs
from db.errors import InvalidInput, NotFound
from db.schema import NO_GROUP
from db.workspace import Workspace
from evaluator.analysis.intervals import Interval
from evaluator.analysis.samples import sample_figures
from evaluator.scoring.choices import (
    POPE_PARSERS,
    item_result,
    marks_of,
    original_option,
    pope_reading,
    vanilla_result,
)
from evaluator.scoring.pope import PopeMetrics, confusion_metrics, pope_metrics
from evaluator.spec_settings import GENERATION, PROCESSOR
from evaluator.types import PopeParser, RunStatus, Strategy

if TYPE_CHECKING:
    from evaluator.analysis.pope_report import PopeMeanEntry
    from evaluator.analysis.samples import SampleFigures

NONE = NO_GROUP  # the group of items without a value: the kept figures name it so (migration 0021)


def _fraction(hits: int, total: int) -> float | None:
    return hits / total if total else None


def _ci_json(interval: Interval | None) -> dict[str, Any] | None:
    """An interval as the JSON gives it ({"low", "high", "method"}, on the figure's own scale), null when none."""
    return None if interval is None else interval.to_json()


RUN_SCORING: Final = "run"
"""The name of a run's own scoring (also reachable by the run's extractor spec when no re-scoring has that name)."""
ScoringSource = Literal["run", "rescore"]


@dataclasses.dataclass(frozen=True)
class Scores:
    """VanillaEval and CircularEval accuracy over a group of scored questions (fractions; None over no question,
    and circular None for a vanilla run), each with its 95 % Wilson interval (an item is the unit: a circular item
    is right or wrong from all its passes; None where the figure is, or the report was asked without intervals)."""

    questions: int
    vanilla: float | None
    circular: float | None
    vanilla_ci: Interval | None = None
    circular_ci: Interval | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "questions": self.questions,
            "vanilla": self.vanilla,
            "circular": self.circular,
            "vanilla_ci": _ci_json(self.vanilla_ci),
            "circular_ci": _ci_json(self.circular_ci),
        }


def scores_of(questions: int, vanilla: int, circular: int | None, *, intervals: bool = True) -> Scores:
    """Scores from counts (items right under VanillaEval and, for a circular run, CircularEval): the counted and
    the kept figures both come here, so their fractions and intervals are the same."""
    from evaluator.analysis.intervals import wilson

    return Scores(
        questions,
        _fraction(vanilla, questions),
        None if circular is None else _fraction(circular, questions),
        wilson(vanilla, questions) if intervals else None,
        wilson(circular, questions) if intervals and circular is not None else None,
    )


@dataclasses.dataclass(frozen=True)
class McqFigures:
    """The multiple-choice part of a report."""

    scored_questions: int
    unscored_questions: int
    overall: Scores
    by_l2: dict[str, Scores]
    by_category: dict[str, Scores]
    by_split: dict[str, Scores]
    consistency: float | None  # --full-passes circular runs only
    circular_unasked_items: int | None
    circular_upper: float | None
    undecided_vanilla: int

    def to_json(self) -> dict[str, Any]:
        groups = {
            key: {name: s.to_json() for name, s in getattr(self, key).items()}
            for key in ("by_l2", "by_category", "by_split")
        }
        return {
            "scored_questions": self.scored_questions,
            "unscored_questions": self.unscored_questions,
            "overall": self.overall.to_json(),
            **groups,
            "consistency": self.consistency,
            "circular_unasked_items": self.circular_unasked_items,
            "circular_upper": self.circular_upper,
            "undecided_vanilla": self.undecided_vanilla,
        }

    def groups(self, level: str) -> dict[str, Scores]:
        """by_l2, by_category or by_split by that name."""
        found: dict[str, Scores] = getattr(self, level)
        return found


@dataclasses.dataclass(frozen=True)
class PopeIntervals:
    """95 % intervals on POPE's figures under one parser: accuracy, precision and recall Wilson on their counts
    (over the denominators confusion_metrics divides by), F1 a percentile bootstrap over items."""

    accuracy: Interval | None
    precision: Interval | None
    recall: Interval | None
    f1: Interval | None

    def to_json(self) -> dict[str, Any]:
        return {f"{f.name}_ci": _ci_json(getattr(self, f.name)) for f in dataclasses.fields(self)}


def _pope_f1(codes: Any, axis: int = -1) -> Any:
    """F1 of resampled POPE cell codes (POPE_CELLS' order), yes the positive class: 2·tp / (2·tp + fp + fn + unknown
    labelled yes) — the same as 2PR / (P + R) with recall over the questions labelled yes; a resample without
    any yes, labelled or answered (0/0), counts 0, as scikit-learn's zero_division=0."""
    import numpy as np

    tp = (codes == 0).sum(axis=axis)
    fp = (codes == 1).sum(axis=axis)
    missed = ((codes == 3) | (codes == 4)).sum(axis=axis)
    denominator = 2 * tp + fp + missed
    return np.where(denominator > 0, 2 * tp / np.maximum(denominator, 1), 0.0)


POPE_CELLS: Final = ("tp", "fp", "tn", "fn", "unknown labelled yes", "unknown labelled no")
"""An answer's cell, its code the index: the items of a POPE run rebuilt from its confusion counts, in this order,
are what its F1 is bootstrapped over (the items are exchangeable given their cells, so the counts are enough)."""


def pope_intervals(m: PopeMetrics, labelled_yes: int) -> PopeIntervals:
    """The intervals of one parser's figures from its counts (`labelled_yes`: the questions whose label is yes,
    recall's denominator); an interval is None where its figure is."""
    from evaluator.analysis.intervals import bootstrap, wilson

    unknown_yes = labelled_yes - m.tp - m.fn
    f1 = None
    if m.f1 is not None:
        counts = (m.tp, m.fp, m.tn, m.fn, unknown_yes, m.unknown - unknown_yes)
        codes = [code for code, n in enumerate(counts) for _ in range(n)]
        f1 = bootstrap((codes,), _pope_f1)
    return PopeIntervals(
        wilson(m.tp + m.tn, m.questions),
        wilson(m.tp, m.tp + m.fp),
        wilson(m.tp, labelled_yes),
        f1,
    )


@dataclasses.dataclass(frozen=True)
class PopeFigures:
    """The POPE part of a report: every answer read by each parser, and each parser's intervals ({} when the report
    was asked without intervals)."""

    setting: str | None
    answered: int
    pope: dict[PopeParser, PopeMetrics]
    intervals: dict[PopeParser, PopeIntervals] = dataclasses.field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        empty = PopeIntervals(None, None, None, None)
        return {
            "setting": self.setting,
            "answered": self.answered,
            "pope": {
                parser: {**m.to_json(), **self.intervals.get(parser, empty).to_json()}
                for parser, m in self.pope.items()
            },
            "overall": {
                "accuracy_official": self.pope["official"].accuracy,
                "accuracy_strict": self.pope["strict"].accuracy,
            },
        }


@dataclasses.dataclass(frozen=True)
class OpenFigures:
    """The open part of a report: each open metric that applies (evaluator/open_metrics), over the answered items
    with references, overall and per leaf category. `scales` says which are fractions and which CIDEr."""

    answered: int
    unanswered: int
    unreferenced: int  # answered items without references: left out of every metric that needs them
    metrics: dict[str, float]
    scored: dict[str, int]  # items each metric scored
    scales: dict[str, str]
    by_category: dict[str, dict[str, Any]]  # category -> {"items": n, "metrics": {name: mean}}
    # The judgement set metric `judge` reads (judge spec, rubric sha256, verdicts) and the run's other sets; None
    # when the run was never judged (evaluator/open_judge.judge_set).
    judge_set: dict[str, Any] | None = None
    # Which reference's rule vqa_accuracy follows for this benchmark (open_metrics.VQA_RULES), when it is scored.
    vqa_rule: str | None = None
    # Each metric's 95 % interval: a percentile bootstrap of the mean over its per-item scores (CIDEr's with the
    # IDF of the run's items held fixed), overall and per category ({} when asked without intervals).
    intervals: dict[str, Interval | None] = dataclasses.field(default_factory=dict)
    category_intervals: dict[str, dict[str, Interval | None]] = dataclasses.field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        by_category = {
            name: {**group, "intervals": {m: _ci_json(i) for m, i in self.category_intervals.get(name, {}).items()}}
            for name, group in self.by_category.items()
        }
        return {
            "answered": self.answered,
            **({"vqa_rule": self.vqa_rule} if self.vqa_rule is not None else {}),
            "unanswered": self.unanswered,
            "unreferenced": self.unreferenced,
            "metrics": self.metrics,
            "metric_intervals": {name: _ci_json(self.intervals.get(name)) for name in self.metrics},
            "metric_items": self.scored,
            "metric_scales": self.scales,
            "by_category": by_category,
            "judge_set": self.judge_set,
        }


@dataclasses.dataclass(frozen=True)
class OfficialFigure:
    """The benchmark's official figure, as its leaderboard prints it (docs/guide/leaderboard.md): the metric that is
    it (evaluator/analysis/metrics.py, `official_metric`), its label, the value (a fraction, or a count), the value as
    printed ("41.2", "812") and what stands behind it (counts, per split or group; {} when the metric gives none);
    its 95 % interval on the value's scale (None when the metric declares no units, or the value is None) and the
    interval as printed ("[38.0, 44.5]")."""

    benchmark: str
    metric: str
    label: str
    value: float | None
    shown: str
    details: dict[str, Any]
    interval: Interval | None = None
    interval_shown: str | None = None

    def line(self) -> str:
        """`MMMU_DEV_VAL accuracy (official) 41.2 [38.0, 44.5]`, and what it is over when that is not obvious."""
        extra = []
        over = self.details.get("figure_over")
        if isinstance(over, str) and over != "all":
            extra.append(f"{over} split")
        for key in ("aAcc", "fAcc", "qAcc"):
            if isinstance(self.details.get(key), float):
                extra.append(f"{key} {self.details[key]:.1f}")
        if isinstance(self.details.get("groups"), dict):
            extra += [f"{name} {count}" for name, count in self.details["groups"].items()]
        shown = self.shown + (f" {self.interval_shown}" if self.interval_shown else "")
        return f"{self.benchmark} {self.label} (official) {shown}" + (f"   ({' · '.join(extra)})" if extra else "")

    def to_json(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "interval": _ci_json(self.interval)}


@dataclasses.dataclass(frozen=True)
class RunReport:
    """The report of one scoring of a run; `to_json()` is `vlmdesk report --json` (keys in this order).

    `figures` is McqFigures or PopeFigures by strategy; `pope_mean` is set on POPE reports by
    pope_report.attach_pope_means (its group's mean over settings), and POPE reports always carry the key."""

    run_id: int
    benchmark: str
    model: str
    strategy: Strategy
    status: RunStatus
    extractor: str
    questions: int
    scoring: str
    scoring_source: ScoringSource
    scoring_summary: dict[str, Any]
    scorings: tuple[str, ...]
    model_calls: int
    undecided: int
    created_at: str
    finished_at: str | None
    config: dict[str, Any]
    problems: tuple[str, ...]
    figures: McqFigures | PopeFigures | OpenFigures
    pope_mean: PopeMeanEntry | None = None
    # The tokens the run's server said its stored passes cost (None when no pass says): the run's own passes,
    # whatever the scoring. In the JSON right after model_calls, null when None.
    tokens: runs.TokenUsage | None = None
    # Passes the token budget cut off (issue 36), None when none was: in the JSON after tokens, only when there.
    truncation: runs.Truncation | None = None
    # The settings that decide the run's answers beyond its strategy (thinking, system prompt, the spec's sampling
    # and processor options): in the JSON after config, only when one differs from vlmdesk's default.
    settings: AnswerSettings | None = None
    # The benchmark's official figure (MMMU, OCRBench, HallusionBench…), computed from the run's passes: in the JSON
    # right after benchmark, only for a benchmark that has one; the text shows it first.
    official: OfficialFigure | None = None
    # A sampled run's group (`run --samples K`, issue 38): mean@K and pass@k over its K sample runs
    # (evaluator/analysis/samples.py); None for a run without siblings. In the JSON last, only when set.
    samples: SampleFigures | None = None

    @property
    def mcq(self) -> McqFigures | None:
        return self.figures if isinstance(self.figures, McqFigures) else None

    @property
    def pope(self) -> PopeFigures | None:
        return self.figures if isinstance(self.figures, PopeFigures) else None

    @property
    def open(self) -> OpenFigures | None:
        return self.figures if isinstance(self.figures, OpenFigures) else None

    def to_json(self) -> dict[str, Any]:
        head: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            if f.name not in ("figures", "pope_mean", "tokens", "truncation", "settings", "official", "samples"):
                head[f.name] = getattr(self, f.name)
            if f.name == "benchmark" and self.official is not None:
                head["official"] = self.official.to_json()
            if f.name == "model_calls":
                head["tokens"] = self.tokens and self.tokens.to_json()
                if self.truncation is not None:
                    head["truncation"] = self.truncation.to_json()
            if f.name == "config" and self.settings is not None and self.settings.notable:
                head["settings"] = self.settings.to_json()
        head.update(scorings=list(self.scorings), problems=list(self.problems))
        out = {**head, **self.figures.to_json()}
        if self.pope is not None:
            out["pope_mean"] = self.pope_mean and self.pope_mean.to_json()
        if self.samples is not None:
            out["samples"] = self.samples.to_json()
        return out


def run_report(
    ws: Workspace, run_id: int, scoring: str | None = None, *, official: bool = True, intervals: bool = True
) -> RunReport | None:
    """The report of one scoring of a run (default: its own). None when there is no such run; NotFound when
    the run has no scoring of that name. A run's own figures are read as the workspace keeps them (migration 0021),
    a few rows whatever the run's size; a re-scoring's, an open run's and a limited run's are counted from its
    passes. `official`: with the benchmark's official figure when it has one (counted from the run's passes, so
    the runs list and the metrics leave it out). `intervals`: with each figure's 95 % interval (Wilson ones from the
    counts, so the kept path stays a few rows; the runs list and the metrics, which show none, leave them out)."""
    return _report(ws, run_id, scoring, kept=True, official=official, intervals=intervals)


def official_figure(ws: Workspace, run: runs.Run, bench: catalog.Benchmark) -> OfficialFigure | None:
    """The official figure of `run` when its benchmark has one (by name or source file) and the metric applies to
    the run (its Needs: MMMU's to a multiple-choice run, OCRBench's to an open one); None otherwise."""
    from evaluator.analysis.metrics import official_metric

    entry = official_metric(bench.name, bench.meta.get("source_file"))
    if entry is None or entry.official is None or entry.needs.missing(run, bench.kind) is not None:
        return None
    units = None
    if entry.official.details is not None:
        value, details, units = entry.official.details(ws, run.id)
    else:
        value, details = entry.compute(ws, run.id, None), {}
    interval = units.interval() if units is not None and value is not None else None
    shown = (
        None if interval is None else f"[{entry.official.format(interval.low)}, {entry.official.format(interval.high)}]"
    )
    return OfficialFigure(
        bench.name, entry.name, entry.official.label, value, entry.official.format(value), details, interval, shown
    )


def official_lines(report: RunReport) -> list[str]:
    """What a report's text says first, under its title: the official figure, when the benchmark has one."""
    return [] if report.official is None else [report.official.line()]


def _report(
    ws: Workspace, run_id: int, scoring: str | None, *, kept: bool, official: bool = False, intervals: bool = True
) -> RunReport | None:
    """run_report; `kept` False counts the run's own figures from its passes too (the reference the kept ones are
    held to, and the bench's baseline)."""
    run = runs.get_run(ws, run_id)
    if run is None:
        return None
    bench = next(b for b in catalog.list_benchmarks(ws) if b.id == run.benchmark_id)
    stored = {s.name: s for s in extractions.scorings_of(ws, run_id)}
    name, source, summary = _scoring(run, stored, scoring)
    figures: McqFigures | PopeFigures | OpenFigures
    found = runs.kept_figures(ws, run) if kept and source == RUN_SCORING else None
    if found is not None:
        questions, model_calls, undecided = found.questions, run.predictions, found.sums["undecided"]
        if run.strategy == "pope":
            figures = _kept_pope(found, bench.meta.get("setting"), intervals=intervals)
        else:
            full = run.config.get("full_passes") is True
            figures = _kept_mcq(found, run.strategy, full_passes=full, intervals=intervals)
    else:
        items = runs.items_of(ws, run)
        by_item = _scored_passes(ws, run, stored[name] if source == "rescore" else None)
        questions, model_calls = len(items), sum(len(v) for v in by_item.values())
        # An open run reads no choice: none of its answers is undecided.
        undecided = (
            0 if run.strategy == "open" else sum(1 for v in by_item.values() for p in v.values() if p.choice is None)
        )
        if run.strategy == "pope":
            figures = _pope(items, by_item, bench.meta.get("setting"), intervals=intervals)
        elif run.strategy == "open":
            figures = _open(ws, run, bench, items, intervals=intervals)
        else:
            full = run.config.get("full_passes") is True
            figures = _mcq(items, by_item, run.strategy, full_passes=full, intervals=intervals)
    return RunReport(
        run.id,
        bench.name,
        run.model_spec,
        run.strategy,
        run.status,
        run.extractor,
        questions,
        name,
        source,
        summary,
        (RUN_SCORING, *stored),
        model_calls,
        undecided,
        run.created_at,
        run.finished_at,
        run.config,
        tuple(run.problems),
        figures,
        tokens=usage if (usage := runs.token_usage(ws, run.id)).passes else None,
        truncation=cut if (cut := runs.truncation(ws, run.id)).truncated else None,
        settings=answer_settings(run.config, run.model_spec),
        official=official_figure(ws, run, bench) if official else None,
        # Its sample group's figures under the runs' own scoring (a whole report only: not the runs list's line).
        samples=sample_figures(ws, run) if official and source == RUN_SCORING else None,
    )


def describe_tokens(usage: runs.TokenUsage) -> str:
    """`tokens 1,200 prompt + 340 completion (120 of them reasoning) over 12 passes` (a count no pass gave reads
    `-`; the reasoning part only where a server said it): the report's line, also the app's."""

    def count(n: int | None) -> str:
        return "-" if n is None else f"{n:,}"

    passes = f"{usage.passes:,} pass" + ("" if usage.passes == 1 else "es")
    thinking = f" ({usage.reasoning:,} of them reasoning)" if usage.reasoning is not None else ""
    return f"tokens {count(usage.prompt)} prompt + {count(usage.completion)} completion{thinking} over {passes}"


def thinking_lines(report: RunReport) -> list[str]:
    """What a report's text says of a run's answer settings and cut-off passes (issue 36), under its counts: the
    settings line when one is not vlmdesk's default, the truncation line when a pass was cut off."""
    lines = [f"settings: {report.settings.line()}"] if report.settings is not None and report.settings.notable else []
    return lines + ([describe_truncation(report.truncation)] if report.truncation is not None else [])


def describe_truncation(cut: runs.Truncation) -> str:
    """The truncation line with what it means for the figures beside it: "truncated: 37 of 4,329 (12 inside the
    thought) — cut off by the token budget, never retried: 12 gave no answer (counted wrong), 25 cut after the
    thought are read as usual (9 of them wrong)". A pass cut inside its thought is wrong where its item has a key (an
    open item has none: it only gave no answer)."""
    after = cut.truncated - cut.in_thought
    keyed = cut.in_thought > 0 and cut.wrong >= cut.in_thought
    parts = [f"{cut.in_thought:,} gave no answer" + (" (counted wrong)" if keyed else "")] if cut.in_thought else []
    if after:
        wrong_after = cut.wrong - (cut.in_thought if keyed else 0)
        parts.append(
            f"{after:,} cut after the thought are read as usual"
            + (f" ({wrong_after:,} of them wrong)" if wrong_after else "")
        )
    return f"{cut.line()} — cut off by the token budget, never retried: " + ", ".join(parts)


# The model spec's options that decide answers (issue 36), shown with a run's settings: sampling, the image
# processor's bounds, a started server's layout and length. A backend's transport options (concurrency, retries,
# batch size, device) are not among them. The backends check the values; this list only picks what to show.
SPEC_SETTINGS: Final = (*GENERATION, *PROCESSOR, "max_model_len", "tp", "dp")
SYSTEM_SHOWN: Final = 48  # characters of a system prompt a one-line description shows (the whole in --json)


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


@dataclasses.dataclass(frozen=True)
class AnswerSettings:
    """A run's settings that decide its answers beyond the strategy and the prompt (issue 36), as its stored config
    and its model spec say: the token budget, how a thought is split from the answer ("auto", "off" or
    "OPEN,CLOSE"), the system prompt, the chat template's keyword arguments (JSON text), the thought's own budget,
    and the spec's sampling and processor options (SPEC_SETTINGS, as written in the spec)."""

    max_new_tokens: int | None
    reasoning: str = "auto"
    system: str | None = None
    chat_template_kwargs: str | None = None
    thinking_budget: int | None = None
    spec_options: dict[str, str] = dataclasses.field(default_factory=dict)
    sample: int = 0  # sample s of a sample group (`run --samples K`, issue 38); 0: a plain run (sample 0)

    @property
    def notable(self) -> bool:
        """Whether any differs from what every run had before issue 36 (then the report and `runs` say them)."""
        return bool(
            self.reasoning != "auto"
            or self.system is not None
            or self.chat_template_kwargs is not None
            or self.thinking_budget is not None
            or self.spec_options
            or self.sample
        )

    def to_json(self) -> dict[str, Any]:
        found = {**dataclasses.asdict(self), "spec_options": dict(self.spec_options)}
        return found if self.sample else {k: v for k, v in found.items() if k != "sample"}

    def parts(self, *, compact: bool = False) -> list[str]:
        """Each setting in words, e.g. ['max new tokens 32,768', 'thinking budget 8,192', 'reasoning <t>,</t>',
        'chat template {"enable_thinking": true}', 'system "You are…" (212 chars)', 'temperature 0.6'];
        `compact` leaves out what is at its default (the runs list)."""
        out = [f"sample {self.sample}"] if self.sample else []
        out += [] if self.max_new_tokens is None else [f"max new tokens {self.max_new_tokens:,}"]
        if self.thinking_budget is not None:
            out.append(f"thinking budget {self.thinking_budget:,}")
        if self.reasoning != "auto" or not compact:
            out.append(f"reasoning {self.reasoning}")
        if self.chat_template_kwargs is not None:
            out.append(f"chat template {self.chat_template_kwargs}")
        if self.system is not None:
            flat = " ".join(self.system.split())
            shown = flat if len(flat) <= SYSTEM_SHOWN else flat[: SYSTEM_SHOWN - 1] + "…"
            out.append(f'system "{shown}"' + ("" if shown == self.system else f" ({len(self.system):,} chars)"))
        out += [f"{name} {value}" for name, value in self.spec_options.items()]
        return out

    def line(self, *, compact: bool = False) -> str:
        return " · ".join(self.parts(compact=compact))


def answer_settings(config: dict[str, Any], spec: str) -> AnswerSettings:
    """A run's AnswerSettings from its stored config (RunSettings.identity: a setting at its default is absent) and
    its model spec's `?name=value` options. A stored value of the wrong type (a file written by other tools) reads
    as absent; the spec's options are read as written, in SPEC_SETTINGS' order."""
    query = spec.partition("?")[2]
    options = dict(parse_qsl(query[:4096], keep_blank_values=True)) if query else {}
    return AnswerSettings(
        _count(config.get("max_new_tokens")),
        _text(config.get("reasoning")) or "auto",
        _text(config.get("system")),
        _text(config.get("chat_template_kwargs")),
        _count(config.get("thinking_budget")),
        {name: options[name][:80] for name in SPEC_SETTINGS if name in options},
        runs.sample_number_of(config),
    )


ByItem = dict[int, dict[int, runs.Prediction]]
"""item id -> pass -> the stored prediction (as a scoring reads it)."""


def _scoring(run: runs.Run, stored: dict[str, Any], scoring: str | None) -> tuple[str, ScoringSource, dict[str, Any]]:
    """(scoring name, source, summary) of the scoring a report asks for; NotFound for an unknown name."""
    if scoring in (None, RUN_SCORING) or (scoring == run.extractor and scoring not in stored):
        return run.extractor, RUN_SCORING, {}
    if scoring in stored:
        return scoring, "rescore", stored[scoring].summary
    known = ", ".join([RUN_SCORING, *stored]) or RUN_SCORING
    raise NotFound(
        f"run {run.id} has no scoring {scoring!r} (known: {known}; vlmdesk rescore {run.id} --extractor {scoring})"
    )


def passes_under(ws: Workspace, run: runs.Run, scoring: str | None) -> tuple[str, ByItem]:
    """(the scoring's name, item id -> pass -> prediction as it reads them) for a scoring named as the report names
    it (None: the run's own); NotFound for a scoring the run does not have."""
    stored = {s.name: s for s in extractions.scorings_of(ws, run.id)}
    name, source, _ = _scoring(run, stored, scoring)
    return name, _scored_passes(ws, run, stored[name] if source == "rescore" else None)


def _scored_passes(ws: Workspace, run: runs.Run, rescoring: extractions.Scoring | None) -> ByItem:
    """item id -> pass -> prediction as a scoring reads it: the run's own (`rescoring` None), or a re-scoring's."""
    predictions = runs.predictions_of(ws, run.id)
    if rescoring is not None:
        scored = {(p.item_id, p.pass_): p for p in extractions.scored_passes(ws, rescoring.id)}
        predictions = [
            dataclasses.replace(p, choice=s.choice, stage=s.stage, reason=s.reason, correct=s.correct)
            for p in predictions
            if (s := scored.get((p.item_id, p.pass_))) is not None
        ]
    by_item: ByItem = defaultdict(dict)
    for p in predictions:
        by_item[p.item_id][p.pass_] = p
    return by_item


def _kept_mcq(kept: runs.KeptFigures, strategy: str, *, full_passes: bool, intervals: bool = True) -> McqFigures:
    """_mcq's figures from the kept sums (the same fractions and intervals of the same counts)."""
    is_circular = strategy == "circular"

    def scores(questions: int, vanilla: int, circular: int) -> Scores:
        return scores_of(questions, vanilla, circular if is_circular else None, intervals=intervals)

    sums = kept.sums
    scored = sum(g.questions for g in kept.groups["split"].values())  # every keyed item is in one split group
    by = {
        level: {name: scores(g.questions, g.vanilla, g.circular) for name, g in sorted(kept.groups[level].items())}
        for level in ("l2", "category", "split")
    }
    return McqFigures(
        scored,
        kept.questions - scored,
        scores(scored, sums["vanilla"], sums["circular"]),
        by["l2"],
        by["category"],
        by["split"],
        consistency=_fraction(sums["consistent"], sums["complete"]) if is_circular and full_passes else None,
        circular_unasked_items=sums["unasked"] if is_circular else None,
        circular_upper=_fraction(sums["circular"] + sums["unasked"], scored) if is_circular else None,
        undecided_vanilla=sums["undecided_vanilla"],
    )


def _kept_pope(kept: runs.KeptFigures, setting: str | None, *, intervals: bool = True) -> PopeFigures:
    """_pope's figures from the kept confusion counts."""
    sums = kept.sums
    metrics = {
        parser: confusion_metrics(
            tp=sums[f"{parser}_tp"],
            fp=sums[f"{parser}_fp"],
            tn=sums[f"{parser}_tn"],
            fn=sums[f"{parser}_fn"],
            unknown=sums[f"{parser}_unknown"],
            labelled_yes=sums["pope_labelled_yes"],
        )
        for parser in POPE_PARSERS
    }
    yes = sums["pope_labelled_yes"]
    found = {parser: pope_intervals(m, yes) for parser, m in metrics.items()} if intervals else {}
    return PopeFigures(setting, sums["pope_answered"], metrics, found)


def _mcq(
    items: list[catalog.Item], by_item: ByItem, strategy: str, *, full_passes: bool, intervals: bool = True
) -> McqFigures:
    is_circular = strategy == "circular"
    groups: dict[str, dict[str, list[int]]] = {"by_l2": {}, "by_category": {}, "by_split": {}}
    totals = [0, 0, 0]  # scored questions, vanilla right, circular right
    unscored = consistent = complete = unasked = 0
    for item in items:
        passes = by_item.get(item.id, {})
        if item.answer is None:
            unscored += 1
            continue
        marks = marks_of(passes)
        vanilla_ok = vanilla_result(marks) == "right"
        circular = item_result("circular", len(item.options), marks)
        circular_ok = circular == "right"
        unasked += circular == "pending"
        chosen = {original_option(p.choice, p.option_order) for p in passes.values()}
        if len(passes) == len(item.options):
            complete += 1
            consistent += len(chosen) == 1 and None not in chosen
        for key, value in (("by_l2", item.l2_category), ("by_category", item.category), ("by_split", item.split)):
            g = groups[key].setdefault(value or NONE, [0, 0, 0])
            g[0] += 1
            g[1] += vanilla_ok
            g[2] += circular_ok
        totals[0] += 1
        totals[1] += vanilla_ok
        totals[2] += circular_ok

    def scores(g: list[int]) -> Scores:
        return scores_of(g[0], g[1], g[2] if is_circular else None, intervals=intervals)

    by = {key: {name: scores(g) for name, g in sorted(groups[key].items())} for key in groups}
    return McqFigures(
        totals[0],
        unscored,
        scores(totals),
        by["by_l2"],
        by["by_category"],
        by["by_split"],
        # The same original option chosen in every pass. Only --full-passes runs ask every pass of every item;
        # elsewhere the items asked to the end are the ones right so far, a biased sample, so no figure.
        consistency=_fraction(consistent, complete) if is_circular and full_passes else None,
        # Items right on every asked pass with passes never asked (a pass never asked counts as wrong: a lower
        # bound; under a re-scoring the run's own extractor may have stopped an item that is right so far);
        # circular_upper counts them as right.
        circular_unasked_items=unasked if is_circular else None,
        circular_upper=_fraction(totals[2] + unasked, totals[0]) if is_circular else None,
        undecided_vanilla=sum(1 for item in items if (p := by_item.get(item.id, {}).get(0)) and p.choice is None),
    )


def _pope(items: list[catalog.Item], by_item: ByItem, setting: str | None, *, intervals: bool = True) -> PopeFigures:
    labels: list[str] = []
    readings: dict[str, list[str]] = {parser: [] for parser in POPE_PARSERS}
    for item in items:
        p = by_item.get(item.id, {}).get(0)
        if p is None or item.answer is None:
            continue
        labels.append(item.answer)
        for parser in POPE_PARSERS:
            readings[parser].append(pope_reading(p, parser))
    metrics = {parser: pope_metrics(labels, readings[parser]) for parser in POPE_PARSERS}
    yes = labels.count("yes")
    found = {parser: pope_intervals(m, yes) for parser, m in metrics.items()} if intervals else {}
    return PopeFigures(setting, len(labels), metrics, found)


def _open(
    ws: Workspace, run: runs.Run, bench: catalog.Benchmark, items: list[catalog.Item], *, intervals: bool = True
) -> OpenFigures:
    from evaluator.scoring import open_judge, open_metrics

    answers, unanswered = open_metrics.answers_of(ws, run)
    scores = open_metrics.score_answers(ws, run.id, answers)
    category = {item.id: item.category or NONE for item in items}
    groups: dict[str, list[int]] = {}
    for a in answers:
        groups.setdefault(category[a.item_id], []).append(a.item_id)

    def mean(by_item: dict[int, float], ids: list[int]) -> float | None:
        values = [by_item[i] for i in ids if i in by_item]
        return sum(values) / len(values) if values else None

    def interval(by_item: dict[int, float], ids: list[int]) -> Interval | None:
        from evaluator.analysis.intervals import bootstrap_mean

        # In item id order: the same interval whatever order the scores came in.
        return bootstrap_mean([by_item[i] for i in sorted(ids) if i in by_item]) if intervals else None

    by_category: dict[str, dict[str, Any]] = {}
    category_intervals: dict[str, dict[str, Interval | None]] = {}
    for name, ids in sorted(groups.items()):
        figures = {metric: mean(by_item, ids) for metric, by_item in scores.items()}
        by_category[name] = {"items": len(ids), "metrics": {k: v for k, v in figures.items() if v is not None}}
        if intervals:
            category_intervals[name] = {m: interval(scores[m], ids) for m in by_category[name]["metrics"]}
    return OpenFigures(
        len(answers),
        unanswered,
        sum(1 for a in answers if not a.references),
        {name: sum(s.values()) / len(s) for name, s in scores.items()},
        {name: len(s) for name, s in scores.items()},
        {name: open_metrics.REGISTRY[name].scale for name in scores},
        by_category,
        open_judge.judge_set(ws, run.id) if "judge" in scores else None,
        open_metrics.vqa_rule(bench.name, bench.meta) if "vqa_accuracy" in scores else None,
        {name: interval(s, list(s)) for name, s in scores.items()} if intervals else {},
        category_intervals,
    )


# --- the items behind a figure ------------------------------------------------------------------------------

GROUP_LEVELS = {"l2": "l2_category", "category": "category", "split": "split", "all": None}


@dataclasses.dataclass(frozen=True)
class ItemResult:
    """One item of a run as a report counts it: right or wrong under VanillaEval and CircularEval (POPE: under
    the official and the strict parser); None where the item is unscored or the strategy has no such figure."""

    item_id: int
    index: int | str
    question: str
    category: str | None
    l2_category: str | None
    split: str | None
    answer: str | None
    passes: int
    vanilla: bool | None
    circular: bool | None
    official: bool | None = None
    strict: bool | None = None

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def group_items(
    ws: Workspace, run_id: int, *, level: str = "all", group: str | None = None, scoring: str | None = None
) -> list[ItemResult]:
    """The items behind one bar of a report: those of L2 ability / leaf category / split `group` (`level` l2,
    category, split; "all" for every item), each with the right/wrong the report counted. A group named
    "(none)" means items without a value. LookupError for an unknown run or scoring, ValueError for a bad level."""
    if level not in GROUP_LEVELS:
        raise InvalidInput(f"level {level!r}: one of {', '.join(GROUP_LEVELS)}")
    run = runs.get_run(ws, run_id)
    if run is None:
        raise NotFound(f"no run {run_id}")
    items = runs.items_of(ws, run)
    _, by_item = passes_under(ws, run, scoring)
    column = GROUP_LEVELS[level]
    if column is not None:
        known = sorted({getattr(item, column) or NONE for item in items})
        if level == "l2" and group not in known:  # MMBench's short codes, as the charts and Browse show them
            from evaluator.analysis.plots import SHORT_L2

            group = next((name for name, code in SHORT_L2.items() if code == group and name in known), group)
        if group not in known:
            raise NotFound(f"no {level} group {group!r} in run {run_id} (known: {', '.join(known)})")
    out = []
    for item in items:
        if column is not None and (getattr(item, column) or NONE) != group:
            continue
        passes = by_item.get(item.id, {})
        scored = item.answer is not None
        vanilla = circular = official = strict = None
        if run.strategy == "pope":
            p = passes.get(0)
            if p is not None and scored:
                official = pope_reading(p, "official") == item.answer
                strict = pope_reading(p, "strict") == item.answer
        elif scored:
            marks = marks_of(passes)
            vanilla = vanilla_result(marks) == "right"
            if run.strategy == "circular":
                circular = item_result("circular", len(item.options), marks) == "right"
        out.append(
            ItemResult(
                *(item.id, item.index, item.question, item.category, item.l2_category, item.split, item.answer),
                *(len(passes), vanilla, circular, official, strict),
            )
        )
    return out


@dataclasses.dataclass(frozen=True)
class OpenItemResult:
    """One answered item of an open run as its report counts it: the answer, the references and each open metric's
    score (a metric that left the item out is absent)."""

    item_id: int
    index: int | str
    question: str
    category: str | None
    response: str
    references: tuple[str, ...]
    scores: dict[str, float]

    def to_json(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "references": list(self.references)}


def open_group_items(ws: Workspace, run_id: int, *, group: str | None = None) -> list[OpenItemResult]:
    """The answered items of an open run behind one bar: of leaf category `group` ("(none)": without one), every
    answered item when None; each with its open metrics' scores. NotFound for an unknown run or category,
    InvalidInput for a run that is not open."""
    from evaluator.scoring import open_metrics

    run = runs.get_run(ws, run_id)
    if run is None:
        raise NotFound(f"no run {run_id}")
    if run.strategy != "open":
        raise InvalidInput(f"run {run_id} is a {run.strategy} run, not an open one")
    items = {item.id: item for item in runs.items_of(ws, run)}
    if group is not None and group not in {item.category or NONE for item in items.values()}:
        raise NotFound(f"no category {group!r} in run {run_id}")
    answers, _ = open_metrics.answers_of(ws, run)
    scores = open_metrics.score_answers(ws, run_id, answers)
    out = []
    for a in answers:
        item = items[a.item_id]
        if group is not None and (item.category or NONE) != group:
            continue
        mine = {name: by_item[a.item_id] for name, by_item in scores.items() if a.item_id in by_item}
        out.append(OpenItemResult(item.id, item.index, item.question, item.category, a.response, a.references, mine))
    return out


@dataclasses.dataclass(frozen=True)
class RunSummary:
    """One line of the runs list (`vlmdesk runs --scores`, the app's runs list)."""

    run_id: int
    benchmark: str
    model: str
    strategy: Strategy
    status: RunStatus
    error: str | None
    questions: int
    passes: int
    vanilla: float | None
    circular: float | None
    pope_f1: float | None
    pope_accuracy: float | None
    created_at: str
    finished_at: str | None
    duration_s: float | None
    open_metrics: dict[str, float] | None = None  # open runs: each open metric that applies, its run value

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def run_summary(ws: Workspace, run_id: int) -> RunSummary | None:
    """One line of the runs list: status, model, benchmark, the overall figures and how long the run has taken
    (first start to finish, or to its latest batch while unfinished; the pauses of a resumed run included)."""
    report = run_report(ws, run_id, official=False, intervals=False)  # a line of a list: the kept figures, a few rows
    run = runs.get_run(ws, run_id)
    if report is None or run is None:
        return None
    overall = report.mcq.overall if report.mcq else None
    official = report.pope.pope["official"] if report.pope else None
    return RunSummary(
        run.id,
        report.benchmark,
        run.model_spec,
        run.strategy,
        run.status,
        run.error,
        report.questions,
        run.predictions,
        overall.vanilla if overall else None,
        overall.circular if overall else None,
        official.f1 if official else None,
        official.accuracy if official else None,
        run.created_at,
        run.finished_at,
        _seconds_between(run.created_at, run.finished_at or run.updated_at),
        report.open.metrics if report.open else None,
    )


def _seconds_between(start: str, end: str | None) -> float | None:
    from datetime import datetime

    try:
        return round((datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds(), 1) if end else None
    except (TypeError, ValueError):
        return None
