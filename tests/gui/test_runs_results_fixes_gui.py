"""The Runs and Results fixes of issue 18: seed and "run again" in the launch form, queue entries named apart from
runs, the Messages pane following a cancel, partial and text-only runs marked, the Results item list following the
selected run, chart bars with values, tooltips and a highlight; and the small ones (Search's count, the help
overlay's groups, what Undo names, POPE's Yes/No cards)."""

from PySide6.QtCore import Qt

from db import open_workspace, runs
from gui.run_queue import RunJob
from gui.runs_list import PARTIAL_MARK, TEXT_ONLY_MARK
from gui.shortcuts import help_rows
from tests.backend_plugins import slow_backend  # noqa: F401 (fixture)
from vlmdesk.cli import main as cli_main

WAIT = 120_000


def _start(window, qtbot, **choice):
    view = window.view("runs")
    window.show_view("runs")
    view.form.set_choice(**choice)
    qtbot.mouseClick(view.form.start, Qt.LeftButton)
    job = view.queue.jobs[-1]
    qtbot.waitUntil(lambda: job.state not in (RunJob.QUEUED, RunJob.RUNNING), timeout=WAIT)
    return view, job


def test_run_again_and_seed_from_the_form_store_a_second_run(qtbot, demo_ws, make_window):
    window = make_window(demo_ws)
    # The fixture's baseline:first run is finished: the same settings only point at it...
    view, job = _start(window, qtbot, bench="demo", model="baseline:first", again=False)
    assert job.state == RunJob.FINISHED and job.run_id == 1
    assert "Queue #1 → run 1" in view.jobs.item(0).text()  # a queue number is never shown as a run id
    # ... and "Run again" (--new) with a seed stores a new run, the seed with it.
    view, job = _start(window, qtbot, bench="demo", model="baseline:random", seed=7, again=True)
    assert "--seed 7" in view.form.command.toPlainText() and "--new" in view.form.command.toPlainText()
    assert job.state == RunJob.FINISHED, job.stderr
    view, again = _start(window, qtbot, bench="demo", model="baseline:random", seed=7, again=True)
    assert again.state == RunJob.FINISHED and again.run_id != job.run_id
    with open_workspace(demo_ws) as ws:
        stored = {r.id: r for r in runs.list_runs(ws)}
    assert stored[job.run_id].seed == stored[again.run_id].seed == 7
    assert view.card.title.text().startswith("✓ Queue #3 → Run")
    assert view.log_title.text() == "Messages · Queue #3"


def test_a_cancelled_job_shows_in_the_messages_pane_without_an_eta(qtbot, demo_ws, make_window, slow_backend):
    window = make_window(demo_ws)
    view = window.view("runs")
    window.show_view("runs")
    view.form.set_choice(bench="demo", model="slow:random?delay_ms=150", batch=2, again=True)
    qtbot.mouseClick(view.form.start, Qt.LeftButton)
    job = view.queue.jobs[-1]
    qtbot.waitUntil(lambda: "calls_per_s" in job.progress, timeout=WAIT)
    view.jobs.setCurrentRow(-1)  # the annotator looked elsewhere
    qtbot.mouseClick(view.card.cancel, Qt.LeftButton)
    qtbot.waitUntil(lambda: job.state == RunJob.CANCELLED, timeout=WAIT)
    assert view.log_title.text() == f"Messages · {job.name}"
    assert "[cancelled]" in view.log.toPlainText()
    assert "ETA" not in view.card.stats.text()
    # The interrupted run's figures are marked partial in the runs list.
    qtbot.waitUntil(lambda: not view.runs.computing, timeout=WAIT)
    row = view.runs.model.payloads.index(job.run_id)
    assert view.runs.model.rows[row][1] == "interrupted"
    assert any(str(cell).endswith(PARTIAL_MARK) for cell in view.runs.model.rows[row][5:8])


def test_text_only_runs_are_marked_and_the_item_list_follows_the_run(qtbot, demo_ws, make_window):
    cli = ["--workspace", str(demo_ws), "run", "--bench"]
    assert cli_main([*cli, "demo", "--model", "baseline:random", "--text-only"]) == 0
    window = make_window(demo_ws)
    view = window.view("runs")
    window.show_view("runs")  # listed when shown
    models = dict(zip(view.runs.model.payloads, (row[2] for row in view.runs.model.rows)))
    assert models[2].endswith(TEXT_ONLY_MARK) and not models[1].endswith(TEXT_ONLY_MARK)

    results = window.view("results")
    window.show_results([1, 2])
    qtbot.waitUntil(lambda: not results.computing, timeout=WAIT)  # the reports come from the worker
    bars = results.chart.bars()
    assert bars and all(bar.get_height() >= 0 for bar in bars)
    # Every bar carries its value (text artists next to the bars), and the clicked one is outlined.
    texts = [t for t in results.chart.figure.axes[0].texts if t.get_text().isdigit()]
    assert len(texts) == len(bars)
    target = {k: str(v) for k, v in {"run": 1, "level": "all", "strategy": "circular"}.items()}
    results.show_items_of(target)
    qtbot.waitUntil(lambda: not results.items_computing, timeout=WAIT)
    assert results.items.rows and results.items_title.text().startswith("Run 1")
    outlined = [b for b in results.chart.bars() if b.get_linewidth() > 0]
    assert len(outlined) == 1 and outlined[0].get_gid().endswith("strategy=circular")
    assert results._describe_bar(target).startswith("run 1 · baseline:first")
    # Choosing another run alone: the list no longer shows run 1's items under run 2's chart.
    window.show_results([2])
    assert results.items.rows == [] and results.target is None


def test_small_fixes_search_count_help_groups_undo_names_pope_cards(qtbot, demo_ws, make_window):
    groups = [g for g, _, _ in help_rows()]
    headings = [g for n, g in enumerate(groups) if n == 0 or groups[n - 1] != g]  # what the overlay titles
    assert len(headings) == len(set(headings)) and "Verdicts" in headings

    window = make_window(demo_ws)
    browse = window.view("browse")
    window.show_view("browse")
    browse.search.setText("shuttle")
    qtbot.waitUntil(lambda: window.ctx.model.total == 1, timeout=10_000)
    qtbot.waitUntil(lambda: browse.count.text() == "1 item")

    review = window.view("review")
    window.show_view("review")
    qtbot.keyClick(review, Qt.Key_O)
    qtbot.waitUntil(lambda: "Saved" in review.saved.text())
    qtbot.keyClick(review, Qt.Key_Z, Qt.ControlModifier)
    qtbot.waitUntil(lambda: "Withdrawn" in review.saved.text())
    notes = [review.history.topLevelItem(i).text(3) for i in range(review.history.topLevelItemCount())]
    assert any(n.startswith("withdraws ok of ") for n in notes), notes
    assert not any("review " in n for n in notes)

    window.select_benchmark("demo-pope")
    window.show_view("review")
    qtbot.waitUntil(lambda: review.item is not None and not review.item.options)
    cards = review.panel.rows
    assert [c.letter for c in cards] == ["yes", "no"] and all(c.isVisible() for c in cards)
    assert [c.letter for c in cards if c.is_key] == [review.item.answer]


def test_s_on_conflicts_moves_on_without_saving_and_blind_qc_flags_say_nothing(qtbot, demo_ws, make_window):
    from annotation import reviews
    from db import catalog

    with open_workspace(demo_ws) as ws:
        items = catalog.list_items(ws, catalog.benchmark_by_name(ws, "demo").id)[:2]
        for item in items:
            reviews.add_review(ws, item.id, "ana", "ok")
            reviews.add_review(ws, item.id, "ben", "ambiguous")
    assert cli_main(["--workspace", str(demo_ws), "qc", "consensus", "--bench", "demo", "--run", "1"]) == 0
    window = make_window(demo_ws, blind=True)
    queues = window.view("queues")
    window.show_view("queues")
    queues.select("qc")
    flag = queues.qc.flag.text()
    assert "hidden in blind mode" in flag and "runs 1" not in flag and "flawed" not in flag
    queues.select("conflicts")
    page = queues.conflicts
    qtbot.waitUntil(lambda: page.item is not None)
    first = page.item.id
    qtbot.keyClick(page, Qt.Key_S)
    assert page.item.id != first and "nothing saved" in page.saved.text()
    assert page.remaining() == 2
    with open_workspace(demo_ws) as ws:
        assert ws.conn.execute("SELECT count(*) FROM reviews WHERE annotator = 'ann'").fetchone()[0] == 0
