"""How `vlmdesk` fails: one line on stderr and a meaningful exit status for bad files, read-only workspaces, full
disks and bugs — never a traceback. Real `vlmdesk` subprocesses on real files; the app through its real window."""

from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from db import catalog, open_workspace, schema
from tests.db.test_workspace import garble_page
from tests.factories import mmbench_rows, write_tsv
from vlmdesk.cli import main as cli_main
from vlmdesk.demo import ensure_demo

ROOT = Path(__file__).resolve().parents[1]


def vlmdesk(*args, env=None, prefix=(), code=None, timeout=120) -> subprocess.CompletedProcess:
    """Run the real command (or `code`, a script that ends by calling vlmdesk's main) in a child process."""
    argv = [sys.executable, "-c", code, *args] if code else [sys.executable, "-m", "vlmdesk", *args]
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), "QT_QPA_PLATFORM": "offscreen", **(env or {})}
    return subprocess.run([*prefix, *argv], capture_output=True, text=True, timeout=timeout, env=full_env)


def one_line_error(proc: subprocess.CompletedProcess) -> str:
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    return lines[0]


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def demo_path(tmp_path) -> Path:
    """A demo workspace with one finished run, closed (no -wal/-shm left)."""
    path = tmp_path / "demo.sqlite"
    with open_workspace(path) as ws:
        ensure_demo(ws)
    assert cli_main(["--workspace", str(path), "run", "--bench", "demo", "--model", "baseline:first"]) == 0
    return path


# ------------------------------------------------------------------------------------------- internal errors

_BUG = """
import sys
from vlmdesk import cli, cmd_data
def broken(args):
    raise RuntimeError("boom\\nsecond line of the message")
cmd_data.cmd_benchmarks = broken  # a bug planted in a real command
sys.exit(cli.main(sys.argv[1:]))
"""


def test_a_bug_is_one_line_naming_the_log_that_holds_its_traceback(tmp_path):
    logs = tmp_path / "logs"
    proc = vlmdesk(
        "--workspace", str(tmp_path / "ws.sqlite"), "benchmarks", code=_BUG, env={"VLMDESK_LOG_DIR": str(logs)}
    )
    assert proc.returncode == 1
    line = one_line_error(proc)
    assert line.startswith("error: internal error: RuntimeError: boom second line of the message — traceback in ")
    log = Path(line.rsplit("traceback in ", 1)[1])
    assert log.parent == logs and log.is_file()
    text = log.read_text()
    assert "Traceback (most recent call last)" in text and "in broken" in text and "RuntimeError: boom" in text
    assert "command benchmarks" in text
    # A second bug appends to the same log.
    vlmdesk("--workspace", str(tmp_path / "ws.sqlite"), "benchmarks", code=_BUG, env={"VLMDESK_LOG_DIR": str(logs)})
    assert log.read_text().count("Traceback (most recent call last)") == 2


def test_a_key_in_a_bug_message_reaches_neither_the_line_nor_the_log(tmp_path):
    key = "sk-" + "Q7x" * 12
    code = _BUG.replace('"boom\\nsecond line of the message"', f'"Incorrect API key provided: {key}"')
    logs = tmp_path / "logs"
    proc = vlmdesk(
        "--workspace", str(tmp_path / "ws.sqlite"), "benchmarks", code=code, env={"VLMDESK_LOG_DIR": str(logs)}
    )
    line = one_line_error(proc)
    assert proc.returncode == 1 and "Incorrect API key provided" in line
    log_text = (logs / "vlmdesk.log").read_text()
    assert "Incorrect API key provided" in log_text
    assert key not in line and key not in log_text and key[:12] not in log_text


def test_a_bug_is_still_one_line_when_the_log_cannot_be_written(tmp_path):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the log folder should be")
    proc = vlmdesk(
        "--workspace",
        str(tmp_path / "ws.sqlite"),
        "benchmarks",
        code=_BUG,
        env={"VLMDESK_LOG_DIR": str(blocker / "logs")},
    )
    assert proc.returncode == 1
    assert "the traceback could not be written" in one_line_error(proc)


def test_a_plain_value_error_is_a_bug_not_a_usage_error(tmp_path):
    code = _BUG.replace('RuntimeError("boom\\nsecond line of the message")', 'ValueError("unexpected")')
    proc = vlmdesk(
        "--workspace",
        str(tmp_path / "ws.sqlite"),
        "benchmarks",
        code=code,
        env={"VLMDESK_LOG_DIR": str(tmp_path / "logs")},
    )
    assert proc.returncode == 1 and "internal error: ValueError: unexpected" in one_line_error(proc)


def test_a_wrong_sql_statement_is_a_bug_not_a_workspace_problem(tmp_path):
    code = _BUG.replace(
        'raise RuntimeError("boom\\nsecond line of the message")',
        'ws = cli.open_from_args(args); ws.conn.execute("SELECT x FROM no_such_table")',
    )
    open_workspace(tmp_path / "ws.sqlite").close()
    proc = vlmdesk(
        "--workspace",
        str(tmp_path / "ws.sqlite"),
        "benchmarks",
        code=code,
        env={"VLMDESK_LOG_DIR": str(tmp_path / "logs")},
    )
    assert proc.returncode == 1
    assert "internal error: OperationalError: no such table: no_such_table" in one_line_error(proc)


def test_expected_errors_share_one_base_and_exit_2():
    from db.errors import UserError
    from db.workspace import DamagedWorkspace, ReadOnlyWorkspace, SchemaError
    from evaluator.formats.importers import InputError
    from vlmdesk.cli import UsageError

    for cls in (InputError, SchemaError, UsageError, DamagedWorkspace, ReadOnlyWorkspace):
        assert issubclass(cls, UserError)
    assert not issubclass(ValueError, UserError)


# -------------------------------------------------------------------------------------- bad workspace files


def _newer(path: Path) -> None:
    with sqlite3.connect(path) as conn:
        conn.execute(f"PRAGMA user_version = {schema.latest_version() + 1}")
    conn.close()


def _truncated(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 3])


BAD_FILES = {
    "not-sqlite": (lambda p: p.write_bytes(b"just some text\n" * 300), "not a SQLite database"),
    "foreign": (
        lambda p: (p.unlink(), sqlite3.connect(p).execute("CREATE TABLE notes (x)").connection.close()),
        "not a vlmdesk workspace",
    ),
    "newer": (_newer, "newer than this vlmdesk"),
    "truncated": (_truncated, "damaged (truncated"),
    "damaged": (lambda p: garble_page(p, "benchmarks"), "damaged (database disk image is malformed)"),
}


@pytest.mark.parametrize("kind", sorted(BAD_FILES))
def test_gui_on_a_bad_file_is_one_line_and_exit_2(demo_path, kind):
    make_bad, expected = BAD_FILES[kind]
    make_bad(demo_path)
    before = sha(demo_path)
    proc = vlmdesk("gui", "--workspace", str(demo_path), timeout=60)
    assert proc.returncode == 2
    line = one_line_error(proc)
    assert expected in line and str(demo_path) in line
    if kind in ("truncated", "damaged"):
        assert "vlmdesk check" in line and ".recover" in line
    assert sha(demo_path) == before


@pytest.mark.parametrize("command", [["benchmarks"], ["items", "demo"], ["report", "1"], ["runs"]])
def test_commands_on_a_damaged_page_say_so_in_one_line(demo_path, command):
    garble_page(demo_path, "runs")
    garble_page(demo_path, "items")
    garble_page(demo_path, "benchmarks")
    proc = vlmdesk("--workspace", str(demo_path), *command)
    assert proc.returncode == 2
    line = one_line_error(proc)
    assert f"{demo_path}: the workspace file is damaged" in line and ".recover" in line, line


# ------------------------------------------------------------------------------------------------ read-only

READING = [
    ["benchmarks"],
    ["items", "demo", "--limit", "3"],
    ["show", "demo", "1", "--json"],
    ["runs"],
    ["report", "1", "--json"],
]


def test_read_only_option_reads_everything_and_writes_nothing(demo_path, tmp_path):
    before = sha(demo_path)
    for command in READING:
        proc = vlmdesk("--workspace", str(demo_path), "--read-only", *command)
        assert proc.returncode == 0 and proc.stdout.strip(), (command, proc.stderr)
    proc = vlmdesk(
        "--read-only", "--workspace", str(demo_path), "export-predictions", "1", "--out", str(tmp_path / "p.tsv")
    )
    assert proc.returncode == 0 and (tmp_path / "p.tsv").stat().st_size > 0
    tsv = write_tsv(tmp_path / "new.tsv", list(mmbench_rows(3, seed=1)))
    for command in (
        ["import", str(tsv)],
        ["run", "--bench", "demo", "--model", "baseline:random", "--new"],
        ["models", "add", "m", "baseline:first"],
    ):
        proc = vlmdesk("--workspace", str(demo_path), "--read-only", *command)
        assert proc.returncode == 2, (command, proc.stderr)
        assert one_line_error(proc) == f"error: {demo_path}: workspace is read-only"
    assert sha(demo_path) == before
    with open_workspace(demo_path) as ws:
        assert len(catalog.list_benchmarks(ws)) == 3
        assert ws.conn.execute("SELECT count(*) FROM runs").fetchone()[0] == 1


def _unprivileged() -> list[str]:
    """A command prefix that runs as a user whom file permissions bind (root ignores them)."""
    if os.geteuid() != 0:
        return []
    if not shutil.which("setpriv"):
        pytest.skip("running as root without setpriv: file permissions cannot be made to bind")
    return ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


@pytest.mark.parametrize("where", ["file", "folder"])
def test_a_file_that_cannot_be_written_opens_read_only(demo_path, where):
    prefix = _unprivileged()
    base = Path(tempfile.mkdtemp(prefix="vlmdesk-ro-"))  # outside pytest's 0700 tmp, so another user can enter
    try:
        base.chmod(0o755)
        folder, out = base / "ws", base / "out"
        folder.mkdir()
        out.mkdir()
        out.chmod(0o777)
        path = folder / "demo.sqlite"
        shutil.copy(demo_path, path)
        path.chmod(0o444)
        if where == "folder":
            path.chmod(0o666)
            folder.chmod(0o555)
        else:
            folder.chmod(0o777)
        before = sha(path)
        env = {"VLMDESK_LOG_DIR": str(out / "logs"), "MPLCONFIGDIR": str(out / "mpl"), "HOME": str(out)}
        for command in READING:
            proc = vlmdesk("--workspace", str(path), *command, prefix=prefix, env=env)
            assert proc.returncode == 0 and proc.stdout.strip(), (command, proc.stderr)
        proc = vlmdesk(
            "--workspace", str(path), "export-predictions", "1", "--out", str(out / "p.tsv"), prefix=prefix, env=env
        )
        assert proc.returncode == 0 and (out / "p.tsv").stat().st_size > 0, proc.stderr
        if where == "folder":  # the file itself is writable, but SQLite could not create its -wal beside it
            tsv = write_tsv(out / "new.tsv", list(mmbench_rows(3, seed=1)))
            tsv.chmod(0o644)
            proc = vlmdesk("--workspace", str(path), "import", str(tsv), prefix=prefix, env=env)
            assert proc.returncode == 2 and one_line_error(proc) == f"error: {path}: workspace is read-only"
        else:
            proc = vlmdesk("--workspace", str(path), "models", "add", "m", "baseline:first", prefix=prefix, env=env)
            assert proc.returncode == 2 and one_line_error(proc) == f"error: {path}: workspace is read-only"
        assert sha(path) == before
        if where == "folder":
            assert sorted(p.name for p in folder.iterdir()) == ["demo.sqlite"]
    finally:
        for p in (base, *base.rglob("*")):
            p.chmod(0o777) if p.is_dir() else None
        shutil.rmtree(base)


# ----------------------------------------------------------------------------------------------- full disk


def test_a_full_disk_is_one_line_exit_1_and_nothing_half_written(demo_path, tmp_path, monkeypatch, capsys):
    import vlmdesk.cli as cli

    real_open = cli.open_workspace

    def full_disk(*args, **kw):
        ws = real_open(*args, **kw)
        # SQLite's page limit raises exactly what a full disk raises (SQLITE_FULL) at the next page it needs.
        ws.conn.execute(f"PRAGMA max_page_count = {ws.conn.execute('PRAGMA page_count').fetchone()[0]}")
        return ws

    monkeypatch.setattr(cli, "open_workspace", full_disk)
    with open_workspace(demo_path) as ws:
        before = ws.conn.execute("SELECT count(*) FROM predictions").fetchone()[0]
    # One batch of all 30 questions: its passes need more room than the free space left in any page (a small batch
    # may fit in what the last page has left, and be stored whole before the disk fills).
    code = cli_main(
        ["--workspace", str(demo_path), "run", "--bench", "demo", "--model", "baseline:random", "--new"]
        + ["--batch-size", "30"]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1
    assert err[-1].startswith(f"error: {demo_path}: the disk is full") and "not a SQLite" not in err[-1]
    monkeypatch.undo()
    with open_workspace(demo_path) as ws:
        assert ws.conn.execute("SELECT count(*) FROM predictions").fetchone()[0] == before


# -------------------------------------------------------------------------------------------------- the app


def test_the_app_keeps_the_open_workspace_when_another_cannot_be_opened(demo_path, tmp_path, qtbot, monkeypatch):
    from gui.main_window import MainWindow
    from gui.prefs import Preferences, PreferencesFile

    monkeypatch.setenv("VLMDESK_CONFIG_DIR", str(tmp_path / "config"))
    prefs = PreferencesFile(tmp_path / "config" / "preferences.json")
    prefs.save(Preferences(annotator="ann"))
    window = MainWindow(demo_path, prefs_file=prefs, settings_path=tmp_path / "config" / "window.ini")
    qtbot.addWidget(window)
    opened = window.ws
    bad = {}
    for kind, (make_bad, expected) in BAD_FILES.items():
        path = tmp_path / f"{kind}.sqlite"
        shutil.copy(demo_path, path)
        make_bad(path)
        bad[kind] = (path, expected)
    for kind, (path, expected) in bad.items():
        before = sha(path)
        assert window.open_workspace(path) is False
        assert window.message_bar.isVisibleTo(window) and window.message_bar.kind == "error"
        text = window.message_bar.label.text()
        assert expected in text and "\n" not in text, (kind, text)
        assert window.ws is opened and window.ctx is not None
        assert [b.name for b in catalog.list_benchmarks(window.ws)] == ["demo", "demo-pope", "demo-open"]
        assert sha(path) == before
    window.close()


def test_the_app_opens_a_read_only_workspace_and_says_so(demo_path, tmp_path, qtbot, monkeypatch):
    import gui.main_window as main_window
    from gui.prefs import Preferences, PreferencesFile

    monkeypatch.setenv("VLMDESK_CONFIG_DIR", str(tmp_path / "config"))
    prefs = PreferencesFile(tmp_path / "config" / "preferences.json")
    prefs.save(Preferences(annotator="ann"))
    # Root ignores permission bits, so the test asks for read-only the way a file that cannot be written is opened.
    monkeypatch.setattr(main_window, "open_workspace", lambda p, **kw: open_workspace(p, read_only=True, **kw))
    before = sha(demo_path)
    window = main_window.MainWindow(demo_path, prefs_file=prefs, settings_path=tmp_path / "config" / "w.ini")
    qtbot.addWidget(window)
    assert window.ws.read_only and "read-only" in window.message_bar.label.text()
    assert window.ctx.model.rowCount() == 30
    window.close()
    assert sha(demo_path) == before


# ------------------------------------------------------------------ damaged, missing, misplaced: one line, exit 2


@pytest.mark.parametrize("command", [["benchmarks"], ["gui"]])
def test_a_workspace_with_an_unreadable_migration_record_is_damaged_not_foreign(demo_path, command):
    from tests.db.test_workspace import zero_page_after_header

    zero_page_after_header(demo_path, "idx__sqlite_migrations_migration_set_name")
    before = sha(demo_path)
    proc = vlmdesk(*command, "--workspace", str(demo_path), timeout=60)
    line = one_line_error(proc)
    assert proc.returncode == 2 and f"{demo_path}: the workspace file is damaged" in line, line
    assert "vlmdesk check" in line and ".recover" in line and "not a vlmdesk workspace" not in line
    assert sha(demo_path) == before


READ_ONLY_COMMANDS = [
    ["benchmarks"],
    ["items", "demo"],
    ["show", "demo", "1"],
    ["runs"],
    ["report", "1"],
    ["export-predictions", "1", "--out", "{tmp}/p.tsv"],
    ["run-items", "1"],
    ["check"],
    ["rescore", "1", "--extractor", "rules"],
    ["qc", "list", "--bench", "demo"],
]


@pytest.mark.parametrize("command", READ_ONLY_COMMANDS, ids=lambda c: c[0])
def test_commands_that_read_create_no_workspace(tmp_path, command):
    path = tmp_path / "missing" / "deeper" / "ws.sqlite"
    proc = vlmdesk("--workspace", str(path), *[a.format(tmp=tmp_path) for a in command])
    assert proc.returncode == 2 and one_line_error(proc) == f"error: {path}: no such workspace"
    assert not (tmp_path / "missing").exists()


@pytest.mark.parametrize("command", [["benchmarks"], ["import", "{tsv}"]], ids=lambda c: c[0])
def test_a_workspace_path_under_a_file_is_one_line_exit_2(tmp_path, command):
    image = tmp_path / "img.png"
    image.write_bytes(b"\x89PNG not really")
    tsv = write_tsv(tmp_path / "new.tsv", list(mmbench_rows(2, seed=1)))
    path = image / "ws.sqlite"
    proc = vlmdesk("--workspace", str(path), *[a.format(tsv=tsv) for a in command])
    line = one_line_error(proc)
    assert proc.returncode == 2 and str(path.parent) in line and "File exists" not in line, line
    assert image.read_bytes() == b"\x89PNG not really"


def test_an_error_about_a_whole_file_prints_no_line_0(tmp_path):
    missing = tmp_path / "absent.jsonl"
    proc = vlmdesk("--workspace", str(tmp_path / "ws.sqlite"), "import", str(missing))
    line = one_line_error(proc)
    assert proc.returncode == 2 and line == f"error: {missing}: path: no such file", line


def test_read_only_commands_create_no_companion_files(demo_path):
    before = sha(demo_path)
    for command in READING:
        proc = vlmdesk("--workspace", str(demo_path), "--read-only", *command)
        assert proc.returncode == 0, (command, proc.stderr)
        assert sorted(p.name for p in demo_path.parent.iterdir() if p.name.startswith("demo.sqlite")) == [
            "demo.sqlite"
        ], command
    assert sha(demo_path) == before


@pytest.mark.parametrize("table", ["runs", "predictions"])
def test_the_app_keeps_the_open_workspace_when_another_has_a_damaged_page_its_views_read(
    demo_path, tmp_path, qtbot, monkeypatch, table
):
    from gui.main_window import MainWindow
    from gui.prefs import Preferences, PreferencesFile

    monkeypatch.setenv("VLMDESK_CONFIG_DIR", str(tmp_path / "config"))
    prefs = PreferencesFile(tmp_path / "config" / "preferences.json")
    prefs.save(Preferences(annotator="ann"))
    bad = tmp_path / "bad.sqlite"
    shutil.copy(demo_path, bad)
    garble_page(bad, table)  # listing the benchmarks reads nothing of it; the Runs and Results views do
    window = MainWindow(demo_path, prefs_file=prefs, settings_path=tmp_path / "config" / "window.ini")
    qtbot.addWidget(window)
    opened = window.ws
    assert window.open_workspace(bad) is False
    assert window.message_bar.kind == "error" and "damaged" in window.message_bar.label.text()
    assert window.ws is opened and [b.name for b in catalog.list_benchmarks(window.ws)] == [
        "demo",
        "demo-pope",
        "demo-open",
    ]
    window.close()
