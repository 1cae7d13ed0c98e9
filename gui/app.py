"""Starting the desktop app: QApplication, style, the error guard, the main window."""

from __future__ import annotations

import sys
from pathlib import Path

from PySide6.QtCore import QEvent, QObject
from PySide6.QtWidgets import QApplication

from gui.errors import install_error_guard
from gui.main_window import MainWindow
from gui.style import apply_style


def application() -> QApplication:
    running = QApplication.instance()
    app = running if isinstance(running, QApplication) else QApplication(sys.argv[:1])
    app.setApplicationName("vlmdesk")
    app.setOrganizationName("vlmdesk")
    apply_style(app)
    return app


class FileOpenFilter(QObject):
    """A workspace opened from the desktop while the app runs: macOS hands a double-clicked file to the running app
    as a FileOpen event, not as an argument (Linux and Windows start the app with the path, packaging/entry.py)."""

    def __init__(self, window: MainWindow):
        super().__init__(window)
        self.window = window

    def eventFilter(self, watched, event) -> bool:  # noqa: N802 (Qt's name)
        if event.type() == QEvent.Type.FileOpen and event.file():
            self.window.open_workspace(event.file())
            return True
        return False


def run(workspace: str | Path) -> int:
    app = application()
    window = MainWindow(workspace)
    app.installEventFilter(FileOpenFilter(window))
    install_error_guard(window.show_error)
    window.show()
    window.ensure_annotator()
    return app.exec()
