"""An empty queue's next steps (issue 35): when nothing of the shown benchmark or set is left for me, Conflicts,
Extractor adjudication and Quality control count the work left for me elsewhere. That count costs the same SQLite
work (virtual-machine steps, tests/sqlite_steps.py) whatever is stored: the shown benchmark's or set's items and
everyone's verdicts, labels and decisions on them, and the other benchmark's items and verdicts. It may grow with
the number of benchmarks or sets, and with the work waiting elsewhere (that is what it counts); both stay fixed
here."""

from __future__ import annotations

import json

import pytest

from db import catalog, open_workspace
from db.catalog import now_iso
from tests.sqlite_steps import counting_steps

SIZES = {"small": 100, "large": 2_000}


def _bench(ws, name: str, n: int) -> list[int]:
    """A benchmark of n items (no images); their ids in order."""
    bid = catalog.insert_benchmark(
        ws, name=name, kind="mcq", format="jsonl", source="generated", source_sha256=name, meta={}
    )
    rows = [
        (bid, k, k, f"Question {k}?", None, json.dumps(["a", "b", "c"]), "A", "cat", "l2", "dev", "en", None, 0, "{}")
        for k in range(n)
    ]
    catalog.insert_items(ws, rows)
    catalog.finish_benchmark(ws, bid, rows_read=n, rows_folded=0, rows_skipped=0)
    return [r[0] for r in ws.conn.execute("SELECT id FROM items WHERE benchmark_id = ? ORDER BY position", (bid,))]


def _reviews(ws, rows) -> None:
    ws.conn.executemany(
        "INSERT INTO reviews (item_id, annotator, verdict, created_at) VALUES (?, ?, ?, ?)",
        [(*row, now_iso()) for row in rows],
    )


def _conflicts(path, n: int) -> None:
    """'done': n conflicts (bob and eve differ), each settled by ann after them. 'other': n items, bob and eve agree
    on each, but on two (the conflicts left for ann)."""
    with open_workspace(path) as ws, ws.db.atomic():
        done, other = _bench(ws, "done", n), _bench(ws, "other", n)
        _reviews(ws, [(i, who, v) for i in done for who, v in (("bob", "ok"), ("eve", "ambiguous"), ("ann", "ok"))])
        _reviews(ws, [(i, who, v) for i in other for who, v in (("bob", "ok"), ("eve", "ok"))])
        _reviews(ws, [(i, "eve", "ambiguous") for i in other[:2]])


def _sets(path, n: int) -> None:
    """Benchmark 'done' of n items. Set 'done-set': n responses, each labelled by ann and bob. Set 'other-set': 5
    responses, 2 labelled by ann."""
    with open_workspace(path) as ws, ws.db.atomic():
        _bench(ws, "done", n)
        for name, size, labelled in (("done-set", n, n), ("other-set", 5, 2)):
            set_id = ws.conn.execute(
                "INSERT INTO adjudication_sets (name, run_ids, extractors, sample_size, seed, created_at) "
                "VALUES (?, '[]', '[]', ?, 0, ?)",
                (name, size, now_iso()),
            ).lastrowid
            ws.conn.executemany(
                "INSERT INTO adjudication_items (set_id, position, response_key, question, options, response, why, "
                "sources) VALUES (?, ?, ?, ?, ?, ?, 'sample', '[]')",
                [
                    (set_id, k, f"{name}-{k}", f"Question {k}?", json.dumps({"A": "a", "B": "b"}), f"Response {k}")
                    for k in range(size)
                ],
            )
            ids = [r[0] for r in ws.conn.execute("SELECT id FROM adjudication_items WHERE set_id = ?", (set_id,))]
            ws.conn.executemany(
                "INSERT INTO labels (item_id, annotator, choice, created_at) VALUES (?, ?, 'A', ?)",
                [(i, who, now_iso()) for i in ids[:labelled] for who in ("ann", "bob")],
            )


def _flags(path, n: int) -> None:
    """'done': n consensus flags, each decided by ann and by bob. 'other': n items, 3 flags, 1 decided by ann."""
    with open_workspace(path) as ws, ws.db.atomic():
        for name, flags, decided in (("done", n, n), ("other", 3, 1)):
            items = _bench(ws, name, n)
            bid = catalog.benchmark_by_name(ws, name).id
            stage_run = ws.conn.execute(
                "INSERT INTO qc_stage_runs (benchmark_id, stage, run_ids, items_evaluated, candidates, created_at) "
                "VALUES (?, 'consensus', '[]', ?, ?, ?)",
                (bid, n, flags, now_iso()),
            ).lastrowid
            ws.conn.executemany(
                "INSERT INTO qc_flags (benchmark_id, item_id, stage, stage_run_id, run_ids, correct_run_ids, "
                "flagged_at, updated_at) VALUES (?, ?, 'consensus', ?, '[1]', '[]', ?, ?)",
                [(bid, i, stage_run, now_iso(), now_iso()) for i in items[:flags]],
            )
            ws.conn.executemany(
                "INSERT INTO qc_decisions (item_id, stage, annotator, decision, reason, created_at) "
                "VALUES (?, 'consensus', ?, ?, ?, ?)",
                [
                    (i, who, decision, reason, now_iso())
                    for i in items[:decided]
                    for who, decision, reason in (("ann", "reject", None), ("bob", "confirm", "ambiguous"))
                ],
            )


def _measured(make_window, tmp_path, build, open_page, expected: str) -> dict[str, int]:
    """The steps of the page's next steps (its count of the work elsewhere) at each size; the text it shows checked."""
    measured = {}
    for size, n in SIZES.items():
        path = tmp_path / f"{size}.sqlite"
        build(path, n)
        window = make_window(path)
        page, show_next_steps = open_page(window)
        assert expected in getattr(page, "done_text", page.empty.text).text()  # Conflicts says it in its EmptyState
        # Every instruction counted: at every=10 the count moved by one between runs (where the handler's count
        # starts is not the block's), and a difference of one would be lost in that.
        with counting_steps(window.ctx.ws.conn, every=1) as steps:
            show_next_steps()
        measured[size] = steps.count
        window.close()
    return measured


def _queues(window, name: str):
    window.select_benchmark("done")
    window.show_view("queues")
    queues = window.view("queues")
    queues.select(name)
    return queues.page(name)


@pytest.mark.parametrize("queue", ["conflicts", "adjudication", "qc"])
def test_an_empty_queue_counts_the_work_elsewhere_at_a_cost_that_does_not_grow(make_window, tmp_path, queue):
    if queue == "conflicts":

        def open_page(window):
            page = _queues(window, "conflicts")
            assert page.item is None
            return page, lambda: page._show_empty(window.ctx.benchmark)

        measured = _measured(make_window, tmp_path, _conflicts, open_page, "Conflicts wait for you in other (2)")
    elif queue == "adjudication":

        def open_page(window):
            page = _queues(window, "adjudication")
            assert page.set_combo.currentData() == "done-set" and page.task is None
            return page, lambda: page._show_next_steps("done-set")

        measured = _measured(make_window, tmp_path, _sets, open_page, "set other-set (3 left)")
    else:

        def open_page(window):
            page = _queues(window, "qc")
            assert page.candidate is None and page.area.currentIndex() == 1
            return page, lambda: page._show_next_steps("done")

        measured = _measured(make_window, tmp_path, _flags, open_page, "Flags wait for you on other (2 left)")
    assert measured["large"] == measured["small"], measured
