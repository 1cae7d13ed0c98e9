"""The Results and Alignment tabs: the charts' bars are the report's figures (read back from the matplotlib Axes),
a click on a bar lists its items, an item opens in Review, and charts, tables and predictions export."""

import csv

import pytest
from PySide6.QtCore import QPoint, Qt

from annotation import alignment
from db import open_workspace
from evaluator.analysis.plots import bar_target
from evaluator.analysis.report import group_items, run_report
from evaluator.scoring.llm_extraction import load_extractor
from gui.tables import write_csv
from vlmdesk.cli import main as cli_main


@pytest.fixture
def three_runs(demo_ws):
    """demo_ws has run 1 (baseline:first); add run 2 (random, circular), 3 (random, vanilla), 4 (POPE)."""
    for args in (
        ["--bench", "demo", "--model", "baseline:random"],
        ["--bench", "demo", "--model", "baseline:random", "--strategy", "vanilla"],
        ["--bench", "demo-pope", "--model", "baseline:random"],
    ):
        assert cli_main(["--workspace", str(demo_ws), "run", *args]) == 0
    return demo_ws


def _heights(chart):
    return {tuple(sorted(bar_target(p).items())): p.get_height() for p in chart.bars()}


def _key(**target):
    return tuple(sorted((k, str(v)) for k, v in target.items()))


def test_ability_and_drop_charts_are_the_reports_figures(qtbot, three_runs, make_window):
    window = make_window(three_runs)
    dash = window.view("results")
    window.show_view("results")  # a tab out of sight computes nothing
    dash.show_runs([1, 2, 3], chart="l2")
    qtbot.waitUntil(lambda: not dash.computing, timeout=10_000)  # the reports come from the worker
    with open_workspace(three_runs) as ws:
        reports = {i: run_report(ws, i) for i in (1, 2, 3)}
    heights = _heights(dash.chart)
    expected = {}
    for run_id, report in reports.items():
        for strategy in ("vanilla", "circular"):
            overall = getattr(report.mcq.overall, strategy)
            expected[_key(run=run_id, level="all", strategy=strategy)] = 100 * (overall or 0)
            for name, scores in report.mcq.by_l2.items():
                expected[_key(run=run_id, level="l2", group=name, strategy=strategy)] = 100 * (
                    getattr(scores, strategy) or 0
                )
    assert heights == pytest.approx(expected)
    assert any(h > 0 for h in heights.values())
    dash.show_runs([1, 2], chart="category")
    qtbot.waitUntil(lambda: not dash.computing, timeout=10_000)
    heights = _heights(dash.chart)
    for name, scores in reports[2].mcq.by_category.items():
        assert heights[_key(run=2, level="category", group=name, strategy="circular")] == pytest.approx(
            100 * scores.circular
        )
    dash.show_runs([1, 2, 3], chart="drop")  # the vanilla run has no CircularEval figure: left out
    qtbot.waitUntil(lambda: not dash.computing, timeout=10_000)
    assert _heights(dash.chart) == pytest.approx(
        {
            _key(run=r, level="all", strategy=s): 100 * getattr(reports[r].mcq.overall, s)
            for r in (1, 2)
            for s in ("vanilla", "circular")
        }
    )


def test_pope_chart_and_mixed_selection(qtbot, three_runs, make_window):
    window = make_window(three_runs)
    dash = window.view("results")
    window.show_view("results")
    dash.show_runs([4])
    qtbot.waitUntil(lambda: not dash.computing, timeout=10_000)
    assert dash.kind.currentData() == "pope"
    with open_workspace(three_runs) as ws:
        report = run_report(ws, 4)
    assert _heights(dash.chart) == pytest.approx(
        {
            _key(run=4, level="pope", parser=parser, metric=m): 100 * getattr(report.pope.pope[parser], m)
            for parser in ("official", "strict")
            for m in ("accuracy", "precision", "recall", "f1", "yes_ratio")
        }
    )
    dash.show_runs([2, 4])
    qtbot.waitUntil(lambda: not dash.computing, timeout=10_000)
    assert dash.chart.bars() == [] and "cannot share a chart" in dash.chart.figure.texts[0].get_text()


def test_clicking_a_bar_lists_its_items_and_an_item_opens_in_review(qtbot, three_runs, make_window):
    window = make_window(three_runs)
    dash = window.view("results")
    window.show_view("results")
    dash.show_runs([2], chart="l2")
    qtbot.waitUntil(lambda: not dash.computing, timeout=10_000)
    chart = dash.chart
    chart.canvas.draw()
    bar = next(
        p
        for p in chart.bars()
        if bar_target(p).get("group") == "coarse_perception" and bar_target(p)["strategy"] == "vanilla"
    )
    x, y = bar.axes.transData.transform((bar.get_x() + bar.get_width() / 2, bar.get_height() / 2))
    ratio = chart.canvas.device_pixel_ratio
    qtbot.mouseClick(chart.canvas, Qt.LeftButton, pos=QPoint(int(x / ratio), int(chart.canvas.height() - y / ratio)))
    qtbot.waitUntil(lambda: not dash.items_computing, timeout=10_000)  # listed in the worker
    with open_workspace(three_runs) as ws:
        expected = group_items(ws, 2, level="l2", group="coarse_perception")
    assert dash.items.payloads == [r.item_id for r in expected] and len(expected) > 1
    assert [row[1] for row in dash.items.rows] == [("✓ right" if r.vanilla else "✗ wrong") for r in expected]
    right = sum(r.vanilla for r in expected)
    assert f"{right} of {len(expected)} right" in dash.items_title.text()
    assert right == round(bar.get_height() / 100 * len(expected))  # the bar is these items' share
    # Double-click the second item: Review shows it, even with Browse filtered to hide it.
    browse = window.view("browse")
    browse.search.setText("zzzz-nothing")
    browse.apply_filters()
    index = dash.items.index(1, 0)
    dash.items_table.scrollTo(index)
    where = dash.items_table.visualRect(index).center()
    qtbot.mouseClick(dash.items_table.viewport(), Qt.LeftButton, pos=where)  # a double click follows a press
    qtbot.mouseDClick(dash.items_table.viewport(), Qt.LeftButton, pos=where)
    assert window.tabs.currentWidget() is window.view("review")
    assert window.view("review").item.id == expected[1].item_id


def test_exports_chart_table_and_predictions(qtbot, three_runs, make_window, tmp_path):
    window = make_window(three_runs)
    dash = window.view("results")
    window.show_view("results")
    dash.show_runs([2], chart="l2")
    qtbot.waitUntil(lambda: not dash.computing, timeout=10_000)
    assert dash.chart.export(tmp_path / "c.png").read_bytes()[:4] == b"\x89PNG"
    assert b"<svg" in dash.chart.export(tmp_path / "c.svg").read_bytes()[:400]
    dash.show_items_of({"run": "2", "level": "all", "strategy": "circular"})
    qtbot.waitUntil(lambda: not dash.items_computing, timeout=10_000)
    assert write_csv(dash.items, tmp_path / "items.csv") == 30
    rows = list(csv.reader(open(tmp_path / "items.csv", encoding="utf-8")))
    assert rows[0][:2] == ["Index", "Result"] and len(rows) == 31
    assert write_csv(dash.runs.model, tmp_path / "runs.csv") == 4
    done = dash.export_predictions(tmp_path / "preds.tsv")
    assert (
        cli_main(["--workspace", str(three_runs), "export-predictions", "2", "--out", str(tmp_path / "cli.tsv")]) == 0
    )
    assert done.path.read_text() == (tmp_path / "cli.tsv").read_text()


def test_alignment_view_draws_the_study(qtbot, three_runs, make_window):
    with open_workspace(three_runs) as ws:
        alignment.build_set(ws, "s1", [1, 2], [load_extractor("llm:baseline:first")], size=10, seed=0)
        for n in range(12):
            task = alignment.next_for(ws, "s1", "ana")
            alignment.add_label(ws, task.item_id, "ana", "Z" if n % 5 == 0 else task.response.strip()[:1])
        report = alignment.alignment_report(ws, "s1")
    window = make_window(three_runs)
    view = window.view("alignment")
    window.show_view("alignment")
    assert view.set_combo.currentData() == "s1"
    bars = {bar_target(p)["extractor"]: p for p in view.chart.bars()}
    assert set(bars) == set(report.extractors)
    for name, e in report.extractors.items():
        assert bars[name].get_height() == pytest.approx(100 * e.overall.rate)
    # The error bars are the Wilson intervals.
    ax = view.chart.figure.axes[0]
    caps = sorted(round(y, 6) for line in ax.lines for y in line.get_ydata())
    for e in report.extractors.values():
        assert round(100 * e.overall.wilson_95[0], 6) in caps and round(100 * e.overall.wilson_95[1], 6) in caps
    assert [row[0] for row in view.table.rows] == list(report.extractors)
    assert view.table.rows[0][3] == f"{100 * report.extractors['rules'].overall.rate:.1f} %"
    # The confusion matrix of the chosen extractor.
    view.extractor.setCurrentIndex(view.extractor.findData("llm:baseline:first"))
    image = view.chart.figure.axes[1].images[0]
    assert image.get_array().tolist() == [list(row) for row in report.extractors["llm:baseline:first"].confusion.matrix]


def test_screenshots_of_the_new_views(qtbot, three_runs, tmp_path):
    from PySide6.QtGui import QImage

    for view in ("dashboard", "alignment"):
        out = tmp_path / f"{view}.png"
        assert cli_main(["--workspace", str(three_runs), "gui", "--screenshot", str(out), "--view", view]) == 0
        assert QImage(str(out)).width() == 1280


def test_table_csv_export_neutralises_formula_cells(qtbot, tmp_path):
    """The app's "Export table as CSV" follows the CSV-injection rule of evaluator/outfiles.csv_cell."""
    from gui.tables import RowsModel

    model = RowsModel(("=Model", "Note"))
    model.set_rows([("=cmd|' /C calc'!A0", "-0.5"), ("@SUM(A1)", "plain"), ("a\rb", "+1")])
    assert write_csv(model, tmp_path / "t.csv") == 3
    rows = list(csv.reader(open(tmp_path / "t.csv", encoding="utf-8", newline="")))
    assert rows == [["'=Model", "Note"], ["'=cmd|' /C calc'!A0", "'-0.5"], ["'@SUM(A1)", "plain"], ["a\rb", "'+1"]]
