"""`vlmdesk check`: named checks of a workspace file, each with an optional repair.

A check returns the problems it sees (an empty list when healthy); its repair, when there is one, fixes what can be
rebuilt without losing anything a person made, and says what it did. Adding a check is one entry in CHECKS.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlite_utils import Database

from db import runs, schema
from db.workspace import (
    BUSY_TIMEOUT_MS,
    FileIdentity,
    Workspace,
    identify,
    location_writable,
    migrate,
    read_only_connection,
    recover_command,
)

# Listings of problems are cut here: a badly damaged file can have millions.
MAX_PROBLEMS = 50


@dataclass(frozen=True)
class Check:
    name: str
    title: str
    find: Callable[[Workspace], list[str]]
    repair: Callable[[Workspace], str] | None = None
    current_schema: bool = False  # reads what only the current schema has: skipped (noted) on an older one


@dataclass
class CheckResult:
    name: str
    title: str
    problems: list[str] = field(default_factory=list)
    repaired: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "title": self.title,
            "ok": self.ok,
            "problems": self.problems,
            "repaired": self.repaired,
        }


def _bounded(rows: list[str], total: int | None = None) -> list[str]:
    total = len(rows) if total is None else total
    if total > MAX_PROBLEMS:
        return rows[:MAX_PROBLEMS] + [f"… and {total - MAX_PROBLEMS:,} more"]
    return rows


# ------------------------------------------------------------------------------------------------ checks


def _schema_version(ws: Workspace) -> list[str]:
    version, known = ws.schema_version(), schema.latest_version()
    if version > known:
        return [f"schema version {version} is newer than this vlmdesk understands ({known}): upgrade vlmdesk"]
    if version < known:
        return [
            f"schema version {version}; this vlmdesk upgrades it to {known} (vlmdesk check --repair, or any "
            "command that writes)"
        ]
    return []


def _upgrade(ws: Workspace) -> str:
    before = ws.schema_version()
    return f"upgraded the schema from version {before} to {migrate(ws)}"


def _integrity(ws: Workspace) -> list[str]:
    try:
        # A row may hold several lines ("*** in database main ***" and the first problem): one problem a line.
        rows = [
            line
            for r in ws.conn.execute(f"PRAGMA integrity_check({MAX_PROBLEMS})")
            for line in r[0].splitlines()
            if line.strip()
        ]
    except sqlite3.DatabaseError as exc:
        rows = [f"could not be checked: {exc}"]
    if rows == ["ok"]:
        return []
    return _bounded(rows) + [_recover_hint(ws.path)]


def _recover_hint(path: Path) -> str:
    return f"damaged pages cannot be rebuilt in place: save what can be read with `{recover_command(path)}`"


def _foreign_keys(ws: Workspace) -> list[str]:
    # No repair: deleting the rows that point nowhere could delete what an annotator made.
    shown: list[str] = []
    total = 0
    for table, rowid, parent, _ in ws.conn.execute("PRAGMA foreign_key_check"):
        total += 1
        if len(shown) < MAX_PROBLEMS:
            shown.append(f"{table} row {rowid} refers to a missing row of {parent}")
    return _bounded(shown, total)


def _search_index(ws: Workspace) -> list[str]:
    present = {(kind, name) for kind, name in ws.conn.execute("SELECT type, name FROM sqlite_master")}
    missing = [
        f"the search index's {kind} {name} is missing"
        for kind, name in schema.search_index_objects()
        if (kind, name) not in present
    ]
    if missing or ws.read_only:
        return missing  # FTS5 checks through an INSERT, which a read-only connection refuses; reported as skipped
    try:
        # rank = 1: compare the index with the items table too, not only with itself (external content).
        ws.conn.execute("INSERT INTO item_search (item_search, rank) VALUES ('integrity-check', 1)")
    except sqlite3.DatabaseError as exc:
        # CORRUPT: entries that do not match; ERROR: shadow tables FTS5 cannot even read ("vtable constructor
        # failed", "invalid fts5 file format").
        if (getattr(exc, "sqlite_errorcode", 0) & 0xFF) not in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_ERROR):
            raise
        return [f"the search index does not match the items ({exc})"]
    finally:
        ws.conn.rollback()  # the check writes nothing; end the transaction the INSERT opened
    return []


def _rebuild_search_index(ws: Workspace) -> str:
    """Drop whatever is left of the search index and create it again from its one definition, then fill it."""
    with ws.db.atomic():
        for kind, name in reversed(schema.search_index_objects()):  # triggers first, the view last
            if kind != "table":
                ws.conn.execute(f"DROP {kind} IF EXISTS {name}")
                continue
            try:
                ws.conn.execute(f"DROP TABLE IF EXISTS {name}")
            except sqlite3.DatabaseError:  # its constructor fails: the shadow tables are broken
                _unlink_broken_virtual_table(ws, name)
        schema.create_search_index(ws.db)
    items = ws.conn.execute("SELECT count(*) FROM items").fetchone()[0]
    return f"rebuilt the search index over {items:,} items"


_FTS5_SHADOWS = ("data", "idx", "content", "docsize", "config")


def _unlink_broken_virtual_table(ws: Workspace, name: str) -> None:
    # An FTS5 table whose shadow tables it cannot read cannot be dropped (DROP runs its constructor). Its schema
    # row is removed instead — a virtual table owns no pages, so nothing is left dangling — and its shadow tables,
    # ordinary tables now, are dropped. RESET makes this connection read the schema again.
    ws.conn.execute("PRAGMA writable_schema = ON")
    try:
        ws.conn.execute("DELETE FROM sqlite_master WHERE type = 'table' AND name = ? AND rootpage = 0", (name,))
    finally:
        ws.conn.execute("PRAGMA writable_schema = RESET")
    for shadow in _FTS5_SHADOWS:
        ws.conn.execute(f"DROP TABLE IF EXISTS {name}_{shadow}")


_ORPHANS = "FROM images WHERE NOT EXISTS (SELECT 1 FROM items WHERE items.image_sha256 = images.sha256)"
# An item's second image on is a row of item_images (migration 0025): an image used only there is no orphan.
_MORE_USED = " AND NOT EXISTS (SELECT 1 FROM item_images m WHERE m.sha256 = images.sha256)"


def _orphans(ws: Workspace) -> str:
    """Images no item uses; item_images is asked where the file has it (an older schema is checked as it is)."""
    has_more = ws.conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'item_images'").fetchone()
    return _ORPHANS + (_MORE_USED if has_more else "")


def _orphan_images(ws: Workspace) -> list[str]:
    count, size = ws.conn.execute(f"SELECT count(*), coalesce(sum(bytes), 0) {_orphans(ws)}").fetchone()
    return [f"{count:,} image(s) ({size / 1e6:.1f} MB) used by no item"] if count else []


def _delete_orphan_images(ws: Workspace) -> str:
    with ws.db.atomic():
        orphans = _orphans(ws)
        count, size = ws.conn.execute(f"SELECT count(*), coalesce(sum(bytes), 0) {orphans}").fetchone()
        ws.conn.execute(f"DELETE {orphans}")
    return f"deleted {count:,} image(s) used by no item ({size / 1e6:.1f} MB)"


def _item_images(ws: Workspace) -> list[str]:
    """An item's more images run ord 1, 2, … without a gap, after a first image (items.image_sha256); that each is a
    stored image is the foreign-key check's. No repair: which image is missing only the source file says."""
    bad = (
        "SELECT m.item_id, count(*) AS n, max(m.ord) AS top, i.image_sha256 IS NULL AS no_first FROM item_images m "
        "JOIN items i ON i.id = m.item_id GROUP BY m.item_id HAVING top != n OR no_first"
    )
    (total,) = ws.conn.execute(f"SELECT count(*) FROM ({bad})").fetchone()
    rows = ws.conn.execute(f"{bad} LIMIT {MAX_PROBLEMS}").fetchall()
    return _bounded(
        [
            f"item {item_id}: its more images are rows {n} of ord up to {top}"
            + (" and it has no first image" if no_first else "")
            if top != n
            else f"item {item_id}: {n} more image(s) but no first image"
            for item_id, n, top, no_first in rows
        ],
        total,
    )


def _dead_runs(ws: Workspace) -> list[str]:
    return _bounded(
        [f"run {r.id} ({r.model_spec}) is stored as running, but its process is gone" for r in runs.dead_owner_runs(ws)]
    )


def _guideline_versions(ws: Workspace) -> list[str]:
    """A verdict names the guideline version it was given under (migration 0014): one its benchmark has."""
    rows = ws.conn.execute(
        "SELECT r.id, r.guideline_version FROM reviews r JOIN items i ON i.id = r.item_id "
        "WHERE r.guideline_version IS NOT NULL AND NOT EXISTS (SELECT 1 FROM guidelines g "
        "WHERE g.benchmark_id = i.benchmark_id AND g.version = r.guideline_version) LIMIT ?",
        (MAX_PROBLEMS + 1,),
    ).fetchall()
    return _bounded([f"review {rid} names guideline version {v}, which its benchmark does not have" for rid, v in rows])


def _mark_dead_runs_interrupted(ws: Workspace) -> str:
    marked = [r.id for r in runs.dead_owner_runs(ws) if runs.mark_interrupted(ws, r.id)]
    return f"marked {len(marked)} run(s) interrupted: {', '.join(map(str, marked))}"


def _arena_pairs(ws: Workspace) -> list[str]:
    """A pair shows two answers to one item of its benchmark: both runs on that benchmark, each with pass 0 of the
    item stored (the arena reads it), and the item in the benchmark (migration 0012, annotation/arena.py)."""
    rows = ws.conn.execute(
        "SELECT p.id, p.uuid FROM arena_pairs p JOIN items i ON i.id = p.item_id "
        "WHERE i.benchmark_id != p.benchmark_id OR EXISTS (SELECT 1 FROM runs r "
        "WHERE r.id IN (p.left_run_id, p.right_run_id) AND (r.benchmark_id != p.benchmark_id OR NOT EXISTS "
        "(SELECT 1 FROM predictions x WHERE x.run_id = r.id AND x.item_id = p.item_id AND x.pass = 0))) "
        "ORDER BY p.id LIMIT ?",
        (MAX_PROBLEMS + 1,),
    ).fetchall()
    return _bounded(
        [
            f"arena pair {pid} ({uuid}): a run of another benchmark, or an answer that is not stored"
            for pid, uuid in rows
        ]
    )


def _open_verdicts(ws: Workspace) -> list[str]:
    """A verdict on an open answer judged the answer now stored (pass 0 of its run on its item, the same sha256) of
    a run on the item's benchmark (migration 0018, annotation/open_verdicts.py). No repair: a verdict is a person's."""
    rows = ws.conn.execute(
        "SELECT v.run_id, v.item_id, v.answer_key, p.response, r.benchmark_id = i.benchmark_id, count(*) "
        "FROM open_verdicts v JOIN items i ON i.id = v.item_id LEFT JOIN runs r ON r.id = v.run_id "
        "LEFT JOIN predictions p ON p.run_id = v.run_id AND p.item_id = v.item_id AND p.pass = 0 "
        "GROUP BY v.run_id, v.item_id, v.answer_key ORDER BY v.run_id, v.item_id"
    )
    found = [
        f"run {run} item {item}: {n} verdict(s) on an answer that is "
        + ("not stored" if response is None else "of another benchmark" if not same else "no longer the one stored")
        for run, item, key, response, same, n in rows
        if response is None or not same or runs.answer_key(response) != key
    ]
    return _bounded(found[: MAX_PROBLEMS + 1], len(found))


def _option_scores(ws: Workspace) -> list[str]:
    # No repair: scores are what the model said; a pass with a wrong count is shown, never rewritten.
    rows = ws.conn.execute(
        "SELECT * FROM (SELECT run_id, item_id, pass, CASE WHEN json_valid(scores) AND json_type(scores) = 'array' "
        "THEN json_array_length(scores) END AS n, max(json_array_length(option_order), 2) AS shown "
        "FROM predictions WHERE scores IS NOT NULL) WHERE n IS NULL OR n != shown LIMIT ?",
        (MAX_PROBLEMS + 1,),
    ).fetchall()
    return _bounded(
        [
            f"run {r} item {i} pass {k}: {'unreadable' if n is None else n} option scores for {m} shown"
            for r, i, k, n, m in rows
        ]
    )


_BAD_TURNS = """
FROM predictions WHERE turns IS NOT NULL AND CASE WHEN json_valid(turns) THEN json_type(turns) != 'array' OR EXISTS (
    SELECT 1 FROM json_each(predictions.turns) t WHERE t.type != 'object'
    OR coalesce(json_extract(t.value, '$.role'), '') NOT IN ('asker', 'model')
    OR json_type(t.value, '$.text') IS NOT 'text'
) ELSE 1 END"""


def _pass_turns(ws: Workspace) -> list[str]:
    """Multi-turn passes whose turns are not a list of {"role": asker|model, "text"} (the app shows them as none)."""
    (count,) = ws.conn.execute(f"SELECT count(*) {_BAD_TURNS}").fetchone()
    rows = ws.conn.execute(f"SELECT run_id, item_id, pass {_BAD_TURNS} LIMIT {MAX_PROBLEMS}").fetchall()
    return _bounded([f"run {r} item {i} pass {k}: turns are not a list of {{role, text}}" for r, i, k in rows], count)


CHECKS: tuple[Check, ...] = (
    Check("integrity", "file integrity", _integrity),
    Check("schema", "schema version", _schema_version, _upgrade),
    Check("foreign_keys", "references between tables", _foreign_keys),
    Check("search_index", "search index", _search_index, _rebuild_search_index, current_schema=True),
    Check("orphan_images", "images used by no item", _orphan_images, _delete_orphan_images),
    Check("item_images", "items' images after the first", _item_images, current_schema=True),
    Check("dead_runs", "runs whose process is gone", _dead_runs, _mark_dead_runs_interrupted, current_schema=True),
    Check("option_scores", "option scores of likelihood passes", _option_scores, current_schema=True),
    Check("pass_turns", "turns of multi-turn passes", _pass_turns, current_schema=True),
    Check("guideline_versions", "verdicts' guideline versions", _guideline_versions, current_schema=True),
    Check("arena_pairs", "arena pairs and the answers they show", _arena_pairs, current_schema=True),
    Check("open_verdicts", "verdicts on open answers and the answers they judged", _open_verdicts, current_schema=True),
)


# ------------------------------------------------------------------------------------------------ running


@dataclass
class Report:
    path: Path
    read_only: bool
    results: list[CheckResult]
    notes: list[str] = field(default_factory=list)

    @property
    def healthy(self) -> bool:
        return all(r.ok for r in self.results)

    def as_json(self) -> dict[str, Any]:
        return {
            "workspace": str(self.path),
            "healthy": self.healthy,
            "read_only": self.read_only,
            "checks": [r.as_json() for r in self.results],
            "notes": self.notes,
        }


def _run_one(ws: Workspace, check: Check) -> list[str]:
    try:
        return check.find(ws)
    except sqlite3.DatabaseError as exc:
        return [f"could not be checked: {exc}"]


def check_workspace(path: Path, *, repair: bool = False) -> Report:
    """Run every check on the workspace at `path`, and with `repair` every repair where its check found problems.

    Nothing is written without `repair`: the file is read through a plain connection (no journal-mode switch, no
    migration: an older schema is reported, not upgraded), read-only where the file cannot be written. Raises
    SchemaError for a file that is not a vlmdesk workspace, which is left untouched."""
    ident = identify(path)
    notes: list[str] = []
    writable = location_writable(path) and not ident.damage
    ws = _open_plain(path, writable=writable)
    results: list[CheckResult] = []
    try:
        for check in CHECKS:
            if check.current_schema and _version(ws, ident) != schema.latest_version():
                notes.append(f"{check.title} not checked: the schema is not this vlmdesk's")
                results.append(CheckResult(check.name, check.title))
                continue
            result = CheckResult(check.name, check.title, _run_one(ws, check))
            results.append(result)
            if check.name == "integrity" and ident.damage:
                result.problems.insert(0, f"the file is damaged: {ident.damage}")
            if not (repair and result.problems and check.repair):
                continue
            if reason := _no_repair(ws, results, ident):
                notes.append(f"{check.title} not repaired: {reason}")
                continue
            try:
                result.repaired.append(check.repair(ws))
            except sqlite3.DatabaseError as exc:
                ws.conn.rollback()
                result.repaired.append(f"repair failed: {exc}")
            result.problems = _run_one(ws, check)
        if ws.read_only:
            notes.append("the search index was not checked: the file is read-only")
    finally:
        ws.close()
    return Report(path, ws.read_only, results, notes)


def _version(ws: Workspace, ident: FileIdentity) -> int:
    try:
        return ws.schema_version()  # after a --repair upgrade, the new one
    except sqlite3.DatabaseError:
        return ident.version  # a schema SQLite cannot load: the header's


def _no_repair(ws: Workspace, results: list[CheckResult], ident: FileIdentity) -> str | None:
    """Why repairs must not write to this file, if they must not."""
    if ws.read_only:
        return "the file is read-only"
    if not results[0].ok:  # integrity: writing into a file with damaged pages can spread the damage
        return "the file is damaged; recover it first"
    if ident.version > schema.latest_version():
        return "the workspace is newer than this vlmdesk"
    return None


def _open_plain(path: Path, *, writable: bool) -> Workspace:
    """A connection for looking: no WAL switch, no migration."""
    if writable:
        conn = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_MS / 1000)
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA foreign_keys = ON")
    else:
        conn = read_only_connection(path, allow_immutable=True)
    return Workspace(path, Database(conn, execute_plugins=False), read_only=not writable)
