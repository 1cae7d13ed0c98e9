"""GUI fixtures: a demo workspace with one baseline run, and the real main window on it (offscreen)."""

import pytest

from db import open_workspace
from vlmdesk.cli import main as cli_main
from vlmdesk.demo import ensure_demo


@pytest.fixture(autouse=True)
def _isolated_config(tmp_path, monkeypatch):
    # Preferences and window layout of tests never touch the user's config directory.
    monkeypatch.setenv("VLMDESK_CONFIG_DIR", str(tmp_path / "config"))


@pytest.fixture
def demo_ws(tmp_path):
    path = tmp_path / "demo.sqlite"
    with open_workspace(path) as ws:
        ensure_demo(ws)
    assert cli_main(["--workspace", str(path), "run", "--bench", "demo", "--model", "baseline:first"]) == 0
    return path


@pytest.fixture
def make_window(qtbot, tmp_path):
    from gui.main_window import MainWindow
    from gui.prefs import Preferences, PreferencesFile

    def make(path, **prefs):
        pf = PreferencesFile(tmp_path / "config" / "preferences.json")
        pf.save(Preferences(annotator="ann", **prefs))
        window = MainWindow(path, prefs_file=pf, settings_path=tmp_path / "config" / "window.ini")
        qtbot.addWidget(window)
        window.resize(1280, 800)
        window.show()
        qtbot.waitExposed(window)
        window.activateWindow()
        from PySide6.QtWidgets import QApplication

        qtbot.waitUntil(lambda: QApplication.activeWindow() is window)  # window shortcuts need an active window
        return window

    return make
