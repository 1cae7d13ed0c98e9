"""A thinking model's passes in the real window (issue 36): each pass's thought folded under it ("Thought (N words)",
opened with the keyboard), a pass cut off by the token budget shown as such, never as a plain wrong answer; in blind
mode the thought is hidden exactly when the response is, and appearing with it moves nothing under the pointer."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QRect, Qt
from PySide6.QtWidgets import QWidget

from db import open_workspace, runs
from gui.item_panel import CUT_IN_THOUGHT, CUT_MARK, THOUGHT_ROLE, PredictionsView
from gui.screenshot import visible_texts
from tests.thought_runs import thinking_workspace

pytestmark = pytest.mark.base


def _passes(path, run_id: int) -> dict[tuple[int, int], runs.Prediction]:
    with open_workspace(path) as ws:
        return {(p.item_id, p.pass_): p for p in runs.predictions_of(ws, run_id)}


def _run_row(view: PredictionsView, run_id: int):
    return next(
        view.topLevelItem(i)
        for i in range(view.topLevelItemCount())
        if view.topLevelItem(i).text(0).startswith(f"run {run_id} ")
    )


def _geometry(widget: QWidget) -> QRect:
    return QRect(widget.mapTo(widget.window(), widget.rect().topLeft()), widget.size())


def _save(window, tmp_path, name: str) -> None:
    assert window.grab().save(str(tmp_path / f"{name}.png"), "PNG")  # looked at while writing this test


def test_the_thought_is_folded_under_its_pass_and_opens_with_the_keyboard(qtbot, tmp_path, make_window):
    path, run_id = thinking_workspace(tmp_path)
    stored = _passes(path, run_id)
    window = make_window(path)
    window.resize(1024, 700)
    window.show_view("review")
    review = window.view("review")
    view = review.predictions
    item_id = review.item.id
    top = _run_row(view, run_id)
    pass_rows = [top.child(i) for i in range(top.childCount())]
    assert pass_rows
    for row in pass_rows:
        p = stored[(item_id, int(row.text(0).split()[1]))]
        thought = next(row.child(i) for i in range(row.childCount()) if row.child(i).data(0, THOUGHT_ROLE))
        words = len(p.thought.split())
        assert thought.text(0) == f"Thought ({words:,} words)" and thought.data(0, THOUGHT_ROLE) == p.thought
        assert row.isExpanded() and not thought.isExpanded()  # the toggle in sight, the thought folded
        assert thought.childCount() == 0  # written when opened: a folded thought costs one row
        assert p.thought not in row.text(2)  # the response column is the answer only
        if p.stage == "truncated":
            assert row.text(2) == CUT_IN_THOUGHT and row.text(3) == "no answer" and row.text(4) == CUT_MARK
            assert "inside the thought" in row.toolTip(0) and "Counted wrong" in row.toolTip(0)
        elif p.truncated:
            assert row.text(0).endswith(CUT_MARK) and "after the thought" in row.toolTip(0)
            assert row.text(2) == " ".join(p.response.split()) and row.text(4) in ("✓", "✗")
        else:
            assert CUT_MARK not in row.text(0)
    _save(window, tmp_path, "folded")

    # The keyboard: Tab into the passes, Down to the thought row, Space opens it (Right and Left are Review's
    # next and previous item), Enter folds it again; the item shown stays.
    first = next(r for r in view.thought_rows() if r.parent() is pass_rows[0])
    view.setFocus()
    view.setCurrentItem(pass_rows[0])
    qtbot.keyClick(view, Qt.Key.Key_Down)
    assert view.currentItem() is first
    qtbot.keyClick(view, Qt.Key.Key_Space)
    assert first.isExpanded() and review.item.id == item_id
    assert first.child(0).text(0) in visible_texts(window)  # the thought's first line now reads on screen
    for row in view.thought_rows():
        row.setExpanded(True)
        lines = [row.child(i).text(0) for i in range(row.childCount())]
        assert " ".join(lines).split() == row.data(0, THOUGHT_ROLE).split()  # every word of it, in order
        room = view.viewport().width() - view.indentation() * 4
        assert max(view.fontMetrics().horizontalAdvance(line) for line in lines) <= room  # none cut short
    _save(window, tmp_path, "unfolded")
    qtbot.keyClick(view, Qt.Key.Key_Return)
    assert not first.isExpanded()


def test_blind_mode_hides_the_thought_exactly_when_the_response_and_moves_nothing(qtbot, tmp_path, make_window):
    path, run_id = thinking_workspace(tmp_path)
    stored = _passes(path, run_id)
    window = make_window(path, blind=True)
    window.resize(1024, 700)
    window.show_view("review")
    review = window.view("review")
    view = review.predictions
    item = review.item
    mine = [p for (item_id, _), p in stored.items() if item_id == item.id]
    assert mine and all(p.thought for p in mine)
    texts = " ".join(visible_texts(window))
    assert view.topLevelItemCount() == 0 and not view.thought_rows()
    for p in mine:  # neither the thought nor a word of its outcome before the verdict
        assert p.thought[:40] not in texts
    assert CUT_IN_THOUGHT not in texts and "Thought (" not in texts
    _save(window, tmp_path, "blind-before")

    review.setFocus()
    qtbot.keyClick(window, Qt.Key.Key_O)  # the verdict: the item's passes and thoughts now show
    qtbot.keyClick(window, Qt.Key.Key_K)  # back to the judged item
    qtbot.waitUntil(lambda: review.item.id == item.id)
    qtbot.waitUntil(lambda: bool(view.thought_rows()))
    assert {r.data(0, THOUGHT_ROLE) for r in view.thought_rows()} >= {p.thought for p in mine}
    # Opening a thought moves nothing outside the list: no verdict button, not the tabs.
    buttons = {name: _geometry(b) for name, b in review.verdict_buttons.items() if b.isVisible()}
    tabs = _geometry(review.tabs)
    for row in view.thought_rows():
        row.setExpanded(True)
    qtbot.wait(10)
    assert {name: _geometry(b) for name, b in review.verdict_buttons.items() if b.isVisible()} == buttons
    assert _geometry(review.tabs) == tabs
    _save(window, tmp_path, "blind-after")


def test_a_pass_without_a_thought_has_no_thought_row(qtbot, tmp_path, make_window):
    path, _ = thinking_workspace(tmp_path)
    window = make_window(path)
    window.show_view("review")
    view = window.view("review").predictions
    baseline = _run_row(view, 1)
    assert baseline.childCount() and all(
        baseline.child(i).childCount() == 0 and CUT_MARK not in baseline.child(i).text(0)
        for i in range(baseline.childCount())
    )
