"""Starting the desktop app: QApplication, style, the error guard, the main window."""

from __future__ import annotations

import sys
from pathlib import Path

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


def run(workspace: str | Path) -> int:
    app = application()
    window = MainWindow(workspace)
    install_error_guard(window.show_error)
    window.show()
    window.ensure_annotator()
    return app.exec()
