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


def score(questions: Iterable[HallusionQuestion]) -> HallusionScores:
    """aAcc, fAcc and qAcc over the questions whose index has VLMEvalKit's parts (the caller counts the others)."""
    n = right = unknown = 0
    figures: dict[str, bool] = {}
    groups: dict[str, bool] = {}
    for q in questions:
        parts = index_parts(q.index)
        if parts is None:
            continue
        reading = yorn_extraction(q.prediction)
        unknown += reading == "Unknown"
        ok = reading == q.answer
        n += 1
        right += ok
        set_id, figure_id, question_id = parts
        l2 = q.l2_category
        for key, into in ((f"{l2}_{set_id}_{figure_id}", figures), (f"{l2}_{set_id}_{question_id}", groups)):
            into[key] = into.get(key, True) and ok

    def pct(hits: int, total: int) -> float | None:
        return 100 * hits / total if total else None

    return HallusionScores(
        n,
        len(figures),
        len(groups),
        unknown,
        pct(right, n),
        pct(sum(figures.values()), len(figures)),
        pct(sum(groups.values()), len(groups)),
    )
