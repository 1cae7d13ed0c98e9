"""MathVista's and MMVet's official figures as metrics of the registry (evaluator/analysis/metrics.py): read from
what `score_mathvista` / `score_mmvet` stored under the judge that scored the run last; nothing is asked here. None
until the run was scored and every item has its extraction or grade."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from db.workspace import Workspace
from evaluator.analysis.metrics import MetricEntry, Needs, Official, Units
from evaluator.scoring import official_mathvista, official_mmvet


def _mathvista(key: str) -> Callable[[Workspace, int, str | None], float | None]:
    def compute(ws: Workspace, run_id: int, scoring: str | None) -> float | None:
        score = official_mathvista.stored_score(ws, run_id)
        value: float | None = None if score is None else getattr(score, key)
        return value

    return compute


def _mmvet(ws: Workspace, run_id: int, scoring: str | None) -> float | None:
    score = official_mmvet.stored_score(ws, run_id)
    return None if score is None else score.total


def mathvista_details(ws: Workspace, run_id: int) -> tuple[float | None, dict[str, Any], Units | None]:
    """MathVista's accuracy (×100) with its units: the items, each right or wrong (Wilson)."""
    score = official_mathvista.stored_score(ws, run_id)
    if score is None or score.accuracy is None:
        return None, {}, None
    return score.accuracy, {}, Units.proportion(score.hits, score.items, scale=100)


def mmvet_details(ws: Workspace, run_id: int) -> tuple[float | None, dict[str, Any], Units | None]:
    """MMVet's total (×100) with its units: the items' grades (0.0–1.0), their mean bootstrapped (in item id order)."""
    score = official_mmvet.stored_score(ws, run_id)
    if score is None or score.total is None:
        return None, {}, None
    return score.total, {}, Units.mean([score.item_scores[i] for i in sorted(score.item_scores)], scale=100)


METRICS = (
    MetricEntry(
        "mathvista",
        "MathVista accuracy ×100 as VLMEvalKit scores it: its rule, then the judge's extraction (stored when scored)",
        Needs(strategies=("open",)),
        _mathvista("accuracy"),
        official=Official(
            ("MathVista_MINI", "mathvista_testmini"), "accuracy (judge-extracted)", "points", mathvista_details
        ),
    ),
    MetricEntry(
        "mathvista_typed",
        "MathVista accuracy ×100 under the MathVista reference's typed comparison (a float to the item's precision, "
        "lists) on the same extractions",
        Needs(strategies=("open",)),
        _mathvista("typed_accuracy"),
    ),
    MetricEntry(
        "mmvet",
        "MMVet total score ×100 as VLMEvalKit grades it (0.0–1.0 per answer by the grader model, stored when graded)",
        Needs(strategies=("open",)),
        _mmvet,
        official=Official(("MMVet", "mmvet"), "score (judge-graded)", "points", mmvet_details),
    ),
)
