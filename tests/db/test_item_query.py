"""Browsing queries: full-text search (migration 0005), filters, keyset pages, run results — never image bytes."""
import sqlite3

from sqlite_utils import Database

from db import catalog, item_query, open_workspace, schema
from db.item_query import ItemFilter
from evaluator.importers import import_benchmark
from tests.factories import write_mmbench_tsv
from vlmdesk.demo import demo_dir


def _demo(tmp_path):
    ws = open_workspace(tmp_path / "ws.sqlite")
    import_benchmark(ws, demo_dir() / "demo_mcq.jsonl", fmt="jsonl", name="demo")
    return ws, catalog.benchmark_by_name(ws, "demo")


def _like(ws, bench, word):
    return {r[0] for r in ws.conn.execute(
        "SELECT id FROM items WHERE benchmark_id = ? AND (question LIKE ? OR coalesce(hint,'') LIKE ? "
        "OR options LIKE ?)", (bench.id, f"%{word}%", f"%{word}%", f"%{word}%"))}


def test_search_matches_questions_hints_and_options_and_follows_edits(tmp_path):
    ws, bench = _demo(tmp_path)
    with ws:
        for word in ("cat", "colour", "red"):
            found = {r.id for r in item_query.item_page(ws, bench.id, ItemFilter(text=word), limit=1000)}
            # Prefix search on words: every hit contains the word; LIKE may add substrings inside longer words.
            assert found and found <= _like(ws, bench, word)
        assert item_query.count_items(ws, bench.id, ItemFilter(text="zebraxylophone")) == 0
        item = catalog.list_items(ws, bench.id)[0]
        with ws.db.atomic():
            ws.conn.execute("UPDATE items SET question = 'Which zebraxylophone is shown?' WHERE id = ?", (item.id,))
        assert [r.id for r in item_query.item_page(ws, bench.id, ItemFilter(text="zebraxyl"))] == [item.id]
        with ws.db.atomic():
            ws.conn.execute("DELETE FROM items WHERE id = ?", (item.id,))
        assert item_query.count_items(ws, bench.id, ItemFilter(text="zebraxylophone")) == 0


def test_migration_indexes_rows_that_existed_before_it(tmp_path):
    path = tmp_path / "old.sqlite"
    db = Database(sqlite3.connect(path))
    schema.migrations.apply(db, stop_before="0005_item_search")
    db.execute("INSERT INTO benchmarks (id, name, kind, format, source, source_sha256, rows_read, imported_at) "
               "VALUES (1, 'b', 'mcq', 'jsonl', 's', 'x', 1, 'now')")
    db.execute("INSERT INTO items (benchmark_id, position, source_index, question, hint, options) "
               "VALUES (1, 0, 0, 'Where is the lighthouse?', 'coastal photo', '[\"north\", \"south\"]')")
    db.execute(f"PRAGMA user_version = {len(schema.migrations.applied(db))}")
    db.conn.commit()
    db.close()
    with open_workspace(path) as ws:
        assert ws.schema_version() == schema.latest_version()
        for word in ("lighthouse", "coastal", "south"):
            assert item_query.count_items(ws, 1, ItemFilter(text=word)) == 1


def test_chinese_text_is_searched_by_substring(tmp_path):
    ws, bench = _demo(tmp_path)
    with ws:
        item = catalog.list_items(ws, bench.id)[0]
        with ws.db.atomic():
            ws.conn.execute("UPDATE items SET question = '图中的猫是什么颜色？' WHERE id = ?", (item.id,))
        assert [r.id for r in item_query.item_page(ws, bench.id, ItemFilter(text="猫是"))] == [item.id]


def test_filters_keyset_pages_and_no_image_bytes(tmp_path):
    tsv = write_mmbench_tsv(tmp_path / "b.tsv", 450, circular=False, image_side=16)
    with open_workspace(tmp_path / "ws.sqlite") as ws:
        import_benchmark(ws, tsv, name="gen")
        bench = catalog.benchmark_by_name(ws, "gen")
        statements = []
        ws.conn.set_trace_callback(statements.append)
        pages, after = [], None
        while page := item_query.item_page(ws, bench.id, after=after, limit=100):
            pages.append(page)
            after = (page[-1].position, page[-1].id)
        rows = [r for p in pages for r in p]
        assert [len(p) for p in pages] == [100, 100, 100, 100, 50]
        assert [r.index for r in rows] == list(range(450))
        assert not any("images" in s or "data" in s.split("FROM")[0] for s in statements)
        ws.conn.set_trace_callback(None)
        ocr = ItemFilter(category="ocr")
        assert item_query.count_items(ws, bench.id, ocr) == 75
        assert {r.category for r in item_query.item_page(ws, bench.id, ocr, limit=500)} == {"ocr"}
        some = frozenset(r.id for r in rows[:10])
        assert item_query.count_items(ws, bench.id, ItemFilter(only_ids=some)) == 10
        assert item_query.count_items(ws, bench.id, ItemFilter(exclude_ids=some)) == 440
        assert item_query.facet_values(ws, bench.id)["split"] == ["dev"]


def test_run_result_per_item_agrees_with_circular_scoring(tmp_path):
    from annotation import qc
    from vlmdesk.cli import main

    ws_path = tmp_path / "ws.sqlite"
    ws, bench = _demo(tmp_path)
    ws.close()
    assert main(["--workspace", str(ws_path), "run", "--bench", "demo", "--model", "baseline:first"]) == 0
    assert main(["--workspace", str(ws_path), "run", "--bench", "demo", "--model", "baseline:random",
                 "--strategy", "vanilla"]) == 0
    with open_workspace(ws_path) as ws:
        circular, vanilla = (r.id for r in sorted(item_query.runs_of_benchmark(ws, bench.id), key=lambda r: r.id))
        rows = item_query.item_page(ws, bench.id, ItemFilter(run_id=circular), limit=100)
        truth = qc.circular_correctness(ws, [circular])
        assert {r.id for r in rows if r.run_result == "right"} == {i for i, v in truth.items() if v[circular]}
        assert {r.run_result for r in rows} <= {"right", "wrong"}
        right = item_query.count_items(ws, bench.id, ItemFilter(run_id=circular, run_result="right"))
        assert right == sum(v[circular] for v in truth.values())
        v_rows = item_query.item_page(ws, bench.id, ItemFilter(run_id=vanilla), limit=100)
        pass0 = dict(ws.conn.execute("SELECT item_id, correct FROM predictions WHERE run_id = ? AND pass = 0",
                                     (vanilla,)).fetchall())
        assert {r.id for r in v_rows if r.run_result == "right"} == {i for i, c in pass0.items() if c}
        by_run = item_query.item_predictions(ws, rows[0].id)
        assert [run.id for run, _ in by_run] == [vanilla, circular]
        assert [p.pass_ for p in by_run[1][1]] == sorted(p.pass_ for p in by_run[1][1])
