"""Importing from the app: the child process's progress in the status bar, and Cancel that leaves nothing behind."""

from __future__ import annotations

import sqlite3

from PySide6.QtWidgets import QLabel, QPushButton, QWidget

from tests.factories import write_mmbench_tsv


def dump(path) -> dict:
    conn = sqlite3.connect(str(path))
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        return {t: sorted(repr(row) for row in conn.execute(f'SELECT * FROM "{t}"')) for t in tables}
    finally:
        conn.close()


def test_an_import_shows_its_progress_and_cancel_leaves_the_workspace_unchanged(qtbot, tmp_path, make_window):
    ws = tmp_path / "w.sqlite"
    window = make_window(ws)
    src = write_mmbench_tsv(tmp_path / "MMBench_cancel.tsv", 40, image_side=16)
    before = dump(ws)
    # Another writer (a run, a verdict) holds the workspace: the import reads every row, then waits to write.
    blocker = sqlite3.connect(str(ws), timeout=30)
    blocker.execute("BEGIN IMMEDIATE")
    try:
        process = window.import_file(str(src))
        strip = window.findChild(QWidget, "importProgress")
        label = window.findChild(QLabel, "importProgressLabel")
        assert strip is not None and strip.isVisible()
        qtbot.waitUntil(lambda: "rows read" in label.text(), timeout=60_000)
        assert label.text().startswith("Importing MMBench_cancel.tsv: ") and process.running()
        window.findChild(QPushButton, "importCancel").click()
        assert "cancelling" in label.text()
    finally:
        blocker.rollback()
        blocker.close()
    qtbot.waitUntil(lambda: process.finished, timeout=60_000)
    assert process.exit_code == 130, process.stderr
    assert window.message_bar.label.text() == "Importing MMBench_cancel.tsv: cancelled; nothing was imported"
    qtbot.waitUntil(lambda: window.findChild(QWidget, "importProgress") is None)
    assert window.docks["benchmarks"].widget().count() == 0
    assert dump(ws) == before


def test_a_finished_import_says_what_it_imported(qtbot, tmp_path, make_window):
    window = make_window(tmp_path / "w.sqlite")
    src = write_mmbench_tsv(tmp_path / "MMBench_small.tsv", 3, image_side=16)
    process = window.import_file(str(src))
    qtbot.waitUntil(lambda: process.finished, timeout=60_000)
    assert process.exit_code == 0, process.stderr
    assert window.message_bar.label.text() == "Imported 'mmbench-small': 3 questions"
    assert window.docks["benchmarks"].widget().count() == 1
