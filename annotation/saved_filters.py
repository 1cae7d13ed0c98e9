"""Saved filters: named Browse/Review views kept in the workspace (migration 0014_guidelines, table saved_filters),
so a study lead can hand annotators "unreviewed CP items" by name. Saving under an existing name replaces it.

A filter is a JSON object of the Browse filter fields (FIELDS); each value is checked at the door: text of at most
MAX_VALUE_CHARS without a NUL or lone surrogate, a run id within the id range, or absent."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from annotation.names import BadName, annotator_name
from db.catalog import now_iso
from db.errors import InvalidInput
from db.workspace import Workspace
from evaluator.formats.importers.common import text_problem

FIELDS = ("text", "category", "l2_category", "split", "review", "qc", "run_id", "run_result")
MAX_VALUE_CHARS = 1000
ID_MAX = 2**63 - 1


@dataclass(frozen=True)
class SavedFilter:
    name: str
    filters: dict[str, Any]
    author: str
    created_at: str
    updated_at: str

    def describe(self) -> str:
        """The filter in a few words, for Review's "active filter" line."""
        return describe(self.filters)


def describe(filters: dict[str, Any]) -> str:
    titles = {"l2_category": "L2", "run_result": "result", "run_id": "run"}
    parts = [
        f'"{v}"' if k == "text" else f"{titles.get(k, k)} {v}"
        for k, v in filters.items()
        if v not in (None, "") and not (k == "run_id" and not filters.get("run_result"))
    ]
    return " · ".join(parts) or "every item"


def check_filters(filters: object) -> dict[str, Any]:
    """The filter as stored: only FIELDS, each None, a bounded text (run_id: an id)."""
    if not isinstance(filters, dict):
        raise InvalidInput("a filter is an object of field → value")
    out: dict[str, Any] = {}
    for key, value in filters.items():
        if key not in FIELDS:
            raise InvalidInput(f"{key}: not a filter field (one of {', '.join(FIELDS)})")
        if value is None or value == "":
            continue
        if key == "run_id":
            if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= ID_MAX:
                raise InvalidInput(f"run_id: a run id (1..{ID_MAX}), got {value!r}")
        elif not isinstance(value, str) or len(value) > MAX_VALUE_CHARS or text_problem(value):
            raise InvalidInput(f"{key}: text of at most {MAX_VALUE_CHARS} printable characters")
        out[key] = value
    return out


def filter_name(name: object) -> str:
    """A saved filter's name: the annotator-name rule (one printable line of 1–100 characters, NFC, trimmed)."""
    try:
        return annotator_name(name)
    except BadName as exc:
        raise InvalidInput(f"filter name: {exc}") from None


def save(ws: Workspace, name: str, filters: dict[str, Any], author: str) -> SavedFilter:
    name, checked, who, now = filter_name(name), check_filters(filters), annotator_name(author), now_iso()
    with ws.db.atomic():
        ws.conn.execute(
            "INSERT INTO saved_filters (name, filters, author, created_at, updated_at) VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT (name) DO UPDATE SET filters = excluded.filters, author = excluded.author, "
            "updated_at = excluded.updated_at",
            (name, json.dumps(checked, ensure_ascii=False, sort_keys=True), who, now, now),
        )
    found = get(ws, name)
    assert found is not None  # just written
    return found


def get(ws: Workspace, name: str) -> SavedFilter | None:
    row = ws.conn.execute(
        "SELECT name, filters, author, created_at, updated_at FROM saved_filters WHERE name = ?", (name,)
    ).fetchone()
    return _read(row) if row else None


def list_filters(ws: Workspace) -> list[SavedFilter]:
    rows = ws.conn.execute("SELECT name, filters, author, created_at, updated_at FROM saved_filters ORDER BY name")
    return [_read(r) for r in rows]


def delete(ws: Workspace, name: str) -> bool:
    with ws.db.atomic():
        return ws.conn.execute("DELETE FROM saved_filters WHERE name = ?", (name,)).rowcount > 0


def _read(row: tuple[Any, ...]) -> SavedFilter:
    name, text, author, created, updated = row
    try:
        filters = check_filters(json.loads(text))
    except (ValueError, InvalidInput):  # written by something else: shown as no filter rather than failing
        filters = {}
    return SavedFilter(name, filters, author, created, updated)
