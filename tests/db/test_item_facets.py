"""Browse's facets at any size (issue 27, migration 0019): the distinct categories, L2 categories and splits are read
by seeking through an index per value, and a facet filter counts and lists from the index — the same answers as a
plain scan, without one."""

from __future__ import annotations

import json
import random
import re
import sqlite3

from sqlite_utils import Database

from db import catalog, item_query, open_workspace, schema
from db.item_query import ItemFilter
from tests.sqlite_steps import counting_steps

VALUES = (None, "", "ocr", "OCR", "scene", "zebra", "é-accent", "ocr ")


def _fill(ws, name: str, n: int, seed: int) -> int:
    rng = random.Random(seed)
    with ws.db.atomic():
        bid = catalog.insert_benchmark(
            ws, name=name, kind="mcq", format="jsonl", source="s", source_sha256=name, meta={}
        )
        catalog.insert_items(
            ws,
            [
                (bid, k, k, f"Q{k}?", None, json.dumps(["a", "b"]), "A")
                + (rng.choice(VALUES), rng.choice(VALUES), rng.choice(VALUES), "en", None, 0, "{}")
                for k in range(n)
            ],
        )
        catalog.finish_benchmark(ws, bid, rows_read=n, rows_folded=0, rows_skipped=0)
    return bid


def _scans(ws, sql: str, params) -> list[str]:
    plan = [row[-1] for row in ws.conn.execute("EXPLAIN QUERY PLAN " + sql, params)]
    return [p for p in plan if re.match(r"SCAN (items|i)\b", p)]


def test_facets_and_facet_filters_answer_as_a_scan_does(tmp_path):
    with open_workspace(tmp_path / "ws.sqlite") as ws:
        first = _fill(ws, "first", 600, 1)
        other = _fill(ws, "other", 300, 2)  # its values must not leak into the first benchmark's facets
        with ws.db.atomic():
            ws.conn.execute("UPDATE items SET category = 'only-other' WHERE benchmark_id = ?", (other,))
        facets = item_query.facet_values(ws, first)
        for column in schema.FACETS:
            expected = [
                r[0]
                for r in ws.conn.execute(
                    f"SELECT DISTINCT coalesce({column}, '') FROM items WHERE benchmark_id = ? ORDER BY 1", (first,)
                )
            ]
            assert facets[column] == expected
        assert "only-other" not in facets["category"] and "" in facets["category"]  # None and '' are one value
        for value in facets["category"]:
            f = ItemFilter(category=value)
            listed = [r.id for r in item_query.item_page(ws, first, f, limit=1000)]
            expected = [
                r[0]
                for r in ws.conn.execute(
                    "SELECT id FROM items WHERE benchmark_id = ? AND coalesce(category, '') = ? ORDER BY position, id",
                    (first, value),
                )
            ]
            assert listed == expected and item_query.count_items(ws, first, f) == len(expected)
        assert item_query.facet_values(ws, 999) == {c: [] for c in schema.FACETS}


def test_facets_and_a_facet_filter_never_scan_the_items(tmp_path):
    with open_workspace(tmp_path / "ws.sqlite") as ws:
        bid = _fill(ws, "b", 200, 3)
        statements: list[str] = []
        ws.conn.set_trace_callback(statements.append)
        try:
            item_query.facet_values(ws, bid)
            f = ItemFilter(category="ocr", split="zebra")
            item_query.count_items(ws, bid, f)
            item_query.item_page(ws, bid, f)
        finally:
            ws.conn.set_trace_callback(None)
        selects = [s for s in statements if s.lstrip().upper().startswith(("SELECT", "WITH"))]
        assert len(selects) >= 5
        for sql in selects:
            assert _scans(ws, sql, ()) == [], sql


def test_given_ids_are_read_by_id_not_by_walking_the_benchmark(tmp_path):
    with open_workspace(tmp_path / "ws.sqlite") as ws:
        bid = _fill(ws, "b", 300, 4)
        ids = frozenset(r[0] for r in ws.conn.execute("SELECT id FROM items WHERE position % 7 = 0"))
        f = ItemFilter(only_ids=ids)
        where, params = item_query._where(ws, bid, f)
        plan = " ".join(
            r[-1] for r in ws.conn.execute(f"EXPLAIN QUERY PLAN SELECT count(*) FROM items i WHERE {where}", params)
        )
        assert "INTEGER PRIMARY KEY" in plan and "items_" not in plan
        assert item_query.count_items(ws, bid, f) == len(ids)
        assert item_query.count_items(ws, bid, ItemFilter(exclude_ids=ids)) == 300 - len(ids)


def test_migration_0019_indexes_a_workspace_of_the_schema_before(tmp_path):
    path = tmp_path / "old.sqlite"
    db = Database(sqlite3.connect(path))
    schema.migrations.apply(db, stop_before="0019_item_facets")
    db.execute(f"PRAGMA user_version = {schema.migration_names().index('0019_item_facets')}")
    db.conn.commit()
    db.close()
    with open_workspace(path) as ws:
        assert ws.schema_version() == schema.latest_version()
        names = {r[0] for r in ws.conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
        assert {f"items_{c}" for c in schema.FACETS} <= names
        bid = _fill(ws, "b", 50, 5)
        assert item_query.facet_values(ws, bid)["split"]


def test_a_verdict_does_not_make_the_search_read_every_item_again_but_an_edit_does(tmp_path):
    from annotation import reviews

    with open_workspace(tmp_path / "ws.sqlite") as ws:
        bid = _fill(ws, "b", 50, 6)
        item = ws.conn.execute("SELECT id FROM items WHERE benchmark_id = ? LIMIT 1", (bid,)).fetchone()[0]

        def scans_for_refolding(write) -> bool:
            write()
            statements: list[str] = []
            ws.conn.set_trace_callback(statements.append)
            try:
                found = item_query.count_items(ws, bid, ItemFilter(text="q1"))
            finally:
                ws.conn.set_trace_callback(None)
            assert found >= 1
            return any("vlmdesk_search_refolds" in s for s in statements)

        assert scans_for_refolding(lambda: None)  # the first search asks the items
        assert not scans_for_refolding(lambda: reviews.add_review(ws, item, "ann", "ok"))

        def edit() -> None:
            with ws.db.atomic():
                ws.conn.execute("UPDATE items SET question = 'Ｆｕｌｌ width Q1?' WHERE id = ?", (item,))

        assert scans_for_refolding(edit)
        assert item in {r.id for r in item_query.item_page(ws, bid, ItemFilter(text="full"))}  # found folded

        def remove() -> None:
            with ws.db.atomic():
                ws.conn.execute("DELETE FROM items WHERE id = ?", (item,))

        assert scans_for_refolding(remove)


def _steps_to_add(ws, bid: int, start: int, n: int) -> int:
    with counting_steps(ws.conn) as steps, ws.db.atomic():
        catalog.insert_items(
            ws,
            [
                (bid, k, k, f"Q{k}?", None, json.dumps(["a", "b"]), "A", "c", "l", "s", "en", None, 0, "{}")
                for k in range(start, start + n)
            ],
        )
    return steps.count


def test_adding_items_costs_the_same_whatever_the_benchmark_already_holds(tmp_path):
    """The kept counts ask whether another item shows an item's image by the image's index, never by walking the
    benchmark (with the facet indexes the planner would: an import became quadratic). Counted in SQLite steps."""
    with open_workspace(tmp_path / "ws.sqlite") as ws:
        bid = _fill(ws, "b", 0, 7)
        small = _steps_to_add(ws, bid, 0, 500)  # into 0 items
        _steps_to_add(ws, bid, 500, 5_000)
        large = _steps_to_add(ws, bid, 5_500, 500)  # the same 500, into 5,500 items
        assert large <= 1.5 * small, (small, large)
        plan = " ".join(r[-1] for r in ws.conn.execute("EXPLAIN QUERY PLAN DELETE FROM items WHERE id = 1"))
        assert "SCAN run_item_results" not in plan and "SCAN arena_pairs" not in plan, plan
