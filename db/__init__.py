"""The workspace: one SQLite file, schema through migrations, typed reads and writes (no Qt)."""

from db import lean_sqlite_utils  # noqa: F401 (first: sqlite-utils without numpy, before any module imports it)
from db.workspace import SchemaError, Workspace, default_workspace_path, open_workspace

__all__ = ["SchemaError", "Workspace", "default_workspace_path", "open_workspace"]
