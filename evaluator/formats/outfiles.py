"""Files a command writes (`--out`, `--plot`, `--image-out`…): one rule for all of them.

- Refused, `PATH: what` (a UserError): an existing path that is not a regular file (a FIFO, a device, a socket, a
  folder) — replacing it would destroy it, and writing into it may block or have effects; any SQLite database
  (a workspace above all, the open one included) and the `-wal`, `-shm` and `-journal` files beside one; a folder
  that does not exist (nothing is created behind the user's back).
- A symlink is written through: its target is replaced, the link stays.
- The new content goes to a temporary file in the target's folder, which is renamed over the target only when it is
  complete, so a failure (full disk, a bug, Ctrl-C) leaves the old file as it was.
- An existing file keeps its permission bits; a new one gets the ordinary mode (0666 less the umask), not mkstemp's
  0600.
- A CSV cell that a spreadsheet would run as a formula (it starts with = + - @, a tab or a CR: OWASP's CSV-injection
  rule) is written with a leading `'` (`csv_cell`); `csv_cell_read` takes it off again, so vlmdesk reads back what
  it wrote. TSV files stay verbatim: they are benchmark and prediction data that VLMEvalKit reads as text.
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any, TypeVar

from db.errors import UserError
from db.platform_io import current_umask, open_no_wait
from db.workspace import COMPANIONS, in_use

_SQLITE_MAGIC = b"SQLite format 3\x00"
_KINDS = (
    (stat.S_ISDIR, "is a directory; give a file name"),
    (stat.S_ISFIFO, "is a FIFO (named pipe)"),
    (stat.S_ISCHR, "is a character device"),
    (stat.S_ISBLK, "is a block device"),
    (stat.S_ISSOCK, "is a socket"),
)
T = TypeVar("T")


# What makes Excel, LibreOffice or Sheets read a CSV cell as a formula (OWASP, "CSV Injection").
FORMULA_LEADS = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(text: str) -> str:
    """A cell as a CSV file carries it: `'` before a formula lead, and before a `'` that precedes one, so that
    csv_cell_read gives back exactly `text`."""
    if text.startswith(FORMULA_LEADS) or (text.startswith("'") and text.lstrip("'").startswith(FORMULA_LEADS)):
        return "'" + text
    return text


def csv_cell_read(text: str) -> str:
    """The text a cell written by csv_cell holds (a cell of another tool's CSV without that prefix is unchanged)."""
    if text.startswith("'") and text.lstrip("'").startswith(FORMULA_LEADS):
        return text[1:]
    return text


class OutputRefused(UserError):
    """A path a command will not write; the message is `PATH: why`."""


def _is_sqlite(path: str) -> bool:
    if in_use(path):  # a workspace open in this process: opening it here would drop SQLite's locks (db.workspace)
        return True
    try:
        fd = open_no_wait(path)
    except OSError:
        return False
    try:
        return stat.S_ISREG(os.fstat(fd).st_mode) and os.read(fd, len(_SQLITE_MAGIC)) == _SQLITE_MAGIC
    finally:
        os.close(fd)


def target_of(path: str | os.PathLike[str]) -> Path:
    """The file that writing `path` replaces: the path itself, or, for a symlink, what it finally points at (which
    may not exist yet)."""
    path = Path(path).expanduser()
    return Path(os.path.realpath(path)) if path.is_symlink() else path


def check_output(path: str | os.PathLike[str]) -> Path:
    """The file writing `path` will replace, after the checks of this module's rule; raises OutputRefused."""
    shown = Path(path).expanduser()
    target = target_of(shown)
    try:
        st = os.stat(target)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise OutputRefused(f"{shown}: {exc.strerror or exc}") from None
    if st is not None and not stat.S_ISREG(st.st_mode):
        what = next((text for test, text in _KINDS if test(st.st_mode)), "is not a regular file")
        raise OutputRefused(f"{shown}: {what}; refusing to replace it")
    for suffix in COMPANIONS:  # first: a companion of an open workspace must not be opened to sniff it
        if target.name.endswith(suffix) and _is_sqlite(str(target)[: -len(suffix)]):
            raise OutputRefused(
                f"{shown}: belongs to the SQLite database {str(target)[: -len(suffix)]}; refusing to overwrite it"
            )
    if st is not None and _is_sqlite(str(target)):
        raise OutputRefused(f"{shown}: is a SQLite database (a workspace?); refusing to overwrite it")
    if not target.parent.is_dir():
        # The folder is named as the user can act on it: the one they typed, or the link's target's.
        raise OutputRefused(f"{target.parent if target != shown else shown.parent}: no such directory")
    return target


class AtomicOutput:
    """A file being written to `path` under this module's rule: `open()` checks the path and returns a handle on a
    temporary file; `close(ok=True)` renames it over the target, `close(ok=False)` (or an exception in a `with`)
    removes it."""

    def __init__(self, path: str | os.PathLike[str], *, binary: bool = False, newline: str | None = None):
        self.path = Path(path).expanduser()
        self._binary, self._newline = binary, newline
        self._handle: IO[Any] | None = None
        self._tmp: str | None = None
        self._target: Path | None = None

    def open(self) -> IO[Any]:
        self._target = check_output(self.path)
        try:
            mode = stat.S_IMODE(os.stat(self._target).st_mode)
        except FileNotFoundError:
            mode = 0o666 & ~current_umask()
        fd, self._tmp = tempfile.mkstemp(prefix=f".{self._target.name}.", suffix=".tmp", dir=self._target.parent)
        try:
            os.fchmod(fd, mode)
            self._handle = (
                os.fdopen(fd, "wb") if self._binary else os.fdopen(fd, "w", encoding="utf-8", newline=self._newline)
            )
        except BaseException:
            os.close(fd)
            os.unlink(self._tmp)
            raise
        return self._handle

    def close(self, ok: bool = True) -> None:
        if self._handle is None:
            return
        handle, tmp, target, self._handle = self._handle, self._tmp, self._target, None
        assert tmp is not None and target is not None  # open() set them with the handle
        try:
            if ok:
                handle.flush()
                os.fsync(handle.fileno())
            handle.close()
            if ok:
                check_output(self.path)  # nothing was swapped in meanwhile
                os.replace(tmp, target)
        except BaseException:
            handle.close()
            Path(tmp).unlink(missing_ok=True)
            raise
        if not ok:
            Path(tmp).unlink(missing_ok=True)

    def __enter__(self) -> IO[Any]:
        return self.open()

    def __exit__(self, exc_type: type[BaseException] | None, *_: object) -> None:
        self.close(ok=exc_type is None)


def write_file(
    path: str | os.PathLike[str], write: Callable[[IO[Any]], T], *, binary: bool = False, newline: str | None = None
) -> T:
    """Call write(handle) on a new file that replaces `path` once write returns; returns what write returned."""
    with AtomicOutput(path, binary=binary, newline=newline) as handle:
        return write(handle)
