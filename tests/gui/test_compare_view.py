"""Results › Compare (gui/compare_view.py): two runs of one benchmark, the figures `vlmdesk compare` gives, the
flipped items as two lists that open in Review (double-click or Enter), hidden behind the Results cover in blind
mode, and fitting 1024×700 with the text two steps larger."""

import os

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from db import open_workspace
from evaluator.analysis.compare import CIRCULAR, VANILLA, compare_runs, format_interval
from vlmdesk.cli import main as cli_main

SHOTS = os.environ.get("VLMDESK_SHOTS")  # a folder to keep the page's PNG in (the test writes it to tmp otherwise)


@pytest.fixture
def two_runs(demo_ws):
    """demo_ws (run 1: baseline:first, circular) with run 2: baseline:random, circular, and run 3 on demo-pope."""
    assert cli_main(["--workspace", str(demo_ws), "run", "--bench", "demo", "--model", "baseline:random"]) == 0
    assert cli_main(["--workspace", str(demo_ws), "run", "--bench", "demo-pope", "--model", "baseline:random"]) == 0
    return demo_ws


def _compare_page(qtbot, window):
    window.show_view("results")
    dash = window.view("results")
    dash.pages.setCurrentWidget(dash.compare)
    page = dash.compare
    qtbot.waitUntil(lambda: page.comparison is not None and not page.computing, timeout=10_000)
    return dash, page


def _settle():
    for _ in range(3):
        QApplication.instance().processEvents()


def test_the_page_shows_the_comparisons_figures_and_flips_and_an_item_opens_in_review(
    qtbot, two_runs, make_window, tmp_path
):
    window = make_window(two_runs)
    dash, page = _compare_page(qtbot, window)
    # The newest run that has a partner is A; B offers only the runs of its benchmark (not the POPE run).
    assert (page.run_a.currentData(), page.run_b.currentData()) == (2, 1)
    assert [page.run_a.itemData(i) for i in range(page.run_a.count())] == [2, 1]  # run 3 has no partner
    assert [page.run_b.itemData(i) for i in range(page.run_b.count())] == [1]
    with open_workspace(two_runs) as ws:
        expected = compare_runs(ws, 2, 1)
    assert [row[0] for row in page.figures.rows] == [CIRCULAR, VANILLA]
    for row, figure in zip(page.figures.rows, expected.figures):
        assert row[4] == format_interval(figure)
        assert row[6:8] == (str(len(figure.a_better)), str(len(figure.b_better)))
    assert "30 items both asked" in page.summary.text()
    # The flipped items of VanillaEval: the two lists are the comparison's, in its order.
    page.flip_figure.setCurrentIndex(page.flip_figure.findData(VANILLA))
    vanilla = expected.figure(VANILLA)
    assert page.a_only.model.payloads == [r.item_id for r in vanilla.a_better]
    assert page.b_only.model.payloads == [r.item_id for r in vanilla.b_better]
    assert page.a_only.title.text() == f"Right in A only ({len(vanilla.a_better)})"
    assert vanilla.a_better and vanilla.b_better  # both lists have items to open
    # Double-click the first item right in A only: Review shows it.
    table = page.a_only.table
    index = page.a_only.model.index(0, 1)
    where = table.visualRect(index).center()
    qtbot.mouseClick(table.viewport(), Qt.LeftButton, pos=where)
    qtbot.mouseDClick(table.viewport(), Qt.LeftButton, pos=where)
    assert window.tabs.currentWidget() is window.view("review")
    assert window.view("review").item.id == vanilla.a_better[0].item_id
    # Enter on the other list, reached from the keyboard: the same.
    window.show_view("results")
    table = page.b_only.table
    table.setFocus()
    table.setCurrentIndex(page.b_only.model.index(len(vanilla.b_better) - 1, 0))
    qtbot.keyClick(table, Qt.Key_Return)
    assert window.tabs.currentWidget() is window.view("review")
    assert window.view("review").item.id == vanilla.b_better[-1].item_id
    # Swap: A and B trade places, the difference changes sign.
    window.show_view("results")
    page.swap.click()
    qtbot.waitUntil(lambda: page.comparison is not None and page.comparison.a.run_id == 1 and not page.computing)
    assert page.comparison.figure(VANILLA).difference == pytest.approx(-vanilla.difference)


def test_the_page_fits_1024x700_with_larger_text_and_its_picture_is_saved(qtbot, two_runs, make_window, tmp_path):
    window = make_window(two_runs)
    try:
        window.scale_text(1)
        window.scale_text(1)
        window.resize(1024, 700)
        dash, page = _compare_page(qtbot, window)
        page.flip_figure.setCurrentIndex(page.flip_figure.findData(VANILLA))
        _settle()
        hint = window.minimumSizeHint()
        assert hint.width() <= 1024 and hint.height() <= 700, hint.toTuple()
        assert window.width() <= 1024
        # The figures table shows every column whole at this size (no horizontal scroll bar), and each table's
        # column titles are whole where their table has room to spare (as the other Results tables').
        assert not page.figures_table.horizontalScrollBar().isVisible()
        for table in (page.figures_table, page.a_only.table, page.b_only.table):
            header, model = table.horizontalHeader(), table.model()
            free = table.viewport().width() - sum(header.sectionSize(c) for c in range(model.columnCount()))
            assert free >= 0
            for c in range(model.columnCount()):
                title = model.headerData(c, Qt.Orientation.Horizontal)
                assert header.sectionSize(c) >= header.fontMetrics().horizontalAdvance(title), title
        out = os.path.join(SHOTS or str(tmp_path), "compare_1024x700_x125.png")
        assert window.grab().save(out)
    finally:
        window.set_appearance(theme="light", font_scale=1.0)


def test_in_blind_mode_the_page_is_covered_and_computes_nothing(qtbot, two_runs, make_window):
    window = make_window(two_runs, blind=True)
    window.show_view("results")
    dash = window.view("results")
    assert dash.cover.hidden
    assert dash.compare.comparison is None and not dash.compare.computing
    assert not dash.compare.isVisible()
    window.blind_action.setChecked(False)  # what the B key and View › Blind mode do
    assert not dash.cover.hidden
    dash.pages.setCurrentWidget(dash.compare)
    qtbot.waitUntil(lambda: dash.compare.comparison is not None and not dash.compare.computing, timeout=10_000)
    assert dash.compare.figures.rows
