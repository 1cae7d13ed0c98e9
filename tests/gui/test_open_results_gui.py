"""The Results tab on open runs: bars by metric per leaf category are the report's figures, a click on a bar lists its
answered items with that metric's score (evaluator.analysis.report.open_group_items — `vlmdesk run-items`), an item
opens
in Review, and an open run never shares a chart with a multiple-choice one."""

import pytest
from PySide6.QtCore import QPoint, Qt

from db import open_workspace
from evaluator.analysis.plots import bar_target
from evaluator.analysis.report import open_group_items, run_report, run_summary
from gui.runs_list import score
from tests.open_plugins import run_parrot

ANSWERS = {
    "Describe the cat's face": "A close-up of a tabby cat with green eyes and a pink nose; a blurred background.",
    "How many coins": "I count 24 coins in four rows of six on a dark background; they look like ancient coins "
    "showing heads and figures!",
    "What is the man doing": "he is looking through a camera mounted on a tripod standing on a lawn with buildings "
    "in the distance - the photo is black and white",
}


@pytest.fixture
def open_ws(demo_ws, tmp_path, monkeypatch):
    """demo_ws (run 1: baseline:first on demo) with run 2: the test parrot's answers on demo-open."""
    run_parrot(demo_ws, "demo-open", ANSWERS, tmp_path, monkeypatch)
    return demo_ws


def _widths(chart):
    return {tuple(sorted(bar_target(p).items())): p.get_width() for p in chart.bars()}


def test_open_bars_are_the_reports_metrics_and_a_click_lists_the_items(qtbot, open_ws, make_window):
    window = make_window(open_ws)
    dash = window.view("results")
    window.show_view("results")
    dash.show_runs([2])
    qtbot.waitUntil(lambda: not dash.computing, timeout=10_000)  # the reports come from the worker
    assert dash.kind.currentData() == "open"
    with open_workspace(open_ws) as ws:
        report = run_report(ws, 2)
        expected = open_group_items(ws, 2, group="counting")
    figures = report.open
    assert set(figures.metrics) == {"exact_match", "word_match", "anls", "cider"}  # one reference each: no VQA

    def shown(value, metric):
        return value * (1 if metric == "cider" else 100)

    wanted = {(("level", "all"), ("metric", m), ("run", "2")): shown(v, m) for m, v in figures.metrics.items()}
    for group, found in figures.by_category.items():
        for m, v in found["metrics"].items():
            wanted[(("group", group), ("level", "category"), ("metric", m), ("run", "2"))] = shown(v, m)
    assert _widths(dash.chart) == pytest.approx(wanted)
    chart = dash.chart
    chart.canvas.draw()
    bar = next(
        p for p in chart.bars() if bar_target(p).get("group") == "counting" and bar_target(p)["metric"] == "word_match"
    )
    assert bar.get_width() == 100  # the whole reference inside a longer answer
    x, y = bar.axes.transData.transform((bar.get_width() / 2, bar.get_y() + bar.get_height() / 2))
    ratio = chart.canvas.device_pixel_ratio
    qtbot.mouseClick(chart.canvas, Qt.LeftButton, pos=QPoint(int(x / ratio), int(chart.canvas.height() - y / ratio)))
    qtbot.waitUntil(lambda: not dash.items_computing, timeout=10_000)  # listed in the worker
    assert dash.items.payloads == [r.item_id for r in expected] and len(expected) == 1
    assert [row[1] for row in dash.items.rows] == ["100 %"]
    assert "counting · word_match: mean 100 % over 1 of 1 answers" in dash.items_title.text()
    # Overall's CIDEr bar: every answered item, the score on CIDEr's own scale.
    dash.show_items_of({"run": "2", "level": "all", "metric": "cider"})
    qtbot.waitUntil(lambda: not dash.items_computing, timeout=10_000)
    with open_workspace(open_ws) as ws:
        every = open_group_items(ws, 2)
    assert len(dash.items.rows) == 8 == len(every)
    assert [row[1] for row in dash.items.rows] == [f"{r.scores['cider']:.2f}" for r in every]
    index = dash.items.index(0, 0)
    where = dash.items_table.visualRect(index).center()
    qtbot.mouseClick(dash.items_table.viewport(), Qt.LeftButton, pos=where)
    qtbot.mouseDClick(dash.items_table.viewport(), Qt.LeftButton, pos=where)
    assert window.tabs.currentWidget() is window.view("review")
    assert window.view("review").item.id == every[0].item_id


def test_open_and_multiple_choice_runs_do_not_share_a_chart(qtbot, open_ws, make_window):
    window = make_window(open_ws)
    dash = window.view("results")
    window.show_view("results")
    dash.show_runs([1, 2])
    qtbot.waitUntil(lambda: not dash.computing, timeout=10_000)
    assert dash.chart.bars() == [] and "cannot share a chart" in dash.chart.figure.texts[0].get_text()
    with open_workspace(open_ws) as ws:
        summary = run_summary(ws, 2)
    assert score(summary).startswith("word 25.0 · ANLS ")  # the runs list's score cell of the open run


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_the_open_chart_and_its_items_keep_their_contrast(qtbot, open_ws, make_window, theme):
    from tests.gui.test_theme_contrast_gui import low_contrast

    window = make_window(open_ws, theme="light")
    try:
        window.set_appearance(theme=theme, font_scale=1.25)  # live, as View › Larger text and the theme menu do
        window.resize(1024, 700)
        window.show_results([2])
        dash = window.view("results")
        qtbot.waitUntil(lambda: not dash.computing, timeout=10_000)
        dash.show_items_of({"run": "2", "level": "category", "group": "counting", "metric": "word_match"})
        qtbot.waitUntil(lambda: not dash.items_computing, timeout=10_000)
        assert dash.kind.currentData() == "open" and dash.chart.bars()
        assert low_contrast(window) == []
    finally:
        window.set_appearance(theme="light", font_scale=1.0)
