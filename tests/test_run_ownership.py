"""Run ownership with real `vlmdesk run` processes (issue 12, item 5): a run has one executing process; a second
one refuses in one line and leaves the run alone; a run whose process is gone reads `interrupted` until resumed."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
from datetime import UTC, datetime, timedelta

import pytest

from db import open_workspace, runs
from evaluator.formats.importers import import_benchmark
from tests.backend_plugins import slow_backend  # noqa: F401 (fixture)
from tests.evaluator.test_runner import write_jsonl_bench

pytestmark = pytest.mark.usefixtures("slow_backend")  # RUN asks the test-only slow: backend

RUN = ["run", "--bench", "k", "--model", "slow:random?delay_ms=10", "--seed", "5", "--batch-size", "3"]


def vlmdesk(ws_path, *args):
    return [sys.executable, "-m", "vlmdesk", "--workspace", str(ws_path), *args]


@pytest.fixture
def two_ws(tmp_path):
    """The same benchmark in two workspaces: one for the contested run, one for an uninterrupted reference."""
    src = write_jsonl_bench(tmp_path / "k.jsonl", 40)
    paths = tmp_path / "contested.sqlite", tmp_path / "clean.sqlite"
    for path in paths:
        with open_workspace(path) as ws:
            import_benchmark(ws, src, fmt="jsonl", name="k")
    return paths


def run_text(ws_path, *args) -> subprocess.CompletedProcess:
    return subprocess.run(vlmdesk(ws_path, *args), capture_output=True, text=True, timeout=300)


def scores(ws_path, run_id=1) -> dict:
    report = json.loads(run_text(ws_path, "report", str(run_id), "--json").stdout)
    return {k: report[k] for k in ("overall", "by_l2", "by_category", "by_split", "model_calls", "undecided", "status")}


def passes(ws_path, run_id=1) -> list[tuple]:
    with open_workspace(ws_path) as ws:
        return [(p.item_id, p.pass_, p.response, p.correct) for p in runs.predictions_of(ws, run_id)]


def stored_status(ws_path, run_id=1) -> str:
    return sqlite3.connect(ws_path).execute("SELECT status FROM runs WHERE id = ?", (run_id,)).fetchone()[0]


BUSY = re.compile(r"^error: run 1 is being run by pid (\d+) on (\S+) since \S+\n$")


def test_a_second_process_on_a_running_run_refuses_and_leaves_it_alone(two_ws):
    contested, clean = two_ws
    first = subprocess.Popen(
        vlmdesk(contested, *RUN, "--json-progress"), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert json.loads(first.stdout.readline())["event"] == "start"
        # Stopped, the first process is alive but cannot finish meanwhile: no race with the checks below.
        first.send_signal(signal.SIGSTOP)
        for args in (RUN, ["run", "--resume", "1"]):
            second = run_text(contested, *args)
            match = BUSY.match(second.stderr)
            assert second.returncode == 2 and match, second.stderr
            assert int(match[1]) == first.pid and match[2] == socket.gethostname()
            assert stored_status(contested) == "running"  # not marked failed
        listed = json.loads(run_text(contested, "runs", "--json").stdout)
        assert listed[0]["status"] == "running" and listed[0]["owner"]["pid"] == first.pid
    finally:
        first.send_signal(signal.SIGCONT)
    _, err = first.communicate(timeout=300)
    assert first.returncode == 0, err
    assert run_text(clean, *RUN).returncode == 0
    assert scores(contested) == scores(clean) and scores(contested)["status"] == "finished"
    assert passes(contested) == passes(clean)


def test_the_same_command_started_twice_at_once_runs_once(two_ws):
    contested, clean = two_ws
    procs = [
        subprocess.Popen(vlmdesk(contested, *RUN), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    results = [(p.wait(timeout=300), p.stderr.read()) for p in procs]
    for code, err in results:
        assert "Traceback" not in err and "IntegrityError" not in err, err
        # Refused while the other runs it, or (when it came late) told that the run had already finished.
        assert code == 0 or (code == 2 and BUSY.match(err)), err
    with open_workspace(contested) as ws:
        [run] = runs.list_runs(ws)
    assert run.status == "finished" and run.owner_token is None
    assert run_text(clean, *RUN).returncode == 0
    assert scores(contested) == scores(clean) and passes(contested) == passes(clean)


def test_a_sigkilled_run_shows_interrupted_everywhere_until_resumed(two_ws):
    contested, clean = two_ws
    first = subprocess.Popen(vlmdesk(contested, *RUN, "--json-progress"), stdout=subprocess.PIPE, text=True)
    for _ in range(3):  # the start event and two batches
        assert first.stdout.readline()
    first.send_signal(signal.SIGKILL)
    first.wait()
    assert stored_status(contested) == "running"
    listed = json.loads(run_text(contested, "runs", "--json").stdout)
    assert listed[0]["status"] == "interrupted"
    assert " interrupted " in run_text(contested, "runs").stdout
    assert "[interrupted]" in run_text(contested, "report", "1").stdout
    with open_workspace(contested) as ws:
        assert [r.id for r in runs.dead_owner_runs(ws)] == [1]
    resumed = run_text(contested, *RUN, "--json-progress")
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout.splitlines()[0])["resumed"] is True
    assert run_text(clean, *RUN).returncode == 0
    assert scores(contested) == scores(clean) and scores(contested)["status"] == "finished"
    assert passes(contested) == passes(clean)


def test_check_repair_stores_interrupted_for_a_dead_owner_only(two_ws):
    contested, _ = two_ws
    first = subprocess.Popen(vlmdesk(contested, *RUN, "--json-progress"), stdout=subprocess.PIPE, text=True)
    assert first.stdout.readline()
    first.send_signal(signal.SIGKILL)
    first.wait()
    with open_workspace(contested) as ws:
        assert runs.mark_interrupted(ws, 1) is True
        run = runs.get_run(ws, 1)
        assert (run.stored_status, run.owner_token) == ("interrupted", None) and f"pid {first.pid}" in run.error
        assert runs.mark_interrupted(ws, 1) is False and runs.dead_owner_runs(ws) == []


# -- the rule, on rows written as other hosts and processes would leave them -------------------------------------


@pytest.fixture
def one_run(two_ws):
    contested, _ = two_ws
    assert run_text(contested, *RUN, "--limit", "3").returncode == 0
    return contested


def _own(path, *, host, pid, beat: datetime):
    with sqlite3.connect(path) as conn:
        conn.execute(
            "UPDATE runs SET status = 'running', owner_host = ?, owner_pid = ?, owner_token = 'other', "
            "owner_since = ?, heartbeat_at = ? WHERE id = 1",
            (host, pid, beat.isoformat(), beat.isoformat()),
        )


def test_another_hosts_run_is_alive_while_it_beats_and_interrupted_when_its_heartbeat_is_stale(one_run):
    now = datetime.now(UTC)
    _own(one_run, host="elsewhere.example", pid=os.getpid(), beat=now)
    with open_workspace(one_run) as ws:
        run = runs.get_run(ws, 1)
        assert run.status == "running"
        assert runs.effective_status(run, now + timedelta(seconds=runs.STALE_AFTER_S + 1)) == "interrupted"
        with pytest.raises(runs.RunBusy, match="run 1 is being run by pid .* on elsewhere.example since"):
            runs.claim_run(ws, 1, runs.Owner.here())
    assert stored_status(one_run) == "running"
    _own(one_run, host="elsewhere.example", pid=1, beat=now - timedelta(seconds=runs.STALE_AFTER_S + 5))
    with open_workspace(one_run) as ws:
        assert runs.get_run(ws, 1).status == "interrupted"
        me = runs.Owner.here()
        taken = runs.claim_run(ws, 1, me)
        assert (taken.owner_host, taken.owner_pid, taken.status) == (me.host, me.pid, "running")


def test_a_process_whose_run_was_taken_over_stores_nothing_more(one_run):
    with open_workspace(one_run) as ws:
        me, other = runs.Owner.here(), runs.Owner("elsewhere.example", 4242, "theirs")
        runs.claim_run(ws, 1, me)
        _own(one_run, host=other.host, pid=other.pid, beat=datetime.now(UTC))
        stray = runs.Prediction(1, 10**6, 0, (0, 1), "p", "A", "A", "A", "rules", None, True, 1.0)
        with pytest.raises(runs.RunLost):
            runs.add_predictions(ws, [stray], owner=me)
        assert runs.release(ws, 1, me, "failed") is False
    assert stored_status(one_run) == "running"
