"""Progress counts and standing verdicts kept by triggers (migrations 0015, 0022, 0023) never drift from a full
recount: after random verdicts, corrections, undos, imports, sync imports and deletions of items and benchmarks, in
any order. A skip is no verdict: the counts of judged items leave out a standing skip (migration 0023)."""

from __future__ import annotations

import random
import shutil
import sqlite3

import pytest
from sqlite_utils import Database

from annotation import browse, item_kinds, reviews, standing, sync
from db import catalog, open_workspace, schema
from evaluator.formats.importers import import_benchmark
from vlmdesk.demo import demo_dir

ANNOTATORS = ("ann", "bob", "cy")


def recount(ws) -> tuple[set, dict, dict]:
    """The standing verdicts by annotation/standing.py's rule over the whole log, and the counts they make."""
    verdicts = {
        (item_id, who, rid): verdict
        for rid, item_id, who, verdict in ws.conn.execute(
            standing.standing_sql(
                standing.REVIEWS, "id, item_id, annotator, verdict", "t.item_id IN (SELECT id FROM items)"
            )
        )
    }
    rule = set(verdicts)
    judged = [key for key, verdict in verdicts.items() if verdict != "skip"]
    per_bench = {
        bid: (n, images, reviewed)
        for bid, n, images, reviewed in ws.conn.execute(
            "SELECT b.id, (SELECT count(*) FROM items i WHERE i.benchmark_id = b.id), "
            "(SELECT count(DISTINCT image_sha256) FROM items i WHERE i.benchmark_id = b.id), "
            "(SELECT count(DISTINCT r.item_id) FROM reviews r JOIN items i ON i.id = r.item_id "
            "WHERE i.benchmark_id = b.id AND r.id IN (SELECT value FROM json_each(?))) FROM benchmarks b",
            (_json([rid for *_, rid in judged]),),
        )
    }
    bench_of = dict(ws.conn.execute("SELECT id, benchmark_id FROM items"))
    mine: dict = {}
    for item_id, who, _ in judged:
        mine[(bench_of[item_id], who)] = mine.get((bench_of[item_id], who), 0) + 1
    return rule, per_bench, mine


def _json(values) -> str:
    import json

    return json.dumps(values)


def kept(ws) -> tuple[set, dict, dict]:
    rows = set(ws.conn.execute("SELECT item_id, annotator, review_id FROM review_standing"))
    per_bench = {
        b: (n, i, r)
        for b, n, i, r in ws.conn.execute("SELECT benchmark_id, items, images, reviewed FROM benchmark_counts")
    }
    for (bid,) in ws.conn.execute("SELECT id FROM benchmarks"):
        per_bench.setdefault(bid, (0, 0, 0))
    mine = {
        (b, a): n for b, a, n in ws.conn.execute("SELECT benchmark_id, annotator, reviewed FROM annotator_counts") if n
    }
    return rows, per_bench, mine


def assert_in_step(ws) -> int:
    """Everything kept equals the recount; returns the conflicts seen."""
    _, per_bench, mine = counted = recount(ws)
    assert kept(ws) == counted
    seen = 0
    for bid, (total, _, reviewed) in per_bench.items():
        for who in ANNOTATORS:
            expected = {"total": total, "reviewed": reviewed, "mine": mine.get((bid, who), 0)}
            assert reviews.progress(ws, bid, who) == expected
        # The conflicts kept equal annotation/browse.py's rule over every standing verdict.
        status = browse.review_status(ws, bid)
        assert set(reviews.conflicts(ws, bid)) == {item for item, s in status.items() if s.conflict}
        seen += len(reviews.conflicts(ws, bid))
    return seen


def _import(ws, n: int) -> int:
    """Benchmark number n: the demo's items, their questions made its own (a file imported twice is one benchmark)."""
    src = demo_dir() / "demo_mcq.jsonl"
    path = ws.path.parent / f"bench{n}.jsonl"
    lines = src.read_text(encoding="utf-8").splitlines()
    path.write_text(
        "".join(line.replace('"question": "', f'"question": "({n}) ', 1) + "\n" for line in lines), encoding="utf-8"
    )
    import_benchmark(ws, path, fmt="jsonl", name=f"demo{n}", images_dir=demo_dir())
    return catalog.benchmark_by_name(ws, f"demo{n}").id


def test_counts_equal_a_full_recount_after_random_operations(tmp_path):
    rnd = random.Random(27)
    path, other = tmp_path / "ws.sqlite", tmp_path / "other.sqlite"
    with open_workspace(path) as ws:
        _import(ws, 0)
    shutil.copy(path, other)
    with open_workspace(path) as ws, open_workspace(other) as elsewhere:
        # The other machine's log: verdicts, undos and corrections on the same items, merged in below.
        far_items = [i.id for i in catalog.list_items(elsewhere, catalog.benchmark_by_name(elsewhere, "demo0").id)]
        for _ in range(40):
            who = rnd.choice(ANNOTATORS)
            if rnd.random() < 0.25:
                reviews.undo_last(elsewhere, who)
            else:
                reviews.add_review(elsewhere, rnd.choice(far_items), who, "ok")
        imported, conflicts = 1, 0
        for step in range(300):
            items = [r[0] for r in ws.conn.execute("SELECT id FROM items")]
            benches = [r[0] for r in ws.conn.execute("SELECT id FROM benchmarks")]
            op = rnd.random()
            who = rnd.choice(ANNOTATORS)
            if op < 0.45 and items:
                verdict = rnd.choice(item_kinds.VERDICTS_BY_KIND["mcq"])
                reviews.add_review(
                    ws,
                    rnd.choice(items),
                    who,
                    verdict,
                    corrected_answer=rnd.choice("AB") if verdict == "wrong_answer" else None,
                )
            elif op < 0.65:
                reviews.undo_last(ws, who, benchmark_id=rnd.choice(benches) if benches and rnd.random() < 0.5 else None)
            elif op < 0.72 and items:
                item = rnd.choice(items)
                reviews.undo_last(ws, who, item_id=item)
            elif op < 0.8 and items:
                with ws.db.atomic():
                    ws.conn.execute("DELETE FROM items WHERE id = ?", (rnd.choice(items),))
            elif op < 0.83 and len(benches) > 1:
                with ws.db.atomic():
                    ws.conn.execute("DELETE FROM benchmarks WHERE id = ?", (rnd.choice(benches),))
            elif op < 0.88:
                _import(ws, imported)
                imported += 1
            elif op < 0.9:
                log = tmp_path / f"log{step}.jsonl"
                sync.export_to_file(sync.export_records(elsewhere, "reviews"), log)
                sync.import_records(ws, log, "reviews", skip_bad=True)  # items deleted here are skipped
            if step % 10 == 0:
                conflicts += assert_in_step(ws)
        assert_in_step(ws)
        assert conflicts > 0
        assert ws.conn.execute("SELECT count(*) FROM review_standing").fetchone()[0] > 10  # it was exercised


def test_the_migration_derives_the_counts_of_an_older_workspace(tmp_path):
    path = tmp_path / "old.sqlite"
    with open_workspace(path) as ws:
        bid = _import(ws, 0)
        items = [i.id for i in catalog.list_items(ws, bid)]
        reviews.add_review(ws, items[0], "ann", "ok")
        reviews.add_review(ws, items[0], "bob", "ambiguous")
        reviews.add_review(ws, items[0], "cy", "skip")
        reviews.add_review(ws, items[1], "ann", "ambiguous")
        reviews.undo_last(ws, "ann")
        expected = kept(ws)
    db = Database(str(path))
    for name in ("review_standing", "review_conflicts", "benchmark_counts", "annotator_counts"):
        db.execute(f"DROP TABLE {name}")
    for trigger in ("items_count_ai", "items_count_ad", "items_stay", "reviews_standing_ai", "reviews_standing_ad"):
        db.execute(f"DROP TRIGGER IF EXISTS {trigger}")
    db.execute("DROP INDEX adjudication_items_question")
    # 0023 replaced 0015's triggers on review_standing (gone with the table): it runs again after 0015.
    db.execute("DROP TRIGGER reviews_fit_the_item")
    db.execute("DELETE FROM _sqlite_migrations WHERE name IN ('0015_counts', '0023_verdicts_that_fit')")
    db.execute(f"PRAGMA user_version = {schema.migration_names().index('0015_counts')}")
    db.conn.commit()
    db.close()
    with open_workspace(path) as ws:
        assert kept(ws) == expected == recount(ws)
        assert set(reviews.conflicts(ws, bid)) == {items[0]}  # ann's ok against bob's ambiguous

        assert reviews.progress(ws, bid, "ann") == {"total": len(items), "reviewed": 1, "mine": 1}


def test_migration_0023_keeps_the_stored_log_and_counts_judged_items_only(tmp_path):
    """A workspace of the previous vlmdesk: verdicts that do not fit their item ("wrong key → C" on a yes/no item, a
    wrong key without its letter) and skips. The upgrade rewrites none of them (the log is evidence), counts items
    only skipped as not judged, and refuses such rows from then on."""
    path = tmp_path / "old.sqlite"
    db = Database(str(path))
    schema.migrations.apply(db, stop_before="0023_verdicts_that_fit")
    db.execute(f"PRAGMA user_version = {len(schema.migrations.applied(db))}")
    for bid, kind in ((1, "mcq"), (2, "yesno"), (3, "open")):
        db.execute(
            "INSERT INTO benchmarks (id, name, kind, format, source, source_sha256, rows_read, imported_at) "
            "VALUES (?, ?, ?, 'jsonl', 'x', ?, 2, '2026-01-01')",
            (bid, kind, kind, kind),
        )
        for n in (1, 2):
            db.execute(
                "INSERT INTO items (id, benchmark_id, position, source_index, question, options) VALUES (?, ?, ?, ?, "
                "'Q?', ?)",
                (10 * bid + n, bid, n, n, '["x", "y"]' if kind == "mcq" else "[]"),
            )
    log = [  # item, annotator, verdict, corrected answer
        (11, "ann", "wrong_answer", None),
        (12, "ann", "skip", None),
        (21, "ann", "wrong_answer", "C"),
        (21, "bob", "skip", None),
        (22, "bob", "skip", None),
        (31, "ann", "ok", None),
        (31, "bob", "skip", None),
    ]
    db.conn.executemany(
        "INSERT INTO reviews (item_id, annotator, verdict, corrected_answer, created_at) VALUES (?, ?, ?, ?, ?)",
        [(*row, f"2026-01-01T00:00:0{n}.000+00:00") for n, row in enumerate(log)],
    )
    db.conn.commit()
    stored = db.execute("SELECT * FROM reviews ORDER BY id").fetchall()
    assert db.execute("SELECT reviewed FROM benchmark_counts ORDER BY benchmark_id").fetchall() == [(2,), (2,), (1,)]
    db.close()
    with open_workspace(path) as ws:
        assert ws.schema_version() == schema.latest_version()
        assert ws.conn.execute("SELECT * FROM reviews ORDER BY id").fetchall() == stored  # nothing rewritten
        assert kept(ws) == recount(ws)
        assert [reviews.progress(ws, b, "ann") for b in (1, 2, 3)] == [
            {"total": 2, "reviewed": 1, "mine": 1},
            {"total": 2, "reviewed": 1, "mine": 1},  # 21 by ann's (old) wrong key; 22 only skipped
            {"total": 2, "reviewed": 1, "mine": 1},
        ]
        assert reviews.progress(ws, 2, "bob")["mine"] == 0
        # The old misfits still stand (a person withdraws or corrects them), and nothing new that misfits gets in.
        assert {(r.item_id, r.verdict) for r in reviews.standing_reviews(ws, annotator="ann")} >= {(21, "wrong_answer")}
        for item, verdict, answer in ((21, "wrong_answer", "C"), (11, "incomplete", None), (11, "wrong_answer", None)):
            with pytest.raises(sqlite3.IntegrityError, match="^reviews: "):
                ws.conn.execute(
                    "INSERT INTO reviews (item_id, annotator, verdict, corrected_answer, created_at) "
                    "VALUES (?, 'ann', ?, ?, 'x')",
                    (item, verdict, answer),
                )
        withdrawn = reviews.undo_last(ws, "ann", item_id=21)
        assert withdrawn is not None and withdrawn.corrected_answer == "C"
        assert reviews.progress(ws, 2, "ann") == {"total": 2, "reviewed": 0, "mine": 0}
        assert kept(ws) == recount(ws)
