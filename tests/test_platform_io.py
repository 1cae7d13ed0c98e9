"""Portable code (issue 26, docs/adr/0042): what exists on one system only lives in db/platform_io.py, with the other
systems' branch written. Every module imports with Windows' or macOS's face on; the branches that can run here run
(POSIX for real, Windows and macOS with the system's calls stood in for)."""

from __future__ import annotations

import ast
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from annotation import reviews
from db import open_workspace, platform_io
from tests.db.test_workspace_hold import _drop_locks, _other_adds_review
from tests.elsewhere import notes_seen_elsewhere
from vlmdesk.demo import ensure_demo

ROOT = Path(__file__).resolve().parent.parent
PROBE = ROOT / "tests" / "fake_platform_import.py"


def _probe(*args: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "QT_QPA_PLATFORM": "offscreen"}
    proc = subprocess.run(
        [sys.executable, str(PROBE), *args], capture_output=True, text=True, env=env, cwd=ROOT, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


@pytest.fixture(scope="module")
def listed(tmp_path_factory) -> Path:
    result = _probe("list")
    assert result["failed"] == {}
    assert {"db.platform_io", "gui.main_window", "vlmdesk.cli", "annotation.reviews"} <= set(result["imported"])
    path = tmp_path_factory.mktemp("platform") / "modules.json"
    path.write_text(json.dumps(result))
    return path


def test_every_module_imports_as_on_windows_and_the_windows_branches_are_taken(listed):
    result = _probe("win32", str(listed))
    assert result["failed"] == {}
    assert result["modules"] >= 150
    decided = result["decided"]
    assert decided["windows"] and not decided["linux"]
    assert decided["cancel_signals"] == [signal.SIGINT, 21]  # SIGINT and SIGBREAK: Windows has no SIGTERM to send
    assert decided["child_creation_flags"] == 0x200  # CREATE_NEW_PROCESS_GROUP


def test_every_module_imports_as_on_macos(listed):
    result = _probe("darwin", str(listed))
    assert result["failed"] == {}
    assert result["decided"]["windows"] is False and result["decided"]["linux"] is False
    assert result["decided"]["cancel_signals"] == [signal.SIGTERM, signal.SIGINT]


def test_the_probe_catches_a_posix_only_call_at_import_time(tmp_path):
    """The check can fail: a module that reads os.O_NONBLOCK at import time does, under Windows' face only."""
    package = tmp_path / "annotation_probe"
    package.mkdir()
    (package / "__init__.py").write_text("import os\nFLAGS = os.O_NONBLOCK\n")
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{tmp_path}", "QT_QPA_PLATFORM": "offscreen"}
    code = (
        "import sys, importlib\n"
        f"sys.path.insert(0, {str(ROOT / 'tests')!r})\n"
        "import fake_platform_import as probe\n"
        "probe.look_like('win32')\n"
        "try:\n    importlib.import_module('annotation_probe')\nexcept AttributeError as exc:\n    print(exc)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert "has no attribute 'O_NONBLOCK'" in proc.stdout, proc.stderr


# -- files


def test_open_no_wait_on_windows_reads_bytes_as_they_are_and_asks_for_no_fifo_flag(tmp_path, monkeypatch):
    path = tmp_path / "a.csv"
    path.write_bytes(b"a,b\r\n1,2\r\n\x1a")
    seen: list[int] = []
    real_open = os.open
    monkeypatch.setattr(platform_io, "WINDOWS", True)
    monkeypatch.setattr(os, "O_BINARY", 0, raising=False)  # Windows' value would mean O_LARGEFILE here
    monkeypatch.setattr(os, "O_NOINHERIT", 0, raising=False)
    monkeypatch.setattr(os, "open", lambda p, flags: seen.append(flags) or real_open(p, flags))
    fd = platform_io.open_no_wait(path)
    with os.fdopen(fd, "rb") as f:
        assert f.read() == b"a,b\r\n1,2\r\n\x1a"
    assert seen and not seen[0] & os.O_NONBLOCK


def test_open_no_wait_opens_a_fifo_without_a_writer_at_once(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    fd = platform_io.open_no_wait(fifo)  # a blocking open would wait here for a writer, forever
    try:
        assert os.read(fd, 10) == b""
    finally:
        os.close(fd)


def test_the_umask_read_without_proc_is_the_same_and_stays(monkeypatch):
    on_linux = platform_io.current_umask()
    monkeypatch.setattr(platform_io, "LINUX", False)
    assert platform_io.current_umask() == on_linux
    assert platform_io.current_umask() == on_linux  # set back, not left at 022


def test_an_exclusive_lock_is_refused_while_held_and_free_after(tmp_path):
    path = tmp_path / ".x.lock"
    with platform_io.exclusive_lock(path) as first:
        with platform_io.exclusive_lock(path) as second:  # flock: per open file, so this conflicts in one process
            assert (first, second) == (True, False)
    with platform_io.exclusive_lock(path) as again:
        assert again


def test_the_windows_lock_takes_the_first_byte_and_gives_it_back(tmp_path, monkeypatch):
    calls: list[tuple[str, int]] = []
    held: set[str] = set()

    def locking(fd: int, mode: int, nbytes: int) -> None:
        name = os.readlink(f"/proc/self/fd/{fd}")
        calls.append((Path(name).name, mode))
        if mode == 2 and name in held:
            raise PermissionError(13, "Permission denied")
        (held.add if mode == 2 else held.discard)(name)

    fake = SimpleNamespace(LK_NBLCK=2, LK_UNLCK=0, locking=locking)
    monkeypatch.setitem(sys.modules, "msvcrt", fake)
    monkeypatch.setattr(platform_io, "WINDOWS", True)
    path = tmp_path / ".x.lock"
    with platform_io.exclusive_lock(path) as first:
        with platform_io.exclusive_lock(path) as second:
            assert (first, second) == (True, False)
    assert calls == [(".x.lock", 2), (".x.lock", 2), (".x.lock", 0)] and not held


# -- processes


def _zombie() -> subprocess.Popen:
    """A child that exited and that nobody reaped yet."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)
    return child


def test_pid_liveness_linux_tells_a_zombie_macos_errs_towards_alive(monkeypatch):
    assert platform_io.pid_alive(os.getpid())
    assert not platform_io.pid_alive(0) and not platform_io.pid_alive(-1) and not platform_io.pid_alive(2**40)
    child = _zombie()
    try:
        assert not platform_io.pid_alive(child.pid)
        monkeypatch.setattr(platform_io, "LINUX", False)  # macOS: no /proc to look at its state
        assert platform_io.pid_alive(child.pid)
    finally:
        child.wait()
    assert not platform_io.pid_alive(child.pid)


class _Kernel32:
    """OpenProcess / GetExitCodeProcess / CloseHandle as Windows answers them, for a few pids."""

    def __init__(self, exit_codes: dict[int, int], denied: set[int] = frozenset()):
        self.exit_codes, self.denied, self.error, self.closed = exit_codes, denied, 0, []

    def OpenProcess(self, access: int, inherit: bool, pid: int) -> int:  # noqa: N802 - the API's name
        assert access == 0x1000 and inherit is False
        if pid in self.denied:
            self.error = 5  # ERROR_ACCESS_DENIED
            return 0
        if pid not in self.exit_codes:
            self.error = 87  # ERROR_INVALID_PARAMETER
            return 0
        return 1000 + pid

    def GetExitCodeProcess(self, handle: int, code) -> int:  # noqa: N802
        code._obj.value = self.exit_codes[handle - 1000]  # what ctypes.byref points at
        return 1

    def CloseHandle(self, handle: int) -> int:  # noqa: N802
        self.closed.append(handle)
        return 1

    def get_last_error(self) -> int:
        return self.error


def test_pid_liveness_on_windows_asks_for_the_exit_code():
    api = _Kernel32({10: 259, 11: 0}, denied={12})
    answers = [platform_io._windows_pid_alive(pid, api) for pid in (10, 11, 12, 13)]
    assert answers == [True, False, True, False]  # running, exited, someone else's, none
    assert api.closed == [1010, 1011]


def test_pid_liveness_on_windows_never_signals(monkeypatch):
    asked: list[int] = []
    monkeypatch.setattr(platform_io, "WINDOWS", True)
    monkeypatch.setattr(platform_io, "_windows_pid_alive", lambda pid: asked.append(pid) or False)
    monkeypatch.setattr(os, "kill", lambda *a: pytest.fail(f"os.kill{a} on Windows sends CTRL_C_EVENT"))
    assert platform_io.pid_alive(4242) is False and asked == [4242]


def test_the_cancel_signals_interrupt_inside_and_not_after():
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(KeyboardInterrupt), platform_io.cancel_interrupts():
        os.kill(os.getpid(), signal.SIGTERM)
    assert signal.getsignal(signal.SIGTERM) is before


def test_once_a_second_cancel_does_not_cut_the_cleanup_short():
    cleaned = []
    with platform_io.cancel_interrupts(once=True):
        try:
            os.kill(os.getpid(), signal.SIGTERM)
        except KeyboardInterrupt:
            os.kill(os.getpid(), signal.SIGTERM)  # ignored
            cleaned.append(True)
    assert cleaned == [True]


def test_ask_to_stop_sends_sigterm_and_never_to_a_group():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        assert not platform_io.ask_to_stop(0) and not platform_io.ask_to_stop(-1)  # this process's group, else
        assert platform_io.ask_to_stop(child.pid)
        assert child.wait(timeout=60) == -signal.SIGTERM
    finally:
        child.kill()
        child.wait()


def test_ask_to_stop_on_windows_breaks_its_own_group_only(monkeypatch):
    sent: list[tuple[int, int]] = []
    monkeypatch.setattr(platform_io, "WINDOWS", True)
    monkeypatch.setattr(signal, "CTRL_BREAK_EVENT", 1, raising=False)
    monkeypatch.setattr(os, "kill", lambda pid, sig: sent.append((pid, sig)))
    assert platform_io.ask_to_stop(77) and sent == [(77, 1)]
    assert not platform_io.ask_to_stop(78, own_group=False) and sent == [(77, 1)]  # would break the app too

    def no_console(pid: int, sig: int) -> None:
        raise OSError(6, "The handle is invalid")  # a windowed app shares no console with its child

    monkeypatch.setattr(os, "kill", no_console)
    assert not platform_io.ask_to_stop(79)  # the caller kills it


# -- the hold on the workspace without /proc/locks


@pytest.fixture
def ws_without_proc_locks(tmp_path, monkeypatch):
    monkeypatch.setattr(platform_io, "LINUX", False)
    path = tmp_path / "w.sqlite"
    with open_workspace(path) as made:
        ensure_demo(made)
    ws = open_workspace(path)
    yield ws
    ws.close()


def test_without_proc_locks_the_hold_is_kept_by_the_wal_inode(ws_without_proc_locks):
    ws = ws_without_proc_locks
    assert platform_io.posix_locks_held() is None and not ws._hold.locks_visible
    _drop_locks(ws.path)
    assert ws.hold_lost() is None  # the lost locks cannot be seen without /proc/locks…
    _other_adds_review(ws.path, "theirs-1")
    assert "deleted or replaced" in ws.hold_lost()  # …their consequence can, before the next write
    item = ws.conn.execute("SELECT min(id) FROM items").fetchone()[0]
    reviews.add_review(ws, item, "ann", "ok", note="mine-1")
    assert notes_seen_elsewhere(ws.path) == ["theirs-1", "mine-1"]


# -- one home


ONE_SYSTEM_MODULES = {"fcntl", "msvcrt", "resource", "termios", "pwd", "grp", "winreg", "_winapi"}
ONE_SYSTEM_OS = {"O_NONBLOCK", "O_NOCTTY", "O_BINARY", "statvfs", "kill", "killpg", "setsid", "wait4", "getuid"}


def _one_system_calls(source: str) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            found += [f"import {n}" for n in names if n.split(".")[0] in ONE_SYSTEM_MODULES]
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            module, name = node.value.id, node.attr
            if (module == "os" and name in ONE_SYSTEM_OS) or (module == "signal" and name.startswith(("SIG", "CTRL_"))):
                found.append(f"{module}.{name}")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("/proc"):
            found.append(node.value)
    return found


def test_no_module_but_platform_io_calls_what_one_system_has():
    """docs/architecture.md "Where platform differences live": one home, so a new system's branch has one place."""
    found = {}
    for package in ("db", "evaluator", "annotation", "gui", "vlmdesk"):
        for path in sorted((ROOT / package).rglob("*.py")):
            if path == ROOT / "db" / "platform_io.py":
                continue
            if calls := _one_system_calls(path.read_text(encoding="utf-8")):
                found[str(path.relative_to(ROOT))] = calls
    assert found == {}
    assert _one_system_calls("import os, signal\nos.kill(1, signal.SIGTERM)\nopen('/proc/self/stat')") == [
        "os.kill",
        "signal.SIGTERM",
        "/proc/self/stat",
    ]


def test_the_locks_on_the_workspace_files_are_read_from_their_descriptors_as_from_proc_locks(tmp_path):
    """posix_locks_on (fdinfo of the workspace's own descriptors: cheap) says what /proc/locks says of those files."""
    if not platform_io.LINUX:
        pytest.skip("Linux only: elsewhere both are unknown (None)")
    path = tmp_path / "w.sqlite"
    with open_workspace(path) as ws:
        ensure_demo(ws)
        key = (path.stat().st_dev, path.stat().st_ino)
        shm = Path(f"{path}-shm").stat()
        files = {key: path.name, (shm.st_dev, shm.st_ino): f"{path.name}-shm"}
        everything = platform_io.posix_locks_held()
        assert everything is not None
        assert platform_io.posix_locks_on(files) == everything & set(files) == set(files)
        _drop_locks(path)  # a raw open and close of the file: this process's locks on it are gone
        assert key not in platform_io.posix_locks_on(files)
        assert platform_io.posix_locks_on({(0, 0): "none.sqlite"}) == set()
