"""The app's Cancel of a child command (gui/processes.py through db/platform_io.py, docs/adr/0042): asked to stop, it
exits as it chooses (a run: 130); where it cannot be asked (Windows, a windowed app), it is killed."""

from __future__ import annotations

import sys

import pytest

from gui import processes
from gui.processes import CommandProcess

# Stops on SIGTERM as `vlmdesk run` does (exit 130), once it said it listens.
CHILD = (
    "import json, signal, sys, time\n"
    "signal.signal(signal.SIGTERM, lambda *a: sys.exit(130))\n"
    "print(json.dumps({'ready': True}), flush=True)\n"
    "time.sleep(600)\n"
)


@pytest.fixture
def child(qtbot, tmp_path):
    job = CommandProcess(str(tmp_path / "w.sqlite"), [])
    ready: list[dict] = []
    job.event.connect(ready.append)
    job.process.start(sys.executable, ["-c", CHILD])
    qtbot.waitUntil(lambda: bool(ready), timeout=60000)
    yield job
    job.kill()
    job.process.waitForFinished(10000)


def test_cancel_asks_the_child_to_stop_and_it_exits_as_it_chooses(qtbot, child):
    child.terminate()
    qtbot.waitUntil(lambda: child.finished, timeout=60000)
    assert (child.exit_code, child.crashed) == (130, False)


def test_a_child_that_cannot_be_asked_is_killed(qtbot, child, monkeypatch):
    asked: list[tuple[int, bool]] = []
    monkeypatch.setattr(processes, "ask_to_stop", lambda pid, own_group: asked.append((pid, own_group)) or False)
    pid = child.pid()
    child.terminate()
    qtbot.waitUntil(lambda: child.finished, timeout=60000)
    assert asked == [(pid, True)] and child.crashed
