"""The app opens a workspace whatever its runs hold: a garbage stored config is shown, not fatal, and a run whose
process is gone reads `interrupted` in the runs list (issue 12, items 3 and 5)."""

import sqlite3

from db import open_workspace, runs


def test_a_garbage_stored_config_does_not_stop_the_runs_and_results_views(qtbot, demo_ws, make_window):
    with sqlite3.connect(demo_ws) as conn:
        conn.execute(
            "UPDATE runs SET config = ?, versions = 'nope' WHERE id = 1",
            ('{"limit": 99999999999999999999999999, "full_passes": "yes"}',),
        )
    window = make_window(demo_ws)
    view = window.view("runs")
    window.show_view("runs")
    view.runs.reload()
    row = view.runs.model.payloads.index(1)
    assert view.runs.model.rows[row][1] == "finished"
    window.show_results([1])
    dash = window.view("results")
    qtbot.waitUntil(lambda: not dash.computing, timeout=10_000)  # the report comes from the worker
    assert [r.run_id for r in dash.reports] == [1] and dash.reports[0].problems


def test_a_run_whose_process_is_gone_is_listed_as_interrupted_and_can_be_resumed(qtbot, demo_ws, make_window):
    # What a SIGKILLed run leaves: status running, owned by a pid that no longer exists on this host.
    import socket
    import subprocess
    import sys

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    with sqlite3.connect(demo_ws) as conn:
        conn.execute(
            "UPDATE runs SET status = 'running', finished_at = NULL, owner_host = ?, owner_pid = ?, "
            "owner_token = 't', owner_since = created_at, heartbeat_at = updated_at WHERE id = 1",
            (socket.gethostname(), int(dead.stdout)),
        )
    window = make_window(demo_ws)
    view = window.view("runs")
    window.show_view("runs")
    view.runs.reload()
    row = view.runs.model.payloads.index(1)
    assert view.runs.model.rows[row][1] == "interrupted"
    view.runs.select([1])
    assert view.resume.isEnabled()
    with open_workspace(demo_ws) as ws:
        assert [r.id for r in runs.dead_owner_runs(ws)] == [1]
