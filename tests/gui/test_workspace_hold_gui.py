"""The app keeps its hold on the workspace (docs/adr/0023-the-hold-on-the-workspace.md).

Every action of the app that opens a file dialog is walked here with the dialog shown in the workspace's own folder
(beside the open workspace and its -wal and -shm) until it has listed and drawn that folder — where Qt's default
icon provider opened every file to sniff its type, dropping SQLite's locks — then cancelled. Then another process
opens and closes the workspace, and writes: the app must see that write within 2 s, and its own next verdict must be
visible to another process at once. And the guard: the -wal replaced under the app, the next verdict is not lost.
"""

from __future__ import annotations

import itertools
import os
import time
from pathlib import Path

import pytest
from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import (
    QApplication,
    QDialog,
    QFileDialog,
    QFileSystemModel,
    QInputDialog,
    QLineEdit,
    QMessageBox,
    QPushButton,
)

from annotation import reviews
from tests.elsewhere import notes_seen_elsewhere, run_python
from tests.factories import write_mmbench_tsv

ROOT = Path(__file__).resolve().parents[2]
BROWSE_BUTTONS = ("Browse…", "Choose…", "Folder…")
_marks = itertools.count(1)


def _other_opens_closes_then_writes(path: Path, note: str) -> None:
    """Another vlmdesk: opens and closes the workspace (a backup script, `vlmdesk runs`), then writes a verdict."""
    run_python(
        "from annotation import reviews\nfrom db import open_workspace\n"
        f"path = {str(path)!r}\n"
        "with open_workspace(path) as ws:\n"
        "    ws.conn.execute('SELECT count(*) FROM items').fetchone()\n"
        "with open_workspace(path) as ws:\n"
        "    item = ws.conn.execute('SELECT min(id) FROM items').fetchone()[0]\n"
        f"    reviews.add_review(ws, item, 'other', 'ok', note={note!r})\n"
    )


def _app_sees(window, note: str) -> bool:
    return window.ws.conn.execute("SELECT 1 FROM reviews WHERE note = ?", (note,)).fetchone() is not None


def assert_workspace_shared_cleanly(qtbot, window) -> None:
    """The issue's bar: another process opens and closes the workspace; the app sees its next write within 2 s,
    and the app's own next verdict is visible to another process at once."""
    path = Path(window.ws.path)
    theirs, mine = f"theirs-{next(_marks)}", f"mine-{next(_marks)}"
    _other_opens_closes_then_writes(path, theirs)
    qtbot.waitUntil(lambda: _app_sees(window, theirs), timeout=2000)
    item = window.ws.conn.execute("SELECT min(id) FROM items").fetchone()[0]
    reviews.add_review(window.ctx.ws, item, "ann", "ambiguous", note=mine)
    assert mine in notes_seen_elsewhere(path)
    assert os.path.exists(f"{path}-wal")  # the app still has it open: nobody deleted its -wal


class DialogAnswerer:
    """Answers the modal dialogs an action opens, from the event loop: a file dialog is moved to the workspace's
    folder, left open until that folder is listed and drawn, then cancelled (or given `accept` files, in order); a
    form's file buttons are each pressed in turn before the form is cancelled; questions are answered yes."""

    def __init__(self, folder: Path, accept: list[str] | None = None):
        self.folder = str(folder)
        self.accept = list(accept or [])
        self.file_dialogs: list[QFileDialog] = []
        self.names: list[str] = []  # each file dialog's object name, read while it is open
        self._shown_at: dict[int, float] = {}
        self._listed_at: dict[int, float] = {}
        self._pressed: dict[int, int] = {}  # form → browse buttons pressed
        self._waiting = False  # a browse button was pressed; its file dialog has not come up yet
        self.timer = QTimer()
        self.timer.setInterval(30)
        self.timer.timeout.connect(self._tick)

    def _tick(self) -> None:
        modal = QApplication.activeModalWidget()
        if isinstance(modal, QFileDialog):
            self._waiting = False
            self._file_dialog(modal)
        elif isinstance(modal, (QInputDialog, QMessageBox)):
            QTimer.singleShot(0, modal.accept)
        elif isinstance(modal, QDialog) and not self._waiting:
            buttons = [b for b in modal.findChildren(QPushButton) if b.text() in BROWSE_BUTTONS and b.isEnabled()]
            done = self._pressed.get(id(modal), 0)
            if done < len(buttons):
                self._pressed[id(modal)] = done + 1
                self._waiting = True
                QTimer.singleShot(0, buttons[done].click)
            else:
                QTimer.singleShot(0, modal.reject)

    def _file_dialog(self, dialog: QFileDialog) -> None:
        if dialog not in self.file_dialogs:
            self.file_dialogs.append(dialog)
            self.names.append(dialog.objectName())
            self._shown_at[id(dialog)] = time.monotonic()
            dialog.setDirectory(self.folder)
            return
        model = dialog.findChild(QFileSystemModel)
        # The workspace at least (a name filter may hide its -wal and -shm; a folder dialog lists folders only).
        listed = model is not None and model.rowCount(model.index(self.folder)) >= 1
        if not listed and time.monotonic() - self._shown_at[id(dialog)] < 10:
            return
        first = self._listed_at.setdefault(id(dialog), time.monotonic())
        if time.monotonic() - first < 0.4:  # a few frames: the view asks every row's icon and type
            return
        if self.accept:
            chosen = Path(self.accept.pop(0))
            dialog.setDirectory(str(chosen.parent))
            dialog.findChild(QLineEdit, "fileNameEdit").setText(chosen.name)  # as if typed
            QTimer.singleShot(0, dialog.accept)
        else:
            QTimer.singleShot(0, dialog.reject)

    def run(self, trigger) -> list[str]:
        """Trigger the action; the object names of the file dialogs it opened."""
        self.timer.start()
        try:
            trigger()
        finally:
            self.timer.stop()
        return self.names


def _menu(window, title: str):
    def trigger():
        action = window.menu_action(title)
        assert action is not None, title
        action.trigger()

    return trigger


def _button(window, view: str, text: str, *, index: int = 0):
    def trigger():
        window.show_view(view)
        found = [b for b in window.view(view).findChildren(QPushButton) if b.text() == text and b.isEnabled()]
        assert len(found) > index, f"{view}: no enabled {text!r} button"
        found[index].click()

    return trigger


def _prompt_file(window):
    def trigger():
        window.show_view("runs")
        prompt = window.view("runs").form.prompt
        prompt.activated.emit(prompt.findData("file"))  # the launcher's "Template file…"

    return trigger


# Every action of the app that opens a file dialog: (name, trigger, file dialogs it opens with nothing accepted).
ACTIONS = [
    ("open workspace", lambda w: _menu(w, "Open workspace…"), 1),
    ("new workspace", lambda w: _menu(w, "New workspace…"), 1),
    ("import benchmark", lambda w: _menu(w, "Import benchmark…"), 1),
    ("import parquet folder", lambda w: _menu(w, "Import a parquet folder (shards of one split)…"), 1),
    ("import predictions", lambda w: _menu(w, "Import predictions made elsewhere…"), 1),
    *[
        (f"{verb} {kind}", (lambda w, t=f"{verb} {kind}…": _menu(w, t)), 1)
        for kind in ("reviews", "labels", "QC decisions", "arena votes")
        for verb in ("Export", "Import")
    ],
    ("export curated benchmark", lambda w: _menu(w, "Export the curated benchmark…"), 1),
    ("build a POPE set", lambda w: _menu(w, "Build a POPE set…"), 3),
    ("results: export predictions", lambda w: _button(w, "results", "Export predictions…"), 1),
    ("results: export chart", lambda w: _button(w, "results", "Export chart…"), 1),
    ("results: runs CSV", lambda w: _button(w, "results", "Export CSV…", index=0), 1),
    ("runs: runs CSV", lambda w: _button(w, "runs", "Export CSV…"), 1),
    ("alignment: CSV", lambda w: _button(w, "alignment", "Export CSV…"), 1),
    ("annotators: CSV", lambda w: _button(w, "annotators", "Export CSV…"), 1),
    ("models: model folder", lambda w: _button(w, "models", "Folder…"), 1),
    ("runs: prompt template file", _prompt_file, 1),
]


@pytest.mark.parametrize("name, trigger, dialogs", ACTIONS, ids=[a[0] for a in ACTIONS])
def test_every_file_dialog_beside_the_workspace_keeps_it_shared(qtbot, demo_ws, make_window, name, trigger, dialogs):
    if name == "Export labels":  # offered once an adjudication set exists
        from vlmdesk.cli import main as cli_main

        assert (
            cli_main(["--workspace", str(demo_ws), "align", "sample", "--run", "1", "--name", "s1", "--size", "5"]) == 0
        )
    window = make_window(demo_ws, advance=False)
    qtbot.wait(100)
    if name.startswith("results: export"):  # enabled once one run is chosen, and its chart drawn (from the worker)
        results = window.view("results")
        window.show_view("results")
        qtbot.waitUntil(lambda: results.export_preds.isEnabled() and not results.computing, timeout=10_000)
    for suffix in ("-wal", "-shm"):
        assert os.path.exists(f"{demo_ws}{suffix}")
    seen = DialogAnswerer(demo_ws.parent).run(trigger(window))
    assert len(seen) == dialogs
    assert set(seen) == {"vlmdeskFileDialog"}, "a file dialog that is not gui/file_dialogs'"
    assert window.ws.hold_lost() is None  # the dialog itself took nothing from the workspace
    assert not window.ws.reconnections
    assert_workspace_shared_cleanly(qtbot, window)


def test_the_images_folder_asked_after_a_benchmark_file_keeps_it_shared(qtbot, tmp_path, demo_ws, make_window):
    """Import benchmark… asks a second dialog (the images folder) once a file is chosen."""
    tsv = write_mmbench_tsv(demo_ws.parent / "small.tsv", 3)
    window = make_window(demo_ws, advance=False)
    seen = DialogAnswerer(demo_ws.parent, accept=[str(tsv)]).run(_menu(window, "Import benchmark…"))
    assert len(seen) == 2
    qtbot.waitUntil(lambda: window.ws.conn.execute("SELECT count(*) FROM benchmarks").fetchone()[0] == 4, timeout=60000)
    assert window.ws.hold_lost() is None and not window.ws.reconnections
    assert_workspace_shared_cleanly(qtbot, window)


def _drop_locks(path: Path) -> None:
    """What a library that sniffs files does: open them read-only and close them."""
    for suffix in ("", "-shm"):
        os.close(os.open(f"{path}{suffix}", os.O_RDONLY))


def test_the_wal_replaced_under_the_app_the_next_verdict_is_not_lost(qtbot, demo_ws, make_window, monkeypatch):
    monkeypatch.setattr("db.workspace.description_lock", lambda *args, **kwargs: False)  # unguarded (ADR 0046)
    window = make_window(demo_ws, advance=False)
    window.show_view("review")
    review = window.view("review")
    item = review.item
    window._poll.stop()  # the verdict comes before the window's next look at its hold
    _drop_locks(demo_ws)
    _other_opens_closes_then_writes(demo_ws, "theirs-replaced")  # it deleted the -wal the app was using
    assert "deleted or replaced" in window.ws.hold_lost()
    qtbot.keyClick(window, Qt.Key_U)  # ambiguous
    assert review.saved.text().startswith("✓ Saved")
    with_note = notes_seen_elsewhere(demo_ws)
    assert "theirs-replaced" in with_note
    found = run_python(
        f"import sqlite3\nc = sqlite3.connect({str(demo_ws)!r})\n"
        "print(c.execute(\"SELECT count(*) FROM reviews WHERE annotator = 'ann' AND verdict = 'ambiguous' "
        f'AND item_id = {item.id}").fetchone()[0])\n'
    )
    assert found.strip() == "1"
    window._poll.start()
    qtbot.waitUntil(lambda: window.message_bar.isVisible(), timeout=2000)
    assert "lost its hold on the workspace" in window.message_bar.label.text()
    assert_workspace_shared_cleanly(qtbot, window)


def test_locks_dropped_by_a_library_are_regained_before_anyone_deletes_the_wal(
    qtbot, demo_ws, make_window, monkeypatch
):
    monkeypatch.setattr("db.workspace.description_lock", lambda *args, **kwargs: False)  # unguarded (ADR 0046)
    window = make_window(demo_ws, advance=False)
    if not window.ws._hold.locks_visible:
        pytest.skip("this system does not show POSIX locks in /proc/locks")
    _drop_locks(demo_ws)
    qtbot.waitUntil(lambda: bool(window.ws.reconnections), timeout=2000)  # the window's poll noticed
    assert window.ws.hold_lost() is None
    assert window.ws._hold.locks_visible, "the reconnected workspace must hold its locks before anyone else closes it"
    # The -wal the app holds now. (Closing the connection that had lost its locks may itself have found it was the
    # last user and checkpointed and deleted the old -wal: safe, nobody else had the file open. Whether it did
    # depends on whether an image read was in flight, so the test reads the -wal after the reconnection.)
    wal = os.stat(f"{demo_ws}-wal").st_ino
    _other_opens_closes_then_writes(demo_ws, "theirs-after")
    assert os.stat(f"{demo_ws}-wal").st_ino == wal  # the app held it: nobody took themselves for the last user
    qtbot.waitUntil(lambda: _app_sees(window, "theirs-after"), timeout=2000)


def test_guarded_locks_dropped_by_a_library_need_no_reconnection_and_the_wal_stays(qtbot, demo_ws, make_window):
    """ADR 0046: the guard's locks survive the library's close; another process closing leaves the app's -wal."""
    window = make_window(demo_ws, advance=False)
    if not window.ws._hold.guarded:
        pytest.skip("this system has no open-file-description locks")
    wal = os.stat(f"{demo_ws}-wal").st_ino
    _drop_locks(demo_ws)
    _other_opens_closes_then_writes(demo_ws, "theirs-guarded")
    assert os.stat(f"{demo_ws}-wal").st_ino == wal and window.ws.hold_lost() is None
    qtbot.waitUntil(lambda: _app_sees(window, "theirs-guarded"), timeout=2000)
    assert not window.ws.reconnections


def test_after_another_process_wrote_every_tab_keeps_the_window_active(qtbot, demo_ws, make_window):
    """Results redrew its chart by unparenting the old canvas: the window lost its activation, and with it every
    shortcut (found when the hold's reconnection made the tabs reload)."""
    window = make_window(demo_ws, advance=False)
    _other_opens_closes_then_writes(demo_ws, "theirs-tabs")
    qtbot.waitUntil(lambda: _app_sees(window, "theirs-tabs"), timeout=2000)
    for n in range(window.tabs.count()):
        window.tabs.setCurrentIndex(n)
        qtbot.wait(20)
        assert QApplication.activeWindow() is window, window.tabs.tabText(n)


def test_no_view_makes_its_own_file_dialog():
    """One home: a dialog made elsewhere would not have the icon provider that never opens a file."""
    gui = ROOT / "gui"
    offenders = [p.name for p in gui.glob("*.py") if p.name != "file_dialogs.py" and "QFileDialog" in p.read_text()]
    assert offenders == []
