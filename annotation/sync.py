"""Annotators on several machines: human records leave one copy of a workspace as JSON Lines and merge into another.

Five kinds travel: item verdicts (`reviews`), alignment labels and adjudications (`labels`), QC decisions (`qc`),
arena votes (`votes`, named by the uuid of their pair: they merge into copies of the workspace the pairs were drawn in),
verdicts on open answers (`open`, named by benchmark, item index, the run's config key and the sha256 of the answer
judged: they merge into any copy holding a run of that configuration that gave that answer — the lowest such run id).
Every record, undo rows included, carries the uuid it was given when it was made (`id`), its time (`at`) and, for
an undo, the uuid it withdraws. Importing is a merge: a record whose id is already present is skipped (so importing
twice adds nothing, and two machines can exchange files both ways), a present id with different content is an
error. What stands afterwards follows annotation/standing.py, by time — the same on every copy that holds the same
records (docs/adr/0010).

Items are named by what is stable across copies: a benchmark's name and the item's source index; for alignment
labels, the adjudication set's name and the response key (sha256 of question, options as shown and response) of
the adjudication item. A file is read as hostile input, within bounds (a regular file, its size, line length, JSON
depth, no duplicate keys) and checked whole before anything is written, in one transaction; the first bad line is
`FILE:LINE: field: what` (evaluator's InputError), or, with skip_bad, skipped and counted (the first MAX_LISTED
listed) — and so is an undo whose target was skipped. Names of people follow annotation/names.py, the rule every
local record follows, so what one copy exports another imports; benchmark and set names are only looked up.

A verdict that does not fit its item's kind (annotation/item_kinds.py: "wrong key → yes" on an open item, as an older
vlmdesk stored) is not a bad line: the other copy keeps it in its log for good, so refusing the file would stop
every merge from that copy. It is left out and listed like a skipped line (`unfit` counts them), with skip_bad or
without, and so is an undo that withdraws it; the rest merges. One already stored here (before migration 0023) is
simply present. Migration 0023's trigger would refuse such a row anyway: it is checked first, so it never aborts the
merge half-way (nothing is written before the whole file is checked).
"""

from __future__ import annotations

import json
import math
import os
import uuid as _uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from dataclasses import field as field_
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import IO, Any, Literal, NoReturn, overload

from annotation import arena, item_kinds, open_verdicts, qc, reviews, team_plans
from annotation.names import MAX_NOTE_CHARS, BadName, annotator_name
from annotation.standing import (
    ADJUDICATIONS,
    ARENA_VOTES,
    LABELS,
    OPEN_VERDICTS,
    QC_DECISIONS,
    REVIEWS,
    UNCLEAR,
    WITHDRAWAL,
    Kind,
)
from db import catalog, runs
from db.errors import InvalidInput
from db.workspace import Workspace
from evaluator.formats.importers import InputError
from evaluator.formats.importers.common import (
    DuplicateKey,
    JsonTooDeep,
    Refused,
    json_loads,
    no_duplicate_keys,
    open_regular,
    text_problem,
)
from evaluator.formats.outfiles import write_file
from evaluator.scoring.choices import answer_keys
from evaluator.scoring.extraction import REFUSAL

MAX_FILE_BYTES = 256 * 1024 * 1024
MAX_LINE_BYTES = 64 * 1024
MAX_DEPTH = 2  # records are flat objects; anything nested deeper is refused before it is parsed
MAX_LOOKUP = 1000  # benchmark and set names, looked up as they are (older rules allowed other lengths)
MAX_NOTE = MAX_NOTE_CHARS  # what a local record may hold (annotation/names.py)
MAX_SECONDS = 1e7  # time spent on one record; more is a clock error, not work
MAX_LISTED = 100  # skipped lines listed in a report (all are counted)
EARLIEST = datetime(2000, 1, 1, tzinfo=UTC)  # `at` before this is a clock error
FUTURE_SLACK = timedelta(days=1)  # `at` later than now + this would outrank every later record: refused

KINDS = ("reviews", "labels", "qc", "votes", "open", "plans")


class _Bad(Exception):
    """One field of one line is wrong."""

    def __init__(self, field: str, what: str):
        super().__init__(what)
        self.field, self.what = field, what


@dataclass(frozen=True)
class ImportReport:
    added: dict[str, int]  # table -> new records written
    present: int  # records whose id was already there (same content)
    skipped: tuple[InputError, ...]  # the first MAX_LISTED skipped lines
    skipped_count: int = 0  # every skipped line
    unfit: int = 0  # of those, verdicts that do not fit their item's kind (and undos of them): always left out
    inserted: tuple[tuple[str, str], ...] = ()  # (table, uuid) of each record written

    def to_json(self) -> dict[str, Any]:
        return {
            "added": sum(self.added.values()),
            "by_table": self.added,
            "present": self.present,
            "skipped_count": self.skipped_count,
            "unfit_count": self.unfit,
            "skipped": [{"line": e.line, "field": e.field, "error": e.what} for e in self.skipped],
        }


@dataclass
class _Row:
    """One checked line, ready to insert."""

    line: int
    kind: Kind
    record: dict[str, Any]  # the line in canonical form, as export_records would write it
    values: dict[str, Any]  # column -> value
    scope: tuple[object, ...]  # (table, *scope columns, who): an undo must share it with its target
    withdraws: str | None = None
    unfit: tuple[str, str] | None = None  # (field, why) of a verdict that does not fit its item's kind

    @property
    def uuid(self) -> str:
        return str(self.values["uuid"])

    @property
    def is_withdrawal(self) -> bool:
        return bool(self.values[self.kind.value] == WITHDRAWAL)


# ---------------------------------------------------------------------------------------------- field checks
def _fields(obj: dict[str, Any], required: tuple[str, ...], optional: tuple[str, ...]) -> dict[str, Any]:
    unknown = [k for k in obj if k not in required and k not in optional]
    if unknown:
        raise _Bad(unknown[0], f"unknown field (known: {', '.join(required + optional)})")
    for k in required:
        if k not in obj:
            raise _Bad(k, "missing")
    return {k: obj.get(k) for k in required + optional}


@overload
def _text(rec: dict[str, Any], key: str, *, nullable: Literal[False] = False, limit: int = MAX_LOOKUP) -> str: ...
@overload
def _text(rec: dict[str, Any], key: str, *, nullable: bool, limit: int = MAX_LOOKUP) -> str | None: ...
def _text(rec: dict[str, Any], key: str, *, nullable: bool = False, limit: int = MAX_LOOKUP) -> str | None:
    """Text SQLite can hold (no NUL, no lone surrogate) of at most `limit` characters."""
    value = rec[key]
    if value is None and nullable:
        return None
    if not isinstance(value, str):
        raise _Bad(key, f"expected text{' or null' if nullable else ''}, got {_json_type(value)}")
    if len(value) > limit:
        raise _Bad(key, f"longer than {limit} characters")
    problem = text_problem(value)
    if problem:
        raise _Bad(key, f"contains {problem}")
    return value


def _name(rec: dict[str, Any], key: str = "annotator") -> str:
    """A person's name, as annotation/names.py stores it."""
    try:
        return annotator_name(rec[key])
    except BadName as exc:
        raise _Bad(key, str(exc)) from None


@overload
def _uuid_field(rec: dict[str, Any], key: str, *, nullable: Literal[False] = False) -> str: ...
@overload
def _uuid_field(rec: dict[str, Any], key: str, *, nullable: bool) -> str | None: ...
def _uuid_field(rec: dict[str, Any], key: str, *, nullable: bool = False) -> str | None:
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


def _time(rec: dict[str, Any], key: str = "at") -> str:
    """An ISO 8601 time with its zone, stored as every local record is (UTC, milliseconds) so text order is time
    order."""
    value = _text(rec, key, limit=64)
    try:
        at = datetime.fromisoformat(value)
    except ValueError:
        raise _Bad(key, f"{value!r} is not an ISO 8601 time") from None
    if at.tzinfo is None:
        raise _Bad(key, f"{value!r} has no time zone")
    latest = datetime.now(UTC) + FUTURE_SLACK
    try:
        at = at.astimezone(UTC)
    except OverflowError:  # year 1 or 9999 shifted by its zone out of datetime's range
        raise _Bad(key, f"{value!r} is not between {EARLIEST:%Y-%m-%d} and tomorrow") from None
    if not EARLIEST <= at <= latest:
        # A time in the future would stand over every correction made until then.
        raise _Bad(key, f"{value!r} is not between {EARLIEST:%Y-%m-%d} and tomorrow ({latest:%Y-%m-%d %H:%M} UTC)")
    return at.isoformat(timespec="milliseconds")


def _seconds(rec: dict[str, Any], key: str = "seconds") -> float | None:
    value = rec[key]
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _Bad(key, f"expected a number of seconds or null, got {_json_type(value)}")
    if not (math.isfinite(value) and 0 <= value <= MAX_SECONDS):
        raise _Bad(key, f"{value} is not within 0..{MAX_SECONDS:g}")
    return value


def _index(rec: dict[str, Any], key: str = "index") -> int | str:
    value = rec[key]
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise _Bad(key, f"expected an integer or text index, got {_json_type(value)}")
    return value


def _json_type(value: object) -> str:
    return {
        type(None): "null",
        bool: "true/false",
        int: "a number",
        float: "a number",
        str: "text",
        list: "a list",
        dict: "an object",
    }.get(type(value), type(value).__name__)


def _answers(item: catalog.Item) -> tuple[str, ...]:
    """The answer keys an item admits, in canonical form: its option letters, or yes/no."""
    return answer_keys(len(item.options))


# ------------------------------------------------------------------------------------------------ the kinds
class _Lookups:
    """Benchmarks, items and adjudication items by their stable names, read once per import."""

    def __init__(self, ws: Workspace):
        self.ws = ws
        self._benches: dict[str, dict[int | str, catalog.Item] | None] = {}
        self.kinds: dict[int, item_kinds.ItemKind] = {}  # benchmark id -> its items' kind
        self._sets: dict[str, dict[str, tuple[int, tuple[str, ...]]] | None] = {}
        self._flags: dict[int, list[str]] = {}

    def flag_stages(self, item_id: int) -> list[str]:
        if item_id not in self._flags:
            self._flags[item_id] = qc.flag_stages(self.ws, item_id)
        return self._flags[item_id]

    def item(self, rec: dict[str, Any]) -> catalog.Item:
        name = _text(rec, "benchmark")
        if name not in self._benches:
            bench = catalog.benchmark_by_name(self.ws, name)
            self._benches[name] = None if bench is None else {i.index: i for i in catalog.list_items(self.ws, bench.id)}
            if bench is not None:
                self.kinds[bench.id] = item_kinds.kind_of(bench.kind)
        items = self._benches[name]
        if items is None:
            raise _Bad("benchmark", f"no benchmark named {name!r} in this workspace")
        index = _index(rec)
        if index not in items:
            raise _Bad("index", f"benchmark {name[:100]!r} has no item with index {repr(index)[:60]}")
        return items[index]

    def answer(self, rec: dict[str, Any], item: catalog.Item) -> tuple[int, str]:
        """(run id, answer key): the lowest run of the record's config key that gave the judged answer to the item."""
        config, key = _text(rec, "run", limit=200), _text(rec, "answer", limit=64)
        for run_id, response in self.ws.conn.execute(
            "SELECT p.run_id, p.response FROM predictions p JOIN runs r ON r.id = p.run_id "
            "WHERE r.config_key = ? AND r.benchmark_id = ? AND p.item_id = ? AND p.pass = 0 ORDER BY p.run_id",
            (config, item.benchmark_id, item.id),
        ):
            if runs.answer_key(response) == key:
                return run_id, key
        raise _Bad("answer", f"no run of config {config[:64]!r} here gave this answer ({key[:12]}…) to the item")

    def adjudication_item(self, rec: dict[str, Any]) -> tuple[int, tuple[str, ...]]:
        """(adjudication item id, the labels it admits)."""
        name = _text(rec, "set")
        if name not in self._sets:
            row = self.ws.conn.execute("SELECT id FROM adjudication_sets WHERE name = ?", (name,)).fetchone()
            self._sets[name] = (
                None
                if row is None
                else {
                    key: (item_id, (*json.loads(options), REFUSAL, UNCLEAR))
                    for item_id, key, options in self.ws.conn.execute(
                        "SELECT id, response_key, options FROM adjudication_items WHERE set_id = ?", (row[0],)
                    )
                }
            )
        items = self._sets[name]
        if items is None:
            raise _Bad("set", f"no adjudication set named {name!r} in this workspace")
        key = _text(rec, "response", limit=64)
        if key not in items:
            raise _Bad("response", f"set {name!r} has no response with key {key!r}")
        return items[key]


def _withdraws(rec: dict[str, Any], *, undo: bool) -> str | None:
    """The uuid an undo record withdraws: an undo names one, and only an undo does (every kind of human record)."""
    withdraws = _uuid_field(rec, "withdraws", nullable=True)
    if (withdraws is None) != (not undo):
        raise _Bad("withdraws", "an undo names the record it withdraws, and only an undo does")
    return withdraws


def _review(rec: dict[str, Any], look: _Lookups) -> _Row:
    rec = _fields(
        rec, ("id", "benchmark", "index", "annotator", "verdict", "at"), ("answer", "note", "seconds", "withdraws")
    )
    uid = _uuid_field(rec, "id")
    item = look.item(rec)
    annotator = _name(rec)
    verdict = _text(rec, "verdict")
    if verdict not in (*reviews.VERDICTS, reviews.UNDO):
        raise _Bad("verdict", f"unknown verdict {verdict!r} (one of {', '.join(reviews.VERDICTS)}, undo)")
    answer = _text(rec, "answer", nullable=True, limit=item_kinds.MAX_ANSWER_CHARS)
    unfit = None
    if verdict == reviews.UNDO:
        if answer is not None:
            raise _Bad("answer", "an undo has no corrected answer")
    else:
        kind = look.kinds[item.benchmark_id]
        try:
            answer = item_kinds.corrected_answer(kind, verdict, answer, n_options=len(item.options))
        except InvalidInput as exc:
            unfit = ("verdict" if not item_kinds.fits(kind, verdict) else "answer", f"{exc}: not merged")
    withdraws = _withdraws(rec, undo=verdict == reviews.UNDO)
    note, seconds, at = _text(rec, "note", nullable=True, limit=MAX_NOTE), _seconds(rec), _time(rec)
    record = {**rec, "annotator": annotator, "at": at} | ({} if unfit else {"answer": answer})
    return _Row(
        0,
        REVIEWS,
        record,
        {
            "item_id": item.id,
            "annotator": annotator,
            "verdict": verdict,
            "corrected_answer": answer,
            "note": note,
            "seconds": seconds,
            "created_at": at,
            "uuid": uid,
            "withdraws": withdraws,
        },
        ("reviews", item.id, annotator),
        withdraws,
        unfit,
    )


def _label(rec: dict[str, Any], look: _Lookups) -> _Row:
    rec = _fields(rec, ("id", "kind", "set", "response", "annotator", "label", "at"), ("note", "seconds", "withdraws"))
    uid = _uuid_field(rec, "id")
    kind = rec["kind"]
    if kind not in ("label", "adjudication"):
        raise _Bad("kind", f"{kind!r} is not label or adjudication")
    item_id, admitted = look.adjudication_item(rec)
    annotator = _name(rec)
    label = _text(rec, "label")
    if label not in (*admitted, WITHDRAWAL):
        raise _Bad("label", f"{label!r} is not a label of this response: one of {', '.join(admitted)}, or undo")
    withdraws = _withdraws(rec, undo=label == WITHDRAWAL)
    note, seconds, at = _text(rec, "note", nullable=True, limit=MAX_NOTE), _seconds(rec), _time(rec)
    record = {**rec, "annotator": annotator, "at": at}
    if kind == "label":
        if note is not None:
            raise _Bad("note", "a label has no note (an adjudication has)")
        return _Row(
            0,
            LABELS,
            record,
            {
                "item_id": item_id,
                "annotator": annotator,
                "choice": label,
                "seconds": seconds,
                "created_at": at,
                "uuid": uid,
                "withdraws": withdraws,
            },
            ("labels", item_id, annotator),
            withdraws,
        )
    if seconds is not None:
        raise _Bad("seconds", "an adjudication has no seconds (a label has)")
    return _Row(
        0,
        ADJUDICATIONS,
        record,
        {
            "item_id": item_id,
            "adjudicator": annotator,
            "choice": label,
            "note": note,
            "created_at": at,
            "uuid": uid,
            "withdraws": withdraws,
        },
        ("adjudications", item_id, annotator),
        withdraws,
    )


def _decision(rec: dict[str, Any], look: _Lookups) -> _Row:
    rec = _fields(
        rec,
        ("id", "benchmark", "index", "stage", "annotator", "decision", "at"),
        ("reason", "answer", "old_answer", "note", "withdraws"),
    )
    uid = _uuid_field(rec, "id")
    item = look.item(rec)
    stage = _text(rec, "stage")
    if stage not in qc.STAGES:
        raise _Bad("stage", f"unknown stage {stage!r} ({', '.join(qc.STAGES)})")
    if stage not in look.flag_stages(item.id):  # as `qc decide` refuses it: a decision hangs on a flag
        raise _Bad(
            "stage",
            f"item {item.index!r} of {rec['benchmark']!r} has no {stage} flag in this workspace; "
            f"compute the stage here first (vlmdesk qc {stage})",
        )
    annotator = _name(rec)
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
            raise _Bad(
                "answer", f"a wrong_answer confirmation needs the corrected key, one of {', '.join(_answers(item))}"
            )
        if old is not None and old not in _answers(item):
            raise _Bad(
                "old_answer", f"{old[:30]!r} is not a key of this item: one of {', '.join(_answers(item))}, or null"
            )
    elif answer is not None or old is not None:
        raise _Bad("answer" if answer is not None else "old_answer", "only a wrong_answer confirmation has answers")
    withdraws = _withdraws(rec, undo=decision == WITHDRAWAL)
    note, at = _text(rec, "note", nullable=True, limit=MAX_NOTE), _time(rec)
    return _Row(
        0,
        QC_DECISIONS,
        {**rec, "annotator": annotator, "at": at},
        {
            "item_id": item.id,
            "stage": stage,
            "annotator": annotator,
            "decision": decision,
            "reason": reason,
            "note": note,
            "old_answer": old,
            "new_answer": answer,
            "created_at": at,
            "uuid": uid,
            "withdraws": withdraws,
        },
        ("qc_decisions", item.id, stage, annotator),
        withdraws,
    )


def _vote(rec: dict[str, Any], look: _Lookups) -> _Row:
    rec = _fields(rec, ("id", "pair", "annotator", "vote", "at"), ("note", "seconds", "withdraws"))
    uid = _uuid_field(rec, "id")
    pair = _uuid_field(rec, "pair")
    found = look.ws.conn.execute("SELECT id FROM arena_pairs WHERE uuid = ?", (pair,)).fetchone()
    if found is None:
        raise _Bad(
            "pair", f"no arena pair {pair} in this workspace (votes merge into a copy their pairs were drawn in)"
        )
    annotator = _name(rec)
    vote = _text(rec, "vote")
    if vote not in (*arena.VOTES, WITHDRAWAL):
        raise _Bad("vote", f"unknown vote {vote!r} (one of {', '.join(arena.VOTES)}, undo)")
    withdraws = _withdraws(rec, undo=vote == WITHDRAWAL)
    note, seconds, at = _text(rec, "note", nullable=True, limit=MAX_NOTE), _seconds(rec), _time(rec)
    return _Row(
        0,
        ARENA_VOTES,
        {**rec, "annotator": annotator, "at": at},
        {
            "pair_id": found[0],
            "annotator": annotator,
            "vote": vote,
            "note": note,
            "seconds": seconds,
            "created_at": at,
            "uuid": uid,
            "withdraws": withdraws,
        },
        ("arena_votes", found[0], annotator),
        withdraws,
    )


def _open_verdict(rec: dict[str, Any], look: _Lookups) -> _Row:
    rec = _fields(
        rec,
        ("id", "benchmark", "index", "run", "answer", "role", "annotator", "verdict", "at"),
        ("note", "seconds", "withdraws"),
    )
    uid = _uuid_field(rec, "id")
    item = look.item(rec)
    run_id, key = look.answer(rec, item)
    role = _text(rec, "role")
    if role not in open_verdicts.ROLES:
        raise _Bad("role", f"unknown role {role!r} (one of {', '.join(open_verdicts.ROLES)})")
    annotator = _name(rec)
    verdict = _text(rec, "verdict")
    if verdict not in (*open_verdicts.VERDICTS, WITHDRAWAL):
        raise _Bad("verdict", f"unknown verdict {verdict!r} (one of {', '.join(open_verdicts.VERDICTS)}, undo)")
    withdraws = _withdraws(rec, undo=verdict == WITHDRAWAL)
    note, seconds, at = _text(rec, "note", nullable=True, limit=MAX_NOTE), _seconds(rec), _time(rec)
    return _Row(
        0,
        OPEN_VERDICTS,
        {**rec, "annotator": annotator, "at": at},
        {
            "run_id": run_id,
            "item_id": item.id,
            "answer_key": key,
            "role": role,
            "annotator": annotator,
            "verdict": verdict,
            "note": note,
            "seconds": seconds,
            "created_at": at,
            "uuid": uid,
            "withdraws": withdraws,
        },
        ("open_verdicts", run_id, item.id, role, annotator),
        withdraws,
    )


_CHECKS: dict[str, Callable[[dict[str, Any], _Lookups], _Row]] = {
    "reviews": _review,
    "labels": _label,
    "qc": _decision,
    "votes": _vote,
    "open": _open_verdict,
}
_TABLES = {
    "reviews": (REVIEWS,),
    "labels": (LABELS, ADJUDICATIONS),
    "qc": (QC_DECISIONS,),
    "votes": (ARENA_VOTES,),
    "open": (OPEN_VERDICTS,),
}


# ---------------------------------------------------------------------------------------------------- export
def _review_records(ws: Workspace, where: str, params: Sequence[object]) -> Iterator[dict[str, Any]]:
    for uid, bench, index, annotator, verdict, answer, note, seconds, at, withdraws in ws.conn.execute(
        "SELECT r.uuid, b.name, i.source_index, r.annotator, r.verdict, r.corrected_answer, r.note, r.seconds, "
        "r.created_at, r.withdraws FROM reviews r JOIN items i ON i.id = r.item_id JOIN benchmarks b ON "
        f"b.id = i.benchmark_id WHERE {where} ORDER BY r.created_at, r.id",
        params,
    ):
        yield {
            "id": uid,
            "benchmark": bench,
            "index": index,
            "annotator": annotator,
            "verdict": verdict,
            "answer": answer if verdict in (item_kinds.WRONG, item_kinds.INCOMPLETE) else None,
            "note": note,
            "seconds": seconds,
            "at": at,
            "withdraws": withdraws,
        }


def _label_records(ws: Workspace, where: str, params: Sequence[object]) -> Iterator[dict[str, Any]]:
    rows = ws.conn.execute(
        "SELECT * FROM (SELECT 'label' AS kind, l.uuid, s.name AS set_name, a.response_key, l.annotator AS who, "
        "l.choice, NULL AS note, l.seconds, l.created_at, l.withdraws, l.id FROM labels l "
        "JOIN adjudication_items a ON a.id = l.item_id JOIN adjudication_sets s ON s.id = a.set_id "
        "UNION ALL SELECT 'adjudication', d.uuid, s.name, a.response_key, d.adjudicator, d.choice, d.note, NULL, "
        "d.created_at, d.withdraws, d.id FROM adjudications d JOIN adjudication_items a ON a.id = d.item_id "
        f"JOIN adjudication_sets s ON s.id = a.set_id) WHERE {where} ORDER BY created_at, kind DESC, id",
        params,
    )
    for kind, uid, set_name, key, who, choice, note, seconds, at, withdraws, _ in rows:
        yield {
            "id": uid,
            "kind": kind,
            "set": set_name,
            "response": key,
            "annotator": who,
            "label": choice,
            "note": note,
            "seconds": seconds,
            "at": at,
            "withdraws": withdraws,
        }


def _decision_records(ws: Workspace, where: str, params: Sequence[object]) -> Iterator[dict[str, Any]]:
    for uid, bench, index, stage, annotator, decision, reason, answer, old, note, at, withdraws in ws.conn.execute(
        "SELECT d.uuid, b.name, i.source_index, d.stage, d.annotator, d.decision, d.reason, d.new_answer, "
        "d.old_answer, d.note, d.created_at, d.withdraws FROM qc_decisions d JOIN items i ON i.id = d.item_id "
        f"JOIN benchmarks b ON b.id = i.benchmark_id WHERE {where} ORDER BY d.created_at, d.id",
        params,
    ):
        yield {
            "id": uid,
            "benchmark": bench,
            "index": index,
            "stage": stage,
            "annotator": annotator,
            "decision": decision,
            "reason": reason,
            "answer": answer,
            "old_answer": old,
            "note": note,
            "at": at,
            "withdraws": withdraws,
        }


def _vote_records(ws: Workspace, where: str, params: Sequence[object]) -> Iterator[dict[str, Any]]:
    for uid, pair, annotator, vote, note, seconds, at, withdraws in ws.conn.execute(
        "SELECT v.uuid, p.uuid, v.annotator, v.vote, v.note, v.seconds, v.created_at, v.withdraws FROM arena_votes v "
        "JOIN arena_pairs p ON p.id = v.pair_id JOIN benchmarks b ON b.id = p.benchmark_id "
        f"WHERE {where} ORDER BY v.created_at, v.id",
        params,
    ):
        yield {
            "id": uid,
            "pair": pair,
            "annotator": annotator,
            "vote": vote,
            "note": note,
            "seconds": seconds,
            "at": at,
            "withdraws": withdraws,
        }


def _open_verdict_records(ws: Workspace, where: str, params: Sequence[object]) -> Iterator[dict[str, Any]]:
    for uid, bench, index, config, key, role, annotator, verdict, note, seconds, at, withdraws in ws.conn.execute(
        "SELECT v.uuid, b.name, i.source_index, r.config_key, v.answer_key, v.role, v.annotator, v.verdict, v.note, "
        "v.seconds, v.created_at, v.withdraws FROM open_verdicts v JOIN items i ON i.id = v.item_id "
        "JOIN runs r ON r.id = v.run_id JOIN benchmarks b ON b.id = i.benchmark_id "
        f"WHERE {where} ORDER BY v.created_at, v.id",
        params,
    ):
        yield {
            "id": uid,
            "benchmark": bench,
            "index": index,
            "run": config,
            "answer": key,
            "role": role,
            "annotator": annotator,
            "verdict": verdict,
            "note": note,
            "seconds": seconds,
            "at": at,
            "withdraws": withdraws,
        }


def export_records(
    ws: Workspace, kind: str, *, benchmark: str | None = None, set_name: str | None = None, annotator: str | None = None
) -> Iterator[dict[str, Any]]:
    """The records of one kind, in time order, every undo row included (filters narrow by benchmark or set and by
    annotator; an undo is always by the annotator of what it withdraws, so a filtered file stays whole)."""
    where, params = ["1 = 1"], []
    if kind == "plans":  # filtered by benchmark, and by who made the plan
        for clause, value in (("b.name = ?", benchmark), ("p.author = ?", annotator)):
            if value is not None:
                where.append(clause)
                params.append(value)
        return _plan_records(ws, " AND ".join(where), params)
    if kind == "labels":
        if set_name is not None:
            where.append("set_name = ?")
            params.append(set_name)
        if annotator is not None:
            where.append("who = ?")
            params.append(annotator)
        return _label_records(ws, " AND ".join(where), params)
    alias = {"reviews": "r", "qc": "d", "votes": "v", "open": "v"}[kind]
    if benchmark is not None:
        where.append("b.name = ?")
        params.append(benchmark)
    if annotator is not None:
        where.append(f"{alias}.annotator = ?")
        params.append(annotator)
    reader = {
        "reviews": _review_records,
        "qc": _decision_records,
        "votes": _vote_records,
        "open": _open_verdict_records,
    }[kind]
    return reader(ws, " AND ".join(where), params)


def write_jsonl(records: Iterable[dict[str, Any]], out: IO[str]) -> int:
    """Write records one per line to a text stream; returns how many."""
    n = 0
    for record in records:
        out.write(json.dumps(record, ensure_ascii=False) + "\n")
        n += 1
    return n


def export_to_file(records: Iterable[dict[str, Any]], path: str | os.PathLike[str]) -> int:
    """Write the records to `path` under evaluator/formats/outfiles.py's rule (never over a workspace, a device or a
    FIFO;
    a failure leaves the old file)."""
    return write_file(path, lambda f: write_jsonl(records, f))


# ---------------------------------------------------------------------------------------------------- import
def _reject_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not a number JSON allows")


_DECODER = json.JSONDecoder(parse_constant=_reject_constant, object_pairs_hook=no_duplicate_keys)


def read_lines(path: Path) -> Iterator[tuple[int, dict[str, Any] | tuple[str, str]]]:
    """(line number, parsed object or the (field, what) of that line's error); blank lines are ignored. A file that
    cannot be read at all (missing, not a regular file — a FIFO, a device, also through a symlink — or too big)
    raises InputError (line 0). Errors are not InputErrors yet: a file of a million bad lines makes few of them."""
    try:
        f = open_regular(path, MAX_FILE_BYTES, "limit of this command")
    except Refused as exc:
        raise InputError(path, 0, "file", str(exc).removeprefix(f"{path} ")) from None
    except OSError as exc:
        raise InputError(path, 0, "file", exc.strerror or str(exc)) from None
    with f:
        number = read = 0
        while read <= MAX_FILE_BYTES:  # the file may grow while it is read
            raw = f.readline(MAX_LINE_BYTES + 1)
            if not raw:
                return
            read += len(raw)
            number += 1
            if len(raw) > MAX_LINE_BYTES:
                while raw and not raw.endswith(b"\n") and read <= MAX_FILE_BYTES:  # the rest of the long line
                    raw = f.readline(MAX_LINE_BYTES)
                    read += len(raw)
                yield number, ("line", f"longer than {MAX_LINE_BYTES} bytes")
                continue
            obj = parse_line(raw)
            if obj is not None:
                yield number, obj
    raise InputError(path, 0, "file", f"more than the {MAX_FILE_BYTES} bytes this command reads (it grew)")


def parse_line(raw: bytes, depth: int = MAX_DEPTH) -> dict[str, Any] | tuple[str, str] | None:
    """One line (at most MAX_LINE_BYTES) as a JSON object, or the (field, what) of its error; None for a blank line.
    annotation/team_sync.py reads journals with it (a record inside its kind: one level deeper)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return "line", f"not UTF-8 ({exc.reason} at byte {exc.start})"
    if not text.strip():
        return None
    try:
        obj = json_loads(text, limit=depth, decoder=_DECODER)
    except DuplicateKey as exc:
        return exc.key[:60], "given twice in one record"
    except JsonTooDeep:
        return "line", f"JSON nested deeper than {depth}"
    except ValueError as exc:
        return "line", f"not JSON ({exc})"
    if not isinstance(obj, dict):
        return "line", f"expected a JSON object, got {_json_type(obj)}"
    return obj


class _Bads:
    """Bad lines: the first raises at once unless skip_bad; with it, all are counted and the first MAX_LISTED kept
    (by line: withdrawals are checked after the whole file)."""

    def __init__(self, path: Path, skip_bad: bool):
        self.path, self.skip_bad, self.count, self.unfit = path, skip_bad, 0, 0
        self.listed: list[tuple[int, str, str]] = []

    def add(self, line: int, field: str, what: str, *, fatal: bool = True, unfit: bool = True) -> None:
        """A bad line; `fatal=False`: one left out with skip_bad or without (a verdict that does not fit; with
        unfit=False, a plan whose lines are not all in the file yet)."""
        self.count += 1
        self.unfit += not fatal and unfit
        if fatal and not self.skip_bad:
            raise InputError(self.path, line, field, what)
        if len(self.listed) < MAX_LISTED or line < self.listed[-1][0]:
            self.listed.append((line, field, what))
            self.listed.sort(key=lambda e: e[0])
            del self.listed[MAX_LISTED:]

    def first(self) -> tuple[InputError, ...]:
        return tuple(InputError(self.path, *e) for e in self.listed)


def import_records(ws: Workspace, path: str | os.PathLike[str], kind: str, *, skip_bad: bool = False) -> ImportReport:
    """Merge a file written by export_records into the workspace (one transaction). Raises InputError at the first
    bad line unless skip_bad, which writes the good lines and counts the others (listing the first MAX_LISTED)."""
    if kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r} ({', '.join(KINDS)})")
    path = Path(path)
    if kind == "plans":
        return _import_plans(ws, path, skip_bad)
    lines = ((number, kind, obj) for number, obj in read_lines(path))
    return merge_lines(ws, path, lines, skip_bad=skip_bad, kinds=(kind,))


def merge_lines(
    ws: Workspace,
    path: Path,
    lines: Iterable[tuple[int, str, dict[str, Any] | tuple[str, str]]],
    *,
    skip_bad: bool = False,
    waiting: list[int] | None = None,
    kinds: Iterable[str] = (),
) -> ImportReport:
    """import_records for lines already read, each (line number, its kind, the object or its error) — one file's,
    of one kind or several (a team folder's journal, annotation/team_sync.py). With `waiting`, an undo whose target
    is not known here yet is not a bad line: its line number goes there, to be tried again later. The report counts
    the tables of `kinds` and of every kind met."""
    look = _Lookups(ws)
    bad = _Bads(path, skip_bad)
    fresh: list[_Row] = []
    by_uuid: dict[str, _Row] = {}
    unfit: dict[str, int] = {}  # uuid -> line of each record left out as not fitting its item
    present = 0
    met = set(kinds)
    for number, kind, obj in lines:
        if isinstance(obj, tuple):
            bad.add(number, *obj)
            continue
        met.add(kind)
        try:
            row = _CHECKS[kind](obj, look)
        except _Bad as exc:
            bad.add(number, exc.field, exc.what)
            continue
        row.line = number
        known = _known(ws, row, by_uuid)
        if isinstance(known, tuple):
            bad.add(row.line, *known)
        elif known:
            present += 1
        elif row.unfit is not None:
            bad.add(row.line, *row.unfit, fatal=False)
            unfit[row.uuid] = row.line
        else:
            by_uuid[row.uuid] = row
            fresh.append(row)
    fresh = _check_withdrawals(ws, fresh, bad, unfit, waiting)
    added = {k.table: 0 for kind in sorted(met) for k in _TABLES[kind]}
    with ws.db.atomic():
        for row in sorted(fresh, key=lambda r: (r.values["created_at"], r.line)):
            columns = ", ".join(row.values)
            ws.conn.execute(
                f"INSERT INTO {row.kind.table} ({columns}) VALUES ({', '.join('?' * len(row.values))})",
                list(row.values.values()),
            )
            added[row.kind.table] += 1
    inserted = tuple((row.kind.table, row.uuid) for row in fresh)
    return ImportReport(added, present, bad.first(), bad.count, bad.unfit, inserted)


def _known(ws: Workspace, row: _Row, by_uuid: dict[str, _Row]) -> bool | tuple[str, str]:
    """Whether the row's id is present already (earlier in the file or in the workspace) with the same record; an
    error (field, what) when it is present with another content, or is the id of a record of another kind (ids are
    unique across verdicts, labels, adjudications and QC decisions, so a file never holds two records with one id)."""
    earlier = by_uuid.get(row.uuid)
    existing: dict[str, Any] | None
    if earlier is not None:
        existing, where = earlier.record, f"line {earlier.line} of this file"
    else:
        other = next(
            (
                k
                for k in _HUMAN_KINDS
                if k is not row.kind
                and ws.conn.execute(f"SELECT 1 FROM {k.table} WHERE uuid = ?", (row.uuid,)).fetchone() is not None
            ),
            None,
        )
        if other is not None:
            return "id", f"{row.uuid} is the id of a record in {other.table} here; an id names one record"
        existing, where = _stored_record(ws, row.kind, row.uuid), "this workspace"
    if existing is None:
        return False
    if existing == row.record:
        return True
    differs = next(k for k in row.record if existing.get(k) != row.record[k])
    return "id", f"{row.uuid} is in {where} with a different {differs}"


_HUMAN_KINDS = (REVIEWS, LABELS, ADJUDICATIONS, QC_DECISIONS, ARENA_VOTES, OPEN_VERDICTS)


def tables_of(kind: str) -> tuple[Kind, ...]:
    """The tables a kind's records are stored in (a team folder's journal carries each, annotation/team_sync.py)."""
    return _TABLES[kind]


def stored_record(ws: Workspace, table: Kind, uid: str) -> dict[str, Any] | None:
    """The record of one stored row, as export_records writes it; None when no row has that uuid."""
    return _stored_record(ws, table, uid)


def stored_plan(ws: Workspace, uid: str) -> list[dict[str, Any]]:
    """The lines of one stored plan (its own, its gold items', its assignments'), as export_records writes them."""
    return list(_plan_records(ws, "p.uuid = ?", [uid]))


def merge_plans(ws: Workspace, path: Path, lines: list[tuple[int, dict[str, Any] | tuple[str, str]]]) -> ImportReport:
    """import_records for plan lines already read (skip_bad: a team folder's journal never stops the merge)."""
    return _import_plans(ws, path, True, lines)


def _stored_record(ws: Workspace, kind: Kind, uid: str) -> dict[str, Any] | None:
    if ws.conn.execute(f"SELECT 1 FROM {kind.table} WHERE uuid = ?", (uid,)).fetchone() is None:
        return None
    if kind.table == "reviews":
        found = _review_records(ws, "r.uuid = ?", [uid])
    elif kind.table == "qc_decisions":
        found = _decision_records(ws, "d.uuid = ?", [uid])
    elif kind.table == "arena_votes":
        found = _vote_records(ws, "v.uuid = ?", [uid])
    elif kind.table == "open_verdicts":
        found = _open_verdict_records(ws, "v.uuid = ?", [uid])
    else:
        found = (
            r
            for r in _label_records(ws, "uuid = ?", [uid])
            if r["kind"] == ("label" if kind is LABELS else "adjudication")
        )
    return next(iter(found), None)


def _check_withdrawals(
    ws: Workspace, fresh: list[_Row], bad: _Bads, unfit: dict[str, int], waiting: list[int] | None = None
) -> list[_Row]:
    """An undo must name a record (not an undo) of the same item, stage and person — already in the workspace, or
    a good line of this file. One that names a record left out as not fitting its item is left out with it."""
    records = {row.uuid: row for row in fresh if not row.is_withdrawal}
    kept = []
    for row in fresh:
        if row.withdraws is None:
            kept.append(row)
            continue
        if row.withdraws in unfit:
            bad.add(row.line, "withdraws", f"withdraws line {unfit[row.withdraws]}, not merged either", fatal=False)
            continue
        k = row.kind
        target = records.get(row.withdraws)
        if target is not None:
            scope, value = target.scope, target.values[k.value]
        else:
            found = ws.conn.execute(
                f"SELECT {', '.join(k.scope)}, {k.who}, {k.value} FROM {k.table} WHERE uuid = ?", (row.withdraws,)
            ).fetchone()
            if found is None and waiting is not None:
                waiting.append(row.line)
                continue
            if found is None:
                bad.add(
                    row.line,
                    "withdraws",
                    f"names no record known here ({row.withdraws}); import the file that holds it first, or with it",
                )
                continue
            scope, value = (k.table, *found[:-1]), found[-1]
        if value == WITHDRAWAL:
            bad.add(row.line, "withdraws", "names an undo; an undo withdraws a record")
        elif scope != row.scope:
            bad.add(row.line, "withdraws", "names a record of another item or person")
        else:
            kept.append(row)
    return kept


# ------------------------------------------------------------------------------------------- assignment plans
# A plan travels as several lines, so that no line outgrows MAX_LINE_BYTES: its own ("record": "plan", with how many
# gold and assignment lines it has), one per gold item, one per assignment. Every line has an id of its own (the plan's
# uuid, or one derived from it and the line's place: uuid5), so a journal that skips ids it holds keeps every line.
# A plan is stored whole or not at all: one whose lines are not all in the file (a file synced half-way) is left out,
# not an error, and merges once the file holds it whole.
_PLAN_FIELDS = (
    "id",
    "record",
    "benchmark",
    "annotators",
    "overlap",
    "seed",
    "gold_from",
    "author",
    "at",
    "gold",
    "assignments",
)
_GOLD_FIELDS = ("id", "record", "plan", "benchmark", "index", "answer")
_ASSIGNMENT_FIELDS = ("id", "record", "plan", "benchmark", "index", "annotator", "position")


def _part_id(plan: str, *place: object) -> str:
    return str(_uuid.uuid5(_uuid.UUID(plan), json.dumps(place, ensure_ascii=False)))


def _plan_records(ws: Workspace, where: str, params: Sequence[object]) -> Iterator[dict[str, Any]]:
    found = list(
        ws.conn.execute(
            "SELECT p.id, p.uuid, b.name, p.annotators, p.overlap, p.seed, p.gold_from, p.author, p.created_at FROM "
            f"team_plans p JOIN benchmarks b ON b.id = p.benchmark_id WHERE {where} ORDER BY p.created_at, p.id",
            params,
        )
    )
    for plan_id, uid, bench, annotators, overlap, seed, gold_from, author, at in found:
        names = json.loads(annotators)
        gold = list(
            ws.conn.execute(
                "SELECT i.source_index, g.answer FROM team_plan_gold g JOIN items i ON i.id = g.item_id "
                "WHERE g.plan_id = ? ORDER BY i.position, i.id",
                (plan_id,),
            )
        )
        count = ws.conn.execute("SELECT count(*) FROM team_plan_assignments WHERE plan_id = ?", (plan_id,)).fetchone()
        yield {
            "id": uid,
            "record": "plan",
            "benchmark": bench,
            "annotators": names,
            "overlap": overlap,
            "seed": seed,
            "gold_from": gold_from,
            "author": author,
            "at": at,
            "gold": len(gold),
            "assignments": count[0],
        }
        for index, answer in gold:
            yield {
                "id": _part_id(uid, "gold", index),
                "record": "gold",
                "plan": uid,
                "benchmark": bench,
                "index": index,
                "answer": answer,
            }
        rank = {name: n for n, name in enumerate(names)}
        rows = ws.conn.execute(
            "SELECT a.annotator, a.position, i.source_index FROM team_plan_assignments a JOIN items i ON "
            "i.id = a.item_id WHERE a.plan_id = ?",
            (plan_id,),
        )
        for who, position, index in sorted(rows, key=lambda r: (rank.get(r[0], len(rank)), r[0], r[1])):
            yield {
                "id": _part_id(uid, who, position),
                "record": "assignment",
                "plan": uid,
                "benchmark": bench,
                "index": index,
                "annotator": who,
                "position": position,
            }


def _count_field(rec: dict[str, Any], key: str, low: int, high: int = 2**31 - 1) -> int:
    value = rec[key]
    if isinstance(value, bool) or not isinstance(value, int):
        raise _Bad(key, f"expected an integer, got {_json_type(value)}")
    if not low <= value <= high:
        raise _Bad(key, f"{value} is not within {low}..{high}")
    return value


@dataclass
class _PlanLines:
    head: tuple[int, dict[str, Any]] | None = None  # (line, canonical record)
    parts: dict[str, tuple[int, dict[str, Any], int]] = field_(default_factory=dict)  # id -> (line, record, item)
    first_line: int = 0


def _plan_line(obj: dict[str, Any], look: _Lookups) -> tuple[str, dict[str, Any], int | None]:
    """(plan uuid, the line in canonical form, the item id of a part)."""
    kind = obj.get("record")
    if kind == "plan":
        rec = _fields(obj, _PLAN_FIELDS, ())
        uid = _uuid_field(rec, "id")
        _text(rec, "benchmark")
        if catalog.benchmark_by_name(look.ws, rec["benchmark"]) is None:
            raise _Bad("benchmark", f"no benchmark named {rec['benchmark']!r} in this workspace")
        names = rec["annotators"]
        if not isinstance(names, list):
            raise _Bad("annotators", f"expected a list of names, got {_json_type(names)}")
        try:
            names = list(team_plans.parse_annotators([n if isinstance(n, str) else 0 for n in names]))  # type: ignore[misc]
        except (team_plans.PlanError, BadName) as exc:
            raise _Bad("annotators", str(exc).removeprefix("annotators: ")) from None
        overlap = _count_field(rec, "overlap", 1, len(names))
        seed = _count_field(rec, "seed", -(2**63), 2**63 - 1)
        gold_from = _text(rec, "gold_from")
        if gold_from not in team_plans.GOLD_FROM:
            raise _Bad("gold_from", f"{gold_from[:30]!r} is not one of {', '.join(team_plans.GOLD_FROM)}")
        canonical = {
            **rec,
            "annotators": names,
            "overlap": overlap,
            "seed": seed,
            "author": _name(rec, "author"),
            "at": _time(rec),
            "gold": _count_field(rec, "gold", 0, MAX_FILE_BYTES),
            "assignments": _count_field(rec, "assignments", 1, MAX_FILE_BYTES),
        }
        return uid, canonical, None
    if kind not in ("gold", "assignment"):
        raise _Bad("record", f"{str(kind)[:30]!r} is not plan, gold or assignment")
    rec = _fields(obj, _GOLD_FIELDS if kind == "gold" else _ASSIGNMENT_FIELDS, ())
    _uuid_field(rec, "id")
    plan = _uuid_field(rec, "plan")
    item = look.item(rec)
    if kind == "gold":
        answer = _text(rec, "answer", limit=64)
        if answer not in _answers(item):
            raise _Bad("answer", f"{answer[:30]!r} is not a key of this item: one of {', '.join(_answers(item))}")
        expected = _part_id(plan, "gold", rec["index"])
        canonical = rec
    else:
        canonical = {**rec, "annotator": _name(rec), "position": _count_field(rec, "position", 0, MAX_FILE_BYTES)}
        expected = _part_id(plan, canonical["annotator"], canonical["position"])
    if rec["id"] != expected:
        raise _Bad("id", f"{rec['id']} is not the id of this line of plan {plan} (expected {expected})")
    return plan, canonical, item.id


def _import_plans(
    ws: Workspace, path: Path, skip_bad: bool, read: Iterable[tuple[int, dict[str, Any] | tuple[str, str]]] = ()
) -> ImportReport:
    """Merge the plans of a file written by export_records(ws, "plans"): each checked whole, then stored whole.
    `read`: lines read already, (line number, object or its error), instead of the file's (a team folder's journal)."""
    look = _Lookups(ws)
    bad = _Bads(path, skip_bad)
    found: dict[str, _PlanLines] = {}
    for number, obj in read or read_lines(path):
        if isinstance(obj, tuple):
            bad.add(number, *obj)
            continue
        try:
            plan, rec, item_id = _plan_line(obj, look)
        except _Bad as exc:
            bad.add(number, exc.field, exc.what)
            continue
        lines = found.setdefault(plan, _PlanLines(first_line=number))
        earlier = lines.head if item_id is None else lines.parts.get(rec["id"], (0, None, 0))[:2]
        if earlier is not None and earlier[1] is not None:
            if earlier[1] != rec:
                differs = next(k for k in rec if earlier[1].get(k) != rec[k])
                bad.add(number, "id", f"{rec['id']} is on line {earlier[0]} of this file with a different {differs}")
            continue  # the same line twice: one
        if item_id is None:
            lines.head = (number, rec)
        else:
            lines.parts[rec["id"]] = (number, rec, item_id)
    added = {"team_plans": 0, "team_plan_gold": 0, "team_plan_assignments": 0}
    present = 0
    whole: list[tuple[dict[str, Any], list[tuple[int, dict[str, Any], int]]]] = []
    for uid, lines in found.items():
        if lines.head is None:
            bad.add(lines.first_line, "plan", f"no plan line for {uid} in this file (export the plan whole)")
            continue
        head_line, head = lines.head
        parts = sorted(lines.parts.values())
        stored = {r["id"]: r for r in _plan_records(ws, "p.uuid = ?", [uid])}
        if stored:  # a plan here already: every line of the file must be one of its lines (a part of it, or all)
            mine = {head["id"]: head, **{p[1]["id"]: p[1] for p in parts}}
            unlike = next((k for k in mine if stored.get(k) != mine[k]), None)
            if unlike is not None:
                bad.add(head_line, "id", f"plan {uid} is in this workspace with other content (line id {unlike})")
            else:
                present += len(mine)
            continue
        gold = [p for p in parts if p[1]["record"] == "gold"]
        assigned = [p for p in parts if p[1]["record"] == "assignment"]
        if (len(gold), len(assigned)) != (head["gold"], head["assignments"]):
            if len(gold) <= head["gold"] and len(assigned) <= head["assignments"]:
                bad.add(
                    head_line,
                    "plan",
                    f"{len(gold) + len(assigned)} of its {head['gold'] + head['assignments']} lines are in this file: "
                    "left out until the file holds it whole",
                    fatal=False,
                    unfit=False,
                )
            else:
                bad.add(head_line, "plan", "the file holds more lines of this plan than its counts say")
            continue
        problem = _plan_problem(head, parts)
        if problem is not None:
            bad.add(head_line, *problem)
            continue
        whole.append((head, parts))
    with ws.db.atomic():
        for head, parts in sorted(whole, key=lambda w: w[0]["at"]):
            bench = catalog.benchmark_by_name(ws, head["benchmark"])
            assert bench is not None  # looked up when its line was checked
            queues: dict[str, list[team_plans.Slot]] = {name: [] for name in head["annotators"]}
            gold_items = {item_id: rec["answer"] for _, rec, item_id in parts if rec["record"] == "gold"}
            for _, rec, item_id in parts:
                if rec["record"] == "assignment":
                    queues[rec["annotator"]].append(team_plans.Slot(rec["position"], item_id, item_id in gold_items))
            team_plans.store(
                ws,
                head["id"],
                bench.id,
                head["annotators"],
                head["overlap"],
                head["seed"],
                head["gold_from"],
                head["author"],
                head["at"],
                gold_items,
                queues,
            )
            added["team_plans"] += 1
            added["team_plan_gold"] += len(gold_items)
            added["team_plan_assignments"] += sum(len(q) for q in queues.values())
    return ImportReport(added, present, bad.first(), bad.count, bad.unfit)


def _plan_problem(head: dict[str, Any], parts: list[tuple[int, dict[str, Any], int]]) -> tuple[str, str] | None:
    """What makes a plan's lines not a plan (field, what): parts of another benchmark, an assignment to someone the
    plan does not name, a queue with a gap, an item twice in one queue, a gold item missing from a queue."""
    names = head["annotators"]
    positions: dict[str, set[int]] = {name: set() for name in names}
    items: dict[str, set[int]] = {name: set() for name in names}
    gold = set()
    for _, rec, item_id in parts:
        if rec["benchmark"] != head["benchmark"]:
            return (
                "benchmark",
                f"line of plan {head['id']} names {rec['benchmark'][:60]!r}, the plan {head['benchmark']!r}",
            )
        if rec["record"] == "gold":
            gold.add(item_id)
            continue
        who = rec["annotator"]
        if who not in positions:
            return "annotator", f"plan {head['id']} assigns an item to {who!r}, whom it does not name"
        if item_id in items[who]:
            return "index", f"plan {head['id']} gives item {rec['index']!r} to {who!r} twice"
        positions[who].add(rec["position"])
        items[who].add(item_id)
    for name in names:
        if positions[name] != set(range(len(positions[name]))):
            return "position", f"the queue of {name!r} in plan {head['id']} has a gap"
        if not gold <= items[name]:
            return "gold", f"a gold item of plan {head['id']} is not in the queue of {name!r}"
    return None
