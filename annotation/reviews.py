"""Item verdicts: an append-only log in the `reviews` table.

Each verdict is committed the moment it is given, with a uuid. Undo appends an `undo` row naming the uuid of the
verdict it withdraws (the annotator's latest standing one), so the log keeps everything that was ever said and who
said it when. A correction is simply a newer verdict. What stands: annotation/standing.py. Which verdicts fit an
item, and what corrected answer each takes: annotation/item_kinds.py, checked here before anything is written.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final, Literal, get_args

from annotation import item_kinds, standing
from annotation.names import annotator_name, record_note
from db.catalog import now_iso
from db.errors import InvalidInput, NotFound
from db.workspace import Workspace, inserted_id

Verdict = Literal["ok", "wrong_answer", "incomplete", "ambiguous", "text_answerable", "bad_image", "skip"]
"""An annotator's judgement of an item (an undo row stores `undo` instead, naming what it withdraws); which fit an
item of each kind: item_kinds.VERDICTS_BY_KIND."""
VERDICTS: tuple[Verdict, ...] = get_args(Verdict)
UNDO: Final = standing.WITHDRAWAL
_COLUMNS = "id, item_id, annotator, verdict, corrected_answer, note, seconds, created_at, uuid, withdraws"
_STANDING_COLUMNS = ", ".join(f"r.{c}" for c in _COLUMNS.split(", "))


@dataclass(frozen=True)
class Review:
    id: int
    item_id: int
    annotator: str
    verdict: Verdict | Literal["undo"]  # undo: a withdrawal row
    corrected_answer: str | None
    note: str | None
    seconds: float | None
    created_at: str
    uuid: str = ""
    withdraws: str | None = None  # on an undo row: the uuid of the verdict it withdraws


def add_review(
    ws: Workspace,
    item_id: int,
    annotator: str,
    verdict: Verdict,
    *,
    corrected_answer: str | None = None,
    note: str | None = None,
    seconds: float | None = None,
) -> Review:
    """Append a verdict on the item, refused in one line (InvalidInput) unless it fits the item's kind; the corrected
    answer is stored as item_kinds.corrected_answer normalises it."""
    if verdict not in VERDICTS:
        raise InvalidInput(f"unknown verdict {verdict!r} (one of {', '.join(VERDICTS)})")
    kind, n_options = item_kind(ws, item_id)
    corrected = item_kinds.corrected_answer(kind, verdict, corrected_answer, n_options=n_options)
    return _append(ws, item_id, annotator_name(annotator), verdict, corrected, record_note(note), seconds, None)


def item_kind(ws: Workspace, item_id: int) -> tuple[item_kinds.ItemKind, int]:
    """(kind, number of options) of an item: two primary-key reads."""
    row = ws.conn.execute(
        "SELECT b.kind, json_array_length(i.options) FROM items i JOIN benchmarks b ON b.id = i.benchmark_id "
        "WHERE i.id = ?",
        (item_id,),
    ).fetchone()
    if row is None:
        raise NotFound(f"no item with id {item_id} in this workspace")
    return item_kinds.kind_of(row[0]), row[1]


def undo_last(
    ws: Workspace, annotator: str, item_id: int | None = None, *, benchmark_id: int | None = None
) -> Review | None:
    """Withdraw the annotator's latest standing verdict (on one item, in one benchmark, or anywhere). Returns the
    withdrawn one."""
    where, params = _standing_where(benchmark_id=benchmark_id, annotator=annotator, item_id=item_id)
    # The latest standing verdict by time (annotation/standing.py's order), from an index: never the whole log.
    row = ws.conn.execute(
        f"SELECT {_STANDING_COLUMNS} FROM review_standing s JOIN reviews r ON r.id = s.review_id WHERE {where} "
        "ORDER BY s.created_at DESC, s.review_id DESC LIMIT 1",
        params,
    ).fetchone()
    if row is None:
        return None
    last = Review(*row)
    # No note: `withdraws` names the target (a row id in a note, as before, meant nothing to people or other copies).
    _append(ws, last.item_id, last.annotator, UNDO, None, None, None, last.uuid)
    return last


def _append(
    ws: Workspace,
    item_id: int,
    annotator: str,
    verdict: Verdict | Literal["undo"],
    corrected_answer: str | None,
    note: str | None,
    seconds: float | None,
    withdraws: str | None,
) -> Review:
    created, uid = now_iso(), standing.new_uuid()
    with ws.db.atomic():
        # A verdict records the guideline version it was given under (annotation/guidelines.py): the benchmark's
        # latest, read in the same transaction; an undo has none.
        cur = ws.conn.execute(
            "INSERT INTO reviews (item_id, annotator, verdict, corrected_answer, note, seconds, created_at, uuid, "
            "withdraws, guideline_version) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, CASE WHEN ? IS NULL THEN "
            "(SELECT max(g.version) FROM guidelines g JOIN items i ON i.benchmark_id = g.benchmark_id "
            "WHERE i.id = ?) END)",
            (item_id, annotator, verdict, corrected_answer, note, seconds, created, uid, withdraws, withdraws, item_id),
        )
    return Review(
        inserted_id(cur), item_id, annotator, verdict, corrected_answer, note, seconds, created, uid, withdraws
    )


def history(ws: Workspace, item_id: int) -> list[Review]:
    """Every verdict and undo on the item, in time order."""
    rows = ws.conn.execute(f"SELECT {_COLUMNS} FROM reviews WHERE item_id = ? ORDER BY {standing.ORDER}", (item_id,))
    return [Review(*r) for r in rows]


def _standing_where(
    *, benchmark_id: int | None = None, annotator: str | None = None, item_id: int | None = None
) -> tuple[str, list[object]]:
    where: list[str] = ["1 = 1"]
    params: list[object] = []
    for column, value in (("benchmark_id", benchmark_id), ("annotator", annotator), ("item_id", item_id)):
        if value is not None:
            where.append(f"s.{column} = ?")
            params.append(value)
    return " AND ".join(where), params


def standing_reviews(
    ws: Workspace, *, benchmark_id: int | None = None, annotator: str | None = None, item_id: int | None = None
) -> list[Review]:
    """The verdict that stands per (item, annotator) (annotation/standing.py), in time order.

    Read from review_standing, which triggers on the log keep to that rule in the transaction of every write
    (migration 0015): the cost is the verdicts returned, never the benchmark's items or the log's length."""
    where, params = _standing_where(benchmark_id=benchmark_id, annotator=annotator, item_id=item_id)
    sql = (
        f"SELECT {_STANDING_COLUMNS} FROM review_standing s JOIN reviews r ON r.id = s.review_id WHERE {where} "
        "ORDER BY s.created_at, s.review_id"
    )
    return [Review(*row) for row in ws.conn.execute(sql, params)]


def standing_opinions(ws: Workspace, benchmark_id: int) -> Iterator[tuple[int, str, str, str | None]]:
    """(item id, annotator, verdict, corrected answer) of every standing verdict of a benchmark, in time order: what
    listings show, without building a Review per row (a benchmark may hold tens of thousands)."""
    yield from ws.conn.execute(
        "SELECT item_id, annotator, verdict, corrected_answer FROM review_standing WHERE benchmark_id = ? "
        "ORDER BY created_at, review_id",
        (benchmark_id,),
    )


def conflicts(ws: Workspace, benchmark_id: int) -> dict[int, list[Review]]:
    """Items whose standing verdicts differ between annotators (skips do not count as an opinion)."""
    # review_conflicts names them (kept by triggers, migration 0015): the cost is the conflicts, not the benchmark.
    rows = ws.conn.execute(
        f"SELECT {_STANDING_COLUMNS} FROM review_conflicts c JOIN review_standing s ON s.item_id = c.item_id "
        "JOIN reviews r ON r.id = s.review_id WHERE c.benchmark_id = ? AND s.verdict != 'skip' "
        "ORDER BY s.created_at, s.review_id",
        (benchmark_id,),
    )
    by_item: dict[int, list[Review]] = defaultdict(list)
    for row in rows:
        by_item[row[1]].append(Review(*row))
    return {item: rs for item, rs in by_item.items() if len({(r.verdict, r.corrected_answer) for r in rs}) > 1}


def conflict_count(ws: Workspace, benchmark_id: int) -> int:
    """len(conflicts(...)), from the kept table alone (an index range, no verdict read)."""
    row = ws.conn.execute("SELECT count(*) FROM review_conflicts WHERE benchmark_id = ?", (benchmark_id,)).fetchone()
    return int(row[0])


def progress(ws: Workspace, benchmark_id: int, annotator: str | None = None) -> dict[str, Any]:
    """Judged / total items, for everyone and for one annotator: `reviewed` counts the items with a standing verdict
    other than a skip, `mine` those where the annotator's standing verdict is not a skip (a skip is no verdict).
    Counts kept by triggers (migrations 0015, 0023), read by primary key, so a keypress never counts the benchmark."""
    row = ws.conn.execute(
        "SELECT items, reviewed FROM benchmark_counts WHERE benchmark_id = ?", (benchmark_id,)
    ).fetchone()
    mine = None
    if annotator:
        found = ws.conn.execute(
            "SELECT reviewed FROM annotator_counts WHERE benchmark_id = ? AND annotator = ?", (benchmark_id, annotator)
        ).fetchone()
        mine = found[0] if found else 0
    return {"total": row[0] if row else 0, "reviewed": row[1] if row else 0, "mine": mine}
