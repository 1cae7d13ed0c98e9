"""Predictions made elsewhere as a stored run: VLMEvalKit prediction files and lmms-eval `--log_samples` JSON Lines.

A VLMEvalKit file (`{model}_{dataset}.xlsx`, or .tsv / .csv) holds the benchmark's rows plus `prediction`, the
model's raw output: one row per question and, for MMBench-style CircularEval, one per circular copy (index +
k·1,000,000). An lmms-eval sample holds the row as `doc` and the output in `filtered_resps` (or `resps`). Each row is
matched to its item by index (a copy's index modulo 1,000,000) and to its pass by the option order it SHOWS: the
shown options must be a rotation of the item's (evaluator/choices.rotation), and the rotation that reproduces them is
the pass — whichever direction the file's tool rotated in. Files with circular copies make a CircularEval run,
others a VanillaEval run; yes/no benchmarks a POPE run.

The raw output is stored as each pass's response and read by vlmdesk's own extractor (rules, or an LLM), so
re-scoring, adjudication and the alignment study work on the run as on any other. An empty prediction is a pass that
of a multiple-choice benchmark was never asked (what `export-predictions` writes for a CircularEval pass that early
termination skipped). On a yes/no or open benchmark an empty prediction is the model's answer, stored empty and scored
as the reference scores it (POPE's evaluate.py reads it as "yes"; an open metric scores "" against the references), so
that the run reproduces the file's figures; the import counts them (`empty_answers`) and says so (`notes`).

Onto an open benchmark (VQA, captions) a file makes an open run, like `vlmdesk run` on it: one pass per item, the
response stored as it is, nothing extracted. lmms-eval's open tasks (textvqa_val, docvqa_val, vqav2_val, ok_vqa,
coco2017_cap_val, …) log their row as `doc` — indexed by `index`, `question_id` or `questionId` (DocVQA, InfoVQA),
else by the sample's `doc_id` (its place in the split) — and a row is matched by that index and checked by its
question. Reference answers come from the benchmark, not from the file: lmms-eval's `target` is what the task's
doc_to_target renders, which for textvqa, vqav2 and ok_vqa ("answer", no such column) is the literal word "answer",
and textvqa rewrites `doc["answers"]` with its answer normaliser before the sample is logged.

The run's config says where it came from — `origin: {format, file (the name only), sha256, rows}` — and its
config key is made from that origin, so `vlmdesk run` never mistakes an imported run for one of its own and
importing the same file for the same benchmark, model and extractor again finds the run already there.
Nothing is half-written: the run appears with all its passes, finished, or not at all.
"""

from __future__ import annotations

import csv
import hashlib
import json
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from db import catalog, runs
from db.catalog import Benchmark, Item
from db.errors import InvalidInput
from db.workspace import Workspace
from evaluator.engine.prompts import default_template
from evaluator.formats.importers.common import (
    CIRCULAR_STRIDE,
    InputError,
    Refused,
    blank,
    check_texts,
    decoded_lines,
    json_loads,
    normalise_index,
    open_regular,
    sha256_stream,
)
from evaluator.formats.outfiles import csv_cell_read
from evaluator.scoring.choices import (
    LETTERS,
    NONE_OF_THEM,
    displayed_answer,
    pass_correct,
    read_yes_no,
    rotation,
    shown_options,
)
from evaluator.scoring.extraction import Extraction

if TYPE_CHECKING:
    from evaluator.engine.runner import RunSettings

PREDICTION_FORMATS = ("vlmevalkit", "lmms-eval")
MAX_PREDICTION_FILE_BYTES = 4 * 2**30  # prediction files carry no images (VLMEvalKit drops the column)
MAX_ROWS = 10_000_000
MAX_SKIPPED_KEPT = 100  # skipped rows kept to show; the rest are only counted (a file of 10M bad rows stays small)
MAX_CELL_BYTES = 64 * 2**20  # a cell (or a JSON line) of at most this much: a stray image column still fits
# What an .xlsx may unpack to: openpyxl holds sharedStrings (and any one cell) whole, so a small zip of
# repetitive XML would take gigabytes. A VLMEvalKit file of MMBench's 26,000 rows unpacks to about 30 MB.
MAX_XLSX_UNPACKED_BYTES = 256 * 2**20
_EXTENSIONS = {".xlsx": "vlmevalkit", ".tsv": "vlmevalkit", ".csv": "vlmevalkit", ".jsonl": "lmms-eval"}


@dataclass(frozen=True)
class PredictionRow:
    """One row of a prediction file: the index it gives, the options it shows (None for yes/no), the answer key it
    shows (optional: it tells apart rotations of repeated option texts), the model's raw output and the question
    (optional: it must be the item's)."""

    line: int
    index: int | str
    options: tuple[str, ...] | None
    answer: str | None
    prediction: str
    question: str | None = None


@dataclass
class PredictionImport:
    """What `import-predictions` did; `to_json()` is its --json output."""

    run_id: int
    format: str
    strategy: str
    already_imported: bool = False
    rows_read: int = 0
    passes: int = 0
    unasked: int = 0  # rows of a multiple-choice benchmark with an empty prediction: passes never asked
    empty_answers: int = 0  # rows of a yes/no or open benchmark with an empty prediction: stored, scored as given
    items: int = 0
    copies: bool = False  # a row gave a circular copy's index (question index + k·1,000,000)
    skipped_count: int = 0
    skipped: list[InputError] = field(default_factory=list)  # the first MAX_SKIPPED_KEPT of them

    def to_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "format": self.format,
            "strategy": self.strategy,
            "already_imported": self.already_imported,
            "rows_read": self.rows_read,
            "passes": self.passes,
            "unasked": self.unasked,
            "empty_answers": self.empty_answers,
            "notes": self.notes(),
            "items": self.items,
            "rows_skipped": self.skipped_count,
            "skipped": [str(e) for e in self.skipped[:MAX_SKIPPED_KEPT]],
        }

    def notes(self) -> list[str]:
        """One line for each thing a reader of the numbers must know (how empty predictions were read)."""
        if not self.empty_answers:
            return []
        how = (
            'read as "yes", as POPE\'s evaluate.py reads them' if self.strategy == "pope" else "scored as empty answers"
        )
        return [
            f"{self.empty_answers} empty prediction(s) stored as answers and {how}, as the reference tools score them"
        ]


def detect_format(path: Path) -> str:
    found = _EXTENSIONS.get(path.suffix.lower())
    if found is None:
        raise InputError(path, 0, "format", "cannot tell the format from the name; pass --format vlmevalkit|lmms-eval")
    return found


def import_predictions(
    ws: Workspace,
    path: str | Path,
    bench: Benchmark,
    model: str,
    *,
    fmt: str | None = None,
    extractor: str = "rules",
    skip_bad: bool = False,
) -> PredictionImport:
    """Store the predictions in `path` as a finished run of `model` on `bench`. InputError on the first bad row
    (unless skip_bad: bad rows are counted and left out) with the workspace unchanged."""
    from evaluator.engine.runner import RunSettings
    from evaluator.scoring.llm_extraction import parse_extractor_spec

    path = Path(path)
    model = _check_model(path, model)
    if fmt is not None and fmt not in PREDICTION_FORMATS:
        raise InputError(path, 0, "format", f"unknown format {fmt[:40]!r} ({', '.join(PREDICTION_FORMATS)})")
    try:
        parse_extractor_spec(extractor)
    except InvalidInput as exc:
        raise InputError(path, 0, "--extractor", str(exc)) from None
    with _open(path) as raw:
        fmt = fmt or detect_format(path)
        sha = sha256_stream(raw)
        raw.seek(0)
        key = _config_key(bench, model, extractor, sha)
        found = runs.latest_run_with_key(ws, key)
        if found is not None:
            return PredictionImport(found.id, fmt, found.strategy, already_imported=True)
        rows = _read_vlmevalkit(path, raw) if fmt == "vlmevalkit" else _read_lmms(path, raw)
        report = PredictionImport(0, fmt, "pope")
        # Streamed: only matched passes are held (at most the benchmark's), never the file's rows.
        matched = _match(path, bench, catalog.list_items(ws, bench.id), rows, report, skip_bad)
    if not matched:
        skipped = f" ({report.skipped_count} skipped, the first: {report.skipped[0]})" if report.skipped else ""
        raise InputError(path, 0, "rows", f"no prediction could be matched to {bench.name!r}{skipped}")
    strategy = _strategy(bench, report.copies)
    report.strategy = strategy
    preds = _predictions(ws, matched, extractor, bench.kind)
    settings = RunSettings(
        strategy="vanilla" if strategy in ("vanilla", "open") else "circular",
        full_passes=_asked_after_wrong(preds),
        limit=_prefix_limit(ws, bench, {m.item.id for m in matched}),
        extractor=extractor,
    )
    origin = {"format": fmt, "file": path.name, "sha256": sha, "rows": report.rows_read}
    report.run_id = _store(ws, bench, model, strategy, settings, origin, key, preds)
    report.passes = len(preds)
    report.items = len({p.item_id for p in preds})
    return report


def _check_model(path: Path, model: str) -> str:
    from evaluator.formats.importers.importer import model_name_problem

    model = (model or "").strip()
    problem = model_name_problem(model)
    if problem is not None:
        raise InputError(path, 0, "--model", problem)
    return model


def _open(path: Path) -> BinaryIO:
    try:
        return open_regular(path, MAX_PREDICTION_FILE_BYTES, "limit for a prediction file")
    except FileNotFoundError:
        raise InputError(path, 0, "path", "no such file") from None
    except Refused as exc:
        raise InputError(path, 0, "path", str(exc).removeprefix(f"{path} ")) from None
    except (OSError, ValueError) as exc:
        raise InputError(path, 0, "path", f"cannot read ({getattr(exc, 'strerror', None) or exc})") from None


def _config_key(bench: Benchmark, model: str, extractor: str, sha: str) -> str:
    identity = {"imported": sha, "benchmark": bench.source_sha256, "model": model, "extractor": extractor}
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()


# ------------------------------------------------------------------------------------------------ reading


def _cell_text(value: object) -> str:
    """A cell as text: spreadsheets hold numbers (an option "3" reads back as 3, or 3.0)."""
    if value is None:
        return ""
    text = getattr(value, "text", None)
    if isinstance(text, str):  # an array formula: its text, as for any formula
        return text
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _table_rows(path: Path, raw: BinaryIO) -> Iterator[tuple[int, list[object]]]:
    """(line, cells) of a spreadsheet or a delimited text file, the header first."""
    suffix = path.suffix.lower()
    if suffix == ".xlsx":
        yield from _xlsx_rows(path, raw)
        return
    csv.field_size_limit(MAX_CELL_BYTES)
    lines = _bare_cr_hidden(decoded_lines(raw, path, max_line=MAX_CELL_BYTES))
    reader = csv.reader(lines, delimiter="," if suffix == ".csv" else "\t")
    last = 0
    while True:
        try:
            cells = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise InputError(path, reader.line_num, "row", f"unreadable {suffix[1:].upper()} ({exc})") from None
        texts: list[object] = [c.replace(_CR, "\r") for c in cells]
        yield last + 1, [csv_cell_read(str(c)) for c in texts] if suffix == ".csv" else texts
        last = reader.line_num


_CR = "\ud800"  # a lone surrogate: strictly decoded UTF-8 never holds one, so it stands for "\r" unambiguously


def _bare_cr_hidden(lines: Iterable[str]) -> Iterator[str]:
    """pandas' to_csv and csv.writer (lineterminator "\n") leave a "\r" inside a cell unquoted, and csv.reader
    takes it for a line end and stops. It crosses the reader as _CR and comes back; a CRLF line end stays one."""
    for line in lines:
        body, end = (line[:-2], "\r\n") if line.endswith("\r\n") else (line, "")
        yield body.replace("\r", _CR) + end if "\r" in body else line


def _xlsx_rows(path: Path, raw: BinaryIO) -> Iterator[tuple[int, list[object]]]:
    """Rows of the first sheet. A formula cell reads as its text: pandas and openpyxl write any string that starts
    with "=" (a model answering "=1+1") as a formula with no cached value, so the text is what the tool was given."""
    import zipfile
    import zlib
    from xml.etree.ElementTree import ParseError

    from openpyxl import load_workbook  # read-only mode streams the sheet's XML row by row

    try:
        with zipfile.ZipFile(raw) as archive:
            unpacked = sum(member.file_size for member in archive.infolist())  # zipfile enforces these sizes
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise InputError(path, 0, "path", f"not a readable .xlsx workbook ({str(exc)[:80]})") from None
    if unpacked > MAX_XLSX_UNPACKED_BYTES:
        raise InputError(
            path,
            0,
            "path",
            f"unpacks to {unpacked / 2**20:,.0f} MB; at most {MAX_XLSX_UNPACKED_BYTES // 2**20} MB (a zip bomb?)",
        )
    raw.seek(0)
    # openpyxl parses with the standard library's expat (no lxml, no defusedxml here): external entities are never
    # fetched, and expat >= 2.4 stops an entity expansion bomb ("billion laughs") with a ParseError, as it stops XML
    # that is cut or garbled; every one of them is bad input, never a bug.
    try:
        book = load_workbook(raw, read_only=True, data_only=False)
    except (zipfile.BadZipFile, KeyError, OSError, ValueError, ParseError) as exc:
        raise InputError(path, 0, "path", f"not a readable .xlsx workbook ({str(exc)[:80]})") from None
    number = 0
    try:
        if not book.worksheets:
            raise InputError(path, 0, "path", "the workbook has no sheet")
        sheet = book.worksheets[0]
        sheet.reset_dimensions()  # else read-only mode trusts the sheet's <dimension> and silently drops rows past it
        for number, values in enumerate(sheet.iter_rows(values_only=True), start=1):
            cells = list(values)
            for value in cells:
                if isinstance(value, str) and len(value) > MAX_CELL_BYTES:
                    raise InputError(path, number, "row", f"a cell of more than {MAX_CELL_BYTES // 2**20} MB")
            yield number, cells
    except (ParseError, zipfile.BadZipFile, EOFError, zlib.error) as exc:
        raise InputError(path, number + 1, "sheet", f"unreadable sheet XML ({str(exc)[:80]})") from None
    finally:
        book.close()


def _read_vlmevalkit(path: Path, raw: BinaryIO) -> Iterator[PredictionRow | InputError]:
    table = _table_rows(path, raw)
    try:
        _, head = next(table)
    except StopIteration:
        raise InputError(path, 1, "header", "the file is empty") from None
    header = [_cell_text(h).strip() for h in head]
    while header and not header[-1]:
        header.pop()
    twice = sorted(name for name, n in Counter(h for h in header if h).items() if n > 1)
    if twice:  # which one would be the prediction (or option A)? Never a silent pick
        raise InputError(path, 1, "header", f"column(s) given twice: {', '.join(twice)[:200]}")
    col = {name: i for i, name in enumerate(header) if name}
    missing = [c for c in ("index", "prediction") if c not in col]
    if missing:
        raise InputError(path, 1, "header", f"missing column(s): {', '.join(missing)} (a VLMEvalKit prediction file)")
    option_cols = [c for c in LETTERS if c in col and c != NONE_OF_THEM]
    delimited = path.suffix.lower() != ".xlsx"
    for n, (line, cells) in enumerate(table, start=1):
        if n > MAX_ROWS:
            raise InputError(path, line, "rows", f"more than {MAX_ROWS:,} rows")
        texts = [_cell_text(c) for c in cells]
        if not any(t.strip() for t in texts):
            continue
        if delimited and len(texts) < len(header):  # a file cut mid-row (a spreadsheet row just ends early)
            yield InputError(
                path,
                line,
                header[len(texts)] or "row",
                f"fewer cells ({len(texts)}) than header columns ({len(header)}) — truncated line?",
            )
            continue
        if delimited and any(t.strip() for t in texts[len(header) :]):
            yield InputError(path, line, "row", f"more cells ({len(texts)}) than header columns ({len(header)})")
            continue
        texts += [""] * (len(header) - len(texts))
        row = {name: texts[i] for name, i in col.items()}
        try:
            yield _row(path, line, row, option_cols, row["prediction"])
        except InputError as exc:
            yield exc


# Where a row names its item: VLMEvalKit's `index`; lmms-eval docs' `question_id` (POPE, TextVQA, VQAv2, OK-VQA, COCO)
# or `questionId` (DocVQA, InfoVQA).
_INDEX_KEYS = ("index", "question_id", "questionId")


def _row(
    path: Path,
    line: int,
    row: dict[str, Any],
    option_cols: list[str],
    prediction: object,
    fallback_index: object = None,
) -> PredictionRow:
    """A row from a mapping of column -> value (a VLMEvalKit row, or an lmms-eval sample's doc, whose `doc_id` is the
    fallback index of a doc that names none, such as ChartQA's)."""

    def err(name: str, what: str) -> InputError:
        return InputError(path, line, name, what)

    check_texts(row, "row", err)
    index_value = next((row[k] for k in _INDEX_KEYS if k in row), fallback_index)
    try:
        index = normalise_index(index_value)
    except (ValueError, TypeError) as exc:
        raise err("index", f"not a valid index: {str(index_value)[:60]!r} ({exc})") from None
    options: list[str] = []
    for letter in option_cols:
        value = row.get(letter)
        if value is None or blank(_cell_text(value)):
            continue
        if len(options) != LETTERS.index(letter):
            raise err(letter, f"option {letter} is filled but option {LETTERS[len(options)]} is empty")
        options.append(_cell_text(value).strip())
    answer = _cell_text(row.get("answer")).strip() or None
    if prediction is None:
        raise err("resps", "no text response in filtered_resps or resps")
    if not isinstance(prediction, str):
        raise err("prediction", f"expected text, got {type(prediction).__name__}")
    check_texts(prediction, "prediction", err)
    question = _cell_text(row.get("question")).strip() or None
    return PredictionRow(line, index, tuple(options) or None, answer, "" if blank(prediction) else prediction, question)


def _read_lmms(path: Path, raw: BinaryIO) -> Iterator[PredictionRow | InputError]:
    """lmms-eval's `samples_{task}.jsonl`: {doc_id, doc: {the dataset row}, target, resps, filtered_resps, …}."""
    for line, text in enumerate(decoded_lines(raw, path, max_line=MAX_CELL_BYTES), start=1):
        if line > MAX_ROWS:
            raise InputError(path, line, "rows", f"more than {MAX_ROWS:,} rows")
        if not text.strip():
            continue
        try:
            record = json_loads(text)
        except (ValueError, RecursionError) as exc:
            yield InputError(path, line, "json", f"not a JSON object ({str(exc)[:80]})")
            continue
        if not isinstance(record, dict) or not isinstance(record.get("doc"), dict):
            yield InputError(path, line, "doc", "missing: an lmms-eval sample holds its dataset row as `doc`")
            continue
        doc = record["doc"]
        try:
            options = [c for c in LETTERS if c in doc and c != NONE_OF_THEM]
            yield _row(path, line, doc, options, _lmms_output(record), record.get("doc_id"))
        except InputError as exc:
            yield exc


def _lmms_output(record: dict[str, Any]) -> object:
    """The model's answer: the first filtered response (lmms-eval's filters only trim it), else the first raw one."""
    for key in ("filtered_resps", "resps"):
        value = record.get(key)
        while isinstance(value, list) and value:
            value = value[0]
        if isinstance(value, str):
            return value
    return None


# ----------------------------------------------------------------------------------------------- matching


@dataclass(frozen=True)
class _Matched:
    item: Item
    pass_: int
    order: tuple[int, ...]
    response: str


def _item_for(index: int | str, by_index: dict[int | str, Item]) -> Item | None:
    if index in by_index:
        return by_index[index]
    if isinstance(index, int) and index >= CIRCULAR_STRIDE:  # a circular copy of question index mod 1,000,000
        return by_index.get(index % CIRCULAR_STRIDE)
    return None


def _match(
    path: Path,
    bench: Benchmark,
    items: list[Item],
    rows: Iterable[PredictionRow | InputError],
    report: PredictionImport,
    skip_bad: bool,
) -> list[_Matched]:
    by_index: dict[int | str, Item] = {item.index: item for item in items}
    seen: dict[tuple[int, int], int] = {}  # (item id, pass) -> line that gave it
    matched: list[_Matched] = []
    for row in rows:
        report.rows_read += 1
        try:
            if isinstance(row, InputError):
                raise row
            report.copies |= isinstance(row.index, int) and row.index >= CIRCULAR_STRIDE
            item = _item_for(row.index, by_index)
            if item is None:
                raise InputError(path, row.line, "index", f"no item {row.index!r} in benchmark {bench.name!r}")
            k, order = _pass_of(path, row, item)
            if (item.id, k) in seen:
                raise InputError(
                    path,
                    row.line,
                    "index",
                    f"item {item.index!r} pass {k} given twice (first at line {seen[item.id, k]})",
                )
            seen[item.id, k] = row.line
        except InputError as exc:
            if not skip_bad:
                raise
            report.skipped_count += 1
            if len(report.skipped) < MAX_SKIPPED_KEPT:
                report.skipped.append(exc)
            continue
        if row.prediction == "" and bench.kind == "mcq":  # a pass never asked (see the module's doc)
            report.unasked += 1
            continue
        report.empty_answers += row.prediction == ""
        matched.append(_Matched(item, k, order, row.prediction))
    return matched


def _same_text(a: str, b: str) -> bool:
    """Texts equal but for white space (a spreadsheet turns a CR into a line feed, an exporter may re-wrap)."""
    return a.split() == b.split()


def _pass_of(path: Path, row: PredictionRow, item: Item) -> tuple[int, tuple[int, ...]]:
    """The pass a row answers: the rotation of the item's options that shows them as the row does. A row whose
    question, kind (options or none) or answer contradicts the item's is refused: it belongs to another benchmark."""

    def err(name: str, what: str) -> InputError:
        return InputError(path, row.line, name, f"item {item.index!r}: {what}")

    if not item.options and row.options is not None:
        raise err("A", "the row shows options; the item has none (a yes/no or open benchmark: a multiple-choice file?)")
    if item.options and row.options is None:
        raise err("A", "the row shows no options (columns A, B, …)")
    if row.question is not None and not _same_text(row.question, item.question):
        raise err("question", f"{row.question[:80]!r} is not the item's question {item.question[:80]!r}")
    if not item.options:  # a yes/no item, or an open one (no answer key: its references are the benchmark's)
        if row.answer is not None and item.answer is not None and row.answer.lower() != item.answer:
            raise err("answer", f"{row.answer!r} is not the item's answer {item.answer!r}")
        return 0, ()
    n = len(item.options)
    copy = row.index // CIRCULAR_STRIDE if isinstance(row.index, int) and row.index != item.index else 0
    if copy >= n:
        raise err("index", f"circular copy {copy} of an item with {n} options (copies are 1 to {n - 1})")
    assert row.options is not None  # checked above
    if Counter(row.options) != Counter(item.options):
        raise err("A", f"the options {list(row.options)!r} are not a permutation of the item's {list(item.options)!r}")
    passes = [k for k in range(n) if tuple(item.options[j] for j in rotation(n, k)) == row.options]
    if not passes:
        raise err("A", "the options are shuffled, not rotated: no CircularEval pass shows them in this order")
    if row.answer is not None and item.answer is not None:
        # Repeated option texts make several rotations look alike; the answer key the row shows tells them apart.
        keyed = [k for k in passes if displayed_answer(item.answer, rotation(n, k)) == row.answer.upper()]
        if not keyed:
            raise err("answer", f"{row.answer!r} is not the item's answer {item.answer} as these options show it")
        passes = keyed
    return passes[0], rotation(n, passes[0])


def _strategy(bench: Benchmark, copies: bool) -> str:
    if bench.kind in ("yesno", "open"):
        return "pope" if bench.kind == "yesno" else "open"
    return "circular" if copies else "vanilla"


def _asked_after_wrong(preds: list[runs.Prediction]) -> bool:
    """Whether the file holds a pass asked after a wrong one (VLMEvalKit asks every copy): a --full-passes run."""
    first_wrong: dict[int, int] = {}
    for p in preds:
        if p.correct is False:
            first_wrong[p.item_id] = min(p.pass_, first_wrong.get(p.item_id, p.pass_))
    return any(p.item_id in first_wrong and p.pass_ > first_wrong[p.item_id] for p in preds)


def _prefix_limit(ws: Workspace, bench: Benchmark, item_ids: set[int]) -> int | None:
    """The run's item limit: N when the file answers exactly the benchmark's first N items (a --limit run's export),
    else None (every item; those the file lacks show as not run)."""
    items = catalog.list_items(ws, bench.id)
    n = len(item_ids)
    if n < len(items) and {i.id for i in items[:n]} == item_ids:
        return n
    return None


# ---------------------------------------------------------------------------------------------- storing


def _predictions(ws: Workspace, matched: list[_Matched], extractor_spec: str, kind: str) -> list[runs.Prediction]:
    from evaluator.engine.runner import OPEN_ANSWER
    from evaluator.scoring.llm_extraction import load_extractor

    if kind == "open":  # as a run of its own stores an open answer: nothing extracted, nothing scored
        read = [OPEN_ANSWER] * len(matched)
    elif kind == "yesno":
        read = [_yes_no(m.response) for m in matched]
    else:
        extractor = load_extractor(extractor_spec, ws)
        read = extractor.extract_many(
            [(m.item.question, shown_options(m.item.options, m.order), m.response) for m in matched]
        )
    out = []
    for m, e in zip(matched, read):
        answer = displayed_answer(m.item.answer, m.order)
        out.append(
            runs.Prediction(
                0, m.item.id, m.pass_, m.order, "", m.response, answer, e.choice, e.stage, e.reason,
                pass_correct(e.choice, answer), None,
            )
        )  # fmt: skip
    return out


def _yes_no(response: str) -> Extraction:
    reading = read_yes_no(response)
    if reading is None:
        return Extraction(None, "none", "strict parser: neither yes nor no")
    return Extraction(reading, "rules", f"strict parser: {reading}")


def _store(
    ws: Workspace,
    bench: Benchmark,
    model: str,
    strategy: str,
    settings: RunSettings,
    origin: dict[str, Any],
    key: str,
    preds: list[runs.Prediction],
) -> int:
    """The run and its passes, then finished; removed again if anything fails on the way."""
    from evaluator.engine.runner import git_revision, versions

    settings.check()
    owner = runs.Owner.here()
    run = runs.create_or_claim(
        ws,
        reuse=False,
        owner=owner,
        benchmark_id=bench.id,
        model_spec=model,
        strategy=strategy,
        prompt_template=default_template(bench.kind).to_json(),
        extractor=settings.extractor,
        config={**settings.identity(), "origin": origin},
        config_key=key,
        versions={**versions(), "backend": {"imported": origin["format"]}},
        git_revision=git_revision(),
        seed=settings.seed,
    )
    try:
        runs.add_predictions(ws, [_with_run(p, run.id) for p in preds], owner=owner)
        if not runs.release(ws, run.id, owner, "finished"):
            raise runs.RunLost(f"run {run.id} was taken over by another process while it was imported")
    except BaseException:
        with ws.db.atomic():
            ws.conn.execute("DELETE FROM runs WHERE id = ?", (run.id,))  # its passes go with it (ON DELETE CASCADE)
        raise
    return run.id


def _with_run(p: runs.Prediction, run_id: int) -> runs.Prediction:
    return replace(p, run_id=run_id)
