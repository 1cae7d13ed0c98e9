"""The official figures of MMMU, OCRBench and HallusionBench as metrics of the registry, computed from a run's
stored passes: each pass's response (the answer only; a thinking model's thought is apart) read by the benchmark's
own rule (evaluator/scoring/official_mmmu.py, official_ocrbench.py, official_hallusionbench.py). They read the
responses, not a scoring's readings, so a re-scoring does not change them. The cost is one read of the run's items
and passes: proportional to the run, never to the workspace.

Which items count: those with an answer key (or reference answers) whose first pass is stored; an item not asked
yet is left out and counted (`unanswered`). An empty response is read as the reference reads an empty prediction.
"""

from __future__ import annotations

from typing import Any

from db import catalog, runs
from db.workspace import Workspace
from evaluator.analysis.metrics import MetricEntry, Needs, Official, Units
from evaluator.scoring import official_hallusionbench, official_mmmu, official_ocrbench

VALIDATION = "validation"  # MMMU_DEV_VAL's split the leaderboard's MMMU_VAL is


def _passes(ws: Workspace, run_id: int) -> tuple[list[catalog.Item], dict[int, runs.Prediction]]:
    """The run's items in order and each item's first pass (pass 0, the original option order)."""
    run = runs.get_run(ws, run_id)
    if run is None:
        raise RuntimeError(f"no run {run_id}")  # metrics.compute looked the run up first
    first = {p.item_id: p for p in runs.predictions_of(ws, run_id) if p.pass_ == 0}
    return runs.items_of(ws, run), first


# --- MMMU ---------------------------------------------------------------------------------------------------


def mmmu_details(ws: Workspace, run_id: int) -> tuple[float | None, dict[str, Any], Units | None]:
    """MMMU's accuracy on the validation split when the run has one (MMMU_DEV_VAL: the leaderboard's MMMU_VAL),
    else over every question; the breakdown per split; its units the questions it counts (right or wrong; a
    question MMMU's parser answers at random counts as the draw came out)."""
    items, first = _passes(ws, run_id)
    questions: list[official_mmmu.MmmuQuestion] = []
    unanswered = 0
    for item in items:
        p = first.get(item.id)
        if item.options and item.answer is not None:
            if p is None:
                unanswered += 1
                continue
            # As the pass showed them: the letters of the pass's option order, its displayed answer.
            order = p.option_order or tuple(range(len(item.options)))
            shown = tuple(item.options[j] for j in order)
            questions.append(official_mmmu.MmmuQuestion(item.split, shown, p.answer or "", p.response or ""))
        elif not item.options and item.references:  # an open question: its answer text(s)
            if p is None:
                unanswered += 1
                continue
            questions.append(official_mmmu.MmmuQuestion(item.split, (), item.references, p.response or ""))
    scores = official_mmmu.score(questions)
    splits = {s.casefold(): s for s in scores.by_split}
    over = splits.get(VALIDATION)
    value = scores.split_accuracy(over) if over is not None else scores.accuracy
    counted, right = scores.by_split[over] if over is not None else (scores.questions, scores.right)
    details = {**scores.to_json(), "figure_over": over or "all", "unanswered": unanswered}
    return value, details, Units.proportion(right, counted)


# --- OCRBench ----------------------------------------------------------------------------------------------


def ocrbench_details(ws: Workspace, run_id: int) -> tuple[float | None, dict[str, Any], Units | None]:
    """OCRBench's score (right answers; out of 1000 on the whole benchmark) and its five sums; its units the answers
    counted (those of OCRBench's categories), the interval the Wilson one of right / counted scaled to the count."""
    items, first = _passes(ws, run_id)
    triples = []
    unanswered = 0
    for item in items:
        if not item.references:
            continue
        p = first.get(item.id)
        if p is None:
            unanswered += 1
            continue
        triples.append((item.category, p.response or "", item.references))
    scores = official_ocrbench.score(triples)
    counted = scores.answers - scores.other
    value = float(scores.score) if counted > 0 else None
    return value, {**scores.to_json(), "unanswered": unanswered}, Units.proportion(scores.score, counted, scale=counted)


# --- HallusionBench ----------------------------------------------------------------------------------------


def _yes_no_answer(item: catalog.Item) -> str | None:
    """The item's answer as VLMEvalKit's TSV writes it (Yes / No): a yes/no item's key (stored lower-case), or an
    open item's one reference (HallusionBench imported as open questions keeps the file's text)."""
    if item.answer is not None:
        return item.answer.capitalize() if item.answer in ("yes", "no") else item.answer
    return item.references[0] if len(item.references) == 1 else None


def hallusionbench_details(ws: Workspace, run_id: int) -> tuple[float | None, dict[str, Any], Units | None]:
    """HallusionBench's figures: the mean of aAcc, fAcc and qAcc (as fractions), and each; its units the question
    sets (l2-category + set_id), in which both the figures and the question groups nest, resampled whole."""
    items, first = _passes(ws, run_id)
    questions = []
    unanswered = other = 0
    for item in items:
        answer = _yes_no_answer(item)
        if answer is None:
            continue
        if official_hallusionbench.index_parts(str(item.index)) is None:
            other += 1
            continue
        p = first.get(item.id)
        if p is None:
            unanswered += 1
            continue
        questions.append(
            official_hallusionbench.HallusionQuestion(str(item.index), item.l2_category, answer, p.response or "")
        )
    sets = list(official_hallusionbench.question_sets(questions).values())
    scores = official_hallusionbench.score(questions)
    overall = scores.overall
    fields = ("right", "questions", "figures_right", "figures", "groups_right", "groups")
    columns = tuple([getattr(s, f) for s in sets] for f in fields)
    return (
        None if overall is None else overall / 100,
        {**scores.to_json(), "unanswered": unanswered, "index_without_parts": other},
        Units.clusters("question sets", columns, hallusion_overall),
    )


def hallusion_overall(*columns: Any, axis: int = -1) -> Any:
    """The mean of aAcc, fAcc and qAcc (a fraction) over question sets, vectorized: each pair of columns (right,
    of) per set is summed over the sets, then divided — a ratio of sums, as the figures are."""
    right, n, figures_right, figures, groups_right, groups = (c.sum(axis=axis) for c in columns)
    return (right / n + figures_right / figures + groups_right / groups) / 3


def _value(details: Any) -> Any:
    return lambda ws, run_id, scoring: details(ws, run_id)[0]


def _hallusion_part(key: str) -> Any:
    def compute(ws: Workspace, run_id: int, scoring: str | None) -> float | None:
        value = hallusionbench_details(ws, run_id)[1][key]
        return None if value is None else value / 100

    return compute


METRICS = (
    MetricEntry(
        "mmmu_accuracy",
        "MMMU's official accuracy (MMMU's eval_utils parsing; the validation split when the run has one)",
        Needs(kind="mcq"),
        _value(mmmu_details),
        official=Official(("MMMU_DEV_VAL", "MMMU_VAL", "mmmu_val"), "accuracy", "percent", mmmu_details),
    ),
    MetricEntry(
        "ocrbench_score",
        "OCRBench's official score: answers containing a reference (per-category matching), out of 1000",
        Needs(kind="open"),
        _value(ocrbench_details),
        official=Official(("OCRBench", "ocrbench"), "score", "count", ocrbench_details),
    ),
    MetricEntry(
        "hallusionbench_overall",
        "HallusionBench's official figure: the mean of aAcc, fAcc and qAcc (VLMEvalKit's yes/no reading)",
        Needs(),
        _value(hallusionbench_details),
        official=Official(("HallusionBench", "hallusion_bench_image"), "overall", "percent", hallusionbench_details),
    ),
    MetricEntry("hallusionbench_aacc", "HallusionBench aAcc: questions right", Needs(), _hallusion_part("aAcc")),
    MetricEntry(
        "hallusionbench_facc",
        "HallusionBench fAcc: figures whose every question is right",
        Needs(),
        _hallusion_part("fAcc"),
    ),
    MetricEntry(
        "hallusionbench_qacc",
        "HallusionBench qAcc: questions right on every figure they are asked of",
        Needs(),
        _hallusion_part("qAcc"),
    ),
)
