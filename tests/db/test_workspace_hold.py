"""The hold on the workspace (docs/adr/0023-the-hold-on-the-workspace.md): a library in this process that opens and
closes the workspace's files outside SQLite drops SQLite's POSIX locks; another process closing the workspace then
takes itself for the last user and deletes the -wal this process writes into. The workspace notices, regains the
hold before the next write, refuses a write whose commit it cannot vouch for, and never writes an orphaned -wal's
frames into the file."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from annotation import reviews
from db import open_workspace
from db.workspace import HoldLost, no_checkpoint_on_close
from tests.elsewhere import notes_seen_elsewhere, run_python
from vlmdesk.demo import ensure_demo


def _other_adds_review(path: Path, note: str) -> None:
    run_python(
        "from annotation import reviews\nfrom db import open_workspace\n"
        f"with open_workspace({str(path)!r}) as ws:\n"
        "    item = ws.conn.execute('SELECT min(id) FROM items').fetchone()[0]\n"
        f"    reviews.add_review(ws, item, 'other', 'ok', note={note!r})\n"
    )


def _drop_locks(path: Path) -> None:
    """What Qt's MIME sniffing did: open the files read-only and close them (POSIX drops this process's locks)."""
    for suffix in ("", "-shm"):
        os.close(os.open(f"{path}{suffix}", os.O_RDONLY))


@pytest.fixture
def ws(tmp_path):
    path = tmp_path / "w.sqlite"
    with open_workspace(path) as made:
        ensure_demo(made)
    ws = open_workspace(path)
    yield ws
    ws.close()


@pytest.fixture
def unguarded(tmp_path, monkeypatch):
    """A workspace whose locks have no guard (a system without OFD locks, ADR 0046): only the checks stand."""
    monkeypatch.setattr("db.workspace.description_lock", lambda *args, **kwargs: False)
    path = tmp_path / "w.sqlite"
    with open_workspace(path) as made:
        ensure_demo(made)
    ws = open_workspace(path)
    assert not ws._hold.guarded
    yield ws
    ws.close()


def test_a_raw_close_drops_nothing_the_guard_holds_and_another_process_leaves_the_wal(ws):
    """ADR 0046: the guard's locks belong to descriptors of their own; a stray close drops SQLite's alone."""
    if not ws._hold.guarded:
        pytest.skip("this system has no open-file-description locks")
    wal = os.stat(f"{ws.path}-wal").st_ino
    _drop_locks(ws.path)
    _other_adds_review(ws.path, "theirs-1")  # closes believing nobody else holds the file, were it not for the guard
    assert os.stat(f"{ws.path}-wal").st_ino == wal and ws.hold_lost() is None
    reviews.add_review(ws, _item(ws), "ann", "ok", note="mine-1")
    assert not ws.reconnections
    assert notes_seen_elsewhere(ws.path) == ["theirs-1", "mine-1"]


def _item(ws) -> int:
    return ws.conn.execute("SELECT min(id) FROM items").fetchone()[0]


def test_unguarded_a_raw_close_of_the_file_is_noticed_and_the_next_write_takes_the_locks_again(unguarded):
    ws = unguarded
    assert ws.hold_lost() is None
    if not ws._hold.locks_visible:
        pytest.skip("this system does not show POSIX locks in /proc/locks")
    _drop_locks(ws.path)
    assert "lost its locks" in ws.hold_lost()
    reviews.add_review(ws, _item(ws), "ann", "ok", note="mine-1")
    assert ws.hold_lost() is None and len(ws.reconnections) == 1
    # Another process opens and closes the workspace: the -wal stays, since this process holds it again.
    wal = os.stat(f"{ws.path}-wal").st_ino
    _other_adds_review(ws.path, "theirs-1")
    assert os.stat(f"{ws.path}-wal").st_ino == wal
    assert ws.hold_lost() is None
    assert "theirs-1" in [r.note for r in reviews.history(ws, _item(ws))]
    assert notes_seen_elsewhere(ws.path) == ["mine-1", "theirs-1"]


def test_unguarded_the_wal_replaced_under_the_app_the_next_verdict_is_not_lost(unguarded):
    ws = unguarded
    _drop_locks(ws.path)
    _other_adds_review(ws.path, "theirs-1")  # it closed last, as it believed: checkpointed and deleted the -wal
    assert "deleted or replaced" in ws.hold_lost()
    reviews.add_review(ws, _item(ws), "ann", "ok", note="mine-1")
    assert ws.reconnections and "deleted or replaced" in ws.reconnections[-1]
    assert notes_seen_elsewhere(ws.path) == ["theirs-1", "mine-1"]
    # …and what others write next is seen here.
    _other_adds_review(ws.path, "theirs-2")
    assert [r.note for r in reviews.history(ws, _item(ws))][-1] == "theirs-2"


def test_a_hold_lost_during_a_write_refuses_it_and_the_next_write_is_stored(ws):
    item = _item(ws)
    with pytest.raises(HoldLost, match="not saved"):
        with ws.db.atomic():
            ws.conn.execute(
                "INSERT INTO reviews (item_id, annotator, verdict, note, created_at, uuid) "
                "VALUES (?, 'ann', 'ok', 'refused-1', '2026-12-01T00:00:00', 'u-refused')",
                (item,),
            )
            _drop_locks(ws.path)
            _other_adds_review(ws.path, "theirs-1")
    assert "refused-1" not in notes_seen_elsewhere(ws.path)
    reviews.add_review(ws, item, "ann", "ok", note="mine-1")
    assert notes_seen_elsewhere(ws.path) == ["theirs-1", "mine-1"]


def test_a_run_transaction_checks_the_hold_too(unguarded):
    """db/runs.py takes its own BEGIN IMMEDIATE: it regains the hold the same way."""
    ws = unguarded
    from db import runs

    _drop_locks(ws.path)
    _other_adds_review(ws.path, "theirs-1")
    bench = ws.conn.execute("SELECT id FROM benchmarks WHERE name = 'demo'").fetchone()[0]
    run_id = runs.create_run(
        ws,
        benchmark_id=bench,
        model_spec="baseline:first",
        strategy="vanilla",
        prompt_template="default",
        extractor="rules",
        config={},
        config_key="k",
        versions={},
        git_revision=None,
        seed=0,
    )
    assert ws.reconnections
    seen = run_python(
        f"import sqlite3\nc = sqlite3.connect({str(ws.path)!r})\n"
        f"print(c.execute('SELECT count(*) FROM runs WHERE id = ?', ({run_id},)).fetchone()[0])\n"
    )
    assert seen.strip() == "1"


def test_regaining_the_hold_never_deletes_a_wal_it_does_not_own(unguarded):
    """Closing a connection whose -wal was deleted must not checkpoint or delete: here the -wal on disk is one a
    crashed process left, holding a committed write that only it has."""
    ws = unguarded
    _drop_locks(ws.path)
    _other_adds_review(ws.path, "theirs-1")  # our -wal is gone now
    run_python(  # a process that commits and dies without closing: its -wal keeps the commit
        "import os, sqlite3\n"
        f"c = sqlite3.connect({str(ws.path)!r})\n"
        "c.execute('PRAGMA wal_autocheckpoint = 0')\n"
        "item = c.execute('SELECT min(id) FROM items').fetchone()[0]\n"
        'c.execute("INSERT INTO reviews (item_id, annotator, verdict, note, created_at, uuid) '
        "VALUES (?, 'crash', 'ok', 'crashed-1', '2026-12-01T00:00:00', 'u-crash')\", (item,))\n"
        "c.commit()\n"
        "os._exit(0)\n"
    )
    assert os.path.getsize(f"{ws.path}-wal") > 0
    ws.regain_hold()
    assert ws.hold_lost() is None
    assert "crashed-1" in [r.note for r in reviews.history(ws, _item(ws))]


def test_no_checkpoint_on_close_keeps_the_wal(tmp_path):
    path = tmp_path / "plain.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("CREATE TABLE t (x)")
    conn.commit()
    assert no_checkpoint_on_close(conn)
    conn.close()
    assert os.path.getsize(f"{path}-wal") > 0  # a plain close checkpoints and deletes it


def test_read_only_workspaces_hold_nothing(tmp_path, ws):
    ro = open_workspace(ws.path, read_only=True)
    try:
        _drop_locks(ws.path)
        assert ro.hold_lost() is None
    finally:
        ro.close()


def test_nothing_of_vlmdesk_opens_the_open_workspaces_files_outside_sqlite(ws, capsys):
    """The doors where a user's path is read or written refuse the open workspace and its companions without
    opening them: the hold stays."""
    from db.workspace import SchemaError
    from evaluator.formats.outfiles import OutputRefused, check_output
    from vlmdesk.cli import main as cli_main

    for suffix in ("-wal", "-shm"):
        with pytest.raises(SchemaError, match=f"the {suffix} file of a workspace open here"):
            open_workspace(f"{ws.path}{suffix}")
        with pytest.raises(OutputRefused, match="belongs to the SQLite database"):
            check_output(f"{ws.path}{suffix}")
    with pytest.raises(OutputRefused, match="is a SQLite database"):
        check_output(ws.path)
    assert ws.hold_lost() is None
    # A command given its own workspace as input: refused at the door, one line, exit 2.
    assert cli_main(["--workspace", str(ws.path), "import", f"{ws.path}-shm"]) == 2
    assert "not an input file" in capsys.readouterr().err
