"""Every call that exists on some operating systems only, each with the other systems' branch (docs/adr/0042).

Linux is where vlmdesk is built and tested; the macOS and Windows branches are written from the systems' documentation
and kept to what the app and the annotation commands need. Nothing here runs at import time but reading `os.name` and
`sys.platform`: a Windows-only module (msvcrt, ctypes.windll) is imported inside the function that uses it, and a
POSIX-only one (fcntl) likewise, so every module of vlmdesk imports on every system (tests/test_platform_io.py).
"""

from __future__ import annotations

import errno
import os
import signal
import stat
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

WINDOWS = os.name == "nt"
LINUX = sys.platform.startswith("linux")  # /proc: the locks a process holds, a zombie's state, the umask

FileKey = tuple[int, int]  # (st_dev, st_ino)

# ------------------------------------------------------------------------------------------------ files


def open_no_wait(path: str | os.PathLike[str], *, follow: bool = True) -> int:
    """A descriptor opened read-only on `path` that cannot block nor adopt a terminal. POSIX: O_NONBLOCK, so that a
    FIFO swapped in after the caller's stat opens without waiting for a writer; O_NOCTTY. Windows has neither (a named
    pipe is not in the file system, so a stat that found a regular file cannot be raced into one): O_BINARY, without
    which os.read translates CRLF and stops at Ctrl+Z, and O_NOINHERIT. The caller still fstats what it opened.
    `follow=False`: a symlink at `path` is refused (OSError ELOOP; Windows, without O_NOFOLLOW: an lstat first)."""
    if WINDOWS:
        if not follow and os.path.islink(path):
            raise OSError(errno.ELOOP, "a symbolic link", str(path))
        flags = os.O_RDONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_NOINHERIT", 0)
    else:
        flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
        flags |= 0 if follow else os.O_NOFOLLOW
    return os.open(path, flags)


def open_append(path: str | os.PathLike[str], *, create: bool) -> int:
    """A descriptor that reads and appends to the regular file `path`: created by this call (O_EXCL, FileExistsError
    if it exists) or, without `create`, one that exists. Never through a symlink (O_NOFOLLOW; Windows: an lstat first)
    nor onto a FIFO or a device (O_NONBLOCK, then fstat: OSError EINVAL). A new file gets 0666 less the umask."""
    if WINDOWS:
        if os.path.islink(path):
            raise OSError(errno.ELOOP, "a symbolic link", str(path))
        flags = os.O_RDWR | os.O_APPEND | getattr(os, "O_BINARY", 0) | getattr(os, "O_NOINHERIT", 0)
    else:
        flags = os.O_RDWR | os.O_APPEND | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0)
        flags |= getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags | (os.O_CREAT | os.O_EXCL if create else 0), 0o666)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, "not a regular file", str(path))
    return fd


_LOCK_AT = 2**40  # Windows locks a byte range: one far past any journal's end, so readers of its bytes never wait


@contextmanager
def try_lock_fd(fd: int) -> Iterator[bool]:
    """An exclusive lock on the file open on `fd` while the block runs; yields False at once when another process
    (or another descriptor) holds it. POSIX: flock; where the file system has no locks (some network shares: ENOLCK,
    EOPNOTSUPP) it yields True with nothing held. Windows: msvcrt.locking on a byte far past the end."""
    if WINDOWS:
        import msvcrt

        os.lseek(fd, _LOCK_AT, os.SEEK_SET)
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)  # type: ignore[attr-defined]
        except OSError:
            yield False
            return
        try:
            yield True
        finally:
            os.lseek(fd, _LOCK_AT, os.SEEK_SET)
            msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)  # type: ignore[attr-defined]
        return
    import fcntl

    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        yield False
        return
    except OSError as exc:
        if exc.errno not in (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS):
            raise
        yield True
        return
    try:
        yield True
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)


def current_umask() -> int:
    """The process's umask. Linux says it in /proc/self/status without changing it; elsewhere (macOS, Windows, where
    only its write bits mean anything) it is set and put back, which changes it for every thread for a moment."""
    if LINUX:
        try:
            with open("/proc/self/status", encoding="ascii") as f:
                for line in f:
                    if line.startswith("Umask:"):
                        return int(line.split()[1], 8)
        except (OSError, ValueError):
            pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@contextmanager
def exclusive_lock(path: Path) -> Iterator[bool]:
    """An exclusive lock on the file `path` (created if missing, left there) while the block runs; yields False at
    once when another process holds it (try_lock_fd: flock, or msvcrt.locking on Windows)."""
    with open(path, "a+b") as f, try_lock_fd(f.fileno()) as held:
        yield held


def description_lock(fd: int, start: int, length: int, *, shared: bool = True) -> bool:
    """Lock bytes [start, start + length) of the file open on `fd` (shared, or released with `shared=False`) with a
    lock that belongs to the open file description: Linux's OFD locks. Unlike a POSIX record lock, closing another
    descriptor of the file in this process does not drop it; like one, it conflicts with POSIX locks of every
    process, this one's too. False where the system has none (not Linux, a kernel before 3.15) or another holds a
    write lock there: nothing is then held."""
    if not LINUX:
        return False
    import fcntl
    import struct

    command = getattr(fcntl, "F_OFD_SETLK", None)
    if command is None:
        return False
    kind = fcntl.F_RDLCK if shared else fcntl.F_UNLCK
    try:  # struct flock: l_type, l_whence, l_start, l_len, l_pid (0: OFD locks name no process)
        fcntl.fcntl(fd, command, struct.pack("hhqqi4x", kind, os.SEEK_SET, start, length, 0))
    except OSError:
        return False
    return True


MAX_PROC_LOCKS_BYTES = 4 * 2**20
PROC_LOCKS = Path("/proc/locks")


MAX_FDINFO_BYTES = 2**16
PROC_SELF = Path("/proc/self")


def posix_locks_on(files: dict[FileKey, str]) -> set[FileKey] | None:
    """Of `files` ({key: the file's name}), those on which this process holds a POSIX record lock; None where that
    cannot be known (as posix_locks_held). Read from /proc/self/fdinfo of the descriptors open on them, which lists
    the locks of that file only: /proc/locks lists every lock of the system, and on some kernels costs 7–16 ms to
    generate, on every write of a verdict (issue 27). A descriptor is matched by its link's name first (a readlink
    touches no file system), then by the file's key."""
    locks = _own_locks_on(files)
    if locks is None:
        found = posix_locks_held()
        return None if found is None else found & set(files)
    return {key for key, held in locks.items() if held}


def posix_write_lock_at(key: FileKey, name: str, offset: int) -> bool | None:
    """Whether this process holds a POSIX write lock on byte `offset` of the file (`key`, its `name`); None where
    that cannot be known. Read as posix_locks_on."""
    locks = _own_locks_on({key: name})
    if locks is None:
        return None
    return any(kind == b"WRITE" and start <= offset <= end for kind, start, end in locks.get(key, ()))


def _own_locks_on(files: dict[FileKey, str]) -> dict[FileKey, list[tuple[bytes, int, int]]] | None:
    """This process's POSIX locks on `files` (kind, first byte, last byte), from /proc/self/fdinfo; None where
    /proc/self/fd cannot be read (not Linux)."""
    if not LINUX:
        return None
    try:
        entries = list(os.scandir(PROC_SELF / "fd"))
    except OSError:
        return None
    locks: dict[FileKey, list[tuple[bytes, int, int]]] = {}
    me = str(os.getpid()).encode()
    names = set(files.values())
    for entry in entries:
        try:
            if os.path.basename(os.readlink(entry.path)) not in names:
                continue
            st = os.stat(entry.path)
            key = (st.st_dev, st.st_ino)
            if key not in files or key in locks:
                continue
            with open(PROC_SELF / "fdinfo" / entry.name, "rb") as f:
                text = f.read(MAX_FDINFO_BYTES)
        except OSError:
            continue  # closed meanwhile
        # "lock:	1: POSIX  ADVISORY  WRITE 5128 fe:00:2146361 120 120": /proc/locks' lines, prefixed; every
        # descriptor of the file lists the same locks
        locks[key] = []
        for line in text.splitlines():
            fields = line.split()[1:]
            if line.startswith(b"lock:") and _own_posix_lock(fields, me) and len(fields) >= 8:
                end = 2**63 - 1 if fields[7] == b"EOF" else int(fields[7])
                locks[key].append((fields[3], int(fields[6]), end))
    return locks


def _own_posix_lock(fields: list[bytes], me: bytes) -> bytes | None:
    """The "MAJOR:MINOR:INODE" field of a line of the kernel's lock listing (split) when it is a POSIX lock held by
    process `me`; None otherwise ("1: -> POSIX …" is a waiter, and too short a line is no lock)."""
    return fields[5] if len(fields) >= 6 and fields[1] == b"POSIX" and fields[4] == me else None


def posix_locks_held() -> set[FileKey] | None:
    """The files on which this process holds a POSIX record lock, from Linux's /proc/locks; None where that cannot be
    known: macOS and the BSDs have no /proc (the workspace's hold is then checked by the -wal/-shm inodes alone, ADR
    0023), Windows locks per handle, not per process (closing another handle drops nothing), and an implausibly large
    file."""
    if not LINUX:
        return None
    try:
        with open(PROC_LOCKS, "rb") as f:
            text = f.read(MAX_PROC_LOCKS_BYTES + 1)
    except OSError:
        return None
    if len(text) > MAX_PROC_LOCKS_BYTES:
        return None
    me = str(os.getpid()).encode()
    held: set[FileKey] = set()
    for line in text.splitlines():
        # "1: POSIX  ADVISORY  READ 5128 fd:01:2146817 1073741826 1073742335"
        if (file := _own_posix_lock(line.split(), me)) is None:
            continue
        try:
            major, minor, inode = file.split(b":")
            held.add((os.makedev(int(major, 16), int(minor, 16)), int(inode)))
        except ValueError:
            continue
    return held


# -------------------------------------------------------------------------------------------- processes

_PID_MAX = 2**31


def pid_alive(pid: int) -> bool:
    """Whether the process `pid` of this host still runs (ADR 0008: a run whose owner is gone is interrupted). When it
    cannot be told, True: a live owner is never taken for a dead one."""
    if not isinstance(pid, int) or not 0 < pid < _PID_MAX:
        return False
    if WINDOWS:
        return _windows_pid_alive(pid)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return True  # someone else's live process
    if not LINUX:
        return True  # macOS: no /proc to tell a zombie; its parent (the app, a shell) reaps it within moments
    try:  # a zombie (exited, not yet reaped by its parent) is gone too
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read(512).rsplit(b")", 1)[-1].split()[0] != b"Z"
    except (OSError, IndexError):
        return True


_PROCESS_QUERY_LIMITED_INFORMATION = 0x1000
_STILL_ACTIVE = 259
_ERROR_INVALID_PARAMETER = 87  # OpenProcess's answer for a pid no process has


def _windows_pid_alive(pid: int, api: Any = None) -> bool:
    """OpenProcess and GetExitCodeProcess (kernel32; `api` stands in for it in tests): os.kill(pid, 0) on Windows would
    send CTRL_C_EVENT to a process group instead of asking. A process that exited with code 259 reads as alive
    (Windows' own ambiguity: it errs as above)."""
    import ctypes

    if api is None:
        api = ctypes.WinDLL("kernel32", use_last_error=True)  # type: ignore[attr-defined]
        api.get_last_error = ctypes.get_last_error  # type: ignore[attr-defined]
    handle = api.OpenProcess(_PROCESS_QUERY_LIMITED_INFORMATION, False, pid)
    if not handle:
        return bool(api.get_last_error() != _ERROR_INVALID_PARAMETER)  # access denied: someone else's live process
    try:
        code = ctypes.c_ulong()
        if not api.GetExitCodeProcess(handle, ctypes.byref(code)):
            return True
        return code.value == _STILL_ACTIVE
    finally:
        api.CloseHandle(handle)


# What the app's Cancel and Ctrl+C deliver to a command, which then stops between two SQLite statements (ADR 0024).
# POSIX: SIGTERM (QProcess.terminate, kill -TERM) and SIGINT. Windows has no SIGTERM between processes: Ctrl+C is SIGINT
# and the app's Cancel is CTRL_BREAK_EVENT, which Python delivers as SIGBREAK.
CANCEL_SIGNALS: tuple[int, ...] = (
    (signal.SIGINT, signal.SIGBREAK) if WINDOWS else (signal.SIGTERM, signal.SIGINT)  # type: ignore[attr-defined]
)

# The flags a child the app may cancel is created with: on Windows its own process group (CREATE_NEW_PROCESS_GROUP),
# so that a CTRL_BREAK_EVENT sent to it reaches it alone and not the app; POSIX needs none.
CHILD_CREATION_FLAGS = 0x00000200 if WINDOWS else 0


@contextmanager
def cancel_interrupts(*, once: bool = False) -> Iterator[None]:
    """While the block runs, the cancel signals raise KeyboardInterrupt (in the main thread); the previous handlers
    come back after it. `once`: the first one also ignores the next ones, so that what the interrupted work does to
    clean up is not cut short by a second Cancel."""

    def interrupt(signum: int, frame: FrameType | None) -> None:
        if once:
            for sig in CANCEL_SIGNALS:
                signal.signal(sig, signal.SIG_IGN)
        raise KeyboardInterrupt

    previous: dict[int, Callable[[int, FrameType | None], Any] | int | None] = {
        sig: signal.signal(sig, interrupt) for sig in CANCEL_SIGNALS
    }
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def ask_to_stop(pid: int, *, own_group: bool = True) -> bool:
    """Ask the child process `pid` to stop (it stores what it has and exits 130); False when it could not be asked,
    and the caller kills it. POSIX: SIGTERM. Windows: CTRL_BREAK_EVENT, only to a child created in its own process
    group (`own_group`, CHILD_CREATION_FLAGS) — sent to another it would reach every process of the console, the app's
    included — and only where the app shares the child's console (started from a terminal); a windowed app has none
    and the child is killed: its run still reads as interrupted, its owner being gone (ADR 0008)."""
    if not 0 < pid < _PID_MAX:  # 0 and -1 would signal a whole process group, this one included
        return False
    if WINDOWS:
        if not own_group:
            return False
        try:
            os.kill(pid, signal.CTRL_BREAK_EVENT)  # type: ignore[attr-defined]
        except OSError:
            return False
        return True
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return True  # already gone
    except OSError:
        return False
    return True


# -- servers vlmdesk starts (evaluator/backends/managed.py) ---------------------------------------------------------


def dies_with_this_thread() -> Callable[[], None] | None:
    """A preexec function asking Linux to SIGTERM a child when the thread that forks it dies (vlmdesk SIGKILLed);
    None elsewhere, and from any thread but the main one (the signal follows the forking thread, not the process)."""
    import threading

    if not sys.platform.startswith("linux") or threading.current_thread() is not threading.main_thread():
        return None
    try:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl  # resolved here: the child only calls it
    except (OSError, AttributeError):
        return None
    return lambda: prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def signal_group(pgid: int, *, kill: bool = False) -> None:
    """Ask the process group a child leads (started with start_new_session) to stop — SIGTERM, or SIGKILL with
    `kill` — where it is gone or not ours, nothing. Windows has no process groups to signal: the leader is ended."""
    if not 0 < pgid < _PID_MAX:
        return
    try:
        if WINDOWS:
            os.kill(pgid, signal.SIGTERM)  # TerminateProcess
        else:
            os.killpg(pgid, signal.SIGKILL if kill else signal.SIGTERM)
    except (ProcessLookupError, PermissionError, OSError):
        pass


def group_alive(pgid: int) -> bool:
    """Whether a process of the group `pgid` leads is still there (Windows: the leader)."""
    if not 0 < pgid < _PID_MAX:
        return False
    if WINDOWS:
        return pid_alive(pgid)
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _terminate_interrupts(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt  # unwinds to whatever stops the servers; atexit stops what is left


def interrupt_on_terminate() -> bool:
    """From the main thread, while SIGTERM has its default action (which ends Python without running atexit): make it
    a KeyboardInterrupt, so a SIGTERMed vlmdesk stops the servers it started. True when installed here."""
    import threading

    if WINDOWS or threading.current_thread() is not threading.main_thread():
        return False
    if signal.getsignal(signal.SIGTERM) != signal.SIG_DFL:
        return False
    signal.signal(signal.SIGTERM, _terminate_interrupts)
    return True


def restore_terminate() -> None:
    """SIGTERM's default action again, where interrupt_on_terminate's handler is still the one in place."""
    import threading

    if (
        threading.current_thread() is threading.main_thread()
        and signal.getsignal(signal.SIGTERM) is _terminate_interrupts
    ):
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
