"""A window that never moves under the pointer (issue 35).

A message (a note, an error with its details) floats over the window: showing and dismissing it moves no widget of
any page, so the click that follows lands where it was aimed (a bar inserted above the tabs pushed every page down and
the next click selected run 2 instead of run 4). Neither does a refresh."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import QPoint, QRect, Qt
from PySide6.QtWidgets import QApplication, QWidget

from annotation import reviews
from db import open_workspace

ROOT = Path(__file__).resolve().parents[2]
DETAILS = "Traceback (most recent call last):\n" + "\n".join(f'  File "x.py", line {n}, in f' for n in range(40))


def _settle(qtbot=None, window=None):
    """Pending events handled; with a window, its figures computed off the GUI thread drawn (the page at rest)."""
    if window is not None:
        qtbot.waitUntil(window.ctx.background.idle, timeout=10_000)
    app = QApplication.instance()
    for _ in range(3):
        app.processEvents()


def _places(window, page: QWidget) -> dict[QWidget, tuple[int, int, int, int]]:
    """Where every visible widget of the page is, in the window's coordinates (keyed by the widget: held, so that a
    widget replaced by a reload is never taken for its successor)."""
    found = {}
    for w in [page, *page.findChildren(QWidget)]:
        if w.isVisible():
            at = w.mapTo(window, QPoint(0, 0))
            found[w] = (at.x(), at.y(), w.width(), w.height())
    return found


def _moved(before: dict, after: dict) -> list:
    return [
        (k.objectName() or type(k).__name__, before[k], after[k])
        for k in before.keys() & after.keys()
        if before[k] != after[k]
    ]


@pytest.mark.parametrize("kind", ["info", "error"])
def test_a_message_moves_nothing_on_any_page(qtbot, demo_ws, make_window, kind):
    window = make_window(demo_ws)
    window.resize(1024, 700)
    bar = window.message_bar
    for name, page in window.views.items():
        window.show_view(name)
        _settle(qtbot, window)
        before = _places(window, page)
        bar.show_message(f"A message on {name} " + "that is long enough to wrap " * 6, kind, DETAILS)
        _settle()
        assert bar.isVisible()
        shown = _places(window, page)
        assert shown.keys() == before.keys(), name  # nothing hidden or shown on the page either
        assert not _moved(before, shown), name
        if kind == "error":
            qtbot.mouseClick(bar.details_button, Qt.MouseButton.LeftButton)  # the traceback, readable in place
            _settle()
            assert bar.details.isVisible() and "line 39" in bar.details.toPlainText()
            assert not _moved(before, _places(window, page)), name
        # Over the page, inside it, above the status bar; never over the Benchmarks dock.
        box = QRect(bar.mapTo(window, QPoint(0, 0)), bar.size())
        tabs = QRect(window.tabs.mapTo(window, QPoint(0, 0)), window.tabs.size())
        assert tabs.contains(box), (name, box, tabs)
        qtbot.keyClick(window, Qt.Key.Key_Escape)  # Esc dismisses
        _settle()
        assert not bar.isVisible()
        assert not _moved(before, _places(window, page)), name


def test_an_error_stays_until_dismissed_and_a_note_goes_by_itself(qtbot, demo_ws, make_window):
    window = make_window(demo_ws)
    bar = window.message_bar
    bar.show_message("Could not save: the disk is full", "error")
    assert not bar.details_button.isVisibleTo(bar)  # no details, no Details button
    assert not bar._timer.isActive()  # stays
    qtbot.mouseClick(bar.close_button, Qt.MouseButton.LeftButton)
    assert not bar.isVisible()
    bar.show_message("Saved model 'tiny'", "info")
    assert bar._timer.isActive()
    qtbot.waitUntil(lambda: not bar.isVisible(), timeout=10_000)  # it goes by itself
    assert bar.label.text() == "Saved model 'tiny'"  # what the last message said (tests and screenshots read it)


def test_esc_in_a_note_field_leaves_the_field_and_keeps_the_message(qtbot, demo_ws, make_window):
    window = make_window(demo_ws)
    window.show_view("review")
    review = window.view("review")
    review.note.setFocus()
    window.message_bar.show_message("Not done: something", "error", "details")
    qtbot.keyClick(review.note, Qt.Key.Key_Escape)  # the note field's own Esc: back to the keys
    assert not review.note.hasFocus() and window.message_bar.isVisible()
    qtbot.keyClick(QApplication.focusWidget() or window, Qt.Key.Key_Escape)  # then the message's
    assert not window.message_bar.isVisible()


def test_the_message_is_readable_in_dark_theme_with_larger_text(qtbot, demo_ws, make_window):
    window = make_window(demo_ws, theme="dark", font_scale=1.25)
    try:
        window.resize(1024, 700)
        window.show_view("browse")
        bar = window.message_bar
        bar.show_message("Something went wrong: RuntimeError: " + "a long reason " * 30, "error", DETAILS)
        bar.details_button.setChecked(True)
        _settle()
        label = bar.label
        assert label.height() >= label.heightForWidth(label.width())  # every line of it shown
        assert label.palette().color(label.foregroundRole()).lightness() > 150  # light text on the dark red
        tabs = QRect(window.tabs.mapTo(window, QPoint(0, 0)), window.tabs.size())
        assert tabs.contains(QRect(bar.mapTo(window, QPoint(0, 0)), bar.size()))
    finally:
        window.set_appearance(theme="light", font_scale=1.0)


def test_a_refresh_moves_nothing(qtbot, demo_ws, make_window):
    window = make_window(demo_ws)
    window.resize(1024, 700)
    item_id = window.view("browse").item.id
    for name, page in window.views.items():
        window.show_view(name)
        _settle(qtbot, window)
        before = _places(window, page)
        qtbot.keyClick(window, Qt.Key.Key_F5)
        _settle(qtbot, window)
        with open_workspace(demo_ws) as other:  # another process judges the item on screen
            reviews.add_review(other, item_id, "bob", "ok", note=f"seen on {name}")
        window._check_for_changes()  # the poll
        _settle(qtbot, window)
        assert not _moved(before, _places(window, page)), name
