"""Never stale: what another process or connection writes while the window is open shows within 2 s with no user
action (the window polls PRAGMA data_version), keeping selection; hidden tabs catch up when shown; F5 on demand."""

import os
import subprocess
import sys
from pathlib import Path

from PySide6.QtCore import Qt

from annotation import reviews
from db import catalog, open_workspace

ROOT = Path(__file__).resolve().parents[2]


def _vlmdesk(path, *args):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run(
        [sys.executable, "-m", "vlmdesk", "--workspace", str(path), *args],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_a_run_finished_in_a_terminal_shows_in_runs_browse_and_results(qtbot, demo_ws, make_window):
    window = make_window(demo_ws)
    browse = window.view("browse")
    browse.table.selectRow(4)
    chosen = browse.item.id
    window.show_view("runs")
    runs = window.view("runs")
    before = set(runs.runs.summaries)
    done = _vlmdesk(demo_ws, "run", "--bench", "demo", "--model", "baseline:random", "--json")
    assert done.returncode == 0, done.stderr
    qtbot.waitUntil(lambda: len(runs.runs.summaries) == len(before) + 1, timeout=2000)
    new = (set(runs.runs.summaries) - before).pop()
    assert runs.runs.summary(new).status == "finished"
    assert runs.form.bench.findData("demo") >= 0
    # Browse was hidden: it shows the new run in its run filter when shown, with the same item selected.
    window.show_view("browse")
    assert browse.run.findData(new) >= 0 and browse.item.id == chosen
    window.show_view("results")  # hidden, it computed nothing; shown, it lists and computes the figures
    results = window.view("results").runs
    qtbot.waitUntil(lambda: not results.computing, timeout=5000)
    assert new in results.summaries


def test_verdicts_written_by_another_connection_show_in_review_and_queues(qtbot, demo_ws, make_window):
    window = make_window(demo_ws, advance=False)
    window.show_view("review")
    review = window.view("review")
    item = review.item
    review.pick(1)
    with open_workspace(demo_ws) as ws:  # another window on the same file, say
        reviews.add_review(ws, item.id, "bob", "ambiguous", note="bob-was-here")
    qtbot.waitUntil(
        lambda: review.history.topLevelItemCount() == 1 and review.history.topLevelItem(0).text(3) == "bob-was-here",
        timeout=2000,
    )
    assert review.item.id == item.id and review.panel.picked == "B"  # the pick survives the refresh
    window.show_view("queues")
    queues = window.view("queues")
    queues.select("conflicts")
    assert "0 left" in queues.conflicts.left.text()
    with open_workspace(demo_ws) as ws:
        reviews.add_review(ws, item.id, "eve", "ok")
    qtbot.waitUntil(lambda: queues.list.item(2).text().endswith("1 left"), timeout=2000)
    assert queues.conflicts.item.id == item.id and "1 left" in queues.conflicts.left.text()


def test_a_benchmark_imported_elsewhere_appears_in_the_dock_and_f5_refreshes(qtbot, tmp_path, demo_ws, make_window):
    from tests.factories import write_mmbench_tsv

    window = make_window(demo_ws)
    dock = window.docks["benchmarks"].widget()
    assert dock.count() == 3
    tsv = write_mmbench_tsv(tmp_path / "MMBench_tiny.tsv", 3)
    assert _vlmdesk(demo_ws, "import", str(tsv), "--name", "tiny").returncode == 0
    qtbot.waitUntil(lambda: dock.count() == 4, timeout=2000)
    assert window.ctx.benchmark.name == "demo" and dock.currentItem().data(Qt.UserRole) == "demo"
    # F5 without a change elsewhere: the visible view is reloaded in place.
    window.show_view("browse")
    browse = window.view("browse")
    browse.table.selectRow(7)
    chosen = browse.item.id
    with open_workspace(demo_ws) as ws:
        bench = catalog.benchmark_by_name(ws, "demo")
    window.ws.conn.execute(
        "INSERT INTO reviews (item_id, annotator, verdict, created_at, uuid) "
        "VALUES (?, 'zed', 'ok', '2026-01-01T00:00:00.000Z', 'f5-test')",
        (chosen,),
    )
    window.ws.conn.commit()  # the window's own connection: data_version does not move, F5 is the way
    assert chosen not in window.ctx.model.status
    qtbot.keyClick(window, Qt.Key_F5)
    assert window.ctx.model.status[chosen].label.startswith("ok") and browse.item.id == chosen
    assert window.ctx.benchmark.id == bench.id


def test_the_item_being_read_stays_when_a_refresh_drops_it_from_the_filtered_listing(qtbot, demo_ws, make_window):
    window = make_window(demo_ws, advance=False)
    browse = window.view("browse")
    browse.select_combo(browse.review, "unreviewed")
    window.show_view("review")
    review = window.view("review")
    review.show_row(3)
    item = review.item
    with open_workspace(demo_ws) as ws:
        reviews.add_review(ws, item.id, "bob", "ok", note="bob-read-it")
    qtbot.waitUntil(lambda: window.ctx.model.row_of(item.id) is None, timeout=2000)
    qtbot.waitUntil(lambda: review.history.topLevelItemCount() == 1, timeout=2000)
    assert review.item.id == item.id and review.history.topLevelItem(0).text(3) == "bob-read-it"
    qtbot.keyClick(window, Qt.Key_O)  # and it can still be judged
    with open_workspace(demo_ws) as ws:
        assert [(r.item_id, r.verdict) for r in reviews.standing_reviews(ws, annotator="ann")] == [(item.id, "ok")]


def test_a_reviews_import_in_a_terminal_shows_in_review_within_two_seconds(qtbot, tmp_path, demo_ws, make_window):
    import shutil

    other = tmp_path / "other.sqlite"
    shutil.copy(demo_ws, other)
    with open_workspace(other) as ws:
        first = catalog.list_items(ws, catalog.benchmark_by_name(ws, "demo").id)[0]
        reviews.add_review(ws, first.id, "kim", "bad_image", note="kim-from-elsewhere")
    exported = tmp_path / "kim.jsonl"
    assert _vlmdesk(other, "reviews", "export", "--out", str(exported)).returncode == 0
    window = make_window(demo_ws)
    window.show_view("review")
    review = window.view("review")
    assert review.item.id == first.id and review.history.topLevelItem(0).text(1) == ""
    done = _vlmdesk(demo_ws, "reviews", "import", str(exported))
    assert done.returncode == 0, done.stderr
    qtbot.waitUntil(lambda: review.history.topLevelItem(0).text(3) == "kim-from-elsewhere", timeout=2000)
    assert window.ctx.model.status[first.id].label == "bad image"
