"""A run's predictions in VLMEvalKit's prediction-file layout (`{model}_{dataset}.xlsx`, .tsv or .csv), or as
lmms-eval's `--log_samples` JSON Lines.

VLMEvalKit writes the benchmark's rows without the image and adds a `prediction` column holding the model's raw
output. For MMBench the benchmark is pre-expanded for CircularEval: the row at index + k·1,000,000 shows the
options rotated by k. vlmdesk stores each question once and asks pass k with the options rotated by k (option i
shown is original option (i + k) mod N), so pass k *is* that row: its prediction is pass k's response, and its
options and answer are the rotated ones the model saw. Passes never asked (a wrong pass ends a CircularEval item)
get an empty prediction — VLMEvalKit counts the item wrong, as vlmdesk does. Vanilla runs give the original rows
only. POPE runs give index, question, answer, category (the setting) and prediction. Multi-turn runs add a
`turns` column: each pass's dialogue as JSON (evaluator/engine/multiturn.py). A thinking model's run (a pass with a
thought, a finish reason or reasoning tokens, issue 36) adds THINKING_COLUMNS: the prediction stays the answer.

Files are written to a temporary name and renamed, so an interrupted export leaves nothing half-written.
"""

from __future__ import annotations

import csv
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from db import catalog, runs
from db.errors import NotFound
from db.workspace import Workspace
from evaluator.formats.exporters import ExportError, _atomic_text, _finish, copy_shifts
from evaluator.formats.importers.common import CIRCULAR_STRIDE
from evaluator.formats.outfiles import AtomicOutput, csv_cell
from evaluator.scoring.choices import displayed_answer, letters, rotation

PREDICTION_FIELDS = ("response", "choice")
THINKING_COLUMNS = ("thought", "finish_reason", "truncated", "reasoning_tokens")
"""Each pass's thought apart from its answer, why generation stopped, whether the token budget cut it off (1; empty
for a pass never asked) and the reasoning tokens its server said it spent; lmms-eval samples carry them beside
`resps` (truncated as true/false)."""
SEPARATORS = {".tsv": "\t", ".csv": ","}
LAYOUTS = ("vlmevalkit", "lmms-eval")
"""VLMEvalKit's prediction file (.tsv/.csv), or lmms-eval's `--log_samples` JSON Lines (.jsonl): one sample per
row, {doc_id, doc (the row without prediction; POPE's index as question_id), target, resps, filtered_resps}."""


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
    ws: Workspace, run_id: int, path: str | Path, *, prediction: str = "response", layout: str = "vlmevalkit"
) -> PredictionExport:
    """Write run `run_id` as a VLMEvalKit prediction file (.tsv or .csv by the suffix) or as lmms-eval samples
    (.jsonl). LookupError for an unknown run, ExportError for a format it cannot write."""
    path = Path(path)
    sep = SEPARATORS.get(path.suffix.lower())
    if layout not in LAYOUTS:
        raise ExportError(f"layout: one of {', '.join(LAYOUTS)}")
    if layout == "lmms-eval":
        if path.suffix.lower() != ".jsonl":
            raise ExportError(f"{path}: lmms-eval samples are JSON Lines; name the file .jsonl")
    elif sep is None and path.suffix.lower() != ".xlsx":
        raise ExportError(f"{path}: prediction files end in .xlsx, .tsv or .csv (VLMEvalKit reads all three)")
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

    thinking = any(p.thought is not None or p.finish_reason is not None or p.reasoning_tokens is not None
                   for p in done.values())  # fmt: skip

    def thought_cells(p: runs.Prediction | None) -> list[Any]:
        if not thinking:
            return []
        if p is None:
            return [None] * len(THINKING_COLUMNS)
        return [p.thought, p.finish_reason, int(p.truncated), p.reasoning_tokens]

    if run.strategy == "pope":
        bench = next(b for b in catalog.list_benchmarks(ws) if b.id == run.benchmark_id)
        columns = ["index", "question", "answer", "category", "prediction"]
        rows = [
            [item.index, item.question, item.answer, bench.meta.get("setting") or "", said(done.get((item.id, 0)))]
            + thought_cells(done.get((item.id, 0)))
            for item in items
        ]
        predicted = sum((item.id, 0) in done for item in items)
    elif run.strategy == "open":  # free answers; `answer` is the item's reference (a JSON list when it has several)
        columns = ["index", "question", "hint", "answer", "category", "split", "prediction"]
        rows = [
            [item.index, item.question, item.hint, _references_cell(item.references), item.category, item.split]
            + [said(done.get((item.id, 0)))]
            + thought_cells(done.get((item.id, 0)))
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
        dialogues = bool(run.config.get("multi_turn"))  # multi-turn passes add their turns (JSON) as a column
        columns += ["turns"] if dialogues else []
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
                        *([_turns(done.get((item.id, k)))] if dialogues else []),
                        *thought_cells(done.get((item.id, k))),
                    ]
                )
    columns += list(THINKING_COLUMNS) if thinking else []
    if sep is None and layout == "vlmevalkit":
        _write_xlsx(path, columns, rows)
        return PredictionExport(path, run_id, len(rows), predicted)
    handle, tmp = _atomic_text(path)
    ok = False
    try:
        if layout == "lmms-eval":
            _write_samples(handle, columns, rows, pope=run.strategy == "pope")
        else:
            assert sep is not None  # checked above
            # A .csv opens in a spreadsheet (outfiles.csv_cell; CRLF rows, so a cell holding a bare CR is quoted and
            # cannot start a row of its own); a .tsv is data, as VLMEvalKit writes it.
            spreadsheet = sep == ","
            out = csv.writer(handle, delimiter=sep, lineterminator="\r\n" if spreadsheet else "\n")
            out.writerow(columns)
            cell = csv_cell if spreadsheet else str
            for row in rows:
                out.writerow(["" if v is None else cell(str(v)) for v in row])
        ok = True
    finally:
        _finish(handle, tmp, path, ok)
    return PredictionExport(path, run_id, len(rows), predicted)


def _references_cell(references: tuple[str, ...]) -> str | None:
    """One reference as its text, several as a JSON list (VLMEvalKit's VQA files keep answer lists in one cell)."""
    if len(references) <= 1:
        return references[0] if references else None
    return json.dumps(list(references), ensure_ascii=False)


def _turns(p: runs.Prediction | None) -> str:
    return (runs.turns_json(p.turns) or "") if p is not None else ""


def _write_xlsx(path: Path, columns: list[str], rows: list[list[Any]]) -> None:
    """VLMEvalKit's own `{model}_{dataset}.xlsx`, one sheet, streamed (openpyxl's write-only mode)."""
    from openpyxl import Workbook
    from openpyxl.cell import WriteOnlyCell

    book = Workbook(write_only=True)
    sheet = book.create_sheet()

    def cell(value: Any) -> Any:
        if not (isinstance(value, str) and value.startswith("=")):
            return "" if value is None else value
        # openpyxl writes a string starting with "=" as a formula: a response "=HYPERLINK(…)" would run in Excel
        # and read back empty. Stored text stays text.
        text = WriteOnlyCell(sheet, value=value)
        text.data_type = "s"
        return text

    sheet.append(columns)
    for row in rows:
        sheet.append([cell(v) for v in row])
    path.parent.mkdir(parents=True, exist_ok=True)
    out = AtomicOutput(path, binary=True)
    handle, ok = out.open(), False
    try:
        book.save(handle)
        ok = True
    finally:
        out.close(ok)


def _write_samples(handle: IO[str], columns: list[str], rows: list[list[Any]], *, pope: bool) -> None:
    """lmms-eval's sample shape; a pass never asked has an empty response, as in the VLMEvalKit layout."""
    said_at = columns.index("prediction")  # a multi-turn run's turns column comes after it
    for doc_id, row in enumerate(rows):
        doc = {
            ("question_id" if pope and c == "index" else c): v
            for c, v in zip(columns, row)
            if c != "prediction" and c not in THINKING_COLUMNS
        }
        said = row[said_at]
        sample = {"doc_id": doc_id, "doc": doc, "target": doc["answer"], "resps": [[said]], "filtered_resps": [said]}
        for c, v in zip(columns, row):  # a thinking model's pass: beside its response, not in the document
            if c in THINKING_COLUMNS:
                sample[c] = bool(v) if c == "truncated" and v is not None else v
        handle.write(json.dumps(sample, ensure_ascii=False) + "\n")


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
