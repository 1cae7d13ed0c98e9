"""The workspace: one SQLite file, schema through migrations, typed reads and writes (no Qt)."""

from db.workspace import SchemaError, Workspace, default_workspace_path, open_workspace

__all__ = ["SchemaError", "Workspace", "default_workspace_path", "open_workspace"]
