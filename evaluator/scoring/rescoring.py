"""Re-scoring: read a run's stored responses again with another extractor, without calling the evaluated model.

Each re-scoring is stored under its name (the extractor spec, or ``human``) next to the run's own scoring, so
`vlmdesk report RUN --scoring NAME` can show any of them. Only passes that were asked are re-read: a CircularEval
pass that the run's own extractor stopped early (an earlier pass was wrong under it) stays unasked, and the report
counts it as wrong while saying how many items that affects (``circular_unasked_items``, ``circular_upper``).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from db import catalog, extractions, runs
from db.errors import UserError
from db.workspace import Workspace
from evaluator.scoring.choices import pass_correct, shown_options
from evaluator.scoring.extraction import TRUNCATED, Extraction
from evaluator.scoring.llm_extraction import ExtractionInput, Extractor

UNLABELLED = "unlabelled"
"""The stage an extractor may return to say "no reading of mine here": with fallback_to_run the run's own stays."""


class RescoreError(UserError, ValueError):
    """The run cannot be re-scored (unknown, POPE, …)."""


@dataclass(frozen=True)
class StoredPass:
    """One asked multiple-choice pass of a run, with what an extractor needs to read it."""

    prediction: runs.Prediction
    question: str
    options: dict[str, str]  # as shown in that pass: letter → option text

    @property
    def input(self) -> ExtractionInput:
        return (self.question, self.options, self.prediction.response)


def stored_passes(ws: Workspace, run_id: int) -> list[StoredPass]:
    run = runs.get_run(ws, run_id)
    if run is None:
        raise RescoreError(f"no run {run_id}")
    if run.strategy == "pope":
        raise RescoreError(f"run {run_id} is a yes/no (POPE) run; re-scoring reads multiple-choice answers")
    if run.strategy == "open":
        raise RescoreError(f"run {run_id} answers open questions: there are no options to read its answers as")
    items = {i.id: i for i in catalog.list_items(ws, run.benchmark_id)}
    predictions = runs.predictions_of(ws, run_id)
    if gone := {p.item_id for p in predictions} - items.keys():  # deleted behind vlmdesk's back (foreign keys off)
        raise RescoreError(
            f"run {run_id} has answers to {len(gone)} item(s) that are no longer in the workspace; see vlmdesk check"
        )
    out = []
    for p in predictions:
        item = items[p.item_id]
        out.append(StoredPass(p, item.question, shown_options(item.options, p.option_order)))
    return out


def rescore(
    ws: Workspace, run_id: int, extractor: Extractor, *, name: str | None = None, fallback_to_run: bool = False
) -> extractions.Scoring:
    """Read every stored pass with ``extractor`` and store the scoring under ``name`` (default: its name).

    With ``fallback_to_run``, passes the extractor leaves ``unlabelled`` keep the run's own reading (the human
    scoring: human labels where they exist, the run's extractor elsewhere)."""
    run = runs.get_run(ws, run_id)
    if run is not None and run.status != "finished":
        # A scoring covers the passes stored when it was made; passes a resume adds later would count as wrong.
        raise RescoreError(f"run {run_id} is {run.status}: finish it first (vlmdesk run --resume {run_id})")
    passes = stored_passes(ws, run_id)
    # A pass the token budget ended inside its thought has no answer to read (issue 36): it stays truncated under
    # every scoring, and no extractor is asked about it.
    answered = [sp for sp in passes if sp.prediction.stage != TRUNCATED.stage]
    readings = iter(extractor.extract_many([p.input for p in answered]))
    read: list[Extraction] = [TRUNCATED if sp.prediction.stage == TRUNCATED.stage else next(readings) for sp in passes]
    scored, changed, kept = [], 0, 0
    for sp, e in zip(passes, read):
        p = sp.prediction
        if e.stage == UNLABELLED and fallback_to_run:
            e = Extraction(p.choice, f"run:{p.stage}", p.reason or "")
            kept += 1
        elif e.stage == UNLABELLED:
            e = Extraction(None, "none", e.reason)
        changed += e.choice != p.choice
        scored.append(
            extractions.ScoredPass(p.item_id, p.pass_, e.choice, e.stage, e.reason, pass_correct(e.choice, p.answer))
        )
    summary = {
        "extractor": extractor.name,
        "passes": len(scored),
        "changed_from_run": changed,
        "undecided": sum(1 for s in scored if s.choice is None),
        "by_stage": dict(sorted(Counter(s.stage for s in scored).items())),
    }
    if fallback_to_run:
        summary["kept_from_run"] = kept
    return extractions.save_scoring(ws, run_id, name or extractor.name, scored, summary)
