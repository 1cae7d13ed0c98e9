"""Verdict keys work whenever Review is the visible tab and no text field has the focus, whatever was clicked last;
a key that does nothing says why in the status bar. Checked in SQLite."""

from PySide6.QtCore import QPoint, Qt

from annotation import reviews
from db import open_workspace


def _standing(path):
    with open_workspace(path) as ws:
        return {r.item_id: r.verdict for r in reviews.standing_reviews(ws, annotator="ann")}


def test_keys_work_after_clicking_the_benchmarks_dock(qtbot, demo_ws, make_window):
    window = make_window(demo_ws, advance=False)
    window.show_view("review")
    review = window.view("review")
    item = review.item
    dock = window.docks["benchmarks"].widget()
    rect = dock.visualItemRect(dock.item(0))
    qtbot.mouseClick(dock.viewport(), Qt.LeftButton, pos=rect.center())
    assert dock.hasFocus() and window.ctx.benchmark.name == "demo"
    qtbot.keyClick(window, Qt.Key_O)
    assert _standing(demo_ws) == {item.id: "ok"}
    # The image, the splitter handle: focus elsewhere in Review, the keys still act.
    qtbot.mouseClick(review.image, Qt.LeftButton, pos=QPoint(5, 5))
    qtbot.keyClick(window, Qt.Key_I)
    assert _standing(demo_ws) == {item.id: "bad_image"}


def test_keys_act_only_while_review_is_visible_and_not_while_typing(qtbot, demo_ws, make_window):
    window = make_window(demo_ws, advance=False)
    window.show_view("browse")
    window.docks["benchmarks"].widget().setFocus()
    qtbot.keyClick(window, Qt.Key_O)  # Review is not the visible tab: nothing happens
    assert _standing(demo_ws) == {}
    window.show_view("review")
    review = window.view("review")
    review.note.setFocus()
    qtbot.keyClick(review.note, Qt.Key_O)
    assert review.note.text() == "o" and _standing(demo_ws) == {}


def test_an_ignored_key_says_why_in_the_status_bar(qtbot, tmp_path, demo_ws, make_window):
    window = make_window(demo_ws, advance=False)
    window.show_view("review")
    review = window.view("review")
    assert len(review.item.options) < 9
    qtbot.keyClick(window, Qt.Key_9)
    assert f"This item has {len(review.item.options)} options" in window.statusBar().currentMessage()
    qtbot.keyClick(window, Qt.Key_F1)
    qtbot.keyClick(window, Qt.Key_O)
    assert "help" in window.statusBar().currentMessage() and _standing(demo_ws) == {}
    qtbot.keyClick(review.help, Qt.Key_Escape)
    empty = make_window(tmp_path / "empty.sqlite")
    empty.show_view("review")
    qtbot.keyClick(empty, Qt.Key_O)
    assert "No item to judge" in empty.statusBar().currentMessage()
