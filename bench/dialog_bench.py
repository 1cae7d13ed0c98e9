"""File dialogs beside an open workspace: what each way costs, and whether it keeps SQLite's locks.

Three ways of showing a file dialog in the folder that holds the open workspace (its -wal and -shm beside it), each
shown until the folder is listed and drawn, then closed:
- Qt's stock dialog in the app's process (what the app did before ADR 0023),
- gui/file_dialogs (Qt's own dialog, icons from names) in the app's process (what the app does),
- the same dialog in a child process (the alternative ADR 0023 rejected), its answer read from stdout.
Prints, for each, the median time from asking to the dialog listed, and whether this process still holds its locks
on the workspace afterwards (/proc/locks). Run: `QT_QPA_PLATFORM=offscreen python bench/dialog_bench.py`.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CHILD = r"""
import sys, time
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QFileDialog, QFileSystemModel
from gui import file_dialogs
app = QApplication([])
folder = sys.argv[1]
def close_when_listed():
    d = QApplication.activeModalWidget()
    m = d.findChild(QFileSystemModel) if d is not None else None
    if m is not None and m.rowCount(m.index(folder)) >= 3:
        QTimer.singleShot(100, d.reject)
    else:
        QTimer.singleShot(10, close_when_listed)
QTimer.singleShot(10, close_when_listed)
print(file_dialogs.open_file(None, "x", folder) or "")
"""


def _show_until_listed(make_dialog, folder: str) -> float:
    from PySide6.QtCore import QEventLoop, QTimer
    from PySide6.QtWidgets import QApplication, QFileSystemModel

    start = time.perf_counter()
    dialog = make_dialog()
    dialog.show()
    loop = QEventLoop()
    listed: list[float] = []

    def check():
        model = dialog.findChild(QFileSystemModel)
        if model is not None and model.rowCount(model.index(folder)) >= 3:
            listed.append(time.perf_counter() - start)
            QTimer.singleShot(100, loop.quit)  # a few frames: every row's icon and type are asked
        else:
            QTimer.singleShot(5, check)

    QTimer.singleShot(0, check)
    loop.exec()
    dialog.close()
    dialog.deleteLater()
    QApplication.processEvents()
    return listed[0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtWidgets import QApplication, QFileDialog

    from db import open_workspace
    from gui import file_dialogs

    app = QApplication.instance() or QApplication([])
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    with tempfile.TemporaryDirectory() as tmp:
        folder = tmp
        ws = open_workspace(Path(tmp) / "w.sqlite")
        ws.conn.execute("SELECT count(*) FROM items").fetchone()

        def stock():
            d = QFileDialog(None, "stock", folder)
            d.setOption(QFileDialog.Option.DontUseNativeDialog, True)
            return d

        def ours():
            d = QFileDialog(None, "ours", folder)
            d.setOption(QFileDialog.Option.DontUseNativeDialog, True)
            d.setIconProvider(file_dialogs._icons())
            return d

        rows = []
        for name, make in (("gui/file_dialogs, in process", ours), ("Qt's stock dialog, in process", stock)):
            times = []
            kept = True
            for _ in range(args.repeat):
                if ws.hold_lost():
                    ws.regain_hold()
                times.append(_show_until_listed(make, folder))
                kept = kept and ws.hold_lost() is None
            rows.append((name, statistics.median(times), kept))
        ws.regain_hold()
        times = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            subprocess.run(
                [sys.executable, "-c", CHILD, folder],
                env=dict(os.environ, PYTHONPATH=str(ROOT)),
                capture_output=True,
                check=True,
                timeout=120,
            )
            times.append(time.perf_counter() - start)
        rows.append(("gui/file_dialogs, child process", statistics.median(times), ws.hold_lost() is None))
        ws.close()
    print(f"{'dialog':34} {'to listed, median':>18}  locks kept")
    for name, t, kept in rows:
        print(f"{name:34} {t * 1000:15.0f} ms  {'yes' if kept else 'NO'}")
    print(f"child process / in process: {rows[2][1] / rows[0][1]:.1f}x")
    del app


if __name__ == "__main__":
    main()
