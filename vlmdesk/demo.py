"""The bundled demo benchmark and the first-start workspace."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from db import catalog
from db.workspace import Workspace
from evaluator.formats.importers import import_benchmark


def demo_dir() -> Path:
    return Path(str(files("assets") / "demo"))


def import_demo(ws: Workspace) -> list:
    """Import the demo benchmarks (a no-op for each one already there); returns their import reports."""
    d = demo_dir()
    return [
        import_benchmark(ws, d / "demo_mcq.jsonl", fmt="jsonl", name="demo"),
        import_benchmark(
            ws, d / "demo_pope.jsonl", fmt="pope", name="demo-pope", images_dir=d / "images", setting="random"
        ),
        import_benchmark(ws, d / "demo_open.jsonl", fmt="jsonl", name="demo-open"),
    ]


def ensure_demo(ws: Workspace) -> list[str]:
    """Import the demo benchmarks into an empty workspace (the first start); returns the names imported."""
    if catalog.list_benchmarks(ws):
        return []
    return [report.name for report in import_demo(ws)]
