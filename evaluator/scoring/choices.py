"""The rules about choices, each written once: option letters, rotation and the displayed answer, the answer keys
an item admits, reading a yes/no answer, the per-item run result (VanillaEval, CircularEval, POPE), whether
an item is still being asked, and CJK text.

Everything that runs, reports, re-scores, exports or checks QC calls these; db/item_query.py computes the run result
in SQL for paging speed (db/ cannot import evaluator/), and tests/db/test_run_result_sql.py holds the two to the
same answers on generated runs.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Literal

from evaluator.scoring.pope import PARSERS, parse_strict
from evaluator.scoring.pope import YES_NO as YES_NO  # POPE's labels, every yes/no item's keys
from evaluator.types import POPE_PARSERS as POPE_PARSERS  # the parsers in report order
from evaluator.types import PopeParser

if TYPE_CHECKING:
    from db.runs import Prediction

# --------------------------------------------------------------------------------------------------- letters

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
NONE_OF_THEM = "Z"
"""The extractors' choice for a refusal or "none of the options", so an item has at most 25 options (A-Y)."""
MAX_OPTIONS = LETTERS.index(NONE_OF_THEM)
YESNO_CANDIDATES = ("Yes", "No")
"""What a yes/no item offers the model (the likelihood scorer compares these; the choice is their lower case)."""


def letters(n_options: int) -> str:
    """The letters of the first n options: "ABC" for three."""
    return LETTERS[:n_options]


def answer_keys(n_options: int) -> tuple[str, ...]:
    """The answer keys an item admits, in canonical form: its option letters, or yes/no when it has no options."""
    return tuple(LETTERS[:n_options]) if n_options else YES_NO


def canonical_answer(n_options: int, text: str | None) -> str | None:
    """A typed answer key in the item's own terms ("b" -> "B", " Yes" -> "yes"); None when it names none."""
    if not text or not text.strip():
        return None
    text = text.strip()
    text = text.upper() if n_options else text.lower()
    return text if text in answer_keys(n_options) else None


# -------------------------------------------------------------------------------------------------- rotation


def rotation(n_options: int, k: int) -> tuple[int, ...]:
    """Pass k's option order: the option displayed i-th is original option (i + k) mod N (MMBench's copies)."""
    return tuple((i + k) % n_options for i in range(n_options))


def shown_options(options: Sequence[str], order: Sequence[int]) -> dict[str, str]:
    """Letter -> option text, as a pass with this option order displays them (an index past the options, which
    only a damaged row could hold, shows nothing)."""
    return {LETTERS[i]: options[j] for i, j in enumerate(order) if j < len(options)}


def displayed_answer(answer: str | None, order: Sequence[int]) -> str | None:
    """The answer key as a pass with this option order displays it (a yes/no key, no order: unchanged)."""
    if answer is None or not order:
        return answer
    return LETTERS[list(order).index(LETTERS.index(answer))]


def original_option(choice: str | None, order: Sequence[int]) -> int | None:
    """Which original option a displayed letter chose (its index); None for undecided, Z, or no such letter."""
    if choice is None or choice == NONE_OF_THEM or not order or len(choice) != 1:
        return None
    index = ord(choice) - ord("A")
    return order[index] if 0 <= index < len(order) else None


# -------------------------------------------------------------------------------------------------- likelihood

LIKELIHOOD_SCORES = ("sum", "prefix", "chef")
"""How likelihood mode scores a candidate: `sum`, the summed log-prob of the bare letter's (or Yes/No's) tokens right
after the prompt, no chain of thought; `prefix`, LVLM-eHub's prefix-based score over the option texts
(prefix_scores); `chef`, ChEF's calibration recipe — a chain of thought generated first, then the mean token log-prob
of each candidate "(A" at the end of ChEF's answer sentence (chef_candidates). Runs store the score they used."""
CONFIDENCES = {
    "sum": "softmax of the summed log-prob of the bare option letter (no chain of thought)",
    "prefix": "LVLM-eHub's prefix score (softmax of 1/loss of each option text's first token)",
    "chef": 'ChEF: softmax of the mean token log-prob of "(A"… after a chain of thought',
}
"""What a calibration figure's confidence is, per likelihood score (the desiderata report says which it used)."""

# ChEF's calibration recipe (OpenGVLab/LAMM src/config/ChEF/desiderata_recipes/Calibration/*.yaml: CoT, query pool 1,
# answer template 1; instruction/__init__.py generate_CoT_prompt, template.py, prompt.py).
CHEF_COT_PROMPT = "Let's think step by step."
"""What the chain-of-thought step asks after the question (ChEF's InstructionHandler.CoT_prompt)."""
CHEF_ANSWER_QUERY = "What is the correct option for this question?"
"""What the scored turn asks after the question (ChEF's vqa_prompts[1])."""
CHEF_ANSWER_LEAD = "The correct option for the question is"
"""ChEF's vqa_answer_templates[1] up to its {option}: the model's turn is the chain of thought, a newline, this, and
then the candidate."""
CHEF_OPTION_LINE = "({letter}) {text}"
"""How a ChEF-scored prompt shows an option, as ChEF's ScienceQA and MMBench questions do, so "(A" names one."""
CHEF_COT_MAX_NEW_TOKENS = 256
"""The chain of thought's length in ChEF's calibration recipe (max_new_tokens: 256)."""


def chef_candidates(keys: Sequence[str]) -> tuple[str, ...]:
    """ChEF's candidates (content_only False): "(A", "(B", …, each after a space, as it follows CHEF_ANSWER_LEAD; the
    tokens scored are the candidate's as the whole text splits (for LLaVA's SentencePiece, those of "(A" alone)."""
    return tuple(f" ({key}" for key in keys)


def prefix_candidates(texts: Sequence[str]) -> tuple[str, ...]:
    """What the prefix score appends to the prompt for each candidate: LVLM-eHub's ``prefix + ' ' + candidate + '.'``
    (a multiple-choice item's candidates are its option texts as shown; a yes/no item's, Yes and No)."""
    return tuple(f" {text.strip()}." for text in texts)


def prefix_scores(first_token_logprobs: Sequence[float]) -> list[float]:
    """LVLM-eHub's prefix-based score (Multi-Modality-Arena, LVLM_evaluation): a candidate's loss is the negative
    log-prob of its first token; the scores are the softmax over the candidates of 1 / loss (they sum to 1, and the
    prediction is the highest). A certain first token (loss 0) scores 1."""
    inverse = [1 / max(-lp, 1e-12) for lp in first_token_logprobs]
    top = max(inverse, default=0.0)
    weights = [math.exp(x - top) for x in inverse]
    total = sum(weights)
    return [w / total for w in weights]


# ------------------------------------------------------------------------------------------------------ yes/no


def read_yes_no(response: str) -> str | None:
    """What a free-form yes/no answer said: "yes", "no", or None when it says neither (the strict parser)."""
    reading = parse_strict(response)
    return None if reading == "unknown" else reading


def pope_reading(p: Prediction, parser: PopeParser) -> str:
    """A stored POPE pass as a parser reads it: "yes", "no" or "unknown". The official parser reads the response
    again (a likelihood pass has no text to read: its choice); the strict one is what the run stored."""
    if parser == "official":
        if p.stage == "likelihood":  # the runner stores the scored candidate as its choice, never None
            return p.choice if p.choice is not None else "unknown"
        return PARSERS["official"](p.response)
    return p.choice if p.choice in YES_NO else "unknown"


# ------------------------------------------------------------------------------------------------ run result

RunResult = Literal["right", "wrong", "pending", "unscored", "none"]
"""Per item and run: every needed pass right / a pass wrong / passes missing / no answer key / not run (the
glossary's "Run result"; db.item_query.RUN_RESULTS lists the same names for the SQL that computes it)."""


def passes_needed(strategy: str, n_options: int) -> int:
    """Passes an item needs right: every rotation under CircularEval, one pass under VanillaEval and POPE. An item
    with no options (an open question of a multiple-choice benchmark, MMMU's) has nothing to rotate: one pass."""
    return max(n_options, 1) if strategy == "circular" else 1


def pass_correct(choice: str | None, answer: str | None) -> bool | None:
    """Whether one pass is right: its reading is the displayed answer key. None without a key; an undecided
    reading (None) is wrong."""
    return None if answer is None else choice == answer


def run_result(marks: Mapping[int, bool | None], needed: int) -> RunResult:
    """The run result from an item's stored passes (pass -> right / wrong / None for no answer key). A wrong pass
    decides at once (CircularEval's early termination); an undecided answer was stored as wrong."""
    if not marks:
        return "none"
    values = list(marks.values())
    if any(m is False for m in values):
        return "wrong"
    if any(m is None for m in values):
        return "unscored"
    return "right" if sum(1 for m in values if m) >= needed else "pending"


def item_result(strategy: str, n_options: int, marks: Mapping[int, bool | None]) -> RunResult:
    """The run result of one item of a run under the run's own strategy."""
    return run_result(marks, passes_needed(strategy, n_options))


def vanilla_result(marks: Mapping[int, bool | None]) -> RunResult:
    """The run result under VanillaEval (pass 0, the original order), which every multiple-choice run also gives."""
    return run_result({0: marks[0]} if 0 in marks else {}, 1)


def marks_of(passes: Mapping[int, Prediction]) -> dict[int, bool | None]:
    """pass -> right / wrong / None (no key), from stored predictions."""
    return {k: p.correct for k, p in passes.items()}


def still_alive(marks: Iterable[bool | None], *, full_passes: bool) -> bool:
    """Whether an item's later passes are still to be asked: no pass wrong so far, or every pass is asked anyway
    (--full-passes). An item without an answer key has no wrong pass, so it is asked to the end."""
    return full_passes or not any(m is False for m in marks)


# -------------------------------------------------------------------------------------------------------- CJK

CJK_IDEOGRAPHS = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002ebef"
"""CJK Unified Ideographs, their extensions and the compatibility ideographs (full-width Latin "Ｂ" is not CJK)."""
CJK_SCRIPTS = "\u3040-\u30ff" + CJK_IDEOGRAPHS + "\uac00-\ud7af"
"""Kana, CJK ideographs and hangul syllables: scripts written without spaces between words."""
_CJK = re.compile(f"[{CJK_IDEOGRAPHS}]")


def has_cjk(text: str | None) -> bool:
    """Whether the text holds a CJK ideograph (Chinese text: prompts, and option texts matched as substrings)."""
    return text is not None and _CJK.search(text) is not None


_CJK_BASIC = re.compile("[\u4e00-\u9fff]")


def has_basic_cjk(text: str | None) -> bool:
    """Whether the text holds an ideograph of the CJK Unified Ideographs block alone (U+4E00–U+9FFF): VLMEvalKit's
    test for a Chinese prompt (vlmeval/smp/misc.py cn_string), narrower than has_cjk; its prompt presets use it."""
    return text is not None and _CJK_BASIC.search(text) is not None
