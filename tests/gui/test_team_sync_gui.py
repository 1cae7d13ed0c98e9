"""Workspace › Sync with a team folder…: two copies of a workspace open in two windows sync through one folder (each
sync a `vlmdesk team sync` child process; the window never waits), a third process carries the folder half-way to a
third copy meanwhile; after each sync both windows' workspaces hold the same records, and each window shows it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from annotation import reviews
from db import catalog, open_workspace
from gui.prefs import PreferencesFile

pytestmark = pytest.mark.gui

ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
OUT = Path("/tmp/i39/F")


def uuids(ws) -> list[str]:
    return sorted(u for (u,) in ws.conn.execute("SELECT uuid FROM reviews"))


def synced(qtbot, window) -> dict:
    """Wait for the window's sync under way to end; its report."""
    qtbot.waitUntil(lambda: window.team_folder.process is None, timeout=60_000)
    assert window.team_folder.last is not None, window.team_folder.label.text()
    return window.team_folder.last


def test_two_windows_sync_through_one_folder_while_a_third_process_copies_it_half_way(
    demo_ws, make_window, qtbot, tmp_path
):
    a, b, c = tmp_path / "ana.sqlite", tmp_path / "bob.sqlite", tmp_path / "cy.sqlite"
    for p in (a, b, c):
        shutil.copyfile(demo_ws, p)
    folder, half = tmp_path / "team", tmp_path / "cy-side"
    folder.mkdir()
    half.mkdir()
    with open_workspace(a) as ws:
        items = catalog.list_items(ws, catalog.benchmark_by_name(ws, "demo").id)
        reviews.add_review(ws, items[0].id, "ana", "ok")
        reviews.add_review(ws, items[1].id, "ana", "ambiguous", note="two readings")
        reviews.add_review(ws, items[2].id, "ana", "skip")
        reviews.undo_last(ws, "ana", item_id=items[2].id)
    remembered = tuple((str(p.resolve()), str(folder)) for p in (a, b))
    win_a = make_window(a, team_folders=remembered)  # the folder remembered for this workspace: synced on opening
    first = synced(qtbot, win_a)
    assert first["appended"] == 4 and first["imported"] == 0
    win_b = make_window(b, team_folders=remembered)
    report = synced(qtbot, win_b)
    assert report["imported"] == 4
    assert "4 new from" in win_b.team_folder.label.text() and win_b.team_folder.label.isVisible()
    assert uuids(win_a.ws) == uuids(win_b.ws)

    # Both windows open; bob works in his (through the window's own connection), then both sync, on their timers.
    reviews.add_review(win_b.ws, items[3].id, "bob", "bad_image", note="blurry")
    reviews.add_review(win_b.ws, items[0].id, "bob", "wrong_answer", corrected_answer="B")
    win_b.team_folder.sync_now()
    assert synced(qtbot, win_b)["appended"] == 2
    with qtbot.waitSignal(win_a.ctx.workspaceChanged, timeout=5000):  # window a sees the child's writes by itself
        win_a.team_folder.sync_now()
        assert synced(qtbot, win_a)["imported"] == 2
    assert uuids(win_a.ws) == uuids(win_b.ws)
    assert "2 new from" in win_a.team_folder.label.text()

    # A third process carries the folder to cy's machine half-way: every journal cut in the middle of a line.
    for name in os.listdir(folder):
        data = (folder / name).read_bytes()
        (half / name).write_bytes(data[: len(data) // 2 + 7])
    cut = subprocess.run(
        [sys.executable, "-m", "vlmdesk", "--workspace", str(c), "team", "sync", str(half), "--json"],
        env=ENV,
        capture_output=True,
        timeout=120,
    )
    assert cut.returncode == 0, cut.stderr
    for name in os.listdir(folder):
        shutil.copyfile(folder / name, half / name)  # the rest arrives
    done = subprocess.run(
        [sys.executable, "-m", "vlmdesk", "--workspace", str(c), "team", "sync", str(half)],
        env=ENV,
        capture_output=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    with open_workspace(c) as ws:
        assert uuids(ws) == uuids(win_a.ws) == uuids(win_b.ws)  # whole, nothing twice
    # A second sync in each window brings nothing new and writes nothing.
    before = {n: (folder / n).read_bytes() for n in os.listdir(folder)}
    for w in (win_a, win_b):
        w.team_folder.sync_now()
        again = synced(qtbot, w)
        assert again["appended"] == 0 and again["imported"] == 0
    assert {n: (folder / n).read_bytes() for n in os.listdir(folder)} == before
    OUT.mkdir(parents=True, exist_ok=True)
    win_a.grab().save(str(OUT / "team_sync_window_a.png"))
    win_a.team_folder.label.grab().save(str(OUT / "team_sync_status.png"))


def test_the_menu_action_asks_for_the_folder_remembers_it_and_the_timer_syncs(demo_ws, make_window, qtbot, tmp_path):
    folder = tmp_path / "team"
    folder.mkdir()
    window = make_window(demo_ws)
    assert not window.team_folder.label.isVisible() and not window.team_folder.timer.isActive()
    window.team_folder.answer = None  # cancelled: nothing changes
    window.command_actions["Sync with a team folder…"].trigger()
    assert window.team_folder.folder is None
    window.team_folder.answer = str(folder)
    window.command_actions["Sync with a team folder…"].trigger()
    assert synced(qtbot, window)["journal"].startswith("vlmdesk-")
    assert window.team_folder.timer.isActive() and window.team_folder.timer.interval() == 60_000
    saved = PreferencesFile(tmp_path / "config" / "preferences.json").load().team_folders
    assert saved == ((str(Path(demo_ws).resolve()), str(folder)),)
    assert [n for n in os.listdir(folder) if n.endswith(".jsonl")]
    # The timer's tick is a sync; a folder that went away is said in the status line, not in a dialog.
    shutil.rmtree(folder)
    window.team_folder.timer.timeout.emit()
    qtbot.waitUntil(lambda: window.team_folder.process is None, timeout=60_000)
    assert "sync failed" in window.team_folder.label.text() and "no such folder" in window.team_folder.label.text()
