"""Item verdicts: an append-only log in the `reviews` table.

Each verdict is committed the moment it is given, with a uuid. Undo appends an `undo` row naming the uuid of the
verdict it withdraws (the annotator's latest standing one), so the log keeps everything that was ever said and who
said it when. A correction is simply a newer verdict. What stands: annotation/standing.py.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Final, Literal, get_args

from annotation import standing
from annotation.names import annotator_name, record_note
from db.catalog import now_iso
from db.errors import InvalidInput
from db.workspace import Workspace, inserted_id

Verdict = Literal["ok", "wrong_answer", "ambiguous", "text_answerable", "bad_image", "skip"]
"""An annotator's judgement of an item (an undo row stores `undo` instead, naming what it withdraws)."""
VERDICTS: tuple[Verdict, ...] = get_args(Verdict)
UNDO: Final = standing.WITHDRAWAL
_COLUMNS = "id, item_id, annotator, verdict, corrected_answer, note, seconds, created_at, uuid, withdraws"


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
    if verdict not in VERDICTS:
        raise InvalidInput(f"unknown verdict {verdict!r} (one of {', '.join(VERDICTS)})")
    if verdict == "wrong_answer" and not corrected_answer:
        raise InvalidInput("a wrong-answer verdict needs the corrected answer")
    return _append(ws, item_id, annotator_name(annotator), verdict, corrected_answer, record_note(note), seconds, None)


def undo_last(
    ws: Workspace, annotator: str, item_id: int | None = None, *, benchmark_id: int | None = None
) -> Review | None:
    """Withdraw the annotator's latest standing verdict (on one item, in one benchmark, or anywhere). Returns the
    withdrawn one."""
    mine = [
        r
        for r in standing_reviews(ws, annotator=annotator, benchmark_id=benchmark_id)
        if item_id is None or r.item_id == item_id
    ]
    if not mine:
        return None
    last = mine[-1]  # standing_reviews is in time order
    _append(ws, last.item_id, last.annotator, UNDO, None, f"withdraws review {last.id}", None, last.uuid)
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


def standing_reviews(ws: Workspace, *, benchmark_id: int | None = None, annotator: str | None = None) -> list[Review]:
    """The verdict that stands per (item, annotator) (annotation/standing.py), in time order."""
    where: list[str] = ["1 = 1"]
    params: list[object] = []
    if benchmark_id is not None:
        where.append("t.item_id IN (SELECT id FROM items WHERE benchmark_id = ?)")
        params.append(benchmark_id)
    if annotator is not None:
        where.append("t.annotator = ?")
        params.append(annotator)
    sql = standing.standing_sql(standing.REVIEWS, _COLUMNS, " AND ".join(where))
    return [Review(*row) for row in ws.conn.execute(sql, params)]


def conflicts(ws: Workspace, benchmark_id: int) -> dict[int, list[Review]]:
    """Items whose standing verdicts differ between annotators (skips do not count as an opinion)."""
    by_item: dict[int, list[Review]] = defaultdict(list)
    for r in standing_reviews(ws, benchmark_id=benchmark_id):
        if r.verdict != "skip":
            by_item[r.item_id].append(r)
    return {item: rs for item, rs in by_item.items() if len({(r.verdict, r.corrected_answer) for r in rs}) > 1}


def progress(ws: Workspace, benchmark_id: int, annotator: str | None = None) -> dict[str, Any]:
    """Reviewed / total items, for everyone and for one annotator."""
    total = ws.conn.execute("SELECT count(*) FROM items WHERE benchmark_id = ?", (benchmark_id,)).fetchone()[0]
    standing = standing_reviews(ws, benchmark_id=benchmark_id)
    return {
        "total": total,
        "reviewed": len({r.item_id for r in standing}),
        "mine": len({r.item_id for r in standing if r.annotator == annotator}) if annotator else None,
    }
