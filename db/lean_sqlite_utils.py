"""sqlite-utils, imported for the whole db package (db/__init__.py imports this module first) without numpy and
pandas. sqlite-utils imports them, when installed, only to map their scalar types to column types when it creates a
table from Python values, which vlmdesk never asks (every table is made by SQL: db/schema.py); numpy alone is half
the start of a command that reads a few rows (issue 34). Where they are loaded already (a test, a bench), they stay."""

import importlib
import sys


def _import_without(module: str, *packages: str) -> None:
    """Import `module` while imports of `packages` not yet loaded fail as if they were not installed (a None in
    sys.modules), then let them load again."""
    blocked = [name for name in packages if name not in sys.modules]
    for name in blocked:
        sys.modules[name] = None  # type: ignore[assignment]
    try:
        importlib.import_module(module)
    finally:
        for name in blocked:
            if name in sys.modules and sys.modules[name] is None:
                del sys.modules[name]


_import_without("sqlite_utils", "numpy", "pandas")
