"""The window as a whole: browse filters and lazy paging, preferences, layout memory, errors in the window,
the screenshot command, and a verdict that survives a SIGKILL right after the key press."""

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from annotation import reviews
from db import catalog, item_query, open_workspace
from db.item_query import ItemFilter
from gui.prefs import Preferences, PreferencesFile
from vlmdesk.cli import main as cli_main

pytestmark = pytest.mark.base  # also run in the base install (.ci/base-install)

ROOT = Path(__file__).resolve().parents[2]


def test_search_and_filters_in_the_browse_view(qtbot, demo_ws, make_window):
    window = make_window(demo_ws)
    browse = window.view("browse")
    model = window.ctx.model
    assert model.total == 30 and browse.count.text() == "30 items"
    qtbot.keyClicks(browse.search, "cat")
    with open_workspace(demo_ws) as ws:
        bench = catalog.benchmark_by_name(ws, "demo")
        expected = [r.id for r in item_query.item_page(ws, bench.id, ItemFilter(text="cat"))]
    qtbot.waitUntil(lambda: model.total == len(expected))
    assert [r.id for r in model.rows] == expected and 0 < len(expected) < 30
    browse.select_combo(browse.result, "right")
    assert all(r.run_result == "right" for r in model.rows)
    browse.clear_filters()
    assert model.total == 30 and browse.search.text() == ""
    # The selected row is shown in full, with the key highlighted.
    browse.table.selectRow(2)
    assert browse.item.id == model.rows[2].id
    assert [r.letter for r in browse.panel.rows if r.is_key] == [browse.item.answer]


def test_the_table_pages_lazily_and_never_reads_images(qtbot, tmp_path, make_window):
    from evaluator.formats.importers import import_benchmark
    from tests.factories import write_mmbench_tsv

    path = tmp_path / "big.sqlite"
    with open_workspace(path) as ws:
        import_benchmark(ws, write_mmbench_tsv(tmp_path / "big.tsv", 1000, circular=False, image_side=16), name="big")
    window = make_window(path)
    model = window.ctx.model
    assert model.total == 1000 and model.rowCount() == 200
    statements = []
    window.ws.conn.set_trace_callback(statements.append)
    table = window.view("browse").table
    for _ in range(3):
        table.scrollToBottom()
        qtbot.wait(20)
    window.ws.conn.set_trace_callback(None)
    assert 200 < model.rowCount() <= 1000
    assert statements and not any("FROM images" in s for s in statements)


def test_preferences_file_is_readable_and_tolerant(tmp_path):
    pf = PreferencesFile(tmp_path / "p.json")
    pf.save(Preferences(annotator="ann", blind=True).with_recent("/a").with_recent("/b").with_recent("/a"))
    data = json.loads((tmp_path / "p.json").read_text())
    assert data["annotator"] == "ann" and data["blind"] is True and data["recent_workspaces"] == ["/a", "/b"]
    assert pf.load() == Preferences(annotator="ann", blind=True, recent_workspaces=("/a", "/b"))
    (tmp_path / "p.json").write_text(json.dumps({"annotator": 3, "zoom": "huge", "advance": False}))
    prefs = pf.load()
    assert prefs == Preferences(advance=False)
    assert len(pf.problems) == 2 and "annotator" in pf.problems[0]
    (tmp_path / "p.json").write_text("{not json")
    assert pf.load() == Preferences() and "unreadable" in pf.problems[0]


def test_layout_and_preferences_are_remembered(qtbot, demo_ws, make_window, tmp_path):
    window = make_window(demo_ws)
    window.resize(1100, 700)
    window.docks["benchmarks"].hide()
    window.blind_action.setChecked(True)
    window.close()
    pf = PreferencesFile(tmp_path / "config" / "preferences.json")
    prefs = pf.load()
    assert prefs.blind and prefs.annotator == "ann"
    assert prefs.recent_workspaces[0] == str(Path(demo_ws).resolve())
    from gui.main_window import MainWindow

    again = MainWindow(demo_ws, prefs_file=pf, settings_path=tmp_path / "config" / "window.ini")
    qtbot.addWidget(again)
    again.show()
    qtbot.waitExposed(again)
    # Offscreen Qt has an 800x600 screen, so restoreGeometry narrows the width to fit it; the height and the
    # dock layout come back as they were.
    assert again.height() == 700 and not again.docks["benchmarks"].isVisible()
    assert again.blind_action.isChecked() and "Annotator: ann" in again.annotator_label.text()


def test_errors_reach_the_window(qtbot, demo_ws, make_window, tmp_path, monkeypatch):
    from gui.errors import install_error_guard

    window = make_window(demo_ws)
    monkeypatch.setattr(sys, "excepthook", sys.excepthook)
    install_error_guard(window.show_error)
    try:
        raise RuntimeError("disk on fire")
    except RuntimeError:
        sys.excepthook(*sys.exc_info())
    assert window.message_bar.isVisible() and "disk on fire" in window.message_bar.label.text()
    window.message_bar.hide()
    bad = tmp_path / "not-a-workspace.sqlite"
    bad.write_bytes(b"hello, this is not SQLite at all" * 10)
    assert window.open_workspace(bad) is False
    assert window.message_bar.isVisible() and "not a SQLite workspace" in window.message_bar.label.text()
    assert window.ctx.benchmark.name == "demo"  # the open workspace stays usable


def test_screenshot_command(qtbot, demo_ws, tmp_path, capsys):
    from PySide6.QtGui import QImage

    out = tmp_path / "shots" / "review.png"
    assert cli_main(["--workspace", str(demo_ws), "gui", "--screenshot", str(out), "--view", "review"]) == 0
    image = QImage(str(out))
    assert (image.width(), image.height()) == (1280, 800)
    assert cli_main(["--workspace", str(demo_ws), "gui", "--screenshot", str(out), "--size", "big"]) == 2
    assert cli_main(["--workspace", str(demo_ws), "gui", "--screenshot", str(out), "--view", "nope"]) == 2
    assert cli_main(["--workspace", str(demo_ws), "gui", "--screenshot", str(out), "--bench", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.count("error: ") == 3 and "--size" in err and "nope" in err


KILL_SCRIPT = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from PySide6.QtCore import Qt
    from PySide6.QtTest import QTest
    from PySide6.QtWidgets import QApplication
    from gui.app import application
    from gui.main_window import MainWindow
    from gui.prefs import Preferences, PreferencesFile

    app = application()
    config = Path(sys.argv[2])
    prefs = PreferencesFile(config / "preferences.json")
    prefs.save(Preferences(annotator="killed"))
    window = MainWindow(sys.argv[1], prefs_file=prefs, settings_path=config / "window.ini")
    window.show()
    window.show_view("review")
    deadline = time.monotonic() + 10
    while QApplication.activeWindow() is not window and time.monotonic() < deadline:
        app.processEvents()
    review = window.view("review")
    review.setFocus()
    QTest.keyClick(window, Qt.Key_I)
    print("pressed", review.saved.text(), flush=True)
    app.exec()
""")


def test_a_verdict_survives_a_kill_right_after_the_key_press(tmp_path, demo_ws):
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", PYTHONPATH=str(ROOT))
    proc = subprocess.Popen(
        [sys.executable, "-c", KILL_SCRIPT, str(demo_ws), str(tmp_path / "cfg")],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stdout.readline()
        assert line.startswith("pressed ✓ Saved"), line + proc.stderr.read() if not line else line
        os.kill(proc.pid, signal.SIGKILL)
        assert proc.wait(timeout=30) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
    with open_workspace(demo_ws) as ws:
        first = catalog.list_items(ws, catalog.benchmark_by_name(ws, "demo").id)[0]
        standing = reviews.standing_reviews(ws, annotator="killed")
    assert [(r.item_id, r.verdict) for r in standing] == [(first.id, "bad_image")]


def test_benchmarks_are_imported_from_the_file_menu_commands(qtbot, tmp_path, make_window):
    from tests.factories import write_mmbench_tsv

    window = make_window(tmp_path / "empty.sqlite")
    assert window.docks["benchmarks"].widget().count() == 0
    demo = window.import_demo()
    qtbot.waitUntil(lambda: demo.finished, timeout=60_000)
    assert demo.exit_code == 0 and window.docks["benchmarks"].widget().count() == 3
    assert window.ctx.benchmark is not None and window.ctx.benchmark.name == "demo"
    bad = tmp_path / "broken.tsv"
    bad.write_text("index\tquestion\n1\tQ?\n")
    failed = window.import_file(str(bad))
    qtbot.waitUntil(lambda: failed.finished, timeout=60_000)
    assert failed.exit_code == 2 and "missing column" in window.message_bar.label.text()
    tsv = write_mmbench_tsv(tmp_path / "MMBench_small.tsv", 4)
    done = window.import_file(str(tsv))
    qtbot.waitUntil(lambda: done.finished, timeout=60_000)
    assert done.exit_code == 0 and window.docks["benchmarks"].widget().count() == 4


def test_verdict_buttons_wait_for_an_item(qtbot, tmp_path, make_window):
    window = make_window(tmp_path / "empty.sqlite")
    review = window.view("review")
    window.show_view("review")
    review.show_row(None)
    assert not any(b.isEnabled() for b in review.verdict_buttons.values())
    demo = window.import_demo()
    qtbot.waitUntil(lambda: demo.finished, timeout=60_000)
    review.show_row(0)
    assert all(b.isEnabled() for b in review.verdict_buttons.values())


def test_reviews_are_exported_and_imported_from_the_file_menu_commands(qtbot, tmp_path, demo_ws, make_window):
    import shutil

    copy = tmp_path / "copy.sqlite"
    shutil.copy(demo_ws, copy)
    with open_workspace(demo_ws) as ws:
        items = catalog.list_items(ws, catalog.benchmark_by_name(ws, "demo").id)[:3]
        reviews.add_review(ws, items[0].id, "bob", "ok")
        reviews.add_review(ws, items[1].id, "bob", "wrong_answer", corrected_answer="A", note="bob-note")
        reviews.add_review(ws, items[2].id, "bob", "skip")
        reviews.undo_last(ws, "bob", item_id=items[2].id)
        expected = sorted(
            (r.item_id, r.annotator, r.verdict, r.corrected_answer, r.note) for r in reviews.standing_reviews(ws)
        )
    window = make_window(demo_ws)
    out = tmp_path / "bob.jsonl"
    export = window.export_records("reviews", str(out))
    qtbot.waitUntil(lambda: export.finished, timeout=60_000)
    assert export.exit_code == 0 and len(out.read_text().splitlines()) == 4
    assert "wrote 4 record" in window.message_bar.label.text()
    assert window.open_workspace(copy)
    done = window.import_records("reviews", str(out))
    qtbot.waitUntil(lambda: done.finished, timeout=60_000)
    assert done.exit_code == 0 and "imported 4" in window.message_bar.label.text()
    with open_workspace(copy) as ws:
        assert (
            sorted(
                (r.item_id, r.annotator, r.verdict, r.corrected_answer, r.note) for r in reviews.standing_reviews(ws)
            )
            == expected
        )
    # The window shows what the import wrote (Browse's review column), and a bad file is one error line.
    assert window.ctx.model.status[items[1].id].label == "wrong key → A"
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x"}\n')
    failed = window.import_records("reviews", str(bad))
    qtbot.waitUntil(lambda: failed.finished, timeout=60_000)
    assert failed.exit_code == 2 and window.message_bar.label.text().startswith("error: ")
    assert "bad.jsonl:1" in window.message_bar.label.text()


def test_no_two_entries_of_a_menu_share_a_mnemonic(qtbot, demo_ws, make_window):
    """Alt+F then a letter must reach one entry: two with the same & letter make the key cycle between them (File's
    "New workspace" and "Import a benchmark by name" did)."""
    import re

    window = make_window(demo_ws)
    menus = [a.menu() for a in window.menuBar().actions() if a.menu() is not None]
    while menus:
        menu = menus.pop()
        letters = []
        for action in menu.actions():
            if action.menu() is not None:
                menus.append(action.menu())
            if found := re.search(r"&([^&])", action.text()):
                letters.append(found.group(1).lower())
        assert len(letters) == len(set(letters)), f"{menu.title()!r}: {sorted(letters)}"
