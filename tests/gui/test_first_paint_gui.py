"""The first window does not grow with the stored runs (issue 34): a tab out of sight computes no run figures, and a
shown runs list says "computing…" until a worker has computed its figures, which then replace it; results of a
reload that came later are never overwritten by an earlier one's."""

import sqlite3
import threading

from PySide6.QtWidgets import QApplication

from db import open_workspace
from evaluator.analysis import report
from gui import runs_list
from gui.runs_list import COMPUTING, pct, score
from tests.gui.test_dashboard_gui import three_runs  # noqa: F401 (fixture)


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
