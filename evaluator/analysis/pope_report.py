"""POPE scores beyond one run: answer files scored without a workspace (`vlmdesk pope score`), and the mean over
POPE settings across several run reports (`vlmdesk report R1 R2 R3`).

A mean over settings only means something for one model asked the same way: runs are grouped by model and run
settings (the stored config without batch size, which does not change answers), and a group gets a mean when
it holds at least two runs whose benchmarks name distinct settings. A group with a repeated or unnamed setting
gets none (and says why) instead of an average that mixes a rerun or another dataset in.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from db.errors import InvalidInput
from evaluator.formats.importers.jsonl import pope_setting_from_name
from evaluator.scoring.pope import (
    FRACTION_METRICS,
    PARSERS,
    PopeMeans,
    PopeMetrics,
    match_answers,
    mean_over_settings,
    pope_metrics,
    read_pope_answers,
    read_pope_questions,
)
from evaluator.types import PopeParser

if TYPE_CHECKING:
    from evaluator.analysis.report import RunReport

T = TypeVar("T")

# ------------------------------------------------------------------------------------------- answer files


@dataclass(frozen=True)
class PopeFileScore:
    """One setting of `pope score`: its two files and the metrics of its answers."""

    questions_file: str
    answers_file: str
    metrics: PopeMetrics

    def to_json(self) -> dict[str, Any]:
        return {"questions_file": self.questions_file, "answers_file": self.answers_file, **self.metrics.to_json()}


@dataclass(frozen=True)
class PopeScores:
    """The `pope score` result: per setting name (in the order given) its score; with several, their mean.

    `setting` is what the one file's name says (random / popular / adversarial, or None); with several files the
    names in `settings` say it."""

    parser: PopeParser
    settings: dict[str, PopeFileScore]
    mean: PopeMeans | None
    setting: str | None = None

    def to_json(self) -> dict[str, Any]:
        if self.mean is None:  # one file: its metrics at the top level
            [only] = self.settings.values()
            return {"parser": self.parser, "setting": self.setting, **only.to_json()}
        return {
            "parser": self.parser,
            "settings": {name: s.to_json() for name, s in self.settings.items()},
            "mean": self.mean.to_json(),
        }


def setting_names(question_files: Sequence[str]) -> list[str]:
    """random / popular / adversarial when every file name says a different one, else file stems, else paths."""
    candidates: list[list[str | None]] = [
        [pope_setting_from_name(Path(f)) for f in question_files],
        [Path(f).stem for f in question_files],
        list(question_files),
    ]
    for names in candidates:
        named = [n for n in names if n is not None]
        if len(named) == len(names) and len(set(named)) == len(named):
            return named
    raise InvalidInput("the same --questions file is given twice")


def score_files(question_files: Sequence[str], answer_files: Sequence[str], parser: PopeParser) -> PopeScores:
    """Score answer files against POPE question files, paired in order (see docs/pope.md); InvalidInput for a
    file that cannot be read or does not match its questions."""
    if len(question_files) != len(answer_files):
        raise InvalidInput(f"{len(question_files)} --questions but {len(answer_files)} --answers: give them in pairs")
    parse = PARSERS[parser]
    scores = {}
    for name, questions_file, answers_file in zip(setting_names(question_files), question_files, answer_files):
        questions, answers = _read(read_pope_questions, questions_file), _read(read_pope_answers, answers_file)
        if not answers:  # match_answers cannot name a file it has no line of
            raise InvalidInput(f"{answers_file}: no answers (for {len(questions)} questions)")
        pairs = match_answers(questions, answers)
        metrics = pope_metrics([q["label"] for q, _ in pairs], [parse(a.text) for _, a in pairs])
        scores[name] = PopeFileScore(str(questions_file), str(answers_file), metrics)
    if len(scores) == 1:
        return PopeScores(parser, scores, None, pope_setting_from_name(Path(question_files[0])))
    return PopeScores(parser, scores, mean_over_settings([s.metrics for s in scores.values()]))


def _read(reader: Callable[[str], T], path: str) -> T:
    try:
        return reader(path)
    except OSError as exc:
        raise InvalidInput(f"{exc.filename}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"{path}: not UTF-8 text (byte {exc.start})") from None


def _table_pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def format_metrics_table(rows: Mapping[str, PopeMetrics], mean: PopeMeans | None = None) -> str:
    """One line per setting (counts and fractions), and a line of the mean fractions when given."""
    width = max([len(name) for name in rows] + [len("setting")])
    lines = [
        f"{'setting':<{width}} {'questions':>9} {'tp':>6} {'fp':>6} {'tn':>6} {'fn':>6} {'unknown':>7} "
        f"{'acc':>7} {'prec':>7} {'recall':>7} {'f1':>7} {'yes':>7}"
    ]
    for name, m in rows.items():
        lines.append(
            f"{name:<{width}} {m.questions:>9} {m.tp:>6} {m.fp:>6} {m.tn:>6} {m.fn:>6} {m.unknown:>7} "
            + " ".join(f"{_table_pct(getattr(m, k)):>7}" for k in FRACTION_METRICS)
        )
    if mean is not None:
        lines.append(
            f"{'mean':<{width}} {'':>9} {'':>6} {'':>6} {'':>6} {'':>6} {'':>7} "
            + " ".join(f"{_table_pct(getattr(mean, k)):>7}" for k in FRACTION_METRICS)
        )
    return "\n".join(lines)


def format_scores(scores: PopeScores) -> str:
    """Text for `vlmdesk pope score`."""
    if scores.mean is None:
        [(name, only)] = scores.settings.items()
        rows = {scores.setting or Path(only.questions_file).stem: only.metrics}
    else:
        rows = {name: s.metrics for name, s in scores.settings.items()}
    return f"parser {scores.parser}\n{format_metrics_table(rows, scores.mean)}"


# --------------------------------------------------------------------------------------- means over runs


@dataclass(frozen=True)
class PopeMeanEntry:
    """One group of POPE run reports (one model asked the same way) with two or more runs: the mean fractions per
    parser over its settings, or `note` saying why there is none (then settings and the means are None)."""

    model: str
    runs: tuple[int, ...]
    settings: dict[str, int] | None  # setting -> run id
    official: PopeMeans | None
    strict: PopeMeans | None
    note: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "runs": list(self.runs),
            "settings": self.settings,
            "official": self.official and self.official.to_json(),
            "strict": self.strict and self.strict.to_json(),
            "note": self.note,
        }

    def of(self, parser: PopeParser) -> PopeMeans | None:
        return self.official if parser == "official" else self.strict


def _group_key(report: RunReport) -> str:
    config = {k: v for k, v in (report.config or {}).items() if k != "batch_size"}
    return json.dumps([report.model, config], sort_keys=True)


def pope_means(reports: Sequence[RunReport]) -> list[PopeMeanEntry]:
    """One entry per group of POPE reports (in order of first appearance) with two or more runs."""
    groups: dict[str, list[RunReport]] = {}
    for report in reports:
        if report.pope is not None:
            groups.setdefault(_group_key(report), []).append(report)
    means = []
    for members in groups.values():
        if len(members) < 2:
            continue
        settings = [r.pope.setting if r.pope else None for r in members]
        model, run_ids = members[0].model, tuple(r.run_id for r in members)
        note = None
        if None in settings:
            unnamed = [r.run_id for r, setting in zip(members, settings) if setting is None]
            note = f"no mean: the benchmark of run {unnamed[0]} names no POPE setting"
        elif len(set(settings)) < len(settings):
            repeated = next(s for s in settings if settings.count(s) > 1)
            runs = [r.run_id for r, setting in zip(members, settings) if setting == repeated]
            note = f"no mean: setting {repeated} appears in runs {', '.join(map(str, runs))}"
        if note is not None:
            means.append(PopeMeanEntry(model, run_ids, None, None, None, note))
            continue
        figures = [r.pope for r in members if r.pope is not None]  # every member is a POPE run
        official, strict = (mean_over_settings([f.pope[parser] for f in figures]) for parser in PARSERS)
        by_setting = {f.setting: r.run_id for r, f in zip(members, figures) if f.setting is not None}
        means.append(PopeMeanEntry(model, run_ids, by_setting, official, strict, None))
    return means


def _pct(value: float | None) -> str:
    return "   -  " if value is None else f"{100 * value:5.1f}%"


def format_pope_means(means: list[PopeMeanEntry]) -> str:
    """Text for `vlmdesk report`: per group, the mean fractions per parser (or why there is none)."""
    lines = []
    for entry in means:
        runs = ", ".join(map(str, entry.runs))
        if entry.note:
            lines.append(f"POPE mean over settings  {entry.model}  runs {runs}: {entry.note}")
            continue
        lines.append(f"POPE mean over settings  {entry.model}  runs {runs} ({', '.join(entry.settings or {})})")
        lines.append(f"{'parser':<10} {'acc':>7} {'prec':>7} {'recall':>7} {'f1':>7} {'yes':>7}")
        for parser in PARSERS:
            m = entry.of(parser)
            lines.append(f"{parser:<10} " + " ".join(f"{_pct(getattr(m, k)):>7}" for k in FRACTION_METRICS))
    return "\n".join(lines)


def attach_pope_means(reports: Sequence[RunReport]) -> tuple[list[RunReport], list[PopeMeanEntry]]:
    """The reports with `pope_mean` set on every POPE report (its group's entry, or None), and the entries.

    Kept on each report, not beside the list, so `report --json` keeps its shape (an object for one run, a list
    for several) whatever mix of runs is asked for.
    """
    means = pope_means(reports)
    return [
        r if r.pope is None else replace(r, pope_mean=next((m for m in means if r.run_id in m.runs), None))
        for r in reports
    ], means
