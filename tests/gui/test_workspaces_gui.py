"""File › New / Open / Open recent close the old workspace cleanly (no "Cannot operate on a closed database" from a
tab, timer, model or loader that still held the old connection), and a file that cannot be opened is one message
while the open workspace stays open. pytest-qt fails a test on any exception raised inside Qt."""

import shutil
import sqlite3

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from annotation import reviews
from db import open_workspace
from gui import file_dialogs


def _visit_every_tab(qtbot, window):
    for n in range(window.tabs.count()):
        window.tabs.setCurrentIndex(n)
        qtbot.wait(10)
    window.show_view("queues")
    for name in ("qc", "adjudication", "conflicts"):
        window.view("queues").select(name)


def _action(window, text):
    menu = window.menuBar().actions()[0].menu()
    return next(a for a in menu.actions() if a.text().replace("&", "").startswith(text))


def test_new_open_and_recent_switch_workspaces_cleanly(qtbot, tmp_path, demo_ws, make_window, monkeypatch):
    window = make_window(demo_ws)
    _visit_every_tab(qtbot, window)
    old_conn = window.ws.conn
    fresh = tmp_path / "fresh.sqlite"
    monkeypatch.setattr(file_dialogs, "save_file", lambda *a, **k: str(fresh))
    _action(window, "New workspace").trigger()
    qtbot.wait(1200)  # a poll tick and the deferred deletions of the old views
    assert window.ws.path == fresh and not window.message_bar.isVisible()
    # No widget of the rebuilt views flashed up as a window of its own (a parentless button made visible did, and
    # took the activation with it: the window's keys went nowhere).
    assert [w for w in QApplication.topLevelWidgets() if w.isVisible() and w.isWindow()] == [window]
    assert QApplication.activeWindow() is window
    assert window.docks["benchmarks"].widget().count() == 0 and window.ctx.benchmark is None
    try:
        old_conn.execute("SELECT 1")
        raise AssertionError("the old workspace's connection is still open")
    except sqlite3.ProgrammingError:
        pass
    _visit_every_tab(qtbot, window)
    assert all(view.ctx is window.ctx for view in window.views.values())

    monkeypatch.setattr(file_dialogs, "open_file", lambda *a, **k: str(demo_ws))
    _action(window, "Open workspace").trigger()
    qtbot.wait(1200)
    assert window.ctx.benchmark.name == "demo" and not window.message_bar.isVisible()
    _visit_every_tab(qtbot, window)

    recent = window.recent_menu.actions()
    assert [a.text() for a in recent][:2] == [str(demo_ws.resolve()), str(fresh.resolve())]
    recent[1].trigger()  # back to the fresh one, and again to the demo: twice through every teardown
    window.recent_menu.actions()[1].trigger()
    qtbot.wait(1200)
    assert window.ws.path.resolve() == demo_ws.resolve() and not window.message_bar.isVisible()
    # The rebuilt window works: a verdict key lands in the demo workspace's file.
    window.show_view("review")
    item = window.view("review").item
    qtbot.keyClick(window, Qt.Key_O)
    with open_workspace(demo_ws) as ws:
        assert [(r.item_id, r.verdict) for r in reviews.standing_reviews(ws, annotator="ann")] == [(item.id, "ok")]


def test_a_file_that_cannot_be_opened_leaves_the_open_workspace_open(qtbot, tmp_path, demo_ws, make_window):
    window = make_window(demo_ws, advance=False)
    newer = tmp_path / "newer.sqlite"
    shutil.copy(demo_ws, newer)
    with sqlite3.connect(newer) as conn:
        conn.execute("PRAGMA user_version = 999")
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"not a database, just bytes " * 40)
    for bad, words in ((newer, "newer"), (junk, "not a SQLite workspace")):
        window.message_bar.hide()
        assert window.open_workspace(bad) is False
        assert window.message_bar.isVisible() and words in window.message_bar.label.text()
        assert window.ws.path == demo_ws and window.ctx.benchmark.name == "demo"
    _visit_every_tab(qtbot, window)
    window.show_view("review")
    item = window.view("review").item
    qtbot.keyClick(window, Qt.Key_U)
    with open_workspace(demo_ws) as ws:
        assert [(r.item_id, r.verdict) for r in reviews.standing_reviews(ws, annotator="ann")] == [
            (item.id, "ambiguous")
        ]


def test_a_workspace_opened_from_the_desktop_while_the_app_runs_is_opened(qtbot, tmp_path, demo_ws, make_window):
    """macOS hands a double-clicked workspace to the running app as a FileOpen event (gui/app.FileOpenFilter); a file
    that is no workspace is one message and the open workspace stays."""
    from PySide6.QtGui import QFileOpenEvent
    from PySide6.QtWidgets import QApplication

    from gui.app import FileOpenFilter

    window = make_window(demo_ws)
    other = tmp_path / "other.sqlite"
    shutil.copy(demo_ws, other)
    app = QApplication.instance()
    opener = FileOpenFilter(window)
    app.installEventFilter(opener)
    try:
        QApplication.sendEvent(app, QFileOpenEvent(str(other)))
        qtbot.waitUntil(lambda: window.ws.path == other, timeout=5000)
        junk = tmp_path / "notes.txt"
        junk.write_text("not a workspace")
        QApplication.sendEvent(app, QFileOpenEvent(str(junk)))
        qtbot.waitUntil(window.message_bar.isVisible, timeout=5000)
        assert window.ws.path == other and window.message_bar.kind == "error"
    finally:
        app.removeEventFilter(opener)
