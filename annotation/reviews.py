"""Item verdicts: an append-only log in the `reviews` table.

Each verdict is committed the moment it is given. Undo appends an `undo` row that withdraws the annotator's latest
standing verdict on that item, so the log keeps everything that was ever said and who said it when.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from db.catalog import now_iso
from db.workspace import Workspace

VERDICTS = ("ok", "wrong_answer", "ambiguous", "text_answerable", "bad_image", "skip")
UNDO = "undo"


@dataclass(frozen=True)
class Review:
    id: int
    item_id: int
    annotator: str
    verdict: str
    corrected_answer: str | None
    note: str | None
    seconds: float | None
    created_at: str


def add_review(ws: Workspace, item_id: int, annotator: str, verdict: str, *, corrected_answer: str | None = None,
               note: str | None = None, seconds: float | None = None) -> Review:
    if verdict not in VERDICTS:
        raise ValueError(f"unknown verdict {verdict!r} (one of {', '.join(VERDICTS)})")
    if verdict == "wrong_answer" and not corrected_answer:
        raise ValueError("a wrong-answer verdict needs the corrected answer")
    if not annotator.strip():
        raise ValueError("an annotator name is required")
    return _append(ws, item_id, annotator.strip(), verdict, corrected_answer, note, seconds)


def undo_last(ws: Workspace, annotator: str, item_id: int | None = None) -> Review | None:
    """Withdraw the annotator's latest standing verdict (on one item, or on any item). Returns the withdrawn one."""
    standing = [r for r in standing_reviews(ws, annotator=annotator) if item_id is None or r.item_id == item_id]
    if not standing:
        return None
    last = max(standing, key=lambda r: r.id)
    _append(ws, last.item_id, annotator, UNDO, None, f"withdraws review {last.id}", None)
    return last


def _append(ws, item_id, annotator, verdict, corrected_answer, note, seconds) -> Review:
    created = now_iso()
    with ws.db.atomic():
        cur = ws.conn.execute(
            "INSERT INTO reviews (item_id, annotator, verdict, corrected_answer, note, seconds, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)", (item_id, annotator, verdict, corrected_answer, note, seconds, created))
    return Review(cur.lastrowid, item_id, annotator, verdict, corrected_answer, note, seconds, created)


def history(ws: Workspace, item_id: int) -> list[Review]:
    rows = ws.conn.execute("SELECT id, item_id, annotator, verdict, corrected_answer, note, seconds, created_at "
                           "FROM reviews WHERE item_id = ? ORDER BY id", (item_id,))
    return [Review(*r) for r in rows]


def standing_reviews(ws: Workspace, *, benchmark_id: int | None = None, annotator: str | None = None) -> list[Review]:
    """The verdict that stands per (item, annotator): the latest one not withdrawn by an undo."""
    sql = ("SELECT r.id, r.item_id, r.annotator, r.verdict, r.corrected_answer, r.note, r.seconds, r.created_at "
           "FROM reviews r JOIN items i ON i.id = r.item_id WHERE 1 = 1")
    params: list = []
    if benchmark_id is not None:
        sql += " AND i.benchmark_id = ?"
        params.append(benchmark_id)
    if annotator is not None:
        sql += " AND r.annotator = ?"
        params.append(annotator)
    stacks: dict[tuple[int, str], list[Review]] = defaultdict(list)
    for row in ws.conn.execute(sql + " ORDER BY r.id", params):
        review = Review(*row)
        stack = stacks[(review.item_id, review.annotator)]
        if review.verdict == UNDO:
            if stack:
                stack.pop()
        else:
            stack.append(review)
    return [stack[-1] for stack in stacks.values() if stack]


def conflicts(ws: Workspace, benchmark_id: int) -> dict[int, list[Review]]:
    """Items whose standing verdicts differ between annotators (skips do not count as an opinion)."""
    by_item: dict[int, list[Review]] = defaultdict(list)
    for r in standing_reviews(ws, benchmark_id=benchmark_id):
        if r.verdict != "skip":
            by_item[r.item_id].append(r)
    return {item: rs for item, rs in by_item.items()
            if len({(r.verdict, r.corrected_answer) for r in rs}) > 1}


def progress(ws: Workspace, benchmark_id: int, annotator: str | None = None) -> dict:
    """Reviewed / total items, for everyone and for one annotator."""
    total = ws.conn.execute("SELECT count(*) FROM items WHERE benchmark_id = ?", (benchmark_id,)).fetchone()[0]
    standing = standing_reviews(ws, benchmark_id=benchmark_id)
    return {"total": total, "reviewed": len({r.item_id for r in standing}),
            "mine": len({r.item_id for r in standing if r.annotator == annotator}) if annotator else None}
