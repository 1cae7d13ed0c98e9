"""Progress counts and standing verdicts kept by triggers (migration 0015) never drift from a full recount: after
random verdicts, corrections, undos, imports, sync imports and deletions of items and benchmarks, in any order."""

from __future__ import annotations

import random
import shutil

from sqlite_utils import Database

from annotation import browse, reviews, standing, sync
from db import catalog, open_workspace, schema
from evaluator.formats.importers import import_benchmark
from vlmdesk.demo import demo_dir

ANNOTATORS = ("ann", "bob", "cy")


def recount(ws) -> tuple[set, dict, dict]:
    """The standing verdicts by annotation/standing.py's rule over the whole log, and the counts they make."""
    rule = {
        (item_id, who, rid)
        for rid, item_id, who in ws.conn.execute(
            standing.standing_sql(standing.REVIEWS, "id, item_id, annotator", "t.item_id IN (SELECT id FROM items)")
        )
    }
    per_bench = {
        bid: (n, images, reviewed)
        for bid, n, images, reviewed in ws.conn.execute(
            "SELECT b.id, (SELECT count(*) FROM items i WHERE i.benchmark_id = b.id), "
            "(SELECT count(DISTINCT image_sha256) FROM items i WHERE i.benchmark_id = b.id), "
            "(SELECT count(DISTINCT r.item_id) FROM reviews r JOIN items i ON i.id = r.item_id "
            "WHERE i.benchmark_id = b.id AND r.id IN (SELECT value FROM json_each(?))) FROM benchmarks b",
            (_json([rid for *_, rid in rule]),),
        )
    }
    bench_of = dict(ws.conn.execute("SELECT id, benchmark_id FROM items"))
    mine: dict = {}
    for item_id, who, _ in rule:
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
                verdict = rnd.choice(reviews.VERDICTS)
                reviews.add_review(
                    ws,
                    rnd.choice(items),
                    who,
                    verdict,
                    corrected_answer=rnd.choice("BC") if verdict == "wrong_answer" else None,
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
    db.execute("DELETE FROM _sqlite_migrations WHERE name = '0015_counts'")
    db.execute(f"PRAGMA user_version = {schema.migration_names().index('0015_counts')}")
    db.conn.commit()
    db.close()
    with open_workspace(path) as ws:
        assert kept(ws) == expected == recount(ws)
        assert set(reviews.conflicts(ws, bid)) == {items[0]}  # ann's ok against bob's ambiguous

        assert reviews.progress(ws, bid, "ann") == {"total": len(items), "reviewed": 1, "mine": 1}
