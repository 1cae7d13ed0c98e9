"""A judge of arena pairs: a judge model reads a question (and, `with_image`, its image), two answers to it, and says
which is better — the first, the second, a tie, or both bad — the question people answer in the Arena tab.

The prompt follows the pairwise prompts of the VLM-judge literature, in our own words: MLLM-as-a-Judge (Chen et al.
2024, github.com/Dongping-Chen/MLLM-Judge, scripts/prompt.py: the "pair" task with its [[A]] / [[B]] / [[C]] tags, and
its "No Figure" setting, where the judge is told it does not see the figure) and WildVision-Bench (Lu et al. 2024,
github.com/WildVision-AI/WildVision-Bench, get_judgement.py: an impartial judge, a final verdict label, each pair
judged twice with the answers' order swapped). A fourth tag, [[D]], is the arena's "both bad".

A reply is read by `parse_verdict`, rules only: the verdict tags it holds ([[A]], [[B]], [[C]], [[D]], and
WildVision's [[A>B]]-style labels) when they all say the same; without a tag, a last line that is nothing but a
verdict ("Verdict: A", "Answer B is better", "tie", "both bad"). Anything else is undecided — asked again once with a
reminder, then stored as undecided with the raw reply, counted, never guessed.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from evaluator.backends import Backend, Query
from evaluator.scoring.asking import Replies, ask_until_read
from evaluator.scoring.open_judge import MAX_ANSWER_CHARS, MAX_QUESTION_CHARS, _bounded

PROMPT_VERSION = "pairs-1"  # part of a judgement set's identity: a new prompt wording is a new version
ATTEMPTS = 2  # the first ask and one reminder (WildVision-Bench asks twice)
MAX_NEW_TOKENS = 512

Said = Literal["first", "second", "tie", "bothbad"]
"""What a judge said about the answers as it saw them: the first shown better, the second, a tie, both bad."""

SEES_IMAGE = (
    "The image the question is about is shown with this prompt (several images, when the question has several). "
    "Look at it, and judge each answer by what the image really shows."
)
BLIND = (
    "You do not see the image the question is about. Judge the answers on what they say: how well they answer the "
    "question, whether they are consistent and plausible; do not guess what the image shows."
)
_INSTRUCTIONS = """Please act as an impartial judge of two AI assistants' answers to the same question about an \
image. {sight}

Decide which answer serves the user better: how closely it follows the question, how accurate and relevant it is, \
how complete and clear. Do not let the length of the answers, the order in which they are shown or the assistants' \
names sway you.

Explain your comparison in a few sentences, then end your reply with one line holding exactly one verdict tag:
[[A]] if answer A is better, [[B]] if answer B is better, [[C]] for a tie (about equally good), [[D]] if both are \
bad (neither answers the question acceptably)."""
REMINDER = "\n\nYour reply must end with a line holding exactly one verdict tag: [[A]], [[B]], [[C]] or [[D]]."

_TAG = re.compile(r"\[\[\s*([^\[\]\n]{1,16}?)\s*\]\]")
_TAGS: dict[str, Said] = {
    "a": "first",
    "b": "second",
    "c": "tie",
    "d": "bothbad",
    "tie": "tie",
    "both bad": "bothbad",
    "bothbad": "bothbad",
    # WildVision-Bench's five labels.
    "a>>b": "first",
    "a>b": "first",
    "a=b": "tie",
    "b>a": "second",
    "b>>a": "second",
}
_LAST_LINE = re.compile(
    r"^(?:(?:my\s+)?(?:final\s+)?(?:verdict|judge?ment|decision|answer)\s*(?:is)?\s*[:：\-–—=]?\s*)?"
    r"(?:answer\s+|assistant\s+)?(a|b|c|d|tie|both\s+bad|neither)(?:\s+is\s+better)?[.!]?$",
    re.IGNORECASE,
)
_LAST_WORDS: dict[str, Said] = {"a": "first", "b": "second", "c": "tie", "d": "bothbad", "tie": "tie"}


def parse_verdict(reply: str) -> Said | None:
    """first | second | tie | bothbad read from a judge's reply; None when it commits to none.

    The verdict tags of the reply, when every tag it holds names the same verdict (a reply naming two verdicts, by
    restating the instructions say, is undecided: WildVision-Bench's rule); without any tag, its last non-empty line
    when that line is nothing but a verdict — "A", "Verdict: B", "Answer A is better", "tie", "both bad"."""
    text = unicodedata.normalize("NFKC", reply or "")
    tags = [_TAGS.get(" ".join(t.lower().split())) for t in _TAG.findall(text)]
    known = {t for t in tags if t is not None}
    if tags:
        return known.pop() if len(known) == 1 else None
    lines = [line.strip(" \t*_`#>\"'") for line in text.splitlines() if line.strip(" \t*_`#>\"'")]
    if not lines:
        return None
    match = _LAST_LINE.match(lines[-1])
    if match is None:
        return None
    word = " ".join(match.group(1).lower().split())
    return "bothbad" if word in ("both bad", "neither") else _LAST_WORDS[word]


def judge_prompt(question: str, first: str, second: str, *, with_image: bool, reminder: bool = False) -> str:
    """The instructions (saying whether the image is shown), the question, then answer A (shown first) and answer B,
    each bounded as the open-answer judge bounds them."""
    lines = [
        _INSTRUCTIONS.format(sight=SEES_IMAGE if with_image else BLIND),
        "",
        "[Question]",
        _bounded(question, MAX_QUESTION_CHARS),
        "",
        "[The start of answer A]",
        _bounded(first, MAX_ANSWER_CHARS) or "(empty)",
        "[The end of answer A]",
        "",
        "[The start of answer B]",
        _bounded(second, MAX_ANSWER_CHARS) or "(empty)",
        "[The end of answer B]",
    ]
    return "\n".join(lines) + (REMINDER if reminder else "")


@dataclass(frozen=True)
class Ask:
    """One question to the judge: the item's question and images, the answer shown first and the one shown second."""

    question: str
    images: tuple[bytes, ...]
    first: str
    second: str


@dataclass(frozen=True)
class Heard:
    said: Said | None
    attempts: int
    raw: str  # the last reply


def ask(
    backend: Backend,
    asks: Sequence[Ask],
    *,
    with_image: bool,
    attempts: int = ATTEMPTS,
    max_new_tokens: int = MAX_NEW_TOKENS,
) -> tuple[list[Heard], int]:
    """The judge's verdict on each ask (one batch, then the unreadable ones again with the reminder), and the calls
    made. Without `with_image` no image is sent, whatever the asks hold."""
    got: Replies[Said] = ask_until_read(
        backend,
        len(asks),
        lambda i, reminder: Query(
            prompt=judge_prompt(
                asks[i].question, asks[i].first, asks[i].second, with_image=with_image, reminder=reminder
            ),
            images=asks[i].images if with_image else (),
        ),
        parse_verdict,
        attempts=attempts,
        max_new_tokens=max_new_tokens,
    )
    return [Heard(got.read[i], got.tries[i], got.last[i]) for i in range(len(asks))], got.calls
