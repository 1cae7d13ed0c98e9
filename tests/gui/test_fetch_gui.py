"""File › Import a benchmark by name: the catalog in a dialog, and the window running `vlmdesk import NAME` (the
download, then the import) in a child process against a local HTTP server, its progress in the status bar."""

from __future__ import annotations

import hashlib
import json
import os

from PySide6.QtWidgets import QLabel, QWidget

from evaluator.formats.importers.catalog import catalog
from tests.factories import write_mmbench_tsv
from tests.file_server import FileServer


def test_a_catalog_benchmark_is_downloaded_and_imported_from_the_app(qtbot, tmp_path, make_window, monkeypatch):
    data = write_mmbench_tsv(tmp_path / "src.tsv", 5, image_side=16).read_bytes()
    entry = {"name": "Tiny_DEV", "url": "https://bench.example.invalid/files/Tiny_DEV.tsv",
             "checksum": f"md5:{hashlib.md5(data).hexdigest()}", "title": "A tiny MMBench-style set"}  # fmt: skip
    (tmp_path / "catalog.json").write_text(json.dumps([entry]))
    monkeypatch.setenv("VLMDESK_CATALOG", str(tmp_path / "catalog.json"))
    monkeypatch.setenv("VLMDESK_CACHE_DIR", str(tmp_path / "cache"))
    window = make_window(tmp_path / "w.sqlite")
    assert window.menu_action("Import a benchmark by name…") is not None

    from gui.fetch_dialog import FetchDialog

    with FileServer({"/files/Tiny_DEV.tsv": data}) as server:
        server.faults["/files/Tiny_DEV.tsv"].append(("trickle", 0.0001))  # slow enough to see the progress
        dialog = FetchDialog(catalog(), "", window)
        qtbot.addWidget(dialog)
        dialog.show()
        names = [dialog.table.item(r, 0).text() for r in range(dialog.table.rowCount())]
        assert {"MMBench_DEV_EN", "POPE", "mmbench_en_dev", "Tiny_DEV"} <= set(names)
        dialog.filter.setText("pope lmms")
        shown = [dialog.table.item(r, 0).text() for r in range(len(names)) if not dialog.table.isRowHidden(r)]
        assert shown == ["pope_random", "pope_pop", "pope_adv"]
        dialog.filter.clear()
        dialog.select("POPE")
        assert dialog.setting.isEnabled() and "POPE_random, POPE_popular, POPE_adversarial" in dialog.details.text()
        dialog.setting.setCurrentIndex(3)  # adversarial
        assert dialog.arguments() == ["import", "POPE", "--json-progress", "--setting", "adversarial"]
        dialog.select("Tiny_DEV")
        assert not dialog.setting.isEnabled() and "Licence: not stated" in dialog.details.text()
        if os.environ.get("VLMDESK_SCREENSHOTS"):
            dialog.grab().save(os.path.join(os.environ["VLMDESK_SCREENSHOTS"], "fetch_dialog.png"))
        dialog.mirror.setText(server.url)  # every download goes to the local server
        args = dialog.arguments()
        assert args == ["import", "Tiny_DEV", "--json-progress", "--mirror", server.url]
        dialog.close()

        process = window.fetch_and_import(args)
        label = window.findChild(QLabel, "importProgressLabel")
        qtbot.waitUntil(lambda: "MB downloaded" in label.text() or process.finished, timeout=60_000)
        assert process.finished or label.text().startswith("Fetching and importing Tiny_DEV: ")
        qtbot.waitUntil(lambda: process.finished, timeout=120_000)
    assert process.exit_code == 0, process.stderr
    assert window.message_bar.label.text() == "Imported 'Tiny_DEV': 5 questions"
    qtbot.waitUntil(lambda: window.findChild(QWidget, "importProgress") is None)
    assert window.docks["benchmarks"].widget().count() == 1
    assert (tmp_path / "cache" / "Tiny_DEV.tsv").read_bytes() == data


def test_the_filter_moves_the_choice_to_what_it_shows_and_arrows_walk_it(qtbot, tmp_path, make_window):
    """Typing a filter then Enter imports a benchmark the table shows, never the one selected before and now hidden."""
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QDialogButtonBox

    from gui.fetch_dialog import FetchDialog

    window = make_window(tmp_path / "w.sqlite")
    dialog = FetchDialog(catalog(), "", window)
    qtbot.addWidget(dialog)
    dialog.show()
    assert dialog.current().name == "MMBench_DEV_EN"
    qtbot.keyClicks(dialog.filter, "pope lmms")
    assert dialog.current().name == "pope_random" and "POPE random" in dialog.details.text()
    qtbot.keyClick(dialog.filter, Qt.Key.Key_Down)
    qtbot.keyClick(dialog.filter, Qt.Key.Key_Down)
    qtbot.keyClick(dialog.filter, Qt.Key.Key_Down)  # past the last shown row: stays on it
    assert dialog.current().name == "pope_adv"
    qtbot.keyClick(dialog.filter, Qt.Key.Key_Up)
    assert dialog.current().name == "pope_pop" and dialog.arguments()[:2] == ["import", "pope_pop"]
    dialog.filter.setText("no such benchmark")
    ok = dialog.buttons.button(QDialogButtonBox.StandardButton.Ok)
    assert dialog.current() is None and not ok.isEnabled() and dialog.details.text() == ""


def test_the_mirror_field_hides_the_password_of_vlmdesk_mirror(qtbot, monkeypatch):
    """Issue 40: the dialog showed $VLMDESK_MIRROR with its password, editable. It shows the URL with the user and
    password hidden (fetch's hide_userinfo); left as shown, the command gets no --mirror and reads the real value
    from the environment it inherits, so no command line or text of the app holds the password."""
    from PySide6.QtWidgets import QLineEdit

    from gui.fetch_dialog import FetchDialog

    mirror = "https://ana:s3cret-pass@mirror.example/hf"
    monkeypatch.setenv("VLMDESK_MIRROR", mirror)
    dialog = FetchDialog(catalog(), os.environ["VLMDESK_MIRROR"])
    qtbot.addWidget(dialog)
    dialog.show()
    dialog.select("POPE")
    assert dialog.mirror.text() == "https://***@mirror.example/hf"
    texts = [w.text() for w in dialog.findChildren(QLineEdit) + dialog.findChildren(QLabel)]
    assert not any("s3cret" in t or "ana:" in t for t in texts)
    assert dialog.arguments() == ["import", "POPE", "--json-progress"]
    dialog.mirror.setText("https://hf-mirror.com")  # a mirror typed in is the command's --mirror
    assert dialog.arguments()[-2:] == ["--mirror", "https://hf-mirror.com"]
