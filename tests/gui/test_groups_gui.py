"""Capability groups in the app: a benchmark tagged from the Benchmarks list's context menu (and File's action), the
tag stored as `vlmdesk benchmarks tag` stores it, and the Groups page of Results drawing the report's radar."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialogButtonBox, QMenu

from db import catalog, open_workspace
from evaluator.analysis.groups import GROUPS, benchmark_groups, format_groups, groups_report
from vlmdesk.cli import main as cli_main


@pytest.fixture
def ws_with_pope(demo_ws):
    """demo_ws (run 1: baseline:first on demo) with baseline:first on demo-pope (run 2)."""
    assert cli_main(["--workspace", str(demo_ws), "run", "--bench", "demo-pope", "--model", "baseline:first"]) == 0
    return demo_ws


def _dock_row(dock, name):
    return next(r for r in range(dock.count()) if dock.item(r).data(Qt.ItemDataRole.UserRole) == name)


def test_tag_from_the_context_menu_then_the_groups_radar(qtbot, ws_with_pope, make_window):
    window = make_window(ws_with_pope)
    dock = window.docks["benchmarks"].widget()
    row = _dock_row(dock, "demo")
    assert "capability groups: none" in dock.item(row).toolTip()
    dock._context_menu(dock.visualItemRect(dock.item(row)).center())  # what a right-click on the row does
    menu = dock.findChildren(QMenu)[-1]
    (action,) = [a for a in menu.actions() if a.text().replace("&", "") == "Capability groups of the benchmark…"]
    action.trigger()
    dialog = dock.groups_dialog
    assert dialog.isVisible() and dialog.bench.name == "demo"
    assert [b.text() for b in dialog.boxes.values()] == [f"{t} ({k})" for k, t in GROUPS.items()]
    assert not any(b.isChecked() for b in dialog.boxes.values())
    dialog.boxes["perception"].setChecked(True)
    dialog.boxes["reasoning"].setChecked(True)
    qtbot.mouseClick(dialog.buttons.button(QDialogButtonBox.StandardButton.Ok), Qt.MouseButton.LeftButton)
    with open_workspace(ws_with_pope) as ws:
        assert benchmark_groups(catalog.benchmark_by_name(ws, "demo")) == ("perception", "reasoning")
        expected = groups_report(ws)
    assert "visual perception, visual reasoning" in dock.item(_dock_row(dock, "demo")).toolTip()
    assert "benchmarks tag demo --group perception --group reasoning" in window.message_bar.label.text()

    dash = window.view("results")
    window.show_view("results")
    dash.pages.setCurrentWidget(dash.groups)
    page = dash.groups
    qtbot.waitUntil(lambda: not page.computing, timeout=10_000)  # the report comes from the worker
    assert [page.models.item(r).text() for r in range(page.models.count())] == ["baseline:first"]
    assert page.text.toPlainText() == format_groups(expected)
    (ax,) = page.chart.figure.axes
    assert ax.name == "polar"
    labels = [t.get_text().split("\n(n=")[0].replace("\n", " ") for t in ax.get_xticklabels()]
    assert labels == list(GROUPS.values())
    (line,) = ax.get_lines()
    model = expected.models[0]
    assert list(line.get_ydata())[:6] == pytest.approx([100 * (g.value or 0.0) for g in model.groups])
    assert model.figure("perception").value is not None and model.figure("hallucination").value is not None

    # Untag from File's action (the benchmark in use): the page follows (refreshed as the tab is shown again)
    window.select_benchmark("demo")
    window.menu_action("Capability groups of the benchmark…").trigger()
    dialog = dock.groups_dialog
    assert dialog.boxes["perception"].isChecked() and dialog.boxes["reasoning"].isChecked()
    for box in dialog.boxes.values():
        box.setChecked(False)
    dialog.accept()
    qtbot.waitUntil(lambda: not page.computing, timeout=10_000)
    assert page.report is not None and page.report.models[0].figure("perception").value is None


def test_dialog_cancel_writes_nothing_and_blind_mode_computes_nothing(qtbot, ws_with_pope, make_window):
    window = make_window(ws_with_pope, blind=True)
    dock = window.docks["benchmarks"].widget()
    dock.edit_groups(catalog_bench(ws_with_pope, "demo-pope"))
    dialog = dock.groups_dialog
    assert dialog.boxes["hallucination"].isChecked()  # POPE's default shown as checked
    dialog.boxes["embodied"].setChecked(True)
    dialog.reject()
    with open_workspace(ws_with_pope) as ws:
        assert "groups" not in catalog.benchmark_by_name(ws, "demo-pope").meta
    page = window.view("results").groups
    assert page.report is None and page.text.toPlainText() == ""


def catalog_bench(path, name):
    with open_workspace(path) as ws:
        return catalog.benchmark_by_name(ws, name)


def test_a_refused_write_is_said_and_stores_nothing(qtbot, ws_with_pope, make_window):
    window = make_window(ws_with_pope)
    dock = window.docks["benchmarks"].widget()
    with open_workspace(ws_with_pope) as ws:  # removed by another process while the dialog is open
        bench = catalog.benchmark_by_name(ws, "demo")
    dock.edit_groups(_renamed(bench, "gone"))
    dock.groups_dialog.boxes["embodied"].setChecked(True)
    dock.groups_dialog.accept()
    assert "Could not store the capability groups of gone: no benchmark named 'gone'" in (
        window.message_bar.label.text()
    )


def _renamed(bench, name):
    import dataclasses

    return dataclasses.replace(bench, name=name)
