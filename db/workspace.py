"""Opening a workspace file: identity checks before any write, read-only opening, pragmas, migrations, and the one
rule that turns a SQLite error into a message about the workspace file.

Order matters (docs/adr/0007-opening-workspaces.md): the file's header is read with plain file I/O, then, only if
the header cannot tell, the schema is read through a read-only connection; the file is switched to WAL and migrated
only once it is known to be a vlmdesk workspace this version understands. A file we refuse keeps every byte.
"""
from __future__ import annotations

import os
import shlex
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from sqlite_utils import Database

from db import schema
from db.errors import EnvironmentFault, UserError

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


class Workspace:
    """One open workspace file. `db` is the sqlite-utils Database; writes that belong together use `db.atomic()`.
    `read_only` workspaces refuse every write (SQLite raises; `database_error` words it)."""

    def __init__(self, path: Path, db: Database, *, read_only: bool = False):
        self.path = path
        self.db = db
        self.read_only = read_only

    @property
    def conn(self) -> sqlite3.Connection:
        return self.db.conn

    def schema_version(self) -> int:
        return self.db.execute("PRAGMA user_version").fetchone()[0]

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> "Workspace":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


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
        f"or save what can be read with `{recover_command(path)}`")


def database_error(path: Path | str, exc: sqlite3.Error) -> UserError | EnvironmentFault | None:
    """What a SQLite error means for the workspace at `path`, as the one-line error to report; None when it is not
    about the file (a bug, e.g. a wrong statement), which is then reported as an internal error."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is None:
        return None
    primary = code & 0xFF
    if primary in _DAMAGED:
        return damaged(path, str(exc))
    if primary == sqlite3.SQLITE_READONLY:
        return ReadOnlyWorkspace(f"{path}: workspace is read-only")
    if primary in _FAULTS:
        return EnvironmentFault(f"{path}: {_FAULTS[primary]} ({exc})")
    return None


def _raise_for(path: Path, exc: sqlite3.DatabaseError):
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
    truncated: str | None  # why the file is shorter than its header says, when it is


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
    """A connection that cannot write. With `allow_immutable` (for files nobody can write, and for probing a file
    we may still refuse) and no -wal file holding newer pages, it is immutable: no lock, no -wal/-shm created."""
    immutable = allow_immutable and not _has_wal(path)
    conn = sqlite3.connect(_uri(path, immutable=immutable), uri=True, timeout=BUSY_TIMEOUT_MS / 1000)
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    return conn


def identify(path: Path) -> FileIdentity:
    """Tell whether `path` is a vlmdesk workspace without changing a byte of it. Raises SchemaError for a file that
    is not one (not SQLite, another application's database), DamagedWorkspace for an unreadable one."""
    if not path.is_file():
        raise SchemaError(f"{path}: not a regular file")
    head, size = _read_header(path)
    if not head:
        return FileIdentity(blank=True, version=0, truncated=None)
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
        raise SchemaError(f"{path}: a SQLite file of another application (application_id {app_id:#010x}), "
                          "not a vlmdesk workspace")
    pages = int.from_bytes(head[28:32], "big")
    truncated = None
    # The page count is trusted only when the header says it is current; a -wal file may still hold what the main
    # file lacks (a checkpoint interrupted half-way), so truncation is judged only without one.
    if pages and head[24:28] == head[92:96] and size < pages * page_size and not _has_wal(path):
        truncated = f"truncated: {size:,} bytes where its header says {pages * page_size:,}"
    version = int.from_bytes(head[60:64], "big", signed=True)
    if app_id == APPLICATION_ID:
        return FileIdentity(blank=False, version=version, truncated=truncated)
    # No identity yet: a workspace from before migration 0008, an empty database, or a foreign one. Only the schema
    # can tell, read through a connection that cannot write.
    try:
        conn = read_only_connection(path, allow_immutable=True)
        try:
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            ours = "_sqlite_migrations" in tables and conn.execute(
                "SELECT 1 FROM _sqlite_migrations WHERE migration_set = ? LIMIT 1",
                (schema.migrations.name,)).fetchone() is not None
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            blank = not conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        _raise_for(path, exc)
    if not blank and not ours:
        shown = ", ".join(sorted(tables)[:8]) + (", …" if len(tables) > 8 else "")
        raise SchemaError(f"{path}: a SQLite file, but not a vlmdesk workspace (tables: {shown or 'none'})")
    return FileIdentity(blank=blank, version=version, truncated=truncated)


def location_writable(path: Path) -> bool:
    """Whether SQLite could write here: the file, and its folder (for the -wal and -shm files) unless both exist."""
    if not os.access(path, os.W_OK):
        return False
    companions = all(Path(f"{path}{s}").exists() for s in ("-wal", "-shm"))
    return companions or os.access(path.parent, os.W_OK)


# ---------------------------------------------------------------------------------------------- opening


def open_workspace(path: str | os.PathLike | None = None, *, create: bool = True, upgrade: bool = True,
                   read_only: bool = False) -> Workspace:
    """Open (and create or upgrade) a workspace.

    A file that cannot be written (or `read_only=True`) opens read-only: reads work, writes raise. Raises
    SchemaError for foreign, non-SQLite or newer files and for a read-only file that needs an upgrade,
    DamagedWorkspace for a truncated or unreadable one, EnvironmentFault for a disk that fails.
    """
    path = Path(path) if path is not None else default_workspace_path()
    if not path.exists():
        if not create or read_only:
            raise SchemaError(f"{path}: no such workspace")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise EnvironmentFault(f"{path.parent}: cannot create the folder ({exc.strerror or exc})") from None
        return _open_new(path)
    try:
        ident = identify(path)
    except OSError as exc:
        raise EnvironmentFault(f"{path}: cannot read the file ({exc.strerror or exc})") from None
    if ident.truncated:
        raise damaged(path, ident.truncated)
    _refuse_newer(path, ident.version)
    writable = location_writable(path)
    if read_only or not writable:
        return _open_read_only(path, ident, explicit=read_only, writable=writable)
    return _open_read_write(path, ident, upgrade=upgrade)


def _refuse_newer(path: Path, version: int) -> None:
    known = schema.latest_version()
    if version > known:
        raise SchemaError(f"{path}: workspace schema version {version} is newer than this vlmdesk understands "
                          f"({known}); upgrade vlmdesk")


def _open_new(path: Path) -> Workspace:
    try:
        return _open_read_write(path, None, upgrade=True)
    except BaseException:
        # A workspace that could not even be set up (disk full...) leaves no empty file behind.
        for suffix in ("", "-wal", "-shm", "-journal"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        raise


def _open_read_only(path: Path, ident: FileIdentity, *, explicit: bool, writable: bool) -> Workspace:
    known = schema.latest_version()
    if ident.blank or ident.version < known:
        why = "it was opened read-only" if explicit else "the file is read-only"
        raise SchemaError(f"{path}: workspace schema version {ident.version} needs upgrading to {known}, but {why}")
    # Immutable only where nobody can write (so no writer can change the file under us): a read-only file or
    # folder. A read-only opening of a writable file shares it with writers through WAL.
    conn = None
    try:
        conn = read_only_connection(path, allow_immutable=not writable)
        conn.execute("PRAGMA foreign_keys = ON")
        _refuse_newer(path, conn.execute("PRAGMA user_version").fetchone()[0])
    except BaseException as exc:
        if conn is not None:
            conn.close()
        if isinstance(exc, sqlite3.DatabaseError):
            _raise_for(path, exc)
        raise
    return Workspace(path, Database(conn), read_only=True)


def _open_read_write(path: Path, ident: FileIdentity | None, *, upgrade: bool) -> Workspace:
    if ident is not None and not upgrade and ident.version < schema.latest_version():
        raise SchemaError(f"{path}: workspace schema version {ident.version} needs upgrading to "
                          f"{schema.latest_version()}")
    conn = None
    try:
        conn = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_MS / 1000)
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA foreign_keys = ON")
        mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if mode.lower() != "wal":
            raise EnvironmentFault(f"{path}: could not switch to WAL journal mode (got {mode})")
        # NORMAL is durable in WAL mode up to the last checkpointed commit and survives process kills.
        conn.execute("PRAGMA synchronous = NORMAL")
        ws = Workspace(path, Database(conn))
        _check_and_migrate(ws, upgrade=upgrade)
    except BaseException as exc:
        if conn is not None:
            conn.close()
        if isinstance(exc, sqlite3.DatabaseError):
            _raise_for(path, exc)
        raise
    return ws


def _check_and_migrate(ws: Workspace, *, upgrade: bool) -> None:
    # identify() already judged the header and schema; this second look sees pages a -wal file held.
    tables = set(ws.db.table_names())
    known = schema.latest_version()
    version = ws.schema_version()
    ours = "_sqlite_migrations" in tables and ws.conn.execute(
        "SELECT 1 FROM _sqlite_migrations WHERE migration_set = ? LIMIT 1", (schema.migrations.name,)).fetchone()
    if tables and not ours:
        raise SchemaError(f"{ws.path}: a SQLite file, but not a vlmdesk workspace (tables: {', '.join(sorted(tables))})")
    _refuse_newer(ws.path, version)
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
