"""Import every module of vlmdesk's packages as if on another system (tests/test_platform_io.py runs it).

    python tests/fake_platform_import.py list            # what imports here, and every outside module it pulls in
    python tests/fake_platform_import.py win32 LIST.json # the same modules with Windows' face on: os.name "nt" …
    python tests/fake_platform_import.py darwin LIST.json

Only the packages' own code sees the other system: the outside modules (the standard library, PySide6, sqlite-utils…)
are imported first as they are, because their platform branches need the real system's modules (_winapi, msvcrt).
Then os.name and sys.platform change, the POSIX-only modules cannot be imported, the POSIX-only names leave os and
signal (Windows' own come in), and any open of /proc raises: a module that reaches one of them at import time fails.
Prints one JSON object: the modules that failed (name -> the error) and what db.platform_io decided.
"""

from __future__ import annotations

import builtins
import importlib
import io
import json
import os
import pathlib
import pkgutil
import signal
import sys
import traceback
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("db", "evaluator", "annotation", "gui", "vlmdesk")
POSIX_ONLY_MODULES = ("fcntl", "resource", "termios", "pwd", "grp", "posix", "tty", "pty", "syslog")
POSIX_ONLY_OS = (
    "O_NONBLOCK", "O_NOCTTY", "O_CLOEXEC", "O_NOFOLLOW", "O_DIRECTORY", "statvfs", "fstatvfs", "fork", "forkpty",
    "killpg", "setsid", "getsid", "setpgrp", "getpgid", "getpgrp", "getuid", "geteuid", "getgid", "getegid",
    "getgroups", "wait3", "wait4", "waitid", "mkfifo", "mknod", "uname", "getloadavg", "sched_getaffinity", "nice",
    "sync", "fchmod", "fchown", "chown", "lchown", "sysconf", "pathconf", "ttyname", "openpty",
)  # fmt: skip
LINUX_ONLY_OS = ("sched_getaffinity", "pidfd_open", "memfd_create", "O_PATH", "O_DIRECT", "O_TMPFILE", "getxattr")
POSIX_ONLY_SIGNAL = (
    "SIGKILL", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGCHLD", "SIGSTOP", "SIGCONT", "SIGALRM", "SIGPIPE",
    "SIGTSTP", "SIGWINCH", "alarm", "setitimer", "getitimer", "pthread_kill", "pthread_sigmask", "siginterrupt",
    "sigwait", "sigpending",
)  # fmt: skip
WINDOWS_ONLY = {"os": {"O_BINARY": 0x8000, "O_NOINHERIT": 0x80}, "signal": {"SIGBREAK": 21, "CTRL_C_EVENT": 0,
                "CTRL_BREAK_EVENT": 1}}  # fmt: skip


def module_names() -> list[str]:
    """Every module of the packages, found on disk without importing any (pkgutil over their folders)."""
    names: list[str] = []

    def walk(path: Path, prefix: str) -> None:
        for info in pkgutil.iter_modules([str(path)]):
            if info.name == "__main__":  # runs the command line when imported
                continue
            names.append(prefix + info.name)
            if info.ispkg:
                walk(path / info.name, f"{prefix}{info.name}.")

    for package in PACKAGES:
        names.append(package)
        walk(ROOT / package, f"{package}.")
    return names


def ours(name: str) -> bool:
    return name.split(".")[0] in PACKAGES


def listing() -> dict:
    imported, failed = [], {}
    for name in module_names():
        try:
            importlib.import_module(name)
            imported.append(name)
        except Exception as exc:  # noqa: BLE001 - reported, not hidden: the test shows it
            failed[name] = f"{type(exc).__name__}: {exc}"
    outside = sorted(n for n, m in list(sys.modules.items()) if m is not None and not ours(n))
    return {"imported": imported, "failed": failed, "outside": outside}


def no_proc(real_open):
    def guarded(file, *args, **kwargs):
        if isinstance(file, (str, bytes, os.PathLike)) and os.fsdecode(file).startswith("/proc"):
            raise AssertionError(f"opened {os.fsdecode(file)} at import time (no /proc on this system)")
        return real_open(file, *args, **kwargs)

    return guarded


class _RealName(types.ModuleType):
    """os as it is, its name included, for pathlib alone."""

    def __init__(self, real: types.ModuleType):
        super().__init__("os")
        self.__dict__.update(real.__dict__)


def look_like(system: str) -> None:
    sys.platform = system
    builtins.open = io.open = no_proc(builtins.open)
    for name in LINUX_ONLY_OS:
        if hasattr(os, name):
            delattr(os, name)
    if system != "win32":
        return
    # pathlib keeps the real name: Python 3.11's Path() refuses to build a WindowsPath on Linux, and the paths these
    # modules handle here are this system's anyway.
    pathlib.os = _RealName(os)  # type: ignore[attr-defined]
    os.name = "nt"
    for name in POSIX_ONLY_MODULES:
        sys.modules[name] = None  # type: ignore[assignment]
    for module, names in ((os, POSIX_ONLY_OS), (signal, POSIX_ONLY_SIGNAL)):
        for name in names:
            if hasattr(module, name):
                delattr(module, name)
    for module, values in ((os, WINDOWS_ONLY["os"]), (signal, WINDOWS_ONLY["signal"])):
        for name, value in values.items():
            setattr(module, name, value)


def faked(system: str, listed: dict) -> dict:
    for name in listed["outside"]:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001, S110 - a name some module put in sys.modules by hand
            pass
    look_like(system)
    failed = {}
    for name in listed["imported"]:
        try:
            importlib.import_module(name)
        except BaseException as exc:  # noqa: BLE001 - SystemExit included: every failure is named
            where = traceback.extract_tb(exc.__traceback__)[-1]
            failed[name] = f"{type(exc).__name__}: {exc} ({where.filename}:{where.lineno})"
    from db import platform_io

    decided = {
        "windows": platform_io.WINDOWS,
        "linux": platform_io.LINUX,
        "cancel_signals": list(platform_io.CANCEL_SIGNALS),
        "child_creation_flags": platform_io.CHILD_CREATION_FLAGS,
    }
    return {"failed": failed, "decided": decided, "modules": len(listed["imported"])}


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    if sys.argv[1] == "list":
        result = listing()
    else:
        result = faked(sys.argv[1], json.loads(Path(sys.argv[2]).read_text()))
    sys.stdout.write(json.dumps(result))
    sys.stdout.flush()
    os._exit(0)  # no interpreter teardown on a system it is not
