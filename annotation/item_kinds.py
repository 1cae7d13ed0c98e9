"""What kind an item is, and which verdicts fit it: the one home of that rule (issue 35).

An item's kind is its benchmark's (`benchmarks.kind`):

- `mcq`: options A, B, …; the key is a letter. A wrong key is corrected by naming the right letter.
- `yesno`: POPE-style; no options, the key is `yes` or `no`. A wrong key is corrected by the other word.
- `open`: reference answers (one, VQA's ten with repeats as votes, five captions), no option letter. A reference can be
  wrong (corrected by the right answer as text), the question ambiguous, or the references incomplete (they miss an
  answer a person would accept; the missing answer may be given).

The app offers only the verdicts that fit an item, and annotation/reviews.py refuses the others at the door, as a
database trigger does for any other writer (migration 0023).
"""

from __future__ import annotations

from typing import Final, Literal, get_args

from db.errors import InvalidInput
from evaluator.formats.importers.common import text_problem
from evaluator.scoring.choices import LETTERS, YES_NO

ItemKind = Literal["mcq", "yesno", "open"]
KINDS: tuple[ItemKind, ...] = get_args(ItemKind)

WRONG: Final = "wrong_answer"
INCOMPLETE: Final = "incomplete"
MAX_ANSWER_CHARS: Final = 1000
"""The longest corrected answer (an open item's is free text): what a merge file's `answer` may hold (sync.py)."""

_COMMON = ("ambiguous", "text_answerable", "bad_image", "skip")
VERDICTS_BY_KIND: dict[ItemKind, tuple[str, ...]] = {
    "mcq": ("ok", WRONG, *_COMMON),
    "yesno": ("ok", WRONG, *_COMMON),
    "open": ("ok", WRONG, INCOMPLETE, *_COMMON),
}
"""The verdicts that fit each kind, in the order the app offers them."""

ALL_VERDICTS: tuple[str, ...] = tuple(dict.fromkeys(v for kind in KINDS for v in VERDICTS_BY_KIND[kind]))

_LABELS = {
    "ok": "ok",
    WRONG: "wrong key",
    "ambiguous": "ambiguous",
    INCOMPLETE: "references incomplete",
    "text_answerable": "text-answerable",
    "bad_image": "bad image",
    "skip": "skipped",
}


def kind_of(benchmark_kind: str) -> ItemKind:
    """The kind of an item of a benchmark of this kind (a workspace holds no other; anything else is a bug)."""
    if benchmark_kind not in KINDS:
        raise ValueError(f"unknown benchmark kind {benchmark_kind!r}")
    return benchmark_kind


def verdict_label(verdict: str, kind: ItemKind | None = None) -> str:
    """How a verdict reads for an item of this kind: an open item's wrong key is a wrong reference."""
    if verdict == WRONG and kind == "open":
        return "wrong reference"
    return _LABELS.get(verdict, verdict)


def fits(kind: ItemKind, verdict: str) -> bool:
    return verdict in VERDICTS_BY_KIND[kind]


def corrected_answer(kind: ItemKind, verdict: str, corrected: str | None, *, n_options: int) -> str | None:
    """The corrected answer a verdict stores, checked against the item's kind, or InvalidInput in one line.

    mcq: a letter among the item's options (any case in, upper case stored); yesno: yes or no (lower case stored);
    open: the right answer as text (a wrong reference needs one; an incomplete verdict may name the missing answer).
    Only those two verdicts carry a corrected answer. Migration 0023's trigger holds every other writer to the same
    rule (tests/annotation/test_item_kinds.py holds the two together)."""
    if not fits(kind, verdict):
        offered = ", ".join(VERDICTS_BY_KIND[kind])
        raise InvalidInput(f"verdict {verdict!r} does not fit a {_KIND_WORDS[kind]} item (one of {offered})")
    text = (corrected or "").strip()
    given = repr(corrected) if corrected else "none"
    if verdict not in (WRONG, INCOMPLETE):
        if text:
            raise InvalidInput(f"the verdict {verdict!r} takes no corrected answer (only {WRONG} and {INCOMPLETE} do)")
        return None
    if kind == "mcq":
        letters = tuple(LETTERS[:n_options])  # a tuple: "" and "AB" are in the string "ABCD"
        if text.upper() not in letters:
            raise InvalidInput(
                f"a wrong-key verdict on a multiple-choice item needs the right option's letter (one of "
                f"{', '.join(letters) or 'none: the item has no options'}), got {given[:60]}"
            )
        return text.upper()
    if kind == "yesno":
        if text.lower() not in YES_NO:
            raise InvalidInput(
                f"a wrong-key verdict on a yes/no item needs the right answer, yes or no, got {given[:60]}"
            )
        return text.lower()
    if verdict == WRONG and not text:
        raise InvalidInput("a wrong-reference verdict on an open item needs the right answer as text")
    if len(text) > MAX_ANSWER_CHARS:
        raise InvalidInput(f"a corrected answer of {len(text)} characters; at most {MAX_ANSWER_CHARS}")
    if problem := text_problem(text):
        raise InvalidInput(f"the corrected answer contains {problem}")
    return text or None


_KIND_WORDS: dict[ItemKind, str] = {"mcq": "multiple-choice", "yesno": "yes/no", "open": "open"}


def kind_words(kind: ItemKind) -> str:
    """The kind as the app and the commands say it."""
    return _KIND_WORDS[kind]
