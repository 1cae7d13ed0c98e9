"""HallusionBench's official figures, restated from VLMEvalKit.

Read from open-compass/VLMEvalKit at commit e8e78f05f3080fe28154f2130321f17951c3be94: ``vlmeval/dataset/image_yorn.py``
(``ImageYORNDataset.evaluate``: each prediction read by ``YOrN_Extraction``, right when it equals the answer) and
``vlmeval/dataset/utils/yorn.py`` (``YOrN_Extraction``; ``Hallusion_rating``), with ``process_punctuation`` from
``vlmeval/smp/misc.py``:

- a prediction says Yes when, lower-cased and punctuation-processed, its words hold "yes" and not "no"; No the
  other way round; anything else is Unknown (wrong). VLMEvalKit may ask an LLM about the Unknowns; with
  ``exact_matching`` (the judge this restates) they stay Unknown.
- aAcc: right answers over questions; fAcc: figures whose every question is right, over figures (a figure is
  l2-category + set_id + figure_id); qAcc: questions right on every figure they are asked of, over questions
  (l2-category + set_id + question_id). set_id, figure_id and question_id are the 4th, 5th and 6th parts of the
  item's index split at "_", as ``Hallusion_rating`` takes them. Figures are percentages.

The leaderboard's HallusionBench column is the mean of the three (its "Overall"), the figure shown first.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

_PUNCT = [";", r"/", "[", "]", '"', "{", "}", "(", ")", "=", "+", "\\", "_", "-", ">", "<", "@", "`", ",", "?", "!"]
_COMMA_STRIP = re.compile(r"(\d)(,)(\d)")
_PERIOD_STRIP = re.compile(r"(?<!\d)\.(?!\d)")


def process_punctuation(text: str) -> str:
    out = text
    for p in _PUNCT:
        if (p + " " in text or " " + p in text) or _COMMA_STRIP.search(text) is not None:
            out = out.replace(p, "")
        else:
            out = out.replace(p, " ")
    # The reference passes re.UNICODE (32) as sub's third argument, which is the count: at most 32 periods go.
    return _PERIOD_STRIP.sub("", out, 32)


def yorn_extraction(prediction: str) -> str:
    """VLMEvalKit's reading of a yes/no answer: "Yes", "No" or "Unknown"."""
    words = process_punctuation(prediction.lower()).split()
    if "yes" in words and "no" not in words:
        return "Yes"
    if "yes" not in words and "no" in words:
        return "No"
    return "Unknown"


@dataclass(frozen=True)
class HallusionQuestion:
    """One question: its item index (VLMEvalKit's, e.g. ``VS_chart_0_0_0_0``), l2-category, answer (Yes/No) and the
    model's prediction."""

    index: str
    l2_category: str | None
    answer: str
    prediction: str


@dataclass(frozen=True)
class HallusionScores:
    """aAcc, fAcc and qAcc (percentages) and the counts behind them; `unknown`: predictions read as neither."""

    questions: int
    figures: int
    question_groups: int
    unknown: int
    a_acc: float | None
    f_acc: float | None
    q_acc: float | None

    @property
    def overall(self) -> float | None:
        parts = (self.a_acc, self.f_acc, self.q_acc)
        return None if any(p is None for p in parts) else sum(p for p in parts if p is not None) / 3

    def to_json(self) -> dict[str, Any]:
        return {
            "overall": self.overall,
            "aAcc": self.a_acc,
            "fAcc": self.f_acc,
            "qAcc": self.q_acc,
            "questions": self.questions,
            "figures": self.figures,
            "question_groups": self.question_groups,
            "unknown": self.unknown,
        }


def index_parts(index: str) -> tuple[str, str, str] | None:
    """(set_id, figure_id, question_id) of an index, or None when it has fewer than six parts."""
    parts = str(index).split("_")
    return (parts[3], parts[4], parts[5]) if len(parts) >= 6 else None


@dataclass(frozen=True)
class QuestionSet:
    """One question set (l2-category + set_id): the unit its figures and questions nest in — every figure
    (l2 + set + figure_id) and every question group (l2 + set + question_id) lies in one set. Its counts: questions
    and those right, figures and those whose every question is right, question groups and those right on every
    figure, answers read as neither yes nor no."""

    questions: int = 0
    right: int = 0
    figures: int = 0
    figures_right: int = 0
    groups: int = 0
    groups_right: int = 0
    unknown: int = 0


def question_sets(questions: Iterable[HallusionQuestion]) -> dict[str, QuestionSet]:
    """Each question set's counts, over the questions whose index has VLMEvalKit's parts (the caller counts the
    others); `score` sums them."""
    counts: dict[str, list[int]] = {}
    figures: dict[str, dict[str, bool]] = {}  # set -> figure_id -> every question right
    groups: dict[str, dict[str, bool]] = {}  # set -> question_id -> right on every figure
    for q in questions:
        parts = index_parts(q.index)
        if parts is None:
            continue
        reading = yorn_extraction(q.prediction)
        ok = reading == q.answer
        set_id, figure_id, question_id = parts
        key = f"{q.l2_category}_{set_id}"
        c = counts.setdefault(key, [0, 0, 0])
        c[0] += 1
        c[1] += ok
        c[2] += reading == "Unknown"
        for sub, into in ((figure_id, figures.setdefault(key, {})), (question_id, groups.setdefault(key, {}))):
            into[sub] = into.get(sub, True) and ok
    return {
        key: QuestionSet(
            *(n, right),
            *(len(figures[key]), sum(figures[key].values())),
            *(len(groups[key]), sum(groups[key].values())),
            unknown,
        )
        for key, (n, right, unknown) in counts.items()
    }


def score(questions: Iterable[HallusionQuestion]) -> HallusionScores:
    """aAcc, fAcc and qAcc over the questions whose index has VLMEvalKit's parts (the caller counts the others)."""
    sets = question_sets(questions).values()

    def total(field: str) -> int:
        return sum(getattr(s, field) for s in sets)

    def pct(hits: int, n: int) -> float | None:
        return 100 * hits / n if n else None

    return HallusionScores(
        total("questions"),
        total("figures"),
        total("groups"),
        total("unknown"),
        pct(total("right"), total("questions")),
        pct(total("figures_right"), total("figures")),
        pct(total("groups_right"), total("groups")),
    )
