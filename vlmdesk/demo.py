"""The bundled demo benchmark and the first-start workspace."""
from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from db import catalog
from db.workspace import Workspace
from evaluator.importers import import_benchmark


def demo_dir() -> Path:
    return Path(str(files("assets") / "demo"))


def ensure_demo(ws: Workspace) -> list[str]:
    """Import the demo benchmarks into an empty workspace; returns the names imported."""
    if catalog.list_benchmarks(ws):
        return []
    d = demo_dir()
    mcq = import_benchmark(ws, d / "demo_mcq.jsonl", fmt="jsonl", name="demo")
    pope = import_benchmark(ws, d / "demo_pope.jsonl", fmt="pope", name="demo-pope", images_dir=d / "images",
                            setting="random")
    return [mcq.name, pope.name]
