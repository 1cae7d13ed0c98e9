"""MathVista's official figure (MathVista_MINI on the OpenVLM leaderboard), restated from VLMEvalKit
(open-compass/VLMEvalKit@e8e78f05f3080fe28154f2130321f17951c3be94: vlmeval/dataset/utils/mathvista.py,
vlmeval/utils/matching_util.py, vlmeval/dataset/image_vqa.py MathVista.evaluate_heuristic).

Per item: the rule first (`post_check(prefetch=True)`: a multiple-choice answer whose letter or text `can_infer`
reads, a free-form answer that is already the right integer or float); when the rule fails, the judge model reads the
answer with VLMEvalKit's few-shot extraction prompt (official_llm: up to 5 tries, temperature i × 0.5, a reply is
taken unless it carries VLMEvalKit's API-failure text). Then `post_check(prefetch=False)` compares the extraction
with the key: multi_choice by the option letter `can_infer` reads against `answer_option`; integer by int(); float by
float() — VLMEvalKit ignores the item's precision —; any other answer type (list) compares the text 'None' with the
key, so VLMEvalKit never counts a list answer right. The score is accuracy over items ×100, also per task and per
skill, as MathVista_acc reports them.

The MathVista reference's own typed comparison (lupantech/MathVista, as lmms-eval restates it:
EvolvingLMMs-Lab/lmms-eval@75571cfe0fa36ca5ec2e6aa2bb268f9d38295af3 lmms_eval/tasks/mathvista/mathvista_evals.py
normalize_extracted_answer + safe_equal: float rounded to the item's precision, list as its text, an option by its
letter or the most similar option text) is here too, applied to the same extractions: `typed_accuracy`, beside the
official figure, never instead of it.

Item metadata comes from the item's meta (the TSV's extra columns, kept by the importers): question_type,
answer_type, precision, choices (a Python list literal, parsed, never evaluated), answer_option, task, skills; the
key from meta `answer` when kept raw, else the item's one reference answer.
"""

from __future__ import annotations

import ast
import os
import re
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from db import catalog, runs
from db.errors import InvalidInput, NotFound
from db.workspace import Workspace
from evaluator.backends import Backend
from evaluator.scoring import official_llm

STEP = "mathvista-vlmevalkit"
MAX_NEW_TOKENS = 128  # MathVista.evaluate_heuristic: build_judge(max_tokens=128)
FAIL_MSG = "Failed to obtain answer via API."
MAX_CHOICES_CHARS = 20_000


# ---- vlmeval/utils/matching_util.py -----------------------------------------------------------------------------

# Matches verbose chain-of-thought answers such as "The correct answer is **B**."
_VERBOSE_ANSWER_RE = re.compile(r"(?i)(?:correct\s+)?answer\s+is\s+\**([ABCD])\**")
_REJECTS = (
    "Sorry, I can't help with images of people yet.",
    "I can't process this file.",
    "I'm sorry, but without the image provided",
    "Cannot determine the answer",
)


def can_infer_option(answer: str, choices: dict[str, str]) -> str | None:
    """The option letter an answer names (None: VLMEvalKit's False). `VERBOSE` in the environment changes the
    reference's result (a lone `A` among more than 3 words is then no answer): read as it reads it."""
    verbose = os.environ.get("VERBOSE", 0)
    if "Failed to obtain answer via API" in answer:
        return None
    for err in _REJECTS:
        if err in answer:
            return "Z"

    def count_choice(splits: list[str], choices: Any, prefix: str = "", suffix: str = "") -> int:
        return sum(1 for c in choices if prefix + c + suffix in splits)

    answer_mod = answer
    for c in ".()[],:;!*#{}":
        answer_mod = answer_mod.replace(c, " ")
    splits = [x.strip() for x in answer_mod.split()]
    count = count_choice(splits, choices)
    if count == 1:
        for ch in choices:
            if "A" in splits and len(splits) > 3 and verbose:
                return None
            if ch in splits and splits.index(ch) > (len(splits) - 5):
                return ch
    elif count == 0 and count_choice(splits, {"Z", ""}) == 1:
        return "Z"
    match = _VERBOSE_ANSWER_RE.search(answer or "")
    if match and match.group(1).upper() in choices:
        return match.group(1).upper()
    return None


def can_infer_text(answer: str, choices: dict[str, str]) -> str | None:
    answer = answer.lower()
    if len(answer) > 2 * sum(len(str(v)) for v in choices.values()):
        return None
    lowered = {k: str(v).lower() for k, v in choices.items()}
    cands = [k for k in lowered if lowered[k] in answer]
    return cands[0] if len(cands) == 1 else None


def can_infer(answer: object, choices: dict[str, str]) -> str | None:
    text = str(answer)
    return can_infer_option(text, choices) or can_infer_text(text, choices)


# ---- vlmeval/dataset/utils/mathvista.py --------------------------------------------------------------------------


def gpt4_ice() -> list[str]:
    """VLMEvalKit's five in-context examples, verbatim."""
    example_1 = """
Hint: Please answer the question requiring an integer answer and provide the final value,
e.g., 1, 2, 3, at the end.\n
Question: Which number is missing?\n
Model response: The number missing in the sequence is 14.\n
Extracted answer: 14
"""

    example_2 = """
Hint: Please answer the question requiring a floating-point number with one decimal place and provide the final value,
e.g., 1.2, 1.3, 1.4, at the end.\n
Question: What is the fraction of females facing the camera?\n
Model response: The fraction of females facing the camera is 0.6,
which means that six out of ten females in the group are facing the camera.\n
Extracted answer: 0.6
"""

    example_3 = """
Hint: Please answer the question requiring a floating-point number with two decimal places and provide the final value,
e.g., 1.23, 1.34, 1.45, at the end.\n
Question: How much money does Luca need to buy a sour apple candy and a butter-scotch candy? (Unit: $)\n
Model response: Luca needs $1.45 to buy a sour apple candy and a butterscotch candy.\n
Extracted answer: 1.45
"""

    example_4 = """
Hint: Please answer the question requiring a Python list as an answer and provide the final list,
e.g., [1, 2, 3], [1.2, 1.3, 1.4], at the end.\n
Question: Between which two years does the line graph saw its maximum peak?\n
Model response: The line graph saw its maximum peak between 2007 and 2008.\n
Extracted answer: [2007, 2008]
"""

    example_5 = """
Hint: Please answer the question and provide the correct option letter, e.g., A, B, C, D, at the end.\n
Question: What fraction of the shape is blue?\n
Choices: (A) 3/11 (B) 8/11 (C) 6/11 (D) 3/5\n
Model response: The correct answer is (B) 8/11.\n
Extracted answer: B
"""

    return [example_1, example_2, example_3, example_4, example_5]


def build_prompt(question: str, prediction: str) -> str:
    """build_mathvista_gpt4_prompt, verbatim (its 'respone' and the missing line break before 'Extracted answer:'
    included: they are what the judge read when the published figures were made)."""
    task_description = """
Please read the following example.
Then extract the answer from the model response and type it at the end of the prompt.\n
"""
    prompt = task_description
    for example in gpt4_ice():
        prompt += example + "\n"
    prompt += question + "\n"
    prompt += "Model respone: " + prediction
    prompt += "Extracted answer:"
    return prompt


@dataclass(frozen=True)
class MathVistaItem:
    """What MathVista's rules read of an item."""

    item_id: int
    index: int | str
    question: str
    answer: str
    question_type: str  # multi_choice | free_form
    answer_type: str  # integer | float | text | list
    precision: int | None
    choices: tuple[str, ...]
    answer_option: str | None
    task: str | None
    skills: tuple[str, ...]


def _literal_list(text: str, what: str, err: Callable[[str, str], InvalidInput]) -> list[Any] | None:
    """A Python list literal's elements (parsed, never evaluated); None when the text is no list literal."""
    if len(text) > MAX_CHOICES_CHARS:
        raise err(what, f"{len(text):,} characters; at most {MAX_CHOICES_CHARS:,}")
    try:
        value = ast.literal_eval(text.strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    return list(value) if isinstance(value, (list, tuple)) else None


def item_fields(item: catalog.Item) -> MathVistaItem:
    """The item's MathVista fields from its meta; InvalidInput naming the item and field when one is missing or
    malformed."""
    meta = item.meta

    def err(name: str, why: str) -> InvalidInput:
        return InvalidInput(f"MathVista item {item.index}: {name}: {why}")

    def text(name: str) -> str | None:
        value = meta.get(name)
        return None if value is None or str(value).strip() == "" else str(value).strip()

    question_type, answer_type = text("question_type"), text("answer_type")
    if question_type is None or answer_type is None:
        raise err("question_type" if question_type is None else "answer_type", "missing (not a MathVista item?)")
    raw = meta.get("answer")
    if isinstance(raw, str | int | float) and not isinstance(raw, bool):
        answer = str(raw)
    elif len(item.references) == 1:
        answer = item.references[0]
    elif item.answer is not None:
        answer = item.answer
    else:
        raise err("answer", "no key (one reference answer, or meta answer)")
    precision: int | None = None
    if text("precision") is not None:
        try:
            value = float(str(text("precision")))
        except ValueError:
            raise err("precision", f"not a number: {str(text('precision'))[:40]!r}") from None
        if value == value:  # NaN: no precision, as pandas reads an empty cell
            if not (0 <= value <= 15 and value == int(value)):
                raise err("precision", f"{value:g} is not a whole number of decimals from 0 to 15")
            precision = int(value)
    choices: tuple[str, ...] = ()
    if question_type == "multi_choice":
        listed = _literal_list(text("choices") or "", "choices", err)
        if not listed:
            raise err("choices", "not a Python list of option texts")
        choices = tuple(str(c) for c in listed)
    skills_text = text("skills")
    if skills_text is None:
        skills: tuple[str, ...] = ()
    else:
        # MathVista_acc: eval(item['skills']), a SyntaxError read as one skill
        listed = _literal_list(skills_text, "skills", err)
        skills = tuple(str(s) for s in listed) if listed is not None else (skills_text,)
    return MathVistaItem(
        item.id,
        item.index,
        item.question,
        answer,
        question_type,
        answer_type,
        precision,
        choices,
        text("answer_option"),
        text("task"),
        skills,
    )


def _letters(choices: tuple[str, ...]) -> dict[str, str]:
    return {chr(65 + i): c for i, c in enumerate(choices)}  # list_to_dict


def post_check(mv: MathVistaItem, response: str, *, prefetch: bool) -> object:
    """VLMEvalKit's post_check: with `prefetch`, the rule's reading of the prediction (False when it reads
    nothing); without, whether the extraction `response` is right. An option letter, an int or a float on success."""
    res: object = None
    ans: object = mv.answer
    try:
        if mv.question_type == "multi_choice":
            ans = mv.answer_option
            res = can_infer(response, _letters(mv.choices)) or False
            if prefetch:
                return res
        elif mv.answer_type == "integer":
            res = int(response)
            ans = int(mv.answer)
        elif mv.answer_type == "float":
            res = float(response)
            ans = float(mv.answer)
        else:
            res = str(res)  # the reference's: 'None', so a list answer is never right
            ans = str(ans)
    except ValueError:
        pass
    if res == ans:
        return res if prefetch else True
    return False


def prefetched(mv: MathVistaItem, prediction: str) -> str | None:
    """The rule's extraction when it succeeds (MathVista_auxeval: `if post_check(line, prefetch=True)`, so a
    reading of 0 counts as no reading and is asked of the judge), as text; None when the judge must read it."""
    res = post_check(mv, prediction, prefetch=True)
    return str(res) if res else None


def hit(mv: MathVistaItem, extraction: str) -> bool:
    return bool(post_check(mv, extraction, prefetch=False))


def _accept(reply: str) -> str | None:
    return "failed to parse" if FAIL_MSG in reply else None


# ---- the MathVista reference's typed comparison (lmms-eval's restatement) -----------------------------------------


def levenshtein(a: str, b: str) -> int:
    """Levenshtein.distance (the reference's python-Levenshtein): insertions, deletions and substitutions, each 1;
    rapidfuzz's, the project's edit distance (open_metrics' ANLS uses it too)."""
    from rapidfuzz.distance import Levenshtein

    return int(Levenshtein.distance(a, b))


def normalize_extracted_answer(mv: MathVistaItem, extraction: str) -> str | None:
    """normalize_extracted_answer: an option by its `(X)` or bare letter, else the most similar option text (first of
    the nearest); an integer via int(float()); a float rounded to the item's precision (0 when it has none, as
    lmms-eval's `problem["precision"] if "precision" in doc else 0`); a list as its text; None when unreadable."""
    if mv.question_type == "multi_choice":
        text = extraction.strip()
        letter = re.findall(r"\(([a-zA-Z])\)", text)
        if letter:
            text = letter[0].upper()
        options = [chr(ord("A") + i) for i in range(len(mv.choices))]
        if text in options:
            return mv.choices[options.index(text)]
        distances = [levenshtein(text, c) for c in mv.choices]
        return mv.choices[distances.index(min(distances))]
    try:
        if mv.answer_type == "integer":
            return str(int(float(extraction)))
        if mv.answer_type == "float":
            return str(round(float(extraction), mv.precision or 0))
    except (ValueError, OverflowError):
        return None
    return str(extraction)


def safe_equal(prediction: str | None, answer: str) -> bool:
    return str(prediction).strip() == str(answer).strip()


def typed_hit(mv: MathVistaItem, extraction: str) -> bool:
    return safe_equal(normalize_extracted_answer(mv, extraction), mv.answer)


# ---- a run's score ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MathVistaScore:
    """A run's MathVista figures under one judge: accuracy ×100 over items (None until every item has its
    extraction), per task and skill (as MathVista_acc: `Overall`, each task, each skill, with tot / prefetch / hit),
    the reference's typed accuracy on the same extractions, items still to ask, judge calls made now."""

    run_id: int
    judge: str
    accuracy: float | None
    typed_accuracy: float | None
    items: int
    prefetched: int
    hits: int
    left: int
    groups: dict[str, dict[str, float | int]]
    calls: int = 0
    item_hits: dict[int, bool] = field(default_factory=dict, repr=False)
    extractions: dict[int, str] = field(default_factory=dict, repr=False)

    def to_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "judge": self.judge,
            "rule": "VLMEvalKit MathVista_acc (post_check)",
            "accuracy": self.accuracy,
            "typed_accuracy": self.typed_accuracy,
            "items": self.items,
            "prefetched": self.prefetched,
            "hits": self.hits,
            "left": self.left,
            "groups": self.groups,
            "calls": self.calls,
        }


def _run_items(ws: Workspace, run_id: int) -> tuple[runs.Run, list[tuple[MathVistaItem, str]]]:
    """The run's pass-0 answers with their items' MathVista fields (a pass never asked reads as an empty answer, as
    VLMEvalKit's prediction file holds it)."""
    run = runs.get_run(ws, run_id)
    if run is None:
        raise NotFound(f"no run {run_id} in {ws.path}")
    if run.strategy != "open":
        raise InvalidInput(f"run {run_id} is a {run.strategy} run: MathVista's rule reads open answers")
    answers = {p.item_id: p.response for p in runs.predictions_of(ws, run_id) if p.pass_ == 0}
    return run, [(item_fields(i), answers.get(i.id, "")) for i in runs.items_of(ws, run)]


def _score(
    run_id: int, judge: str, pairs: list[tuple[MathVistaItem, str]], found: dict[int, tuple[str, bool]], calls: int
) -> MathVistaScore:
    """MathVista_acc over the items with an extraction (`found`: item id -> (extraction, prefetched))."""
    tot: dict[str, int] = defaultdict(int)
    fetch: dict[str, int] = defaultdict(int)
    hits: dict[str, int] = defaultdict(int)
    item_hits: dict[int, bool] = {}
    typed = 0
    for mv, _ in pairs:
        if mv.item_id not in found:
            continue
        extraction, was_prefetched = found[mv.item_id]
        keys = ["Overall", str(mv.task), *mv.skills] if mv.task is not None else ["Overall", *mv.skills]
        right = hit(mv, extraction)
        item_hits[mv.item_id] = right
        typed += typed_hit(mv, extraction)
        for k in keys:
            tot[k] += 1
            fetch[k] += was_prefetched
            hits[k] += right
    groups = {
        k: {
            "tot": tot[k],
            "prefetch": fetch[k],
            "hit": hits[k],
            "prefetch_rate": fetch[k] / tot[k] * 100,
            "acc": hits[k] / tot[k] * 100,
        }
        for k in tot
    }
    left = len(pairs) - len(found)
    complete = left == 0 and bool(pairs)
    return MathVistaScore(
        run_id,
        judge,
        hits["Overall"] / len(pairs) * 100 if complete else None,
        typed / len(pairs) * 100 if complete else None,
        len(pairs),
        fetch["Overall"],
        hits["Overall"],
        left,
        groups,
        calls,
        item_hits,
        {i: e for i, (e, _) in found.items()},
    )


def score_mathvista(
    ws: Workspace, run_id: int, judge: str, *, backend_for: Callable[[float], Backend] | None = None
) -> MathVistaScore:
    """Score an open run of MathVista as VLMEvalKit does: the rule, then the judge (a model spec) for what the rule
    cannot read, asked only for extractions not stored under this judge."""
    _, pairs = _run_items(ws, run_id)
    grader = official_llm.Grader(ws, STEP, judge, _accept, max_new_tokens=MAX_NEW_TOKENS, backend_for=backend_for)
    found, prompts = _by_rule(pairs)
    graded = grader.grade(list(prompts.values()), run_id=run_id)
    for item_id, g in zip(prompts, graded):
        found[item_id] = (g.reply if g.reply is not None else "", False)  # all tries failed: res = ''
    return _score(run_id, grader.identity, pairs, found, grader.calls)


def _by_rule(pairs: list[tuple[MathVistaItem, str]]) -> tuple[dict[int, tuple[str, bool]], dict[int, str]]:
    """(item id -> the extraction the rule made, marked prefetched; item id -> the judge's prompt for the others)."""
    found: dict[int, tuple[str, bool]] = {}
    prompts: dict[int, str] = {}
    for mv, prediction in pairs:
        rule = prefetched(mv, prediction)
        if rule is not None:
            found[mv.item_id] = (rule, True)
        else:
            prompts[mv.item_id] = build_prompt(mv.question, prediction)
    return found, prompts


def stored_score(ws: Workspace, run_id: int, judge: str | None = None) -> MathVistaScore | None:
    """The run's figures from what is stored (under `judge`, else the judge that scored it last), asking nothing;
    None when it was never scored."""
    from evaluator.backends import run_identity

    _, pairs = _run_items(ws, run_id)
    identity = run_identity(judge) if judge else official_llm.run_judge(ws, STEP, run_id)
    if identity is None:
        return None
    found, prompts = _by_rule(pairs)
    outcomes = official_llm.stored(ws, STEP, identity, list(prompts.values()))
    for item_id, prompt in prompts.items():
        if prompt in outcomes:
            reply = outcomes[prompt].reply
            found[item_id] = (reply if reply is not None else "", False)
    return _score(run_id, identity, pairs, found, 0)
