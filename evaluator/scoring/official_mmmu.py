"""MMMU's official answer parsing and scoring, restated from MMMU's own evaluation code.

Read from MMMU-Benchmark/MMMU, ``mmmu/utils/eval_utils.py`` at commit bb0b95a945998d91dfef37e969e07d49d1139438
(``parse_multi_choice_response``, ``parse_open_response``, ``eval_multi_choice``, ``eval_open``), the functions
lmms-eval's ``lmms_eval/tasks/mmmu/utils.py`` copies and calls per document (a multiple-choice question's response is
read against its options, an open question's against its answer). The accuracy is right answers over questions,
overall and per split (MMMU_DEV_VAL holds the dev and validation splits: the leaderboard's MMMU_VAL is the
validation split).

One liberty, said in the figures: MMMU's parser picks an option at random (``random.choice`` after a module-level
``random.seed(42)``) when a response names none; the draws then depend on every earlier call in the process. Here
the draws come from one ``random.Random(42)`` per run, in the run's item order, so a figure is reproducible, and
how many answers were drawn is counted (``guessed``).
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

SEED = 42
Normalised = str | float


def parse_multi_choice_response(
    response: str, all_choices: Sequence[str], index2ans: dict[str, str], rng: random.Random
) -> tuple[str, bool]:
    """(the letter MMMU reads from `response`, whether it was drawn at random): a bracketed letter "(B)", else a
    letter between spaces, else (responses of more than 5 words) an option's text; of several, the last one."""
    for char in [",", ".", "!", "?", ";", ":", "'"]:
        response = response.strip(char)
    response = " " + response + " "  # the reference's padding: a letter must stand alone
    index_ans, ans_with_brack = True, False
    candidates = [c for c in all_choices if f"({c})" in response]
    if candidates:
        ans_with_brack = True
    else:
        candidates = [c for c in all_choices if f" {c} " in response]
    if not candidates and len(response.split()) > 5:
        candidates = [index for index, ans in index2ans.items() if ans.lower() in response.lower()]
        index_ans = not candidates
    if not candidates:
        return rng.choice(list(all_choices)), True
    if len(candidates) == 1:
        return candidates[0], False
    if index_ans:
        pattern = "({})" if ans_with_brack else " {} "
        starts = [response.rfind(pattern.format(c)) for c in candidates]
    else:
        starts = [response.lower().rfind(index2ans[c].lower()) for c in candidates]
    return candidates[starts.index(max(starts))], False  # np.argmax: the first of equal maxima


def _is_number(text: str) -> bool:
    try:
        float(text.replace(",", ""))
    except ValueError:
        return False
    return True


def normalize_str(text: str) -> list[Normalised]:
    """A number rounded to 2 decimals, else the lower-cased text (one letter padded with a space either side)."""
    text = text.strip()
    if _is_number(text):
        return [round(float(text.replace(",", "")), 2)]
    text = text.lower()
    return [" " + text, text + " "] if len(text) == 1 else [text]


_COMMAS = re.compile(r"-?\b\d{1,3}(?:,\d{3})+\b")
_SCIENTIFIC = re.compile(r"-?\d+(?:\.\d+)?[eE][+-]?\d+")
_SIMPLE = re.compile(r"-?(?:\d+\.\d+|\.\d+|\d+\b)(?![eE][+-]?\d+)(?![,\d])")


def extract_numbers(text: str) -> list[str]:
    return _COMMAS.findall(text) + _SCIENTIFIC.findall(text) + _SIMPLE.findall(text)


_INDICATORS = ("could be ", "so ", "is ", "thus ", "therefore ", "final ", "answer ", "result ")
_TRIVIAL = (":", ",", ".", "!", "?", ";", "'")


def _key_subresponses(response: str) -> list[str]:
    response = response.strip().strip(".").lower()
    subs = re.split(r"\.\s(?=[A-Z])|\n", response)
    keys = []
    for n, sub in enumerate(subs):
        indicators = _INDICATORS + (("=",) if n == len(subs) - 1 else ())  # the last may be just an equation
        shortest: str | None = None
        for indicator in indicators:
            if indicator in sub:
                tail = sub.split(indicator)[-1].strip()
                if not shortest or len(tail) < len(shortest):
                    shortest = tail
        if shortest and shortest.strip() not in _TRIVIAL:
            keys.append(shortest)
    return keys or [response]


def parse_open_response(response: str) -> list[Normalised]:
    """What MMMU reads from an open answer: the tail after each sentence's key phrase ("so ", "is ", "answer "…),
    the numbers in them, each normalised (normalize_str); duplicates dropped."""
    keys = _key_subresponses(response)
    found: list[str] = keys + [n for key in keys for n in extract_numbers(key)]
    out: list[Normalised] = []
    for text in found:
        for value in normalize_str(text):
            if value not in out:
                out.append(value)
    return out


def eval_open(gold: str | Sequence[str], predicted: Iterable[Normalised]) -> bool:
    """Right when a predicted text contains a normalised answer text, or a predicted number equals one."""
    golds = [gold] if isinstance(gold, str) else list(gold)
    norm = [value for answer in golds for value in normalize_str(answer)]
    for pred in predicted:
        if isinstance(pred, str):
            if any(isinstance(a, str) and a in pred for a in norm):
                return True
        elif pred in norm:
            return True
    return False


@dataclass(frozen=True)
class MmmuQuestion:
    """One question as the official scorer sees it: its split, its options (empty: an open question), the answer
    (a letter of `options`; an open question's answer text or texts) and the model's response."""

    split: str | None
    options: tuple[str, ...]
    answer: str | tuple[str, ...]
    response: str


@dataclass(frozen=True)
class MmmuScores:
    """Right over asked per split and overall; `guessed`: multiple-choice answers MMMU's parser drew at random."""

    questions: int
    right: int
    guessed: int
    by_split: dict[str, tuple[int, int]] = field(default_factory=dict)  # split -> (questions, right)

    @property
    def accuracy(self) -> float | None:
        return self.right / self.questions if self.questions else None

    def split_accuracy(self, split: str) -> float | None:
        questions, right = self.by_split.get(split, (0, 0))
        return right / questions if questions else None

    def to_json(self) -> dict[str, Any]:
        return {
            "questions": self.questions,
            "right": self.right,
            "accuracy": self.accuracy,
            "guessed": self.guessed,
            "by_split": {s: {"questions": q, "right": r, "accuracy": r / q} for s, (q, r) in self.by_split.items()},
        }


def letters(n: int) -> list[str]:
    return [chr(ord("A") + i) for i in range(n)]


def score(questions: Iterable[MmmuQuestion]) -> MmmuScores:
    """MMMU's accuracy over questions in order (the order the random draws follow)."""
    rng = random.Random(SEED)
    total = right = guessed = 0
    splits: dict[str, list[int]] = {}
    for q in questions:
        if q.options:
            choices = letters(len(q.options))
            parsed, drawn = parse_multi_choice_response(q.response, choices, dict(zip(choices, q.options)), rng)
            guessed += drawn
            ok = parsed == q.answer if isinstance(q.answer, str) else parsed in q.answer
        else:
            ok = eval_open(q.answer, parse_open_response(q.response))
        total += 1
        right += ok
        counts = splits.setdefault(q.split or "", [0, 0])
        counts[0] += 1
        counts[1] += ok
    return MmmuScores(total, right, guessed, {s: (c[0], c[1]) for s, c in sorted(splits.items())})
