"""MMVet's official figure, restated from VLMEvalKit (open-compass/VLMEvalKit@e8e78f05f3080fe28154f2130321f17951c3be94:
vlmeval/dataset/utils/mmvet.py build_mmvet_gpt4_prompt, MMVet_auxeval, MMVet_acc; vlmeval/dataset/image_vqa.py
MMVet.evaluate).

A grader model reads the question, the ground truth (`<AND>`: every element needed; `<OR>`: any one) and the model's
answer under the few-shot rubric below and completes the table's last cell with a correctness score from 0.0 to 1.0.
The reply is taken when it is nothing but a number (Python's float() of it) from 0 to 1; else the same prompt is
asked again, up to 5 tries, try i at temperature i × 0.5 (official_llm); when every try fails the item scores 0.0,
as VLMEvalKit scores it. The figures are the mean score ×100: overall, per capability (rec, ocr, know, gen, spat,
math: an item counts for each capability its category names) and per capability set (the category with `,` read
as `_`), as MMVet_acc reports them.

The item's fields: its question, its category (VLMEvalKit's `category` column, e.g. `ocr,math`), its key from meta
`answer` when kept raw, else its one reference answer.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from db import catalog, runs
from db.errors import InvalidInput, NotFound
from db.workspace import Workspace
from evaluator.backends import Backend
from evaluator.scoring import official_llm

STEP = "mmvet-vlmevalkit"
MAX_NEW_TOKENS = 2048  # MMVet.evaluate: build_judge(max_tokens=2048)
CAPABILITIES = ("rec", "ocr", "know", "gen", "spat", "math")
GIVE_UP_SCORE = 0.0  # MMVet_auxeval: "All 5 retries failed." scores 0.0

# build_mmvet_gpt4_prompt's rubric and examples, verbatim.
PROMPT = """
Compare the ground truth and prediction from AI models, to give a correctness score for the prediction.
<AND> in the ground truth means it is totally right
only when all elements in the ground truth are present in the prediction,
and <OR> means it is totally right when any one element in the ground truth is present in the prediction.
The correctness score is 0.0 (totally wrong), 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, or 1.0 (totally right).
Just complete the last space of the correctness score.

Question | Ground truth | Prediction | Correctness
--- | --- | --- | ---
What is x in the equation? | -1 <AND> -5 | x = 3 | 0.0
What is x in the equation? | -1 <AND> -5 | x = -1 | 0.5
What is x in the equation? | -1 <AND> -5 | x = -5 | 0.5
What is x in the equation? | -1 <AND> -5 | x = -5 or 5 | 0.5
What is x in the equation? | -1 <AND> -5 | x = -1 or x = -5 | 1.0
Can you explain this meme? | This meme is poking fun at the fact that the names of the countries
Iceland and Greenland are misleading. Despite its name, Iceland is known for its beautiful green landscapes,
while Greenland is mostly covered in ice and snow. The meme is saying that the person has trust issues
because the names of these countries do not accurately represent their landscapes. |
The meme talks about Iceland and Greenland. It's pointing out that despite their names,
Iceland is not very icy and Greenland isn't very green. | 0.4
Can you explain this meme? | This meme is poking fun at the fact that the names of the countries
Iceland and Greenland are misleading. Despite its name, Iceland is known for its beautiful green landscapes,
while Greenland is mostly covered in ice and snow. The meme is saying that the person has trust issues
because the names of these countries do not accurately represent their landscapes. |
The meme is using humor to point out the misleading nature of Iceland's and Greenland's names.
Iceland, despite its name, has lush green landscapes while Greenland is mostly covered in ice and snow.
The text 'This is why I have trust issues' is a playful way to suggest
that these contradictions can lead to distrust or confusion.
The humor in this meme is derived from the unexpected contrast between the names of the countries
and their actual physical characteristics. | 1.0
"""


def build_prompt(question: str, answer: str, prediction: str) -> str:
    """build_mmvet_gpt4_prompt: the rubric, then the item as the table's last row with its score cell empty."""
    return (
        PROMPT
        + "\n"
        + " | ".join([question, answer.replace("<AND>", " <AND> ").replace("<OR>", " <OR> "), prediction, ""])
    )


def read_score(reply: str) -> float | None:
    """MMVet_auxeval's float_cvt, then its range check: the reply's score, or None when it gives none."""
    try:
        score = float(reply)
    except ValueError:
        return None
    return score if 0 <= score <= 1 else None  # NaN fails both comparisons: invalid, as in the reference


def _accept(reply: str) -> str | None:
    """Why a try's reply is not taken (MMVet_auxeval's two log lines), None when it is. A NaN reply, which the
    reference takes and which turns its total into NaN, is taken as invalid here."""
    try:
        score = float(reply)
    except ValueError:
        return "failed to parse"
    return None if read_score(reply) is not None else f"invalid score: {score}"


@dataclass(frozen=True)
class MMVetItem:
    item_id: int
    index: int | str
    question: str
    answer: str
    category: str


def item_fields(item: catalog.Item) -> MMVetItem:
    """The item's MMVet fields; InvalidInput naming the item and field when one is missing."""
    raw = item.meta.get("answer")
    if isinstance(raw, str | int | float) and not isinstance(raw, bool):
        answer = str(raw)
    elif len(item.references) == 1:
        answer = item.references[0]
    elif item.answer is not None:
        answer = item.answer
    else:
        raise InvalidInput(f"MMVet item {item.index}: answer: no key (one reference answer, or meta answer)")
    if not item.category:
        raise InvalidInput(f"MMVet item {item.index}: category: missing (its capabilities, e.g. ocr,math)")
    return MMVetItem(item.id, item.index, item.question, answer, item.category)


@dataclass(frozen=True)
class MMVetScore:
    """A run's MMVet figures under one grader: the total ×100 (None until every item is graded), per capability and
    per capability set ({name: {tot, acc}}), items given up on (scored 0.0), items still to grade, grader calls."""

    run_id: int
    judge: str
    total: float | None
    capabilities: dict[str, dict[str, float | int | None]]
    capability_sets: dict[str, dict[str, float | int | None]]
    items: int
    given_up: int
    left: int
    calls: int = 0
    item_scores: dict[int, float] = field(default_factory=dict, repr=False)

    def to_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "judge": self.judge,
            "rule": "VLMEvalKit MMVet_acc",
            "total": self.total,
            "capabilities": self.capabilities,
            "capability_sets": self.capability_sets,
            "items": self.items,
            "given_up": self.given_up,
            "left": self.left,
            "calls": self.calls,
        }


def _run_items(ws: Workspace, run_id: int) -> list[tuple[MMVetItem, str]]:
    run = runs.get_run(ws, run_id)
    if run is None:
        raise NotFound(f"no run {run_id} in {ws.path}")
    if run.strategy != "open":
        raise InvalidInput(f"run {run_id} is a {run.strategy} run: MMVet's grader reads open answers")
    answers = {p.item_id: p.response for p in runs.predictions_of(ws, run_id) if p.pass_ == 0}
    return [(item_fields(i), answers.get(i.id, "")) for i in runs.items_of(ws, run)]


def _prompt(mv: MMVetItem, prediction: str) -> str:
    return build_prompt(mv.question, mv.answer, prediction)


def _score(
    run_id: int, judge: str, pairs: list[tuple[MMVetItem, str]], graded: dict[int, official_llm.Graded], calls: int
) -> MMVetScore:
    """MMVet_acc over the graded items."""
    tot: dict[str, int] = defaultdict(int)
    score: dict[str, float] = defaultdict(float)
    sets: list[str] = []
    scores: dict[int, float] = {}
    for mv, _ in pairs:
        if mv.item_id not in graded:
            continue
        reply = graded[mv.item_id].reply
        grade = GIVE_UP_SCORE if reply is None else float(reply)
        scores[mv.item_id] = grade
        cate2 = mv.category.replace(",", "_")
        if cate2 not in sets:
            sets.append(cate2)
        for capa in CAPABILITIES:
            if capa in mv.category:  # substring, as the reference tests it
                tot[capa] += 1
                score[capa] += grade
        tot["Overall"] += 1
        score["Overall"] += grade
        tot["set:" + cate2] += 1
        score["set:" + cate2] += grade

    def figure(key: str) -> dict[str, float | int | None]:
        # MMVet_acc divides by zero for a capability no item has (a pandas NaN); None here
        return {"tot": tot[key], "acc": score[key] / tot[key] * 100 if tot[key] else None}

    left = len(pairs) - len(scores)
    complete = left == 0 and bool(pairs)
    return MMVetScore(
        run_id,
        judge,
        score["Overall"] / tot["Overall"] * 100 if complete else None,
        {c: figure(c) for c in (*CAPABILITIES, "Overall")},
        {s: figure("set:" + s) for s in sets} | {"Overall": figure("Overall")},
        len(pairs),
        sum(1 for g in graded.values() if g.reply is None),
        left,
        calls,
        scores,
    )


def score_mmvet(
    ws: Workspace, run_id: int, judge: str, *, backend_for: Callable[[float], Backend] | None = None
) -> MMVetScore:
    """Grade an open run of MMVet as VLMEvalKit does (the grader a model spec), asking only what is not stored under
    this grader."""
    pairs = _run_items(ws, run_id)
    grader = official_llm.Grader(ws, STEP, judge, _accept, max_new_tokens=MAX_NEW_TOKENS, backend_for=backend_for)
    outcomes = grader.grade([_prompt(mv, p) for mv, p in pairs], run_id=run_id)
    graded = {mv.item_id: g for (mv, _), g in zip(pairs, outcomes)}
    return _score(run_id, grader.identity, pairs, graded, grader.calls)


def stored_score(ws: Workspace, run_id: int, judge: str | None = None) -> MMVetScore | None:
    """The run's figures from what is stored (under `judge`, else the grader that scored it last), asking nothing;
    None when it was never graded."""
    from evaluator.backends import run_identity

    pairs = _run_items(ws, run_id)
    identity = run_identity(judge) if judge else official_llm.run_judge(ws, STEP, run_id)
    if identity is None:
        return None
    prompts = {mv.item_id: _prompt(mv, p) for mv, p in pairs}
    outcomes = official_llm.stored(ws, STEP, identity, list(prompts.values()))
    graded = {i: outcomes[p] for i, p in prompts.items() if p in outcomes}
    return _score(run_id, identity, pairs, graded, 0)
