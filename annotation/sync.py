"""Annotators on several machines: human records leave one copy of a workspace as JSON Lines and merge into another.

Three kinds travel: item verdicts (`reviews`), alignment labels and adjudications (`labels`), QC decisions (`qc`).
Every record, undo rows included, carries the uuid it was given when it was made (`id`), its time (`at`) and, for
an undo, the uuid it withdraws. Importing is a merge: a record whose id is already present is skipped (so importing
twice adds nothing, and two machines can exchange files both ways), a present id with different content is an
error. What stands afterwards follows annotation/standing.py, by time — the same on every copy that holds the same
records (docs/adr/0010).

Items are named by what is stable across copies: a benchmark's name and the item's source index; for alignment
labels, the adjudication set's name and the response key (sha256 of question, options as shown and response) of
the adjudication item. A file is read within bounds (size, line length, JSON depth) and checked whole before
anything is written, in one transaction; a bad line is `FILE:LINE: field: what` (evaluator's InputError), or, with
skip_bad, skipped and listed — and so is an undo whose target was skipped.
"""
from __future__ import annotations

import json
import math
import os
import uuid as _uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Iterable, Iterator

from annotation import qc, reviews
from annotation.alignment import UNCLEAR
from annotation.standing import ADJUDICATIONS, LABELS, QC_DECISIONS, REVIEWS, WITHDRAWAL, Kind
from db import catalog
from db.workspace import Workspace
from evaluator.choices import answer_keys
from evaluator.extraction import REFUSAL
from evaluator.importers import InputError

MAX_FILE_BYTES = 256 * 1024 * 1024
MAX_LINE_BYTES = 64 * 1024
MAX_DEPTH = 2  # records are flat objects; anything nested deeper is refused before it is parsed
MAX_NAME = 100  # annotator, benchmark and set names
MAX_NOTE = 10_000
MAX_SECONDS = 1e7  # time spent on one record; more is a clock error, not work

KINDS = ("reviews", "labels", "qc")


class _Bad(Exception):
    """One field of one line is wrong."""

    def __init__(self, field: str, what: str):
        super().__init__(what)
        self.field, self.what = field, what


@dataclass(frozen=True)
class ImportReport:
    added: dict[str, int]  # table -> new records written
    present: int  # records whose id was already there (same content)
    skipped: tuple[InputError, ...]

    def to_json(self) -> dict:
        return {"added": sum(self.added.values()), "by_table": self.added, "present": self.present,
                "skipped": [{"line": e.line, "field": e.field, "error": e.what} for e in self.skipped]}


@dataclass
class _Row:
    """One checked line, ready to insert."""

    line: int
    kind: Kind
    record: dict  # the line in canonical form, as export_records would write it
    values: dict  # column -> value
    scope: tuple  # (table, *scope columns, who): an undo must share it with its target
    withdraws: str | None = None

    @property
    def uuid(self) -> str:
        return self.values["uuid"]

    @property
    def is_withdrawal(self) -> bool:
        return self.values[self.kind.value] == WITHDRAWAL


# ---------------------------------------------------------------------------------------------- field checks
def _fields(obj: dict, required: tuple[str, ...], optional: tuple[str, ...]) -> dict:
    unknown = [k for k in obj if k not in required and k not in optional]
    if unknown:
        raise _Bad(unknown[0], f"unknown field (known: {', '.join(required + optional)})")
    for k in required:
        if k not in obj:
            raise _Bad(k, "missing")
    return {k: obj.get(k) for k in required + optional}


def _text(rec: dict, key: str, *, nullable: bool = False, limit: int = MAX_NAME) -> str | None:
    value = rec[key]
    if value is None and nullable:
        return None
    if not isinstance(value, str):
        raise _Bad(key, f"expected text{' or null' if nullable else ''}, got {_json_type(value)}")
    if len(value) > limit:
        raise _Bad(key, f"longer than {limit} characters")
    return value


def check_name(value, key: str = "annotator") -> str:
    """A person's (or a set's, a benchmark's) name as it may be stored: non-empty text, printable, no surrounding
    spaces, at most MAX_NAME characters."""
    if not isinstance(value, str):
        raise _Bad(key, f"expected a name, got {_json_type(value)}")
    if not value.strip():
        raise _Bad(key, "empty")
    if len(value) > MAX_NAME:
        raise _Bad(key, f"longer than {MAX_NAME} characters")
    if not value.isprintable():
        raise _Bad(key, "holds control or other unprintable characters")
    if value != value.strip():
        raise _Bad(key, "leading or trailing spaces")
    return value


def _uuid_field(rec: dict, key: str, *, nullable: bool = False) -> str | None:
    value = rec[key]
    if value is None and nullable:
        return None
    if not isinstance(value, str):
        raise _Bad(key, f"expected a uuid{' or null' if nullable else ''}, got {_json_type(value)}")
    try:
        canonical = str(_uuid.UUID(value))
    except ValueError:
        canonical = None
    if canonical != value:
        raise _Bad(key, f"{value[:60]!r} is not a uuid in canonical form (8-4-4-4-12 lowercase hex)")
    return value


def _time(rec: dict, key: str = "at") -> str:
    """An ISO 8601 time with its zone, stored as every local record is (UTC, milliseconds) so text order is time
    order."""
    value = _text(rec, key, limit=64)
    try:
        at = datetime.fromisoformat(value)
    except ValueError:
        raise _Bad(key, f"{value!r} is not an ISO 8601 time") from None
    if at.tzinfo is None:
        raise _Bad(key, f"{value!r} has no time zone")
    return at.astimezone(timezone.utc).isoformat(timespec="milliseconds")


def _seconds(rec: dict, key: str = "seconds") -> float | None:
    value = rec[key]
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _Bad(key, f"expected a number of seconds or null, got {_json_type(value)}")
    if not (math.isfinite(value) and 0 <= value <= MAX_SECONDS):
        raise _Bad(key, f"{value} is not within 0..{MAX_SECONDS:g}")
    return value


def _index(rec: dict, key: str = "index") -> int | str:
    value = rec[key]
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise _Bad(key, f"expected an integer or text index, got {_json_type(value)}")
    return value


def _json_type(value) -> str:
    return {type(None): "null", bool: "true/false", int: "a number", float: "a number", str: "text",
            list: "a list", dict: "an object"}.get(type(value), type(value).__name__)


def _answers(item: catalog.Item) -> tuple[str, ...]:
    """The answer keys an item admits, in canonical form: its option letters, or yes/no."""
    return answer_keys(len(item.options))


# ------------------------------------------------------------------------------------------------ the kinds
class _Lookups:
    """Benchmarks, items and adjudication items by their stable names, read once per import."""

    def __init__(self, ws: Workspace):
        self.ws = ws
        self._benches: dict[str, dict | None] = {}
        self._sets: dict[str, dict | None] = {}

    def item(self, rec: dict) -> catalog.Item:
        name = _text(rec, "benchmark")
        if name not in self._benches:
            bench = catalog.benchmark_by_name(self.ws, name)
            self._benches[name] = None if bench is None else {i.index: i for i in catalog.list_items(self.ws, bench.id)}
        items = self._benches[name]
        if items is None:
            raise _Bad("benchmark", f"no benchmark named {name!r} in this workspace")
        index = _index(rec)
        if index not in items:
            raise _Bad("index", f"benchmark {name!r} has no item with index {index!r}")
        return items[index]

    def adjudication_item(self, rec: dict) -> tuple[int, tuple[str, ...]]:
        """(adjudication item id, the labels it admits)."""
        name = _text(rec, "set")
        if name not in self._sets:
            row = self.ws.conn.execute("SELECT id FROM adjudication_sets WHERE name = ?", (name,)).fetchone()
            self._sets[name] = None if row is None else {
                key: (item_id, (*json.loads(options), REFUSAL, UNCLEAR)) for item_id, key, options in self.ws.conn.execute(
                    "SELECT id, response_key, options FROM adjudication_items WHERE set_id = ?", (row[0],))}
        items = self._sets[name]
        if items is None:
            raise _Bad("set", f"no adjudication set named {name!r} in this workspace")
        key = _text(rec, "response", limit=64)
        if key not in items:
            raise _Bad("response", f"set {name!r} has no response with key {key!r}")
        return items[key]


def _review(rec: dict, look: _Lookups) -> _Row:
    rec = _fields(rec, ("id", "benchmark", "index", "annotator", "verdict", "at"),
                  ("answer", "note", "seconds", "withdraws"))
    uid = _uuid_field(rec, "id")
    item = look.item(rec)
    annotator = check_name(rec["annotator"])
    verdict = _text(rec, "verdict")
    if verdict not in (*reviews.VERDICTS, reviews.UNDO):
        raise _Bad("verdict", f"unknown verdict {verdict!r} (one of {', '.join(reviews.VERDICTS)}, undo)")
    answer = _text(rec, "answer", nullable=True)
    if verdict == "wrong_answer":
        if answer not in _answers(item):
            raise _Bad("answer", f"a wrong_answer verdict needs the corrected key, one of {', '.join(_answers(item))}")
    elif answer is not None:
        raise _Bad("answer", "only a wrong_answer verdict has a corrected key")
    withdraws = _uuid_field(rec, "withdraws", nullable=True)
    if withdraws is not None and verdict != reviews.UNDO:
        raise _Bad("withdraws", "only an undo withdraws a record")
    note, seconds, at = _text(rec, "note", nullable=True, limit=MAX_NOTE), _seconds(rec), _time(rec)
    record = {**rec, "at": at}
    return _Row(0, REVIEWS, record, {
        "item_id": item.id, "annotator": annotator, "verdict": verdict, "corrected_answer": answer, "note": note,
        "seconds": seconds, "created_at": at, "uuid": uid, "withdraws": withdraws},
        ("reviews", item.id, annotator), withdraws)


def _label(rec: dict, look: _Lookups) -> _Row:
    rec = _fields(rec, ("id", "kind", "set", "response", "annotator", "label", "at"), ("note", "seconds", "withdraws"))
    uid = _uuid_field(rec, "id")
    kind = rec["kind"]
    if kind not in ("label", "adjudication"):
        raise _Bad("kind", f"{kind!r} is not label or adjudication")
    item_id, admitted = look.adjudication_item(rec)
    annotator = check_name(rec["annotator"])
    label = _text(rec, "label")
    if label not in (*admitted, WITHDRAWAL):
        raise _Bad("label", f"{label!r} is not a label of this response: one of {', '.join(admitted)}, or undo")
    withdraws = _uuid_field(rec, "withdraws", nullable=True)
    if (withdraws is None) != (label != WITHDRAWAL):
        raise _Bad("withdraws", "an undo names the record it withdraws, and only an undo does")
    note, seconds, at = _text(rec, "note", nullable=True, limit=MAX_NOTE), _seconds(rec), _time(rec)
    record = {**rec, "at": at}
    if kind == "label":
        if note is not None:
            raise _Bad("note", "a label has no note (an adjudication has)")
        return _Row(0, LABELS, record, {"item_id": item_id, "annotator": annotator, "choice": label,
                                        "seconds": seconds, "created_at": at, "uuid": uid, "withdraws": withdraws},
                    ("labels", item_id, annotator), withdraws)
    if seconds is not None:
        raise _Bad("seconds", "an adjudication has no seconds (a label has)")
    return _Row(0, ADJUDICATIONS, record, {"item_id": item_id, "adjudicator": annotator, "choice": label, "note": note,
                                           "created_at": at, "uuid": uid, "withdraws": withdraws},
                ("adjudications", item_id, annotator), withdraws)


def _decision(rec: dict, look: _Lookups) -> _Row:
    rec = _fields(rec, ("id", "benchmark", "index", "stage", "annotator", "decision", "at"),
                  ("reason", "answer", "old_answer", "note", "withdraws"))
    uid = _uuid_field(rec, "id")
    item = look.item(rec)
    stage = _text(rec, "stage")
    if stage not in qc.STAGES:
        raise _Bad("stage", f"unknown stage {stage!r} ({', '.join(qc.STAGES)})")
    annotator = check_name(rec["annotator"])
    decision = _text(rec, "decision")
    if decision not in (*qc.DECISIONS, WITHDRAWAL):
        raise _Bad("decision", f"unknown decision {decision!r} (confirm, reject or undo)")
    reason = _text(rec, "reason", nullable=True)
    if decision == "confirm" and reason not in qc.REASONS:
        raise _Bad("reason", f"a confirmation needs a reason, one of {', '.join(qc.REASONS)}")
    if decision != "confirm" and reason is not None:
        raise _Bad("reason", "only a confirmation has a reason")
    answer, old = _text(rec, "answer", nullable=True), _text(rec, "old_answer", nullable=True)
    if reason == "wrong_answer":
        if answer not in _answers(item):
            raise _Bad("answer", f"a wrong_answer confirmation needs the corrected key, one of "
                                 f"{', '.join(_answers(item))}")
    elif answer is not None or old is not None:
        raise _Bad("answer" if answer is not None else "old_answer", "only a wrong_answer confirmation has answers")
    withdraws = _uuid_field(rec, "withdraws", nullable=True)
    if (withdraws is None) != (decision != WITHDRAWAL):
        raise _Bad("withdraws", "an undo names the record it withdraws, and only an undo does")
    note, at = _text(rec, "note", nullable=True, limit=MAX_NOTE), _time(rec)
    return _Row(0, QC_DECISIONS, {**rec, "at": at}, {
        "item_id": item.id, "stage": stage, "annotator": annotator, "decision": decision, "reason": reason,
        "note": note, "old_answer": old, "new_answer": answer, "created_at": at, "uuid": uid, "withdraws": withdraws},
        ("qc_decisions", item.id, stage, annotator), withdraws)


_CHECKS: dict[str, Callable[[dict, _Lookups], _Row]] = {"reviews": _review, "labels": _label, "qc": _decision}
_TABLES = {"reviews": (REVIEWS,), "labels": (LABELS, ADJUDICATIONS), "qc": (QC_DECISIONS,)}


# ---------------------------------------------------------------------------------------------------- export
def _review_records(ws: Workspace, where: str, params: list) -> Iterator[dict]:
    for (uid, bench, index, annotator, verdict, answer, note, seconds, at, withdraws) in ws.conn.execute(
            "SELECT r.uuid, b.name, i.source_index, r.annotator, r.verdict, r.corrected_answer, r.note, r.seconds, "
            "r.created_at, r.withdraws FROM reviews r JOIN items i ON i.id = r.item_id JOIN benchmarks b ON "
            f"b.id = i.benchmark_id WHERE {where} ORDER BY r.created_at, r.id", params):
        yield {"id": uid, "benchmark": bench, "index": index, "annotator": annotator, "verdict": verdict,
               "answer": answer if verdict == "wrong_answer" else None, "note": note, "seconds": seconds, "at": at,
               "withdraws": withdraws}


def _label_records(ws: Workspace, where: str, params: list) -> Iterator[dict]:
    rows = ws.conn.execute(
        "SELECT * FROM (SELECT 'label' AS kind, l.uuid, s.name AS set_name, a.response_key, l.annotator AS who, "
        "l.choice, NULL AS note, l.seconds, l.created_at, l.withdraws, l.id FROM labels l "
        "JOIN adjudication_items a ON a.id = l.item_id JOIN adjudication_sets s ON s.id = a.set_id "
        "UNION ALL SELECT 'adjudication', d.uuid, s.name, a.response_key, d.adjudicator, d.choice, d.note, NULL, "
        "d.created_at, d.withdraws, d.id FROM adjudications d JOIN adjudication_items a ON a.id = d.item_id "
        f"JOIN adjudication_sets s ON s.id = a.set_id) WHERE {where} ORDER BY created_at, kind DESC, id", params)
    for kind, uid, set_name, key, who, choice, note, seconds, at, withdraws, _ in rows:
        yield {"id": uid, "kind": kind, "set": set_name, "response": key, "annotator": who, "label": choice,
               "note": note, "seconds": seconds, "at": at, "withdraws": withdraws}


def _decision_records(ws: Workspace, where: str, params: list) -> Iterator[dict]:
    for (uid, bench, index, stage, annotator, decision, reason, answer, old, note, at, withdraws) in ws.conn.execute(
            "SELECT d.uuid, b.name, i.source_index, d.stage, d.annotator, d.decision, d.reason, d.new_answer, "
            "d.old_answer, d.note, d.created_at, d.withdraws FROM qc_decisions d JOIN items i ON i.id = d.item_id "
            f"JOIN benchmarks b ON b.id = i.benchmark_id WHERE {where} ORDER BY d.created_at, d.id", params):
        yield {"id": uid, "benchmark": bench, "index": index, "stage": stage, "annotator": annotator,
               "decision": decision, "reason": reason, "answer": answer, "old_answer": old, "note": note, "at": at,
               "withdraws": withdraws}


def export_records(ws: Workspace, kind: str, *, benchmark: str | None = None, set_name: str | None = None,
                   annotator: str | None = None) -> Iterator[dict]:
    """The records of one kind, in time order, every undo row included (filters narrow by benchmark or set and by
    annotator; an undo is always by the annotator of what it withdraws, so a filtered file stays whole)."""
    where, params = ["1 = 1"], []
    if kind == "labels":
        if set_name is not None:
            where.append("set_name = ?")
            params.append(set_name)
        if annotator is not None:
            where.append("who = ?")
            params.append(annotator)
        return _label_records(ws, " AND ".join(where), params)
    alias = {"reviews": "r", "qc": "d"}[kind]
    if benchmark is not None:
        where.append("b.name = ?")
        params.append(benchmark)
    if annotator is not None:
        where.append(f"{alias}.annotator = ?")
        params.append(annotator)
    reader = _review_records if kind == "reviews" else _decision_records
    return reader(ws, " AND ".join(where), params)


def write_jsonl(records: Iterable[dict], out) -> int:
    """Write records one per line to a text stream; returns how many."""
    n = 0
    for record in records:
        out.write(json.dumps(record, ensure_ascii=False) + "\n")
        n += 1
    return n


def export_to_file(records: Iterable[dict], path: Path) -> int:
    """Write the records to `path` through a temporary file in the same folder, replaced atomically."""
    import tempfile

    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            n = write_jsonl(records, f)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return n


# ---------------------------------------------------------------------------------------------------- import
def _depth(text: str) -> int:
    """The deepest nesting of [ and { outside strings (checked before json.loads sees the line)."""
    depth = deepest = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest


def _reject_constant(name: str):
    raise ValueError(f"{name} is not a number JSON allows")


def read_lines(path: Path) -> Iterator[tuple[int, dict | InputError]]:
    """(line number, parsed object or the InputError of that line); blank lines are ignored. A file that cannot be
    read at all raises InputError (line 0)."""
    try:
        f = open(path, "rb")
    except OSError as exc:
        raise InputError(path, 0, "file", exc.strerror or str(exc)) from None
    with f:
        size = os.fstat(f.fileno()).st_size
        if size > MAX_FILE_BYTES:
            raise InputError(path, 0, "file", f"{size} bytes, more than the {MAX_FILE_BYTES} this command reads")
        number = 0
        while True:
            raw = f.readline(MAX_LINE_BYTES + 1)
            if not raw:
                return
            number += 1
            if len(raw) > MAX_LINE_BYTES:
                while raw and not raw.endswith(b"\n"):  # the rest of the long line
                    raw = f.readline(MAX_LINE_BYTES)
                yield number, InputError(path, number, "line", f"longer than {MAX_LINE_BYTES} bytes")
                continue
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                yield number, InputError(path, number, "line", f"not UTF-8 ({exc.reason} at byte {exc.start})")
                continue
            if not text.strip():
                continue
            # Counting brackets is cheap and rules out deep nesting for the flat lines an export writes.
            if text.count("[") + text.count("{") > MAX_DEPTH and _depth(text) > MAX_DEPTH:
                yield number, InputError(path, number, "line", f"JSON nested deeper than {MAX_DEPTH}")
                continue
            try:
                obj = json.loads(text, parse_constant=_reject_constant)
            except ValueError as exc:
                yield number, InputError(path, number, "line", f"not JSON ({exc})")
                continue
            if not isinstance(obj, dict):
                yield number, InputError(path, number, "line", f"expected a JSON object, got {_json_type(obj)}")
                continue
            yield number, obj


def import_records(ws: Workspace, path: str | os.PathLike, kind: str, *, skip_bad: bool = False) -> ImportReport:
    """Merge a file written by export_records into the workspace (one transaction). Raises InputError for the first
    bad line unless skip_bad, which writes the good lines and lists the others."""
    if kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r} ({', '.join(KINDS)})")
    path = Path(path)
    look = _Lookups(ws)
    bad: list[InputError] = []
    rows: list[_Row] = []
    for number, obj in read_lines(path):
        if isinstance(obj, InputError):
            bad.append(obj)
            continue
        try:
            row = _CHECKS[kind](obj, look)
        except _Bad as exc:
            bad.append(InputError(path, number, exc.field, exc.what))
            continue
        row.line = number
        rows.append(row)
    fresh, present = _dedupe(ws, path, rows, bad)
    fresh = _check_withdrawals(ws, path, fresh, bad)
    bad.sort(key=lambda e: e.line)
    if bad and not skip_bad:
        raise bad[0]
    added = {k.table: 0 for k in _TABLES[kind]}
    with ws.db.atomic():
        for row in sorted(fresh, key=lambda r: (r.values["created_at"], r.line)):
            columns = ", ".join(row.values)
            ws.conn.execute(f"INSERT INTO {row.kind.table} ({columns}) VALUES ({', '.join('?' * len(row.values))})",
                            list(row.values.values()))
            added[row.kind.table] += 1
    return ImportReport(added, present, tuple(bad))


def _dedupe(ws: Workspace, path: Path, rows: list[_Row], bad: list[InputError]) -> tuple[list[_Row], int]:
    """Rows whose id is new; an id already present (in the workspace or earlier in the file) must hold the same
    record."""
    by_uuid: dict[str, _Row] = {}
    fresh, present = [], 0
    for row in rows:
        earlier = by_uuid.get(row.uuid)
        if earlier is not None:
            existing, where = earlier.record, f"line {earlier.line} of this file"
        else:
            existing, where = _stored_record(ws, row.kind, row.uuid), "this workspace"
        if existing is None:
            by_uuid[row.uuid] = row
            fresh.append(row)
        elif existing == row.record:
            present += 1
        else:
            differs = next(k for k in row.record if existing.get(k) != row.record[k])
            bad.append(InputError(path, row.line, "id", f"{row.uuid} is in {where} with a different {differs}"))
    return fresh, present


def _stored_record(ws: Workspace, kind: Kind, uid: str) -> dict | None:
    if ws.conn.execute(f"SELECT 1 FROM {kind.table} WHERE uuid = ?", (uid,)).fetchone() is None:
        return None
    if kind.table == "reviews":
        found = _review_records(ws, "r.uuid = ?", [uid])
    elif kind.table == "qc_decisions":
        found = _decision_records(ws, "d.uuid = ?", [uid])
    else:
        found = (r for r in _label_records(ws, "uuid = ?", [uid])
                 if r["kind"] == ("label" if kind is LABELS else "adjudication"))
    return next(iter(found), None)


def _check_withdrawals(ws: Workspace, path: Path, fresh: list[_Row], bad: list[InputError]) -> list[_Row]:
    """An undo must name a record (not an undo) of the same item, stage and person — already in the workspace, or
    a good line of this file."""
    records = {row.uuid: row for row in fresh if not row.is_withdrawal}
    kept = []
    for row in fresh:
        if row.withdraws is None:
            kept.append(row)
            continue
        k = row.kind
        target = records.get(row.withdraws)
        if target is not None:
            scope, value = target.scope, target.values[k.value]
        else:
            found = ws.conn.execute(f"SELECT {', '.join(k.scope)}, {k.who}, {k.value} FROM {k.table} WHERE uuid = ?",
                                    (row.withdraws,)).fetchone()
            if found is None:
                bad.append(InputError(path, row.line, "withdraws", f"names no record known here ({row.withdraws}); "
                                      "import the file that holds it first, or with it"))
                continue
            scope, value = (k.table, *found[:-1]), found[-1]
        if value == WITHDRAWAL:
            bad.append(InputError(path, row.line, "withdraws", "names an undo; an undo withdraws a record"))
        elif scope != row.scope:
            bad.append(InputError(path, row.line, "withdraws", "names a record of another item or person"))
        else:
            kept.append(row)
    return kept
