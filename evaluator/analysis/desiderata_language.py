"""Language performance (ChEF's tools/ChEF/eval_langperf.py): a judge model scores, 0-10 with a stated rubric, the
fluency and coherence of a run's (chain-of-thought) answers.

Any backend spec judges (`openai:…`, a local `hf:` text model). A reply is read strictly — `[Overall Score] N` with
N from 0 to 10 —; an unreadable one is asked again with a reminder (ATTEMPTS in all), then recorded as missing,
never invented. Judgements are stored per (run, item, pass, judge) in the workspace (db/judgements.py), so running
it again asks only about passes not yet judged. Score of a run: the mean over an item's judged passes, then the
mean over the items.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from db import catalog, judgements, runs
from db.errors import InvalidInput, NotFound
from db.workspace import Workspace
from evaluator.backends import Backend, Query
from evaluator.scoring.asking import ask_until_read
from evaluator.scoring.choices import shown_options

ATTEMPTS = 3
MAX_NEW_TOKENS = 512
CHUNK = 16  # passes asked (and stored) at once

RUBRIC = """Please act as an impartial judge of the language of a multimodal AI assistant's answer to a \
multiple-choice visual question. The assistant was asked to reason step by step before choosing.

Judge only the quality of the text, on two criteria:
- Fluency: grammatical, well-formed, readable sentences; no broken words, stray tokens or needless repetition.
- Coherence: each step follows from the previous ones and from the question, and the reasoning leads to the final
  choice without contradicting itself.
Do not judge whether the final choice is right, and assume that what the answer says about the image is true.

Scale (an integer from 0 to 10):
10 fluent and fully coherent; 7-9 minor slips; 4-6 understandable but clumsy or with gaps in the reasoning;
1-3 hard to follow, largely incoherent or repetitive; 0 empty, gibberish, or no reasoning at all.

First explain your evaluation in a few sentences, then give the score, in exactly this format:
[Explanation] your explanation
[Overall Score] an integer from 0 to 10
"""
REMINDER = (
    "\n\nYour reply must end with a line `[Overall Score] N`, where N is an integer from 0 to 10. "
    "Please answer again in that format."
)
_SCORE = re.compile(r"\[Overall Score\]\s*:?\s*(\d+(?:\.\d+)?)", re.IGNORECASE)


def parse_judgement(reply: str) -> float | None:
    """The score of a judge's reply: the number after its last `[Overall Score]`, when in 0..10; else None."""
    found = _SCORE.findall(reply or "")
    if not found:
        return None
    value = float(found[-1])
    return value if 0 <= value <= 10 else None


def judge_prompt(item: catalog.Item, prediction: runs.Prediction, *, reminder: bool = False) -> str:
    options = shown_options(item.options, prediction.option_order)
    lines = [RUBRIC, "[Question]", item.question.strip()]
    if options:
        lines += ["[Options]", *(f"{letter}. {text}" for letter, text in options.items())]
    lines += [
        "[Ground Truth]",
        prediction.answer or "(none)",
        "[Assistant's Chain of Thought]",
        prediction.response.strip() or "(empty)",
        "[Assistant's Final Choice]",
        prediction.choice or "(undecided)",
    ]
    return "\n".join(lines) + (REMINDER if reminder else "")


@dataclass(frozen=True)
class LanguageScore:
    """A run's language score under one judge: the mean per item, then over the items (None when no item has a
    readable judgement); passes judged / missing (unreadable after the retries) / not judged yet; judge calls made
    now."""

    run_id: int
    judge: str
    score: float | None
    items_scored: int
    passes_judged: int
    passes_missing: int
    passes_left: int
    calls: int = 0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _judged_passes(ws: Workspace, run: runs.Run) -> list[runs.Prediction]:
    """The passes a judge reads: generated answers (a likelihood pass has no text to judge)."""
    return [p for p in runs.predictions_of(ws, run.id) if p.stage != "likelihood" and p.response]


def language_score(ws: Workspace, run_id: int, judge: str, *, calls: int = 0) -> LanguageScore:
    run = runs.get_run(ws, run_id)
    if run is None:
        raise NotFound(f"no run {run_id} in {ws.path}")
    passes = _judged_passes(ws, run)
    stored = {(j.item_id, j.pass_): j for j in judgements.judgements_of(ws, run_id, judge)}
    per_item: dict[int, list[float]] = {}
    missing = left = 0
    for p in passes:
        j = stored.get((p.item_id, p.pass_))
        if j is None:
            left += 1
        elif j.score is None:
            missing += 1
        else:
            per_item.setdefault(p.item_id, []).append(j.score)
    means = [sum(v) / len(v) for v in per_item.values()]
    return LanguageScore(
        run_id,
        judge,
        sum(means) / len(means) if means else None,
        len(means),
        len(passes) - left,
        missing,
        left,
        calls,
    )


def judge_run(
    ws: Workspace,
    run_id: int,
    judge: str,
    *,
    backend: Backend | None = None,
    attempts: int = ATTEMPTS,
    max_new_tokens: int = MAX_NEW_TOKENS,
    limit: int | None = None,
) -> LanguageScore:
    """Ask `judge` (a checked model spec; `backend` when already built) about every pass of the run not judged yet
    (the first `limit` of them), store the judgements chunk by chunk, and return the run's score."""
    if attempts < 1:
        raise InvalidInput("attempts must be at least 1")
    run = runs.get_run(ws, run_id)
    if run is None:
        raise NotFound(f"no run {run_id} in {ws.path}")
    if run.strategy != "pope" and run.config.get("likelihood"):
        raise InvalidInput(f"run {run_id} is a likelihood run: it has no answers to judge (start one with --cot)")
    items = {i.id: i for i in runs.items_of(ws, run)}
    done = {(j.item_id, j.pass_) for j in judgements.judgements_of(ws, run_id, judge)}
    todo = [p for p in _judged_passes(ws, run) if (p.item_id, p.pass_) not in done and p.item_id in items]
    if limit is not None:
        todo = todo[:limit]
    calls = 0
    if todo:
        if backend is None:
            from evaluator.backends import load_backend

            backend = load_backend(judge)
        for start in range(0, len(todo), CHUNK):
            chunk = todo[start : start + CHUNK]
            found, asked = _ask(backend, judge, [(items[p.item_id], p) for p in chunk], attempts, max_new_tokens)
            calls += asked
            judgements.store_judgements(ws, found)
    return language_score(ws, run_id, judge, calls=calls)


def _ask(
    backend: Backend,
    judge: str,
    passes: Sequence[tuple[catalog.Item, runs.Prediction]],
    attempts: int,
    max_new_tokens: int,
) -> tuple[list[judgements.Judgement], int]:
    got = ask_until_read(
        backend,
        len(passes),
        lambda i, reminder: Query(prompt=judge_prompt(*passes[i], reminder=reminder)),
        parse_judgement,
        attempts=attempts,
        max_new_tokens=max_new_tokens,
    )
    replies, tries, calls = got.last, got.tries, got.calls
    scores = {i: v for i, v in enumerate(got.read) if v is not None}
    return [
        judgements.Judgement(p.run_id, p.item_id, p.pass_, judge, scores.get(i), tries[i], replies[i])
        for i, (_, p) in enumerate(passes)
    ], calls
