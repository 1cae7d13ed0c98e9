"""A run's predictions in VLMEvalKit's prediction-file layout (`{model}_{dataset}.xlsx`, here TSV or CSV).

VLMEvalKit writes the benchmark's rows without the image and adds a `prediction` column holding the model's raw
output. For MMBench the benchmark is pre-expanded for CircularEval: the row at index + k·1,000,000 shows the
options rotated by k. vlmdesk stores each question once and asks pass k with the options rotated by k (option i
shown is original option (i + k) mod N), so pass k *is* that row: its prediction is pass k's response, and its
options and answer are the rotated ones the model saw. Passes never asked (a wrong pass ends a CircularEval item)
get an empty prediction — VLMEvalKit counts the item wrong, as vlmdesk does. Vanilla runs give the original rows
only. POPE runs give index, question, answer, category (the setting) and prediction.

Files are written to a temporary name and renamed, so an interrupted export leaves nothing half-written.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from pathlib import Path

from db import catalog, runs
from db.errors import NotFound
from db.workspace import Workspace
from evaluator.choices import displayed_answer, letters, rotation
from evaluator.exporters import ExportError, _atomic_text, _finish, copy_shifts
from evaluator.importers.common import CIRCULAR_STRIDE

PREDICTION_FIELDS = ("response", "choice")
SEPARATORS = {".tsv": "\t", ".csv": ","}


@dataclass(frozen=True)
class PredictionExport:
    path: Path
    run_id: int
    rows: int
    predicted: int  # rows with a prediction (passes asked)


def default_file_name(model_spec: str, benchmark: str, suffix: str = ".tsv") -> str:
    """VLMEvalKit's `{model}_{dataset}` name: the model's last path part, unsafe characters replaced."""
    model = model_spec.partition(":")[2].split("?")[0].split("@")[0].rstrip("/").rsplit("/", 1)[-1] or model_spec

    def clean(text: str) -> str:
        return re.sub(r"[^\w.+-]+", "-", text).strip("-") or "model"

    return f"{clean(model)}_{clean(benchmark)}{suffix}"


def export_predictions(
    ws: Workspace, run_id: int, path: str | Path, *, prediction: str = "response"
) -> PredictionExport:
    """Write run `run_id` as a VLMEvalKit prediction file (.tsv or .csv by the suffix). LookupError for an unknown
    run, ExportError for a format it cannot write."""
    path = Path(path)
    sep = SEPARATORS.get(path.suffix.lower())
    if sep is None:
        raise ExportError(
            f"{path}: prediction files end in .tsv or .csv (VLMEvalKit reads both; .xlsx would need "
            "openpyxl, which vlmdesk does not depend on)"
        )
    if prediction not in PREDICTION_FIELDS:
        raise ExportError(f"prediction: one of {', '.join(PREDICTION_FIELDS)}")
    run = runs.get_run(ws, run_id)
    if run is None:
        raise NotFound(f"no run {run_id}")
    items = runs.items_of(ws, run)
    done: dict[tuple[int, int], runs.Prediction] = {(p.item_id, p.pass_): p for p in runs.predictions_of(ws, run_id)}

    def said(p: runs.Prediction | None) -> str:
        if p is None:
            return ""
        return p.response if prediction == "response" else (p.choice or "")

    if run.strategy == "pope":
        bench = next(b for b in catalog.list_benchmarks(ws) if b.id == run.benchmark_id)
        columns = ["index", "question", "answer", "category", "prediction"]
        rows = [
            [item.index, item.question, item.answer, bench.meta.get("setting") or "", said(done.get((item.id, 0)))]
            for item in items
        ]
        predicted = sum((item.id, 0) in done for item in items)
    elif run.strategy == "open":  # free answers; `answer` is the item's reference answer, when it has one
        columns = ["index", "question", "hint", "answer", "category", "split", "prediction"]
        rows = [
            [item.index, item.question, item.hint, item.meta.get("reference"), item.category, item.split]
            + [said(done.get((item.id, 0)))]
            for item in items
        ]
        predicted = sum((item.id, 0) in done for item in items)
    else:
        n_options = max((len(i.options) for i in items), default=2)
        columns = [
            "index",
            "question",
            "hint",
            *letters(n_options),
            "answer",
            "category",
            "l2-category",
            "split",
            "prediction",
        ]
        waves = max((len(i.options) for i in items), default=1) if run.strategy == "circular" else 1
        rows, predicted = [], 0
        for k in range(waves):  # originals first, then the copies in k order, as VLMEvalKit's files list them
            for item in items:
                if k >= len(item.options):
                    continue
                predicted += (item.id, k) in done
                order = rotation(len(item.options), k)
                shown = [item.options[j] for j in order]
                answer = displayed_answer(item.answer, order)
                rows.append(
                    [
                        _copy_index(item, k),
                        item.question,
                        item.hint,
                        *(shown + [None] * (n_options - len(shown))),
                        answer,
                        item.category,
                        item.l2_category,
                        item.split,
                        said(done.get((item.id, k))),
                    ]
                )
    handle, tmp = _atomic_text(path)
    ok = False
    try:
        out = csv.writer(handle, delimiter=sep, lineterminator="\n")
        out.writerow(columns)
        for row in rows:
            out.writerow(["" if v is None else str(v) for v in row])
        ok = True
    finally:
        _finish(handle, tmp, path, ok)
    return PredictionExport(path, run_id, len(rows), predicted)


def _copy_index(item: catalog.Item, k: int) -> int | str:
    """The index of the source row that shows the options rotated as pass k did."""
    if k == 0:
        return item.index
    for copy, shift in copy_shifts(item):  # the index the source file gave this rotation, when it had one
        if shift == k:
            return copy
    try:
        return int(item.index) + k * CIRCULAR_STRIDE
    except ValueError:
        raise ExportError(f"item {item.index!r}: CircularEval copies need whole-number indexes") from None
