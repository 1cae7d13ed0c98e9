"""Opening a workspace file: identity checks before any write, read-only opening, pragmas, migrations, and the one
rule that turns a SQLite error into a message about the workspace file.

Order matters (docs/adr/0007-opening-workspaces.md): the file's header is read with plain file I/O, then, only if
the header cannot tell, the schema is read through a read-only connection; the file is switched to WAL and migrated
only once it is known to be a vlmdesk workspace this version understands. A file we refuse keeps every byte.
"""

from __future__ import annotations

import functools
import os
import re
import shlex
import shutil
import sqlite3
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

from sqlite_utils import Database

from db import schema
from db.errors import EnvironmentFault, UserError
from db.platform_io import FileKey, description_lock, posix_locks_on, posix_write_lock_at

ENV_VAR = "VLMDESK_WORKSPACE"
BUSY_TIMEOUT_MS = 10_000
APPLICATION_ID = schema.APPLICATION_ID  # set by migration 0008_workspace_identity
SQLITE_MAGIC = b"SQLite format 3\x00"
HEADER_BYTES = 100


class SchemaError(UserError):
    """The file is not a vlmdesk workspace this version can open (foreign, not SQLite, newer, needs an upgrade)."""


class DamagedWorkspace(UserError):
    """The file is a workspace, but damaged (truncated, a garbled page): it names the way out."""


class ReadOnlyWorkspace(UserError):
    """A write was asked of a workspace opened read-only."""


def default_workspace_path() -> Path:
    """`$VLMDESK_WORKSPACE`, else `workspace.sqlite` in the user data directory."""
    env = os.environ.get(ENV_VAR)
    if env:
        return Path(env).expanduser()
    from platformdirs import user_data_path

    return user_data_path("vlmdesk", appauthor=False) / "workspace.sqlite"


# POSIX record locks belong to the process, not to a descriptor: closing ANY descriptor of a file drops every lock
# this process holds on it, SQLite's included. Another process then takes itself for the file's last user, checkpoints
# and deletes the -wal our connections still write into: their later commits are lost without an error. So while this
# process has a workspace open, its file is never opened outside SQLite (SQLite's own connections share their locks).
_open_files: Counter[tuple[int, int]] = Counter()
_open_files_lock = threading.Lock()


def _file_key(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


COMPANIONS = ("-wal", "-shm", "-journal")


def in_use(path: str | os.PathLike[str]) -> bool:
    """Whether `path` is a workspace this process has open, or its -wal, -shm or -journal: then it must not be
    opened outside SQLite."""
    text = os.fspath(path)
    candidates = [text] + [text.removesuffix(c) for c in COMPANIONS if text.endswith(c)]
    keys = {k for c in candidates if (k := _file_key(Path(c))) is not None}
    with _open_files_lock:
        return any(_open_files[k] > 0 for k in keys)


class HoldLost(EnvironmentFault):
    """A write was refused: this process lost its hold on the workspace file between checking it and committing."""


# SQLite's locks whose loss lets another process damage the file (os_unix.c, wal.c): a shared lock on the database
# file's SHARED range, held by every connection for its life (a connection that closes takes an exclusive one there to
# learn it is the last user, then checkpoints and deletes the -wal), and a shared lock on the -shm's "dead man switch"
# byte (one that opens finding no lock there takes itself for the first user and truncates the -shm under every
# mapping). The -shm's write lock is taken afresh by each write transaction.
SHARED_FIRST, SHARED_SIZE = 2**30 + 2, 510
SHM_WRITE_LOCK, SHM_DMS = 120, 128


class _Guard:
    """The same two locks, held by this process on descriptors of its own as open-file-description locks, which a
    stray close cannot drop (docs/adr/0046-guard-locks-that-a-stray-close-cannot-drop.md); one per file, shared by
    the read-write workspaces of this process open on it. Its descriptors are closed only after SQLite's connections
    to the file: closing one earlier would drop SQLite's POSIX locks like any other close."""

    def __init__(self, path: Path, key: FileKey) -> None:
        self.path, self.key = path, key
        self.users = 0
        self.held: dict[str, int] = {}  # "" (the file) and "-shm": the descriptor holding each lock
        self.shm: FileKey | None = None
        self.opened: list[int] = []  # every descriptor opened, for `close`

    def cover(self, shm: FileKey | None) -> bool:
        """Hold the file's lock, and the -shm's when `shm` is the one SQLite maps; True when both are held."""
        if "" not in self.held:
            self._lock("", self.key, SHARED_FIRST, SHARED_SIZE)
        if shm is not None and shm != self.shm:
            self._unlock("-shm")
            if self._lock("-shm", shm, SHM_DMS, 1):
                self.shm = shm
        return "" in self.held and shm is not None and self.shm == shm

    def _lock(self, suffix: str, key: FileKey, start: int, length: int) -> bool:
        try:
            fd = os.open(f"{self.path}{suffix}", os.O_RDONLY | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0))
        except OSError:
            return False
        self.opened.append(fd)
        st = os.fstat(fd)
        if (st.st_dev, st.st_ino) != key or not description_lock(fd, start, length):
            return False
        self.held[suffix] = fd
        return True

    def _unlock(self, suffix: str) -> None:
        if (fd := self.held.pop(suffix, None)) is not None:
            description_lock(fd, 0, 0, shared=False)  # the whole file, this description's locks only

    def release(self) -> None:
        """Give up the locks, so that SQLite's last close may checkpoint and delete the -wal as usual."""
        for suffix in list(self.held):
            self._unlock(suffix)
        self.shm = None

    def close(self) -> None:
        """Close the descriptors: once this process has no connection to the file left."""
        self.release()
        while self.opened:
            os.close(self.opened.pop())


_guards: dict[FileKey, _Guard] = {}  # under _open_files_lock


class WorkspaceDatabase(Database):
    """sqlite-utils' Database (opened here with execute_plugins=False: no installed sqlite-utils plugin acts on a
    workspace's connection, and looking for plugins reads every installed package's metadata, ~35 ms of each
    command's start) whose outermost `atomic()` checks the workspace's hold before it begins (regaining
    it first, so nothing is written into an orphaned -wal) and again before it commits (refusing the write when it
    was lost meanwhile). Every write transaction of vlmdesk goes through here, or calls the same two checks
    (db/runs.py's BEGIN IMMEDIATE)."""

    workspace: Workspace | None = None

    @contextmanager
    def atomic(self) -> Iterator[Database]:
        ws = self.workspace
        if ws is None or self.conn.in_transaction:
            with super().atomic():
                yield self
            return
        ws.regain_hold()
        with super().atomic():
            yield self
            ws.confirm_hold()


LOCKS_READ_EVERY_S = 0.2  # how often writes read /proc/locks at most


@dataclass(frozen=True)
class Hold:
    """What this process holds of a workspace it writes: the -wal and -shm files its connection uses, and whether
    its POSIX locks on the file and on the -shm can be seen (Linux's /proc/locks), so their loss can be noticed."""

    wal: FileKey | None
    shm: FileKey | None
    locks_visible: bool
    guarded: bool  # this process's guard holds the locks a stray close would drop (_Guard)


class Workspace:
    """One open workspace file. `db` is the sqlite-utils Database; writes that belong together use `db.atomic()`.
    `read_only` workspaces refuse every write (SQLite raises; `database_error` words it).

    A read-write workspace keeps its *hold*: SQLite's locks on the file and the -wal/-shm its connection uses. A
    library in this process that opens and closes the file drops those locks (POSIX), and another process closing
    the workspace then deletes the -wal under us (docs/adr/0023-the-hold-on-the-workspace.md). `hold_lost` notices;
    every write transaction regains the hold first (`reconnect`), so nothing is written into an orphaned log."""

    def __init__(self, path: Path, db: Database, *, read_only: bool = False):
        self.path = path
        self.db = db
        self.read_only = read_only
        self.reconnections: list[str] = []  # why the hold was regained, oldest first (the app tells the user)
        self._hold: Hold | None = None
        self._locks_read_at, self._locks_held = 0.0, True  # the last read of /proc/locks, and what it said
        self._guard: _Guard | None = None
        self._closed = False
        self._changes_at_begin = 0  # the connection's total_changes when the write transaction began
        self._file_key = _file_key(path)
        if self._file_key is not None:
            with _open_files_lock:
                _open_files[self._file_key] += 1
        if isinstance(db, WorkspaceDatabase):
            db.workspace = self

    @property
    def conn(self) -> sqlite3.Connection:
        return self.db.conn

    def schema_version(self) -> int:
        return int(self.db.execute("PRAGMA user_version").fetchone()[0])

    # -- the hold
    def take_hold(self) -> None:
        """Note the -wal/-shm this connection uses and whether its locks are visible; called once it has read."""
        if self.read_only:
            return
        wal, shm = _file_key(Path(f"{self.path}-wal")), _file_key(Path(f"{self.path}-shm"))
        guarded = self._cover(shm)
        locked = self._locks_held_on(shm)
        visible = locked is not None and self._file_key in locked and shm in locked
        self._hold = Hold(wal=wal, shm=shm, locks_visible=visible, guarded=guarded)
        self._locks_read_at, self._locks_held = time.monotonic(), True

    def _cover(self, shm: FileKey | None) -> bool:
        """Take this process's guard of the file (shared with its other workspaces open on it) over `shm`."""
        if self._file_key is None:
            return False
        with _open_files_lock:
            if self._guard is None:
                self._guard = _guards.setdefault(self._file_key, _Guard(self.path, self._file_key))
                self._guard.users += 1
            return self._guard.cover(shm)

    def hold_lost(self, *, locks_read_within: float = 0.0) -> str | None:
        """Why this process no longer holds the workspace (its -wal or -shm is not the one on disk; unguarded, its
        locks are gone), in words; None while it does, and for read-only workspaces, which hold nothing. Guarded,
        a stray close drops nothing that matters between transactions. The locks are not read again when they were
        read less than `locks_read_within` seconds ago (writes: /proc/locks costs ~0.3 ms to generate; the
        -wal/-shm comparison, which catches the damage itself, is made on every call)."""
        hold = self._hold
        if hold is None:
            return None
        if (suffix := self._replaced_companion()) is not None:
            return f"its {suffix} file was deleted or replaced by another process"
        if hold.guarded:
            return None
        now = time.monotonic()
        if hold.locks_visible and now - self._locks_read_at >= locks_read_within:
            locked = self._locks_held_on(hold.shm)
            self._locks_read_at = now
            self._locks_held = locked is None or (self._file_key in locked and hold.shm in locked)
        if not self._locks_held:
            return "this process lost its locks on the file (something opened and closed it outside SQLite)"
        return None

    def _locks_held_on(self, shm: FileKey | None) -> set[FileKey] | None:
        """Which of the file and its -shm this process holds POSIX locks on (None: cannot be known)."""
        name = os.path.basename(os.path.realpath(self.path))  # as /proc names the file SQLite opened
        files = {key: file for key, file in ((self._file_key, name), (shm, f"{name}-shm")) if key is not None}
        return posix_locks_on(files)

    def _replaced_companion(self) -> str | None:
        """The suffix ("-wal", "-shm") of the companion this connection uses when it is not the one on disk any more."""
        hold = self._hold
        if hold is None:
            return None
        for suffix, key in (("-wal", hold.wal), ("-shm", hold.shm)):
            if key is not None and _file_key(Path(f"{self.path}{suffix}")) != key:
                return suffix
        return None

    def reconnect(self, reason: str) -> None:
        """Close this connection (without a checkpoint when its -wal or -shm is orphaned: stale frames must never
        reach the file) and open a new one, which takes the locks again and uses the -wal on disk."""
        old = self.db.conn
        if self._replaced_companion() is not None:
            no_checkpoint_on_close(old)
        old.close()
        self.db.conn = connect_read_write(self.path)
        # A read maps the -shm and takes its locks now: until then the new connection holds nothing, and another
        # process closing the workspace in between would take itself for the last user and delete the -wal.
        self.db.conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        self.take_hold()
        self.reconnections.append(reason)

    def regain_hold(self) -> None:
        """Before a write transaction begins: reconnect when the hold was lost."""
        if (reason := self.hold_lost(locks_read_within=LOCKS_READ_EVERY_S)) is not None:
            self.reconnect(reason)
        self._changes_at_begin = self.conn.total_changes

    def confirm_hold(self) -> None:
        """Just before COMMIT: raise HoldLost when the hold was lost since the transaction began, or, guarded, when
        the transaction wrote but this process no longer holds the -shm's write lock (another writer may be
        appending to the -wal where this commit would go). The caller rolls back."""
        reason = self.hold_lost(locks_read_within=LOCKS_READ_EVERY_S)
        hold = self._hold
        if reason is None and hold is not None and hold.guarded and hold.shm is not None and hold.locks_visible:
            shm_name = os.path.basename(os.path.realpath(self.path)) + "-shm"
            wrote = self.conn.total_changes != self._changes_at_begin
            if wrote and posix_write_lock_at(hold.shm, shm_name, SHM_WRITE_LOCK) is False:
                reason = "this process lost its write lock on the file (something opened and closed it outside SQLite)"
        if reason is not None:
            raise HoldLost(f"{self.path}: {reason}; this change was not saved (give it again)")

    def close(self) -> None:
        if self._closed:  # closed already (a `with` after an explicit close): its -wal may be gone, nothing to do
            return
        self._closed = True
        guard, self._guard, last = self._guard, None, False
        if guard is not None:
            with _open_files_lock:
                guard.users -= 1
                if last := guard.users == 0:
                    del _guards[guard.key]
                    guard.release()
        if self._replaced_companion() is not None:
            no_checkpoint_on_close(self.db.conn)
        self.db.close()
        if last and guard is not None:
            guard.close()
        key, self._file_key = self._file_key, None
        if key is not None:
            with _open_files_lock:
                _open_files[key] -= 1
                if _open_files[key] <= 0:
                    del _open_files[key]

    def __enter__(self) -> Workspace:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def inserted_id(cur: sqlite3.Cursor) -> int:
    """The id of the row the INSERT on `cur` just wrote (sqlite3 types it as optional; after an INSERT it is set)."""
    if cur.lastrowid is None:
        raise RuntimeError("no row was inserted")
    return cur.lastrowid


# ------------------------------------------------------------------------------------------- the one rule


_DAMAGED = {sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB}
_FAULTS = {
    sqlite3.SQLITE_FULL: "the disk is full",
    sqlite3.SQLITE_IOERR: "disk I/O error",
    sqlite3.SQLITE_BUSY: "the workspace is busy (another process held its write lock past the busy timeout)",
    sqlite3.SQLITE_LOCKED: "the workspace is busy (another process held its write lock past the busy timeout)",
    sqlite3.SQLITE_CANTOPEN: "cannot open the file",
    sqlite3.SQLITE_PERM: "permission denied",
    sqlite3.SQLITE_NOMEM: "out of memory",
}


def recover_command(path: Path | str) -> str:
    """The shell command that saves what SQLite can still read from a damaged file."""
    return f"sqlite3 {shlex.quote(str(path))} .recover | sqlite3 recovered.sqlite"


def damaged(path: Path | str, what: str) -> DamagedWorkspace:
    return DamagedWorkspace(
        f"{path}: the workspace file is damaged ({what}); see what is wrong with "
        f"`vlmdesk check --workspace {shlex.quote(str(path))}`, "
        f"or save what can be read with `{recover_command(path)}`"
    )


# SQLITE_ERROR is mostly a wrong statement (a bug), except when the file's schema lost one of its objects, or FTS5
# cannot read its own tables: messages only the file can cause.
_SCHEMA_LOSS = re.compile(r"^no such (?:table|view|trigger|index): (?:main\.)?(\w+)")
_FTS_BROKEN = ("vtable constructor failed", "invalid fts5 file format", "fts5: corrupt", "fts5: missing row")


def _broken_schema(message: str) -> str | None:
    """ "search index" or "schema" when `message` says that part of the file's schema is broken; else None."""
    if any(m in message for m in _FTS_BROKEN):
        return "search index"
    lost = _SCHEMA_LOSS.match(message)
    if not lost or lost[1] not in _schema_object_names():
        return None
    return "search index" if lost[1] in {name for _, name in schema.search_index_objects()} else "schema"


@functools.cache
def _schema_object_names() -> frozenset[str]:
    """Every table, view, index and trigger the migrations create (read from a workspace made in memory)."""
    db = Database(memory=True, execute_plugins=False)
    schema.migrations.apply(db)
    names = frozenset(r[0] for r in db.execute("SELECT name FROM sqlite_master"))
    db.close()
    return names


def database_error(path: Path | str, exc: sqlite3.Error) -> UserError | EnvironmentFault | None:
    """What a SQLite error means for the workspace at `path`, as the one-line error to report; None when it is not
    about the file (a bug, e.g. a wrong statement), which is then reported as an internal error."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is None:
        return None
    primary = code & 0xFF
    if primary in _DAMAGED:
        return damaged(path, str(exc))
    if primary == sqlite3.SQLITE_ERROR and (broken := _broken_schema(str(exc))):
        if broken == "search index":
            return DamagedWorkspace(
                f"{path}: the workspace's search index is broken ({exc}); rebuild it with "
                f"`vlmdesk check --repair --workspace {shlex.quote(str(path))}`"
            )
        return damaged(path, str(exc))
    if primary == sqlite3.SQLITE_READONLY:
        return ReadOnlyWorkspace(f"{path}: workspace is read-only")
    if primary in (sqlite3.SQLITE_IOERR, sqlite3.SQLITE_FULL) and (full := _full_disk(path)) is not None:
        # A full disk often reaches SQLite as an I/O error (no room for the -shm or a page of the -wal): say why.
        return EnvironmentFault(f"{path}: the disk is full{full} ({exc})")
    if primary in _FAULTS:
        return EnvironmentFault(f"{path}: {_FAULTS[primary]} ({exc})")
    return None


_NEARLY_FULL_BYTES = 1 << 20  # less room than this beside a workspace that failed to write: the disk is full


def _full_disk(path: Path | str) -> str | None:
    """'' when the disk holding the workspace is (nearly) full, " (the temporary folder DIR)" when the one holding
    SQLite's temporary files is, None when both have room (or cannot be asked)."""
    temporary = Path(os.environ.get("SQLITE_TMPDIR") or tempfile.gettempdir())  # where SQLite puts temporary files
    for folder, shown in ((Path(path).parent, ""), (temporary, " (the temporary folder {})")):
        try:
            free = shutil.disk_usage(folder).free  # statvfs's f_bavail * f_frsize on POSIX; Windows has no statvfs
        except OSError:
            continue
        if free < _NEARLY_FULL_BYTES:
            return shown.format(folder)
    return None


def _raise_for(path: Path, exc: sqlite3.DatabaseError) -> NoReturn:
    """Re-raise a SQLite error met while opening as what it means for the file (unchanged when it is a bug)."""
    err = database_error(path, exc)
    if err is None:
        raise exc
    raise err from None


# ------------------------------------------------------------------------------------- what the file is


@dataclass(frozen=True)
class FileIdentity:
    """What a workspace file is, read without writing to it."""

    blank: bool  # no schema at all (an empty file or an empty SQLite database): it may become a workspace
    version: int  # schema version (PRAGMA user_version)
    damage: str | None  # why a file that is a workspace cannot be read whole (truncated, its migrations unreadable)


def _read_header(path: Path) -> tuple[bytes, int]:
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        return f.read(HEADER_BYTES), size


def _has_wal(path: Path) -> bool:
    wal = Path(f"{path}-wal")
    return wal.is_file() and wal.stat().st_size > 0


def _uri(path: Path, *, immutable: bool) -> str:
    # as_uri percent-encodes '?', '#' and '%' in names; immutable opens create no -wal/-shm and take no lock.
    return path.resolve().as_uri() + ("?mode=ro&immutable=1" if immutable else "?mode=ro")


def read_only_connection(path: Path, *, allow_immutable: bool) -> sqlite3.Connection:
    """A connection that cannot write, and creates no -wal/-shm where none exists: immutable (no lock) when there
    is no -wal file, or, with `allow_immutable` (files nobody can write, probing a file we may still refuse), when
    the -wal holds nothing. Otherwise plain `mode=ro`, which sees what writers add through the WAL."""
    immutable = not Path(f"{path}-wal").exists() or (allow_immutable and not _has_wal(path))
    conn = sqlite3.connect(_uri(path, immutable=immutable), uri=True, timeout=BUSY_TIMEOUT_MS / 1000)
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    return conn


# What every workspace holds: a file with these tables whose migration record cannot be read is damaged, not foreign.
_CORE_TABLES = frozenset({"_sqlite_migrations", "benchmarks", "items", "images"})


def _judge_schema(path: Path, conn: sqlite3.Connection, *, marked: bool) -> FileIdentity:
    """Read the schema through `conn`: blank, a workspace (its version), a damaged one, or foreign (SchemaError).
    `marked`: the header carries the vlmdesk application id."""
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if not conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]:
        return FileIdentity(blank=True, version=version, damage=None)
    if (
        "_sqlite_migrations" in tables
        and conn.execute(
            "SELECT 1 FROM _sqlite_migrations WHERE migration_set = ? LIMIT 1", (schema.migrations.name,)
        ).fetchone()
        is not None
    ):
        return FileIdentity(blank=False, version=version, damage=None)
    if marked or _CORE_TABLES <= tables:
        # Ours by its header or its tables, yet the record of its migrations reads as empty: a damaged page.
        return FileIdentity(blank=False, version=version, damage="its record of migrations cannot be read")
    shown = ", ".join(sorted(tables)[:8]) + (", …" if len(tables) > 8 else "")
    raise SchemaError(f"{path}: a SQLite file, but not a vlmdesk workspace (tables: {shown or 'none'})")


def identify(path: Path) -> FileIdentity:
    """Tell whether `path` is a vlmdesk workspace without changing a byte of it (nor adding -wal/-shm files).
    Raises SchemaError for a file that is not one (not SQLite, another application's database), DamagedWorkspace
    for one SQLite cannot read at all; a workspace it can read only in part is returned with its `damage`."""
    if not path.is_file():
        raise SchemaError(f"{path}: not a regular file")
    if in_use(path) and (companion := next((c for c in COMPANIONS if str(path).endswith(c)), None)):
        raise SchemaError(f"{path}: the {companion} file of a workspace open here, not a workspace")
    if in_use(path):
        # Open here already, hence identified before; reading its header raw would drop our locks (see _open_files).
        with closing(read_only_connection(path, allow_immutable=False)) as conn:
            return _judge_schema(path, conn, marked=True)
    head, size = _read_header(path)
    if not head and not _has_wal(path):
        return FileIdentity(blank=True, version=0, damage=None)
    if not head:  # everything is still in the -wal
        return _read_identity(path)
    if len(head) < HEADER_BYTES or not head.startswith(SQLITE_MAGIC):
        if SQLITE_MAGIC.startswith(head[:16]):  # the magic cut short: a SQLite file truncated inside its header
            raise damaged(path, f"truncated to {size} bytes")
        raise SchemaError(f"{path}: not a SQLite workspace (the file is not a SQLite database)")
    page_size = int.from_bytes(head[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    if page_size < 512 or page_size & (page_size - 1):
        raise damaged(path, f"its header names an impossible page size {page_size}")
    app_id = int.from_bytes(head[68:72], "big")
    if app_id not in (0, APPLICATION_ID):
        raise SchemaError(
            f"{path}: a SQLite file of another application (application_id {app_id:#010x}), not a vlmdesk workspace"
        )
    pages = int.from_bytes(head[28:32], "big")
    # The page count is trusted only when the header says it is current; a -wal file may still hold what the main
    # file lacks (a checkpoint interrupted half-way), so truncation is judged only without one.
    if pages and head[24:28] == head[92:96] and size < pages * page_size and not _has_wal(path):
        return FileIdentity(
            blank=False,
            version=int.from_bytes(head[60:64], "big", signed=True),
            damage=f"truncated: {size:,} bytes where its header says {pages * page_size:,}",
        )
    version = int.from_bytes(head[60:64], "big", signed=True)
    if app_id == APPLICATION_ID:
        return FileIdentity(blank=False, version=version, damage=None)
    # No identity yet: a workspace from before migration 0008, an empty database, or a foreign one. Only the schema
    # can tell, read through a connection that cannot write.
    try:
        return _read_identity(path)
    except sqlite3.DatabaseError as exc:
        _raise_for(path, exc)


def _read_identity(path: Path) -> FileIdentity:
    if _has_wal(path) and not Path(f"{path}-shm").exists():
        # Reading a -wal needs a -shm, which SQLite would create beside the file. The main file alone first (immutable
        # ignores the -wal): it often tells already. Else, a copy of both in a private folder tells.
        with closing(sqlite3.connect(_uri(path, immutable=True), uri=True)) as conn:
            alone = _judge_schema(path, conn, marked=False)
        if not alone.blank:
            return alone
        return _identity_of_copy(path)
    with closing(read_only_connection(path, allow_immutable=True)) as conn:
        return _judge_schema(path, conn, marked=False)


MAX_PROBE_COPY_BYTES = 256 * 2**20


def _identity_of_copy(path: Path) -> FileIdentity:
    wal = Path(f"{path}-wal")
    if path.stat().st_size + wal.stat().st_size > MAX_PROBE_COPY_BYTES:
        raise SchemaError(
            f"{path}: its -wal file holds its schema but no -shm file is beside it; open it once with "
            "sqlite3 (which writes it back into the file) before using it here"
        )
    with tempfile.TemporaryDirectory(prefix="vlmdesk-probe-") as tmp:
        copy = Path(tmp) / "probe.sqlite"
        shutil.copyfile(path, copy)
        shutil.copyfile(wal, f"{copy}-wal")
        with closing(read_only_connection(copy, allow_immutable=False)) as conn:
            ident = _judge_schema(
                path, conn, marked=conn.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
            )
    return ident


def location_writable(path: Path) -> bool:
    """Whether SQLite could write here: the file, and its folder (for the -wal and -shm files) unless both exist."""
    if not os.access(path, os.W_OK):
        return False
    companions = all(Path(f"{path}{s}").exists() for s in ("-wal", "-shm"))
    return companions or os.access(path.parent, os.W_OK)


# ---------------------------------------------------------------------------------------------- opening


def open_workspace(
    path: str | os.PathLike[str] | None = None,
    *,
    create: bool = True,
    upgrade: bool = True,
    read_only: bool = False,
    probe: bool = False,
) -> Workspace:
    """Open (and create or upgrade) a workspace.

    A file that cannot be written (or `read_only=True`) opens read-only: reads work, writes raise. Raises
    SchemaError for foreign, non-SQLite or newer files, for a read-only file that needs an upgrade and for a
    missing one without `create`, DamagedWorkspace for a truncated or unreadable one, EnvironmentFault for a disk
    that fails. With `probe`, the edges of every table and index are read before anything else (see `probe`), so
    a damaged page there is found before anything is shown from the file or written to it.
    """
    path = Path(path) if path is not None else default_workspace_path()
    if not path.exists():
        if not create or read_only:
            raise SchemaError(f"{path}: no such workspace")
        _make_folder(path.parent)
        return _open_new(path)
    try:
        ident = identify(path)
    except OSError as exc:
        raise EnvironmentFault(f"{path}: cannot read the file ({exc.strerror or exc})") from None
    if ident.damage:
        raise damaged(path, ident.damage)
    _refuse_newer(path, ident.version)
    writable = location_writable(path)
    if read_only or not writable:
        return _open_read_only(path, ident, explicit=read_only, writable=writable, probe_first=probe)
    return _open_read_write(path, ident, upgrade=upgrade, probe_first=probe)


def _make_folder(folder: Path) -> None:
    existing = next(p for p in (folder, *folder.parents) if p.exists() or p.is_symlink())
    if not existing.is_dir():  # a path under a file (ws.png/ws.sqlite): the user's mistake, not the disk's
        raise SchemaError(f"{folder}: cannot create the folder: {existing} is not a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise EnvironmentFault(f"{folder}: cannot create the folder ({exc.strerror or exc})") from None


def probe(ws: Workspace) -> None:
    """Read the first and the last entry of every table and index, and the search index: the b-tree roots and
    their edges, which the app's views read first, in milliseconds whatever the file's size. A damaged page there
    raises DamagedWorkspace naming the way out. Pages in between are not read (`vlmdesk check` reads them all)."""
    try:
        objects = ws.conn.execute(
            "SELECT type, name, tbl_name FROM sqlite_master WHERE type IN ('table', 'index') "
            "AND rootpage > 0 ORDER BY rootpage"
        ).fetchall()
        for kind, name, table in objects:
            if kind == "table":
                for order in ("", " DESC"):
                    _probe_read(ws, f'SELECT * FROM "{name}" ORDER BY rowid{order} LIMIT 1')
                continue
            columns = [r[2] for r in ws.conn.execute(f'PRAGMA index_info("{name}")')]
            if columns and columns[0] is not None:  # not an index over an expression
                for order in ("", " DESC"):
                    _probe_read(
                        ws,
                        f'SELECT "{columns[0]}" FROM "{table}" INDEXED BY "{name}" '
                        f'ORDER BY "{columns[0]}"{order} LIMIT 1',
                    )
        if ws.conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'item_search'").fetchone():
            ws.conn.execute("SELECT rowid FROM item_search WHERE item_search MATCH 'a' LIMIT 1").fetchall()
    except sqlite3.DatabaseError as exc:
        _raise_for(ws.path, exc)


def _probe_read(ws: Workspace, sql: str) -> None:
    try:
        ws.conn.execute(sql).fetchall()
    except sqlite3.OperationalError as exc:
        # A query the planner refuses ("no query solution": a partial index; a table without rowid) reads nothing.
        if (getattr(exc, "sqlite_errorcode", 0) & 0xFF) != sqlite3.SQLITE_ERROR or _broken_schema(str(exc)):
            raise


def _refuse_newer(path: Path, version: int) -> None:
    known = schema.latest_version()
    if version > known:
        raise SchemaError(
            f"{path}: workspace schema version {version} is newer than this vlmdesk understands "
            f"({known}); upgrade vlmdesk"
        )


def _open_new(path: Path) -> Workspace:
    try:
        return _open_read_write(path, None, upgrade=True)
    except BaseException:
        # A workspace that could not even be set up (disk full...) leaves no empty file behind.
        for suffix in ("", "-wal", "-shm", "-journal"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        raise


def _open_read_only(
    path: Path, ident: FileIdentity, *, explicit: bool, writable: bool, probe_first: bool = False
) -> Workspace:
    known = schema.latest_version()
    if ident.blank or ident.version < known:
        why = "it was opened read-only" if explicit else "the file is read-only"
        raise SchemaError(f"{path}: workspace schema version {ident.version} needs upgrading to {known}, but {why}")
    # Where someone may write (a writable file opened --read-only) and a -wal exists, the connection shares the
    # file with writers through WAL; else it is immutable: nothing is created beside the file.
    conn = None
    try:
        conn = read_only_connection(path, allow_immutable=not writable)
        conn.execute("PRAGMA foreign_keys = ON")
        _refuse_newer(path, conn.execute("PRAGMA user_version").fetchone()[0])
        marked = conn.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
        if damage := _judge_schema(path, conn, marked=marked).damage:
            raise damaged(path, damage)
        ws = Workspace(path, Database(conn, execute_plugins=False), read_only=True)
        if probe_first:
            probe(ws)
    except BaseException as exc:
        if conn is not None:
            conn.close()
        if isinstance(exc, sqlite3.DatabaseError):
            _raise_for(path, exc)
        raise
    return ws


def _open_read_write(path: Path, ident: FileIdentity | None, *, upgrade: bool, probe_first: bool = False) -> Workspace:
    if ident is not None and not upgrade and ident.version < schema.latest_version():
        raise SchemaError(
            f"{path}: workspace schema version {ident.version} needs upgrading to {schema.latest_version()}"
        )
    conn = None
    try:
        conn = connect_read_write(path)
        ws = Workspace(path, WorkspaceDatabase(conn, execute_plugins=False))
        _check_and_migrate(ws, upgrade=upgrade, probe_first=probe_first)
        ws.take_hold()
    except BaseException as exc:
        if conn is not None:
            conn.close()
        if isinstance(exc, sqlite3.DatabaseError):
            _raise_for(path, exc)
        raise
    return ws


def connect_read_write(path: Path) -> sqlite3.Connection:
    """A read-write connection in WAL mode with the workspace's pragmas (foreign keys, busy timeout)."""
    conn = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_MS / 1000)
    try:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA foreign_keys = ON")
        mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if mode.lower() != "wal":
            raise EnvironmentFault(f"{path}: could not switch to WAL journal mode (got {mode})")
        # NORMAL is durable in WAL mode up to the last checkpointed commit and survives process kills.
        conn.execute("PRAGMA synchronous = NORMAL")
    except BaseException:
        conn.close()
        raise
    return conn


_SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE = getattr(sqlite3, "SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE", 1006)  # sqlite3.h


def no_checkpoint_on_close(conn: sqlite3.Connection) -> bool:
    """Make closing `conn` skip SQLite's checkpoint-and-delete of the -wal (SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE):
    for a connection whose -wal another process already deleted, whose close could otherwise copy stale frames
    into the file and delete a -wal that is not its own. True when it took effect.

    Python 3.12 has `Connection.setconfig`; on 3.11 the sqlite3 handle is read from the connection object (the first
    field after the object header) and used only when SQLite itself names this connection's file through it."""
    setconfig = getattr(conn, "setconfig", None)
    if setconfig is not None:
        setconfig(_SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, True)
        return True
    try:
        import _sqlite3
        import ctypes

        lib = ctypes.CDLL(_sqlite3.__file__)
        handle = ctypes.c_void_p.from_address(id(conn) + 2 * ctypes.sizeof(ctypes.c_ssize_t)).value
        lib.sqlite3_db_filename.restype = ctypes.c_char_p
        lib.sqlite3_db_filename.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
        expected = conn.execute("PRAGMA database_list").fetchone()[2]
        if not handle or lib.sqlite3_db_filename(handle, b"main") != os.fsencode(expected):
            return False
        lib.sqlite3_db_config.restype = ctypes.c_int
        lib.sqlite3_db_config.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_void_p]
        return bool(lib.sqlite3_db_config(handle, _SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, None) == 0)
    except (ImportError, OSError, AttributeError, ValueError):
        return False


def _check_and_migrate(ws: Workspace, *, upgrade: bool, probe_first: bool) -> None:
    # identify() already judged the header and schema; this second look sees pages a -wal file held.
    marked = ws.conn.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
    ident = _judge_schema(ws.path, ws.conn, marked=marked)
    if ident.damage:
        raise damaged(ws.path, ident.damage)
    known = schema.latest_version()
    version = ws.schema_version()
    _refuse_newer(ws.path, version)
    if probe_first:  # before a migration writes into a damaged file
        probe(ws)
    if version < known:
        if not upgrade:
            raise SchemaError(f"{ws.path}: workspace schema version {version} needs upgrading to {known}")
        migrate(ws)


def migrate(ws: Workspace) -> int:
    """Apply the migrations not applied yet (each in its own transaction); mirror their count in user_version."""
    schema.migrations.apply(ws.db)
    applied = len(schema.migrations.applied(ws.db))
    ws.db.execute(f"PRAGMA user_version = {applied}")
    ws.conn.commit()
    return applied


# Tables whose new rows the app shows. Rows of all of them are appended (human records and passes are never edited);
# the last rowid of each is one read of its b-tree's last entry. Deletions cascade from benchmarks, items and runs,
# whose counts (kept by triggers, migration 0015) or rows the marks name too.
_MARKED = (
    "benchmarks",
    "items",
    "reviews",
    "labels",
    "adjudications",
    "adjudication_sets",
    "qc_decisions",
    "qc_stage_runs",
    "arena_pairs",
    "arena_votes",
    "open_verdicts",
    "runs",
    "predictions",
    "scorings",
    "judgements",
    "open_judgements",
    "guidelines",
    "saved_filters",
    "models",
    "pair_judgements",
    "team_plans",
)
_COUNTED = ("benchmarks", "runs", "models", "saved_filters", "adjudication_sets")  # small tables rows leave


def change_marks(ws: Workspace) -> dict[str, tuple[int, ...]]:
    """Per table, marks that change when another connection's commit added or removed rows there: what
    `PRAGMA data_version` (something changed) cannot say, each a read of a b-tree's edge or a kept count."""
    marks: dict[str, tuple[int, ...]] = {}
    for table in _MARKED:
        (last,) = ws.conn.execute(f"SELECT coalesce(max(rowid), 0) FROM {table}").fetchone()
        marks[table] = (last,)
    for table in _COUNTED:
        (n,) = ws.conn.execute(f"SELECT count(*) FROM {table}").fetchone()
        marks[table] += (n,)
    (items,) = ws.conn.execute("SELECT coalesce(sum(items), 0) FROM benchmark_counts").fetchone()
    marks["items"] += (items,)
    return marks
