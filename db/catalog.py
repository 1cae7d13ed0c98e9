"""Typed reads and writes of benchmarks, items and images. Listing queries never select image bytes."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from db.workspace import Workspace, inserted_id


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


@dataclass(frozen=True)
class Benchmark:
    id: int
    name: str
    kind: str
    format: str
    source: str
    source_sha256: str
    rows_read: int
    rows_folded: int
    rows_skipped: int
    imported_at: str
    meta: dict[str, Any]
    questions: int = 0
    images: int = 0


@dataclass(frozen=True)
class Item:
    id: int
    benchmark_id: int
    position: int
    index: int | str
    question: str
    hint: str | None
    options: tuple[str, ...]
    answer: str | None
    category: str | None
    l2_category: str | None
    split: str | None
    language: str
    image_sha256: str | None
    circular_copies: int
    meta: dict[str, Any]
    # An item of several images (issue 37, migration 0025): the first is `image_sha256`, as every item's was; the
    # others, in order, are rows of item_images. Readers that show or ask an item fill them (with_images).
    more_images: tuple[str, ...] = ()

    @property
    def images(self) -> tuple[str, ...]:
        """Every image of the item, in order (the sha256 of each; () for a text-only item)."""
        return ((self.image_sha256,) if self.image_sha256 else ()) + self.more_images

    @property
    def references(self) -> tuple[str, ...]:
        """An open item's reference answers, in the file's order with repeats kept (VQAv2 keeps ten, and a repeat is
        a vote): meta `references`; items imported before there could be several hold one as meta `reference`."""
        many = self.meta.get("references")
        if isinstance(many, list):
            return tuple(r for r in many if isinstance(r, str))
        one = self.meta.get("reference")
        return (one,) if isinstance(one, str) else ()

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "question": self.question,
            "hint": self.hint,
            "options": list(self.options),
            "answer": self.answer,
            "category": self.category,
            "l2_category": self.l2_category,
            "split": self.split,
            "language": self.language,
            "image_sha256": self.image_sha256,
            "circular_copies": self.circular_copies,
            # Every image in order, only for an item of several (a single-image item's JSON reads as it always did).
            **({"images": list(self.images)} if self.more_images else {}),
        }


# Questions and images per benchmark are counted by triggers (migration 0015): listing benchmarks never reads items.
_BENCH_SELECT = """
SELECT b.*, coalesce(c.items, 0) AS questions, coalesce(c.images, 0) AS images
FROM benchmarks b LEFT JOIN benchmark_counts c ON c.benchmark_id = b.id
"""
ITEM_COLUMNS = (
    "id, benchmark_id, position, source_index, question, hint, options, answer, category, l2_category, "
    "split, language, image_sha256, circular_copies, meta"
)


def _bench(row: dict[str, Any]) -> Benchmark:
    row = dict(row)
    row["meta"] = json.loads(row["meta"])
    return Benchmark(**row)


def item_from_row(row: sqlite3.Row | tuple[Any, ...]) -> Item:
    """An Item from a row of the items columns in table order (the staging table of an import has the same)."""
    (id_, bid, pos, index, question, hint, options, answer, cat, l2, split, lang, sha, copies, meta) = row
    return Item(
        id_,
        bid,
        pos,
        index,
        question,
        hint,
        tuple(json.loads(options)),
        answer,
        cat,
        l2,
        split,
        lang,
        sha,
        copies,
        json.loads(meta),
    )


def list_benchmarks(ws: Workspace) -> list[Benchmark]:
    return [_bench(r) for r in ws.db.query(_BENCH_SELECT + " ORDER BY b.id")]


def benchmark_by_name(ws: Workspace, name: str) -> Benchmark | None:
    rows = list(ws.db.query(_BENCH_SELECT + " WHERE b.name = ?", [name]))
    return _bench(rows[0]) if rows else None


def benchmark_by_source(ws: Workspace, source_sha256: str) -> Benchmark | None:
    rows = list(ws.db.query(_BENCH_SELECT + " WHERE b.source_sha256 = ?", [source_sha256]))
    return _bench(rows[0]) if rows else None


def insert_benchmark(
    ws: Workspace, *, name: str, kind: str, format: str, source: str, source_sha256: str, meta: dict[str, Any]
) -> int:
    cur = ws.conn.execute(
        "INSERT INTO benchmarks (name, kind, format, source, source_sha256, rows_read, imported_at, meta) "
        "VALUES (?, ?, ?, ?, ?, 0, ?, ?)",
        (name, kind, format, source, source_sha256, now_iso(), json.dumps(meta)),
    )
    return inserted_id(cur)


def finish_benchmark(ws: Workspace, benchmark_id: int, *, rows_read: int, rows_folded: int, rows_skipped: int) -> None:
    ws.conn.execute(
        "UPDATE benchmarks SET rows_read = ?, rows_folded = ?, rows_skipped = ? WHERE id = ?",
        (rows_read, rows_folded, rows_skipped, benchmark_id),
    )


def set_benchmark_meta(ws: Workspace, benchmark_id: int, meta: dict[str, Any]) -> None:
    """Replace a benchmark's meta (its capability groups live there: evaluator/analysis/groups.py)."""
    ws.conn.execute("UPDATE benchmarks SET meta = ? WHERE id = ?", (json.dumps(meta, ensure_ascii=False), benchmark_id))


def has_image(ws: Workspace, sha256: str) -> bool:
    return ws.conn.execute("SELECT 1 FROM images WHERE sha256 = ?", (sha256,)).fetchone() is not None


def put_image(ws: Workspace, *, sha256: str, data: bytes, mime: str, width: int, height: int) -> bool:
    """Store an image once; returns True when it was new."""
    cur = ws.conn.execute(
        "INSERT OR IGNORE INTO images (sha256, data, mime, width, height, bytes) VALUES (?, ?, ?, ?, ?, ?)",
        (sha256, data, mime, width, height, len(data)),
    )
    return cur.rowcount == 1


def image_bytes(ws: Workspace, sha256: str) -> tuple[bytes, str] | None:
    row = ws.conn.execute("SELECT data, mime FROM images WHERE sha256 = ?", (sha256,)).fetchone()
    return (row[0], row[1]) if row else None


def image_info(ws: Workspace, sha256: str) -> tuple[str, int] | None:
    """(mime, size in bytes) of a stored image, its bytes left unread."""
    row = ws.conn.execute("SELECT mime, bytes FROM images WHERE sha256 = ?", (sha256,)).fetchone()
    return (row[0], row[1]) if row else None


def insert_items(ws: Workspace, rows: list[tuple[object, ...]]) -> None:
    """rows: (benchmark_id, position, source_index, question, hint, options_json, answer, category, l2_category,
    split, language, image_sha256, circular_copies, meta_json)."""
    ws.conn.executemany(
        "INSERT INTO items (benchmark_id, position, source_index, question, hint, options, answer, category, "
        "l2_category, split, language, image_sha256, circular_copies, meta) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
        rows,
    )


def item_by_index(ws: Workspace, benchmark_id: int, index: int | str) -> Item | None:
    row = ws.conn.execute(
        f"SELECT {ITEM_COLUMNS} FROM items WHERE benchmark_id = ? AND source_index = ?", (benchmark_id, index)
    ).fetchone()
    return with_images(ws, [item_from_row(row)])[0] if row else None


def with_images(ws: Workspace, items: list[Item]) -> list[Item]:
    """The items with `more_images` filled (an item's second image on, in order: item_images), in ONE query for the
    page however many items it holds: one primary-key seek per item (CROSS JOIN keeps the ids outside)."""
    if not items:
        return items
    more: dict[int, list[str]] = {}
    for item_id, sha in ws.conn.execute(
        "SELECT m.item_id, m.sha256 FROM json_each(?) AS i CROSS JOIN item_images m ON m.item_id = i.value "
        "ORDER BY m.item_id, m.ord",
        (f"[{','.join(str(i.id) for i in items)}]",),
    ):
        more.setdefault(item_id, []).append(sha)
    if not more:
        return items
    return [replace(i, more_images=tuple(more[i.id])) if i.id in more else i for i in items]


def insert_more_images(ws: Workspace, item_id: int, shas: list[str] | tuple[str, ...]) -> None:
    """Store an item's second image on (ord 1, 2, …); its first is items.image_sha256."""
    ws.conn.executemany(
        "INSERT INTO item_images (item_id, ord, sha256) VALUES (?, ?, ?)",
        [(item_id, n, sha) for n, sha in enumerate(shas, start=1)],
    )


def add_circular_copy(ws: Workspace, item_id: int, copy_index: int | str, shift: int) -> None:
    """Fold a circular copy into its question: its index and its rotation are kept (meta.copies, meta.copy_shifts,
    in step) so an export can write the source's rows again exactly."""
    row = ws.conn.execute("SELECT meta FROM items WHERE id = ?", (item_id,)).fetchone()
    meta = json.loads(row[0])
    meta["copies"] = [*meta.get("copies", []), copy_index]
    meta["copy_shifts"] = [*meta.get("copy_shifts", []), shift]
    ws.conn.execute(
        "UPDATE items SET circular_copies = circular_copies + 1, meta = ? WHERE id = ?",
        (json.dumps(meta, ensure_ascii=False), item_id),
    )


def list_items(ws: Workspace, benchmark_id: int, *, limit: int | None = None) -> list[Item]:
    return list(iter_items(ws, benchmark_id, limit=limit))


# Items read (and their images filled) this many at a time: one item_images query per page, never one per item.
ITEM_PAGE = 512


def iter_items(ws: Workspace, benchmark_id: int, *, limit: int | None = None) -> Iterator[Item]:
    """The benchmark's items in file order, every image filled, a page at a time (a listing of a million items never
    holds them all)."""
    sql = f"SELECT {ITEM_COLUMNS} FROM items WHERE benchmark_id = ? ORDER BY position"
    params: list[object] = [benchmark_id]
    if limit is not None:
        sql += " LIMIT ?"
        params.append(limit)
    cursor = ws.conn.execute(sql, params)
    while rows := cursor.fetchmany(ITEM_PAGE):
        # A second cursor on the same connection while the first is open: SQLite reads both consistently.
        yield from with_images(ws, [item_from_row(r) for r in rows])
