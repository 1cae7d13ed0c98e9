"""Opening a workspace file: pragmas, migrations, the schema-version check."""
from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from sqlite_utils import Database

from db import schema

ENV_VAR = "VLMDESK_WORKSPACE"
BUSY_TIMEOUT_MS = 10_000


class SchemaError(RuntimeError):
    """The file is not a vlmdesk workspace this version can open."""


def default_workspace_path() -> Path:
    """`$VLMDESK_WORKSPACE`, else `workspace.sqlite` in the user data directory."""
    env = os.environ.get(ENV_VAR)
    if env:
        return Path(env).expanduser()
    from platformdirs import user_data_path

    return user_data_path("vlmdesk", appauthor=False) / "workspace.sqlite"


class Workspace:
    """One open workspace file. `db` is the sqlite-utils Database; writes that belong together use `db.atomic()`."""

    def __init__(self, path: Path, db: Database):
        self.path = path
        self.db = db

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


def open_workspace(path: str | os.PathLike | None = None, *, create: bool = True, upgrade: bool = True) -> Workspace:
    """Open (and create or upgrade) a workspace. Raises SchemaError for foreign or newer files."""
    path = Path(path) if path is not None else default_workspace_path()
    if not path.exists():
        if not create:
            raise SchemaError(f"{path}: no such workspace")
        path.parent.mkdir(parents=True, exist_ok=True)
    try:
        conn = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_MS / 1000)
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA foreign_keys = ON")
        mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
    except sqlite3.DatabaseError as exc:
        raise SchemaError(f"{path}: not a SQLite workspace ({exc})") from None
    if mode.lower() != "wal":
        raise SchemaError(f"{path}: could not switch to WAL journal mode (got {mode})")
    # NORMAL is durable in WAL mode up to the last checkpointed commit and survives process kills.
    conn.execute("PRAGMA synchronous = NORMAL")
    db = Database(conn)
    ws = Workspace(path, db)
    _check_and_migrate(ws, upgrade=upgrade)
    return ws


def _check_and_migrate(ws: Workspace, *, upgrade: bool) -> None:
    tables = set(ws.db.table_names())
    known = schema.latest_version()
    version = ws.schema_version()
    ours = "_sqlite_migrations" in tables and ws.conn.execute(
        "SELECT 1 FROM _sqlite_migrations WHERE migration_set = ? LIMIT 1", (schema.migrations.name,)).fetchone()
    if tables and not ours:
        raise SchemaError(f"{ws.path}: a SQLite file, but not a vlmdesk workspace (tables: {', '.join(sorted(tables))})")
    if version > known:
        raise SchemaError(
            f"{ws.path}: workspace schema version {version} is newer than this vlmdesk understands ({known}); "
            "upgrade vlmdesk"
        )
    if version < known:
        if not upgrade:
            raise SchemaError(f"{ws.path}: workspace schema version {version} needs upgrading to {known}")
        schema.migrations.apply(ws.db)
        applied = len(schema.migrations.applied(ws.db))
        ws.db.execute(f"PRAGMA user_version = {applied}")
        ws.conn.commit()
