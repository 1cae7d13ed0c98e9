"""What the run engine reads of a run's items and stored passes, a page at a time: a run never holds its benchmark.

Pages are keyset walks of the (benchmark_id, position) index — the rowid breaks ties of position, as in the index —
so reading page j costs the page, not the j pages before it; the run's `limit` (its first N items) bounds the walk.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from db.catalog import ITEM_COLUMNS, Item, item_from_row, with_images
from db.workspace import Workspace

_PAGE = f"SELECT {ITEM_COLUMNS} FROM items WHERE benchmark_id = ? {{after}}ORDER BY position, id LIMIT ?"
_FIRST_PAGE, _NEXT_PAGE = _PAGE.format(after=""), _PAGE.format(after="AND (position, id) > (?, ?) ")


def item_pages(ws: Workspace, benchmark_id: int, *, limit: int | None, page: int) -> Iterator[list[Item]]:
    """The benchmark's items in file order (the first `limit` when given), `page` items per list."""
    left, key = limit, None
    while left is None or left > 0:
        size = page if left is None else min(page, left)
        params = (benchmark_id, size) if key is None else (benchmark_id, *key, size)
        rows = ws.conn.execute(_FIRST_PAGE if key is None else _NEXT_PAGE, params)
        items = with_images(ws, [item_from_row(r) for r in rows])  # every image of the page in one more query
        if items:
            yield items
        if len(items) < size:
            return
        key, left = (items[-1].position, items[-1].id), None if left is None else left - size


def stored_marks(ws: Workspace, run_id: int, item_ids: Sequence[int]) -> Iterator[tuple[int, int, bool | None]]:
    """(item id, pass, right) of every stored pass of these items in the run: one primary-key seek per item (CROSS
    JOIN keeps the ids outside; SQLite's planner would otherwise walk the run's every pass for each page)."""
    for item_id, k, correct in ws.conn.execute(
        "SELECT p.item_id, p.pass, p.correct FROM json_each(?) AS i CROSS JOIN predictions p "
        "ON p.run_id = ? AND p.item_id = i.value",
        (f"[{','.join(map(str, item_ids))}]", run_id),
    ):
        yield item_id, k, None if correct is None else bool(correct)


def run_tally(ws: Workspace, run_id: int, benchmark_id: int, *, limit: int | None) -> Iterator[tuple[int, int, bool]]:
    """Per item of the run, in file order and one row at a time: (options, passes stored, whether one is wrong)."""
    rows = ws.conn.execute(
        "SELECT json_array_length(i.options), "
        "(SELECT count(*) FROM predictions p WHERE p.run_id = ?1 AND p.item_id = i.id), "
        "EXISTS (SELECT 1 FROM predictions p WHERE p.run_id = ?1 AND p.item_id = i.id AND p.correct = 0) "
        "FROM items i WHERE i.benchmark_id = ?2 ORDER BY i.position, i.id LIMIT ?3",
        (run_id, benchmark_id, -1 if limit is None else limit),
    )
    for options, stored, wrong in rows:
        yield options, stored, bool(wrong)


def frequent_answer(ws: Workspace, benchmark_id: int) -> str | None:
    """The benchmark's most frequent answer key (the least of those tied), counted in SQL; None without keys."""
    row = ws.conn.execute(
        "SELECT answer FROM items WHERE benchmark_id = ? AND answer IS NOT NULL AND answer != '' "
        "GROUP BY answer ORDER BY count(*) DESC, answer LIMIT 1",
        (benchmark_id,),
    ).fetchone()
    return None if row is None else str(row[0])
