"""The item on screen never goes stale (issue 35): passes and verdicts another process stores about the item Browse or
Review shows appear there within 2 s, the selection, the scroll positions and a note being typed as they were; the
check costs the same at any size. A benchmark made in the window (Arena › Live) is in the Benchmarks dock at once."""

from __future__ import annotations

from annotation import reviews
from annotation.live_arena import LIVE_BENCH
from db import catalog, open_workspace, runs
from tests.gui.test_keypress_cost import build
from tests.gui.test_refresh_gui import _vlmdesk
from tests.sqlite_steps import counting_steps
from vlmdesk.cli import main as cli_main


def _runs_shown(tree) -> list[str]:
    return [tree.topLevelItem(i).text(0).split(" · ")[0] for i in range(tree.topLevelItemCount())]


def _new_run(ws, bench_name: str, spec: str) -> int:
    bench = catalog.benchmark_by_name(ws, bench_name)
    return runs.create_run(
        ws,
        benchmark_id=bench.id,
        model_spec=spec,
        strategy="vanilla",
        prompt_template="{}",
        extractor="rules",
        config={},
        config_key=spec,
        versions={},
        git_revision=None,
        seed=0,
    )


def _passes(ws, run_id: int, item_ids) -> None:
    runs.add_predictions(
        ws,
        [runs.Prediction(run_id, i, 0, (0, 1, 2), "p", "A", "A", "A", "rules", None, True, 1.0) for i in item_ids],
    )


def test_a_run_finished_in_a_terminal_shows_in_the_selected_items_predictions(qtbot, demo_ws, make_window):
    for spec in ("baseline:frequent", "baseline:random", "baseline:first"):  # enough runs for the tree to scroll
        assert cli_main(["--workspace", str(demo_ws), "run", "--bench", "demo", "--model", spec, "--seed", "7"]) == 0
    window = make_window(demo_ws)
    window.resize(1024, 700)
    browse = window.view("browse")
    browse.table.selectRow(3)
    chosen, row = browse.item.id, browse.table.currentIndex().row()
    qtbot.waitUntil(lambda: browse.predictions.verticalScrollBar().maximum() > 0)
    bar = browse.predictions.verticalScrollBar()
    bar.setValue(bar.maximum())
    scrolled = bar.value()
    before = _runs_shown(browse.predictions)
    done = _vlmdesk(demo_ws, "run", "--bench", "demo", "--model", "baseline:random", "--seed", "11")
    assert done.returncode == 0, done.stderr
    qtbot.waitUntil(lambda: len(_runs_shown(browse.predictions)) == len(before) + 1, timeout=2000)
    with open_workspace(demo_ws) as ws:
        newest = max(r.id for r in runs.list_runs(ws))
    assert _runs_shown(browse.predictions)[0] == f"run {newest}"  # newest first
    assert browse.item.id == chosen and browse.table.currentIndex().row() == row  # the selection stays
    assert bar.value() == scrolled  # and where the predictions were scrolled to


def test_passes_stored_elsewhere_for_the_shown_item_reload_it_at_a_cost_that_does_not_grow(make_window, tmp_path):
    small, large = tmp_path / "small.sqlite", tmp_path / "large.sqlite"
    build(small, 1_000, 300)
    build(large, 10_000, 3_000)
    measured = {}
    for path in (small, large):
        with open_workspace(path) as other:
            run_id = _new_run(other, "big", "baseline:first")
            ids = [r[0] for r in other.conn.execute("SELECT id FROM items ORDER BY position LIMIT 40")]
            _passes(other, run_id, ids[:5])
        window = make_window(path)
        browse = window.view("browse")
        browse.table.selectRow(20)
        shown = browse.item.id
        assert _runs_shown(browse.predictions) == ["No run has answered this item yet"]
        window._check_for_changes()  # the marks as they are now
        with open_workspace(path) as other:
            _passes(other, run_id, [shown, *ids[30:35]])  # the shown item among others
        with counting_steps(window.ctx.ws.conn, every=10) as steps:
            window._check_for_changes()  # the once-a-second poll, now
        assert _runs_shown(browse.predictions) == [f"run {run_id}"] and browse.item.id == shown
        measured[path.stem] = steps.count
        # Passes of other items only: the item shown is not read again.
        shown_rows: list[int] = []
        browse.predictions.model().modelReset.connect(lambda rows=shown_rows: rows.append(1))
        with open_workspace(path) as other:
            _passes(other, run_id, ids[36:38])
        window._check_for_changes()
        assert shown_rows == []
        window.close()
    assert measured["large"] <= 1.3 * measured["small"], measured


def test_review_shows_a_run_stored_elsewhere_and_keeps_the_note_being_typed(qtbot, demo_ws, make_window):
    window = make_window(demo_ws, advance=False)
    window.show_view("review")
    review = window.view("review")
    review.show_row(2)
    item = review.item
    review.pick(1)
    review.note.setFocus()
    qtbot.keyClicks(review.note, "half a tho")
    before = _runs_shown(review.predictions)
    with open_workspace(demo_ws) as other:  # another process's connection, say a run on a server
        run_id = _new_run(other, "demo", "api:other")
        _passes(other, run_id, [item.id])
        reviews.add_review(other, item.id, "bob", "ok", note="bob-agrees")
    qtbot.waitUntil(lambda: len(_runs_shown(review.predictions)) == len(before) + 1, timeout=2000)
    assert review.history.topLevelItem(0).text(3) == "bob-agrees"
    assert review.item.id == item.id and review.panel.picked == "B"
    assert review.note.text() == "half a tho" and review.note.hasFocus()  # still typing


def test_a_benchmark_made_by_the_live_arena_is_in_the_dock_at_once(qtbot, tmp_path, make_window):
    from evaluator.engine.live import LiveAnswer
    from tests.factories import png_bytes

    path = tmp_path / "live.sqlite"
    with open_workspace(path) as ws:
        from vlmdesk.demo import ensure_demo

        ensure_demo(ws)
    window = make_window(path)
    dock = window.docks["benchmarks"].widget()
    names = [dock.item(r).text().split("\n")[0] for r in range(dock.count())]
    assert LIVE_BENCH not in names
    window.show_view("arena")
    live = window.view("arena").live
    image = tmp_path / "cat.png"
    image.write_bytes(png_bytes())
    assert live.set_image_file(str(image))
    live.asked = (image.read_bytes(), "What colour is it?", 0)
    live.answers = {side: LiveAnswer(f"baseline:{side}", "Red.", 5.0, {}, False) for side in ("left", "right")}
    live._store()  # both answers in: the battle is stored, in this window's connection
    assert live.battle is not None
    names = [dock.item(r).text().split("\n")[0] for r in range(dock.count())]
    assert LIVE_BENCH in names  # no F5, no poll
    assert window.ctx.benchmark.name == "demo"  # the choice in the dock stays
