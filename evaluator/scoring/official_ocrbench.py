"""OCRBench's official score, restated from VLMEvalKit.

Read from open-compass/VLMEvalKit, ``vlmeval/dataset/image_vqa.py`` (``OCRBench.evaluate``) at commit
e8e78f05f3080fe28154f2130321f17951c3be94: an answer is right when one of its reference answers occurs in it as a
substring — for Handwritten Mathematical Expression Recognition (HME100k) with every space and newline removed from
both, for every other category lower-cased, stripped and newlines made spaces. The score is the count of right
answers (out of 1000 on the full benchmark), summed into five groups: the six text recognition categories, then
Scene Text-centric VQA, Doc-oriented VQA, Key Information Extraction and HME. The leaderboard prints the count.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

HME = "Handwritten Mathematical Expression Recognition"
TEXT_RECOGNITION = (
    "Regular Text Recognition",
    "Irregular Text Recognition",
    "Artistic Text Recognition",
    "Handwriting Recognition",
    "Digit String Recognition",
    "Non-Semantic Text Recognition",
)
CATEGORIES = (*TEXT_RECOGNITION, "Scene Text-centric VQA", "Doc-oriented VQA", "Key Information Extraction", HME)
# The five sums VLMEvalKit reports (final_score_dict), in its order.
GROUPS = ("Text Recognition", "Scene Text-centric VQA", "Doc-oriented VQA", "Key Information Extraction", HME)


def is_right(category: str | None, prediction: str, answers: Sequence[str]) -> bool:
    """OCRBench's per-category substring match of one prediction against its answers."""
    if category == HME:
        predicted = prediction.strip().replace("\n", " ").replace(" ", "")
        return any(a.strip().replace("\n", " ").replace(" ", "") in predicted for a in answers)
    predicted = prediction.lower().strip().replace("\n", " ")
    return any(a.lower().strip().replace("\n", " ") in predicted for a in answers)


def group_of(category: str | None) -> str | None:
    """The reported group of a category; None for a category OCRBench does not have (VLMEvalKit would fail)."""
    if category in TEXT_RECOGNITION:
        return "Text Recognition"
    return category if category in GROUPS else None


@dataclass(frozen=True)
class OcrBenchScores:
    """The final score (right answers), the sums per group, the answers scored, and the answers whose category is
    none of OCRBench's ten (scored, counted in no group nor in the score; VLMEvalKit refuses such a file)."""

    score: int
    groups: dict[str, int]
    answers: int
    other: int

    def to_json(self) -> dict[str, Any]:
        return {"score": self.score, "groups": dict(self.groups), "answers": self.answers, "other_category": self.other}


def score(answers: Iterable[tuple[str | None, str, Sequence[str]]]) -> OcrBenchScores:
    """The score of (category, prediction, reference answers) triples."""
    groups = dict.fromkeys(GROUPS, 0)
    n = other = 0
    for category, prediction, references in answers:
        n += 1
        group = group_of(category)
        if group is None:
            other += 1
        elif is_right(category, prediction, references):
            groups[group] += 1
    return OcrBenchScores(sum(groups.values()), groups, n, other)
