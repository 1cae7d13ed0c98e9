"""The Desiderata page of Results: the report of the chosen runs and its figures, the same numbers as
`vlmdesk desiderata`; nothing computed or shown in blind mode; its screenshot view."""

from __future__ import annotations

import math

import pytest

from db import catalog, open_workspace
from evaluator.analysis.desiderata import desiderata_report, format_report
from tests.evaluator.desiderata_runs import stored_run
from tests.gui.test_dashboard_gui import many_baselines  # noqa: F401 (fixture)
from vlmdesk.cli import main as cli_main


@pytest.fixture
def variant_runs(demo_ws):
    """demo_ws's run 1 (baseline:first on demo) is the plain run; add a likelihood run (2) and a corrupted run (3)."""
    with open_workspace(demo_ws) as ws:
        bench = catalog.benchmark_by_name(ws, "demo")
        items = catalog.list_items(ws, bench.id)
        first = ["A"] * len(items)
        scores = [[math.log(0.6)] + [math.log(0.4 / (len(i.options) - 1))] * (len(i.options) - 1) for i in items]
        config = {"strategy": "circular"}
        stored_run(ws, bench, first, model="baseline:first", config={**config, "likelihood": True}, scores=scores)
        noisy = ["B"] * len(items)
        stored_run(
            ws,
            bench,
            noisy,
            model="baseline:first",
            config={**config, "corrupt": ["image:gaussian_noise:3"]},
            strategy="circular",
        )
    return demo_ws


def test_desiderata_page_shows_the_report_and_its_figures(qtbot, variant_runs, make_window):
    window = make_window(variant_runs)
    dash = window.view("results")
    window.show_view("results")
    dash.pages.setCurrentWidget(dash.desiderata)
    view = dash.desiderata
    view.show_runs([1, 3], figure="robustness")
    qtbot.waitUntil(lambda: not view.computing, timeout=10_000)  # the report comes from the worker
    with open_workspace(variant_runs) as ws:
        expected = desiderata_report(ws, [1, 3])
    assert view.text.toPlainText() == format_report(expected)
    rrm = expected.models[0].dimensions["robustness"].entries[0]["rrm"]
    heights = [p.get_height() for p in view.chart.figure.axes[0].patches if p.get_width() > 0]
    assert heights == [pytest.approx(rrm)]
    view.show_runs([2], figure="reliability")
    qtbot.waitUntil(lambda: not view.computing, timeout=10_000)
    with open_workspace(variant_runs) as ws:
        cal = desiderata_report(ws, [2]).models[0].dimensions["calibration"]
    assert f"ECE {cal.value:.4f}" in view.chart.figure.axes[0].get_title()
    view.show_runs([1, 2, 3], figure="radar")
    qtbot.waitUntil(lambda: not view.computing, timeout=10_000)
    assert view.chart.figure.axes[0].name == "polar"
    assert "vlmdesk run --bench demo --model baseline:first --label-map natural:0" in view.text.toPlainText()


def test_blind_mode_computes_and_shows_nothing(qtbot, variant_runs, make_window):
    window = make_window(variant_runs)
    dash = window.view("results")
    view = dash.desiderata
    window.show_view("results")
    dash.pages.setCurrentWidget(view)
    view.show_runs([1, 3])
    qtbot.waitUntil(lambda: not view.computing, timeout=10_000)
    assert view.text.toPlainText()
    window.blind_action.setChecked(True)
    assert dash.cover.hidden and view.report is None and view.text.toPlainText() == ""
    view.show_runs([1, 2, 3])
    assert not view.computing and view.report is None and view.text.toPlainText() == ""  # nothing asked of the worker
    window.blind_action.setChecked(False)
    qtbot.waitUntil(lambda: not view.computing, timeout=10_000)
    assert view.report is not None and format_report(view.report) == view.text.toPlainText()


def test_screenshot_of_the_desiderata_view(qtbot, variant_runs, tmp_path):
    from PySide6.QtGui import QImage

    out = tmp_path / "desiderata.png"
    args = ["--workspace", str(variant_runs), "gui", "--screenshot", str(out), "--view", "desiderata"]
    assert cli_main([*args, "--chart", "radar", "--size", "1024x700"]) == 0
    assert QImage(str(out)).width() == 1024


def test_the_radar_legend_fits_its_figure(demo_ws):
    # The "(n/a: …)" list of a model lacking desiderata runs ran past the figure's right edge (seen at 1024×700).
    from evaluator.analysis.plots import radar_figure

    with open_workspace(demo_ws) as ws:
        figure = radar_figure(desiderata_report(ws, [1]))
    figure.set_size_inches(5.5, 5.4)  # the canvas's width in the Desiderata page at 1024×700
    figure.canvas.draw()
    legend = figure.axes[0].get_legend()
    assert "n/a" in legend.get_texts()[0].get_text()
    box = legend.get_window_extent()
    assert box.x0 >= 0 and box.x1 <= figure.bbox.width


def test_a_radar_of_open_runs_only_draws_without_a_warning(demo_ws):
    import warnings

    from evaluator.analysis.plots import radar_figure

    assert cli_main(["--workspace", str(demo_ws), "run", "--bench", "demo-open", "--model", "baseline:first"]) == 0
    with open_workspace(demo_ws) as ws, warnings.catch_warnings():
        warnings.simplefilter("error")  # "No artists with labels found to put in legend" reached stderr
        figure = radar_figure(desiderata_report(ws, [2]))
    assert figure.axes[0].get_legend() is None


def test_the_runs_list_keeps_the_model_readable_at_1024(qtbot, many_baselines, make_window):  # noqa: F811
    """Desiderata's Model column was squeezed to 1-2 characters ("…", "b…") at 1024×700 with a larger text: it is
    at least MODEL_CHARS characters wide, in sight beside the run's number, and draws a baseline whole."""
    from PySide6.QtWidgets import QApplication

    from gui.runs_list import MODEL_CHARS

    window = make_window(many_baselines)
    try:
        window.set_appearance(theme="dark", font_scale=1.25)
        window.resize(1024, 700)
        window.show_view("results")
        dash = window.view("results")
        dash.pages.setCurrentWidget(dash.desiderata)
        QApplication.processEvents()
        view = dash.desiderata.runs
        qtbot.waitUntil(lambda: not view.computing and bool(view.model.payloads), timeout=10_000)
        header, metrics = view.table.horizontalHeader(), view.table.fontMetrics()
        assert header.sectionSize(view.model_column) >= metrics.averageCharWidth() * MODEL_CHARS
        # In sight: the column starts within the list's width and shows at least MODEL_CHARS characters of it.
        start = header.sectionViewportPosition(view.model_column)
        assert view.table.viewport().width() - start >= metrics.averageCharWidth() * MODEL_CHARS
        shown = {run_id: view.shown_model(row) for row, run_id in enumerate(view.model.payloads)}
        assert shown[2] == "baseline:random" and shown[6].startswith("Qwen2"), shown
    finally:
        window.set_appearance(theme="light", font_scale=1.0)
