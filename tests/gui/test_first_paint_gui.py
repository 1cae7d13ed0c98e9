"""The first window does not grow with the stored runs (issue 34): a tab out of sight computes no run figures, and a
shown runs list says "computing…" until a worker has computed its figures, which then replace it; results of a
reload that came later are never overwritten by an earlier one's."""

import dataclasses
import sqlite3
import threading

from PySide6.QtWidgets import QApplication

from db import open_workspace
from evaluator.analysis import report
from gui import runs_list
from gui.runs_list import COMPUTING, pct, score
from tests.gui.test_dashboard_gui import three_runs  # noqa: F401 (fixture)
from vlmdesk.cli import main as cli_main


def _runs_workspace(path, items: int, runs: int = 3, passes_per_item: int = 4):
    """`runs` CircularEval runs over one benchmark of `items` four-option items, each item's first
    `passes_per_item` passes stored (bulk SQL, as bench/gui_bench.py builds its workspaces)."""
    with open_workspace(path) as ws, ws.db.atomic():
        ws.conn.execute(
            "INSERT INTO benchmarks (name, kind, format, source, source_sha256, rows_read, imported_at, meta) "
            "VALUES ('b', 'mcq', 'jsonl', 'x', 'x', 0, 'now', '{}')"
        )
        ws.conn.execute(
            "WITH RECURSIVE n(k) AS (SELECT 0 UNION ALL SELECT k + 1 FROM n WHERE k + 1 < ?) "
            "INSERT INTO items (benchmark_id, position, source_index, question, options, answer, category, "
            "l2_category) SELECT 1, k, k, 'Q' || k, '[\"a\", \"b\", \"c\", \"d\"]', 'A', 'c' || (k % 3), 'l2' FROM n",
            (items,),
        )
        for r in range(runs):
            run_id = ws.conn.execute(
                "INSERT INTO runs (benchmark_id, model_spec, strategy, prompt_template, extractor, config_key, "
                "status, created_at, updated_at, finished_at) VALUES (1, ?, 'circular', '{}', 'rules', ?, "
                "'finished', 'now', 'now', 'now')",
                (f"baseline:m{r}", f"k{r}"),
            ).lastrowid
            ws.conn.execute(
                "WITH RECURSIVE k(pass) AS (SELECT 0 UNION ALL SELECT pass + 1 FROM k WHERE pass + 1 < ?) "
                "INSERT INTO predictions (run_id, item_id, pass, option_order, prompt, response, answer, choice, "
                "stage, correct, created_at) SELECT ?, i.id, k.pass, '[0, 1, 2, 3]', 'p', 'A', 'A', 'A', 'rules', "
                "i.id % 4 != 0, 'now' FROM items i, k",
                (passes_per_item, run_id),
            )
    return path


def _window_steps(make_window, monkeypatch, path) -> int:
    """SQLite VM steps of opening and showing the window on `path` (its own connection), in hundreds."""
    import gui.main_window as main_window

    steps = [0]

    def counting(*args, **kwargs):
        ws = open_workspace(*args, **kwargs)

        def count() -> int:
            steps[0] += 1
            return 0

        ws.conn.set_progress_handler(count, 100)
        return ws

    monkeypatch.setattr(main_window, "open_workspace", counting)
    window = make_window(path)
    window.ws.conn.set_progress_handler(None, 0)
    return steps[0]


def test_opening_the_window_computes_no_run_figures_and_does_not_grow_with_the_passes(
    qtbot, tmp_path, make_window, monkeypatch
):
    computed = []
    import gui.dashboard_view as dashboard_view
    import gui.desiderata_view as desiderata_view
    import gui.groups_view as groups_view

    for module, name in (
        (runs_list, "run_summary"),
        (report, "run_report"),
        (dashboard_view, "run_report"),
        (desiderata_view, "desiderata_report"),
        (groups_view, "groups_report"),
    ):
        real = getattr(module, name)
        monkeypatch.setattr(module, name, lambda *a, real=real, **k: computed.append(a[1:]) or real(*a, **k))
    # Runs of 1,000 and 10,000 passes; Browse's first page (200 items) and the item shown are the same in both.
    small = _window_steps(make_window, monkeypatch, _runs_workspace(tmp_path / "small.sqlite", 250))
    large = _window_steps(make_window, monkeypatch, _runs_workspace(tmp_path / "large.sqlite", 2500))
    assert computed == []  # Browse is shown: the Runs, Results and Desiderata lists computed nothing
    assert small > 0 and large <= small * 1.05, (small, large)


class _Held:
    """run_summary held at a gate, so that the "computing…" state can be seen before the figures arrive."""

    def __init__(self, monkeypatch):
        self.gate = threading.Event()
        real = runs_list.run_summary

        def held(ws, run_id):
            self.gate.wait(30)
            return real(ws, run_id)

        monkeypatch.setattr(runs_list, "run_summary", held)


def _expected(path) -> dict:
    with open_workspace(path) as ws:
        return {r: report.run_summary(ws, r) for r in (1, 2, 3, 4)}


def test_the_runs_tab_says_computing_then_draws_the_figures(qtbot, three_runs, make_window, monkeypatch):  # noqa: F811
    held = _Held(monkeypatch)
    window = make_window(three_runs)
    view = window.view("runs").runs
    window.show_view("runs")
    columns = view.model.columns
    figures = [columns.index(c) for c in ("Vanilla", "Circular", "POPE F1", "Duration")]
    assert view.computing and view.model.payloads == [4, 3, 2, 1]
    assert all(row[c] == COMPUTING for row in view.model.rows for c in figures)
    assert [row[1] for row in view.model.rows] == ["finished"] * 4  # what the runs table says is there at once
    held.gate.set()
    qtbot.waitUntil(lambda: not view.computing, timeout=10_000)
    expected = _expected(three_runs)
    for row, run_id in zip(view.model.rows, view.model.payloads):
        s = expected[run_id]
        assert row[figures[0] : figures[3]] == (pct(s.vanilla), pct(s.circular), pct(s.pope_f1))
        assert COMPUTING not in row
    # The Results tab's list: computing, then each run's score.
    held.gate.clear()
    results = window.view("results").runs
    window.show_view("results")
    assert results.computing and all(row[-1] == COMPUTING for row in results.model.rows)
    held.gate.set()
    qtbot.waitUntil(lambda: not results.computing, timeout=10_000)
    assert {p: row[-1] for p, row in zip(results.model.payloads, results.model.rows)} == {
        r: score(s) for r, s in expected.items()
    }


def test_figures_of_a_reload_are_not_overwritten_by_an_earlier_one(qtbot, demo_ws, make_window, monkeypatch):
    real = runs_list.run_summary
    first = threading.Event()
    calls = []

    def summary(ws, run_id):
        calls.append(run_id)
        s = real(ws, run_id)
        if len(calls) == 1:  # the first computation is slow, and its figure differs from the later one's
            first.wait(30)
            return report.RunSummary(**{**s.to_json(), "circular": 0.999})
        return s

    monkeypatch.setattr(runs_list, "run_summary", summary)
    window = make_window(demo_ws)
    view = window.view("runs").runs
    window.show_view("runs")
    qtbot.waitUntil(lambda: len(calls) == 1, timeout=5000)
    with sqlite3.connect(demo_ws) as conn:  # the run's row changed: its figures are computed anew
        conn.execute("UPDATE runs SET updated_at = 'later' WHERE id = 1")
    view.reload()
    qtbot.waitUntil(lambda: len(calls) == 2 and not view.computing, timeout=10_000)
    circular = view.model.rows[0][view.model.columns.index("Circular")]
    first.set()  # the first task ends now: what it computed is stale
    qtbot.waitUntil(lambda: window.ctx.background.pool.activeThreadCount() == 0, timeout=10_000)
    QApplication.processEvents()  # its queued results, if it sent any
    assert view.model.rows[0][view.model.columns.index("Circular")] == circular != "99.9 %"


def _canvas_place(chart):
    """Where the chart's canvas is in the window, once the layout has placed it."""
    QApplication.processEvents()
    canvas = chart.canvas
    return canvas.mapTo(canvas.window(), canvas.rect().topLeft()), canvas.size()


def _gated(monkeypatch, module, name, gate: threading.Event, calls: list):
    """`module.name` waits at `gate` (the worker's thread) before computing; each call's arguments noted."""
    real = getattr(module, name)

    def held(ws, *args, **kwargs):
        calls.append(args)
        gate.wait(30)
        return real(ws, *args, **kwargs)

    monkeypatch.setattr(module, name, held)


def _slow_first(monkeypatch, module, name, asks, instead) -> tuple[threading.Event, threading.Event]:
    """`module.name` answers an ask that `asks(*args)` matches with `instead(real, ws, *args, **kwargs)` (a stale
    answer): the first such ask in the worker's thread, once `started`, waits for `slow`; the later ones do not, so that
    another task asking the same (a refresh, a busy machine's timing) cannot hold the pool's other worker too."""
    real = getattr(module, name)
    slow, started = threading.Event(), threading.Event()

    def stand_in(ws, *args, **kwargs):
        if not asks(*args):
            return real(ws, *args, **kwargs)
        if not started.is_set():
            started.set()
            slow.wait(30)
        return instead(real, ws, *args, **kwargs)

    monkeypatch.setattr(module, name, stand_in)
    return slow, started


def test_the_results_chart_says_computing_in_its_place_then_draws_the_reports(
    qtbot,
    three_runs,  # noqa: F811
    make_window,
    monkeypatch,
):
    import gui.dashboard_view as dashboard_view
    from evaluator.analysis.plots import bar_target

    gate, calls = threading.Event(), []
    _gated(monkeypatch, dashboard_view, "run_report", gate, calls)
    window = make_window(three_runs)
    dash = window.view("results")
    window.show_view("results")
    dash.show_runs([1, 2], chart="l2")
    assert dash.computing and dash.reports == []
    assert [t.get_text() for t in dash.chart.figure.texts] == [COMPUTING] and dash.chart.bars() == []
    assert dash.chart.title.text() == "Per L2 ability · runs 1, 2"  # the title it will have: the bar keeps its height
    waiting = _canvas_place(dash.chart)
    gate.set()
    qtbot.waitUntil(lambda: not dash.computing, timeout=10_000)
    with open_workspace(three_runs) as ws:
        expected = {i: report.run_report(ws, i) for i in (1, 2)}
    assert dash.reports == [expected[1], expected[2]]
    heights = {tuple(sorted(bar_target(p).items())): p.get_height() for p in dash.chart.bars()}
    for run_id, r in expected.items():
        for strategy in ("vanilla", "circular"):
            key = tuple(sorted({"run": str(run_id), "level": "all", "strategy": strategy}.items()))
            assert heights[key] == 100 * (getattr(r.mcq.overall, strategy) or 0)
    assert _canvas_place(dash.chart) == waiting  # the chart came where "computing…" was, at its size
    # Another chart of the same runs is drawn from the reports in hand: nothing computed again.
    asked = len(calls)
    dash.kind.setCurrentIndex(dash.kind.findData("drop"))
    assert not dash.computing and len(calls) == asked and dash.chart.bars()


def test_a_slow_report_of_runs_no_longer_chosen_is_not_drawn(qtbot, three_runs, make_window, monkeypatch):  # noqa: F811
    import gui.dashboard_view as dashboard_view

    armed = threading.Event()
    slow, started = _slow_first(  # run 2's report, once armed, is run 3's: what it would draw must never show
        monkeypatch,
        dashboard_view,
        "run_report",
        lambda run_id: run_id == 2 and armed.is_set(),
        lambda real, ws, run_id: real(ws, 3),
    )
    window = make_window(three_runs)
    dash = window.view("results")
    window.show_view("results")
    # The view's first charts (the latest runs, run 2 among them) are drawn before the slow report is armed: on a busy
    # machine that first task reached run 2 too, and with both workers held, run 1's report waited 30 s.
    qtbot.waitUntil(lambda: not dash.computing, timeout=10_000)
    armed.set()
    dash.show_runs([2])
    qtbot.waitUntil(started.is_set, timeout=5000)
    dash.show_runs([1])
    qtbot.waitUntil(lambda: not dash.computing, timeout=10_000)
    assert [r.run_id for r in dash.reports] == [1]
    slow.set()  # the first task ends now: what it computed is stale
    qtbot.waitUntil(lambda: window.ctx.background.pool.activeThreadCount() == 0, timeout=10_000)
    QApplication.processEvents()  # its queued results, if it sent any
    assert [r.run_id for r in dash.reports] == [1] and dash.chart.title.text() == "Per L2 ability · run 1"


def test_blind_results_ask_the_worker_for_nothing(qtbot, three_runs, make_window, monkeypatch):  # noqa: F811
    import gui.dashboard_view as dashboard_view

    gate, calls = threading.Event(), []
    gate.set()
    _gated(monkeypatch, dashboard_view, "run_report", gate, calls)
    window = make_window(three_runs, blind=True)
    dash = window.view("results")
    window.show_results([1, 2])
    assert dash.cover.hidden and not dash.computing and calls == []
    window.blind_action.setChecked(False)  # the cover goes: now the chart is computed
    assert dash.computing
    qtbot.waitUntil(lambda: not dash.computing, timeout=10_000)
    assert [r.run_id for r in dash.reports] == dash.runs.selected_run_ids() and dash.chart.bars()


def test_the_desiderata_page_says_computing_then_shows_the_report(qtbot, three_runs, make_window, monkeypatch):  # noqa: F811
    import gui.desiderata_view as desiderata_view
    from evaluator.analysis.desiderata import desiderata_report, format_report

    gate, calls = threading.Event(), []
    _gated(monkeypatch, desiderata_view, "desiderata_report", gate, calls)
    window = make_window(three_runs)
    dash = window.view("results")
    window.show_view("results")
    dash.pages.setCurrentWidget(dash.desiderata)
    view = dash.desiderata
    view.show_runs([1, 2, 4], figure="radar")
    assert view.computing and view.report is None
    assert [t.get_text() for t in view.chart.figure.texts] == [COMPUTING]
    assert view.text.toPlainText() == "" and view.text.placeholderText() == COMPUTING
    waiting = _canvas_place(view.chart)
    gate.set()
    qtbot.waitUntil(lambda: not view.computing, timeout=10_000)
    with open_workspace(three_runs) as ws:
        expected = desiderata_report(ws, [1, 2, 4])
    assert view.report == expected and view.text.toPlainText() == format_report(expected)
    assert view.chart.figure.axes[0].name == "polar" and _canvas_place(view.chart) == waiting
    # The robustness figure of the same report is drawn from the one in hand.
    asked = len(calls)
    view.figure.setCurrentIndex(view.figure.findData("robustness"))
    assert not view.computing and len(calls) == asked


def test_a_slow_desiderata_report_of_runs_no_longer_chosen_is_not_shown(qtbot, three_runs, make_window, monkeypatch):  # noqa: F811
    import gui.desiderata_view as desiderata_view
    from evaluator.analysis.desiderata import format_report

    slow, started = _slow_first(  # run 2's report is run 4's: what it would show must never show
        monkeypatch,
        desiderata_view,
        "desiderata_report",
        lambda run_ids: list(run_ids) == [2],
        lambda real, ws, run_ids, **kwargs: real(ws, [4], **kwargs),
    )
    window = make_window(three_runs)
    dash = window.view("results")
    window.show_view("results")
    dash.pages.setCurrentWidget(dash.desiderata)
    view = dash.desiderata
    view.show_runs([2])
    qtbot.waitUntil(started.is_set, timeout=5000)
    view.show_runs([1])
    qtbot.waitUntil(lambda: not view.computing, timeout=10_000)
    shown = view.text.toPlainText()
    assert view.report is not None and view.report.run_ids == (1,) and shown == format_report(view.report)
    slow.set()
    qtbot.waitUntil(lambda: window.ctx.background.pool.activeThreadCount() == 0, timeout=10_000)
    QApplication.processEvents()
    assert view.report.run_ids == (1,) and view.text.toPlainText() == shown


def test_the_groups_page_says_computing_then_draws_the_radar(qtbot, three_runs, make_window, monkeypatch):  # noqa: F811
    import gui.groups_view as groups_view
    from evaluator.analysis.groups import format_groups, groups_report

    assert cli_main(["--workspace", str(three_runs), "benchmarks", "tag", "demo", "--group", "perception"]) == 0
    gate, calls = threading.Event(), []
    _gated(monkeypatch, groups_view, "groups_report", gate, calls)
    window = make_window(three_runs)
    dash = window.view("results")
    window.show_view("results")
    dash.pages.setCurrentWidget(dash.groups)
    page = dash.groups
    assert page.computing and [t.get_text() for t in page.chart.figure.texts] == [COMPUTING]
    gate.set()
    qtbot.waitUntil(lambda: not page.computing, timeout=10_000)
    with open_workspace(three_runs) as ws:
        expected = groups_report(ws)
    assert page.report == expected and page.chart.figure.axes[0].name == "polar"
    assert page.selected_models() == [expected.models[0].model]  # the first model, chosen when none was
    assert page.text.toPlainText() == format_groups(dataclasses.replace(expected, models=expected.models[:1]))


def test_the_figure_columns_keep_their_width_when_the_figures_come(qtbot, three_runs, make_window, monkeypatch):  # noqa: F811
    from PySide6.QtWidgets import QStyle

    held = _Held(monkeypatch)
    with sqlite3.connect(three_runs) as conn:  # an unfinished run: its figures are marked "(partial)"
        conn.execute("UPDATE runs SET status = 'interrupted' WHERE id = 2")
    window = make_window(three_runs)
    window.resize(1024, 700)
    lists = [window.view("runs").runs, window.view("results").runs]
    widths = []
    for name, view in zip(("runs", "results"), lists):
        window.show_view(name)
        assert view.computing
        header = view.table.horizontalHeader()
        columns = [n for n, t in enumerate(view.model.columns) if t in runs_list.WIDEST]
        assert all(view.model.rows[0][n] == COMPUTING for n in columns)
        widths.append([header.sectionSize(n) for n in columns])
    held.gate.set()
    for view, before in zip(lists, widths):
        qtbot.waitUntil(lambda view=view: not view.computing, timeout=10_000)
        header = view.table.horizontalHeader()
        columns = [n for n, t in enumerate(view.model.columns) if t in runs_list.WIDEST]
        assert [header.sectionSize(n) for n in columns] == before  # nothing moved
        metrics = view.table.fontMetrics()
        margin = 2 * (view.table.style().pixelMetric(QStyle.PixelMetric.PM_FocusFrameHMargin, None, view.table) + 1)
        for row in view.model.rows:
            assert COMPUTING not in row
            for n in columns:  # each figure fits its column whole
                assert metrics.horizontalAdvance(row[n]) + margin <= header.sectionSize(n), (row[n], n)
        assert any(runs_list.PARTIAL_MARK in row[columns[0]] for row in view.model.rows)


def test_the_items_behind_a_bar_say_computing_in_the_tables_place_then_come(
    qtbot, three_runs, make_window, monkeypatch
):  # noqa: F811
    import gui.dashboard_view as dashboard_view

    gate, calls = threading.Event(), []
    _gated(monkeypatch, dashboard_view, "group_items", gate, calls)
    window = make_window(three_runs)
    dash = window.view("results")
    window.show_view("results")
    dash.show_runs([2], chart="l2")
    qtbot.waitUntil(lambda: not dash.computing, timeout=10_000)
    dash.show_items_of({"run": "2", "level": "l2", "group": "coarse_perception", "strategy": "vanilla"})
    QApplication.processEvents()  # the title's new text laid out
    place = dash.items_table.geometry()
    assert dash.items_computing and dash.items.payloads == [None]
    assert dash.items.rows[0][1] == COMPUTING and f": {COMPUTING} — " in dash.items_title.text()
    gate.set()
    qtbot.waitUntil(lambda: not dash.items_computing, timeout=10_000)
    with open_workspace(three_runs) as ws:
        expected = report.group_items(ws, 2, level="l2", group="coarse_perception")
    assert dash.items.payloads == [r.item_id for r in expected] and len(expected) > 1
    assert [row[1] for row in dash.items.rows] == [("✓ right" if r.vanilla else "✗ wrong") for r in expected]
    assert dash.items_table.geometry() == place  # the rows came where "computing…" was, at its size


def test_a_slow_listing_of_an_earlier_bar_is_not_shown(qtbot, three_runs, make_window, monkeypatch):  # noqa: F811
    import gui.dashboard_view as dashboard_view

    real = dashboard_view.group_items
    slow, started = threading.Event(), threading.Event()

    def group_items(ws, run_id, *, level, group):
        if group == "coarse_perception":  # the first bar clicked, slow
            started.set()
            slow.wait(30)
        return real(ws, run_id, level=level, group=group)

    monkeypatch.setattr(dashboard_view, "group_items", group_items)
    window = make_window(three_runs)
    dash = window.view("results")
    window.show_view("results")
    dash.show_runs([2], chart="l2")
    qtbot.waitUntil(lambda: not dash.computing, timeout=10_000)
    dash.show_items_of({"run": "2", "level": "l2", "group": "coarse_perception", "strategy": "vanilla"})
    qtbot.waitUntil(started.is_set, timeout=5000)
    dash.show_items_of({"run": "2", "level": "all", "strategy": "circular"})  # a second click before the reply
    qtbot.waitUntil(lambda: not dash.items_computing, timeout=10_000)
    with open_workspace(three_runs) as ws:
        every = real(ws, 2, level="all", group=None)
    assert dash.items.payloads == [r.item_id for r in every]
    slow.set()  # the first listing ends now: it is stale
    qtbot.waitUntil(lambda: window.ctx.background.pool.activeThreadCount() == 0, timeout=10_000)
    QApplication.processEvents()  # its queued reply, if it sent one
    assert dash.items.payloads == [r.item_id for r in every] and "all items · CircularEval" in dash.items_title.text()
