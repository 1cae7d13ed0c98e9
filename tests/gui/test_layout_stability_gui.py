"""A window that never moves under the pointer, and fits the screen it opens on (issue 35).

A message (a note, an error with its details) floats over the window: showing and dismissing it moves no widget of
any page, so the click that follows lands where it was aimed (a bar inserted above the tabs pushed every page down and
the next click selected run 2 instead of run 4). Neither does a refresh. The window restored from a session on a
bigger screen, or opened the first time, lies within the screen's available area; the Benchmarks dock's width follows
the window's size."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from PySide6.QtCore import QMargins, QPoint, QRect, QSize, Qt
from PySide6.QtWidgets import QApplication, QWidget

from annotation import reviews
from db import open_workspace
from gui.screen_fit import DOCK_SHARE_MAX, dock_width, fit_geometry

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


# -- fitting the screen


def test_fit_geometry_shrinks_and_moves_a_window_into_the_available_area():
    screen = QRect(0, 0, 1024, 700)
    frame = QMargins(1, 20, 1, 5)
    minimum = QSize(876, 613)
    fitted = fit_geometry(QRect(2, 40, 1280, 800), screen, frame, minimum)
    assert fitted == QRect(1, 20, 1022, 675)
    assert screen.contains(fitted.marginsAdded(frame))
    # A window that fits stays where and as it is; one off the right edge comes back whole.
    assert fit_geometry(QRect(50, 60, 900, 620), screen, frame, minimum) == QRect(50, 60, 900, 620)
    assert fit_geometry(QRect(600, 60, 900, 620), screen, frame, minimum) == QRect(123, 60, 900, 620)
    # A second screen to the right, with a panel on top: its own area.
    right = QRect(1920, 32, 1280, 768)
    assert fit_geometry(QRect(1900, 0, 1280, 800), right, frame, minimum) == QRect(1921, 52, 1278, 743)
    # A screen smaller than the window's minimum: the minimum, at the top left.
    assert fit_geometry(QRect(100, 100, 1280, 800), QRect(0, 0, 800, 600), frame, minimum) == QRect(1, 20, 876, 613)


def test_dock_width_follows_the_windows_width_within_bounds():
    assert dock_width(0.2, 1000, 300, 150) == 200  # its share
    assert dock_width(0.2, 1920, 200, 150) == 384  # a bigger window, a proportionally wider dock
    assert dock_width(0.1, 1016, 100, 222) == 222  # never narrower than its content needs
    assert dock_width(0.6, 1920, 100, 222) == int(1920 * DOCK_SHARE_MAX)  # nor more than a third
    assert dock_width(None, 1280, 210, 180) == 210  # no share saved: as it is


_SESSION = """
import json, os, sys
from PySide6.QtTest import QTest
from gui.app import application
from gui.main_window import MainWindow
from gui.prefs import Preferences, PreferencesFile
app = application()
workspace, config, size = sys.argv[1], sys.argv[2], sys.argv[3]
prefs = PreferencesFile(os.path.join(config, "preferences.json"))
if not os.path.exists(prefs.path):
    prefs.save(Preferences(annotator="ann", blind=True))
window = MainWindow(workspace, prefs_file=prefs, settings_path=os.path.join(config, "window.ini"))
if size != "restored":
    window.resize(*map(int, size.split("x")))
window.show()
QTest.qWaitForWindowExposed(window)
for _ in range(5):
    app.processEvents()
frame = window.frameGeometry()
badge = window.blind_label
at = badge.mapToGlobal(badge.rect().topLeft())
dock = window.docks["benchmarks"]
print(json.dumps({
    "available": window.screen().availableGeometry().getRect(),
    "frame": frame.getRect(), "window": window.geometry().getRect(),
    "badge": [at.x(), at.y(), badge.width(), badge.height()], "badge_shown": badge.isVisible(),
    "dock": dock.width(), "preferred": dock.widget().preferred_width(),
}))
window.close()
"""


def _session(tmp_path, workspace, screen: tuple[int, int], size: str) -> dict:
    """The app in a process of its own on an offscreen screen of `screen` (the same screen's name each time: one
    monitor at another resolution), its window config in tmp_path/config."""
    layout = tmp_path / f"screen-{screen[0]}x{screen[1]}.json"
    layout.write_text(
        json.dumps({"screens": [{"name": "monitor", "x": 0, "y": 0, "width": screen[0], "height": screen[1]}]})
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT), QT_QPA_PLATFORM=f"offscreen:configfile={layout}")
    done = subprocess.run(
        [sys.executable, "-c", _SESSION, str(workspace), str(tmp_path / "config"), size],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def _inside(outer, inner) -> bool:
    return QRect(*outer).contains(QRect(*inner))


def test_a_session_on_a_bigger_screen_reopens_within_a_smaller_one_and_the_dock_follows(tmp_path, demo_ws):
    (tmp_path / "config").mkdir()
    first = _session(tmp_path, demo_ws, (1920, 1080), "restored")  # no saved layout: the default size, fitted
    assert _inside(first["available"], first["frame"])
    big = _session(tmp_path, demo_ws, (1280, 800), "1280x800")  # a session at 1280×800, closed so
    assert big["window"][2:] == [1280, 800]
    small = _session(tmp_path, demo_ws, (1024, 700), "restored")  # the next one on a 1024×700 screen
    assert _inside(small["available"], small["frame"]), small  # the window whole on the screen …
    assert small["badge_shown"] and _inside(small["available"], small["badge"])  # … the Blind badge in sight
    assert small["dock"] >= small["preferred"]
    again = _session(tmp_path, demo_ws, (1920, 1080), "restored")  # and then on a big screen
    assert _inside(again["available"], again["frame"])
    share = small["dock"] / small["window"][2]
    assert again["dock"] == dock_width(share, again["window"][2], 0, again["preferred"])  # in proportion
    assert again["dock"] > small["dock"] or again["window"][2] <= small["window"][2]
