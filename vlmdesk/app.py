"""`vlmdesk` with no command: the default workspace (with the demo on first start), then the app."""
from __future__ import annotations

from db import catalog


def start(args) -> int:
    from vlmdesk.cli import open_from_args
    from vlmdesk.demo import ensure_demo

    with open_from_args(args) as ws:
        added = ensure_demo(ws)
        if added:
            print(f"created {ws.path} with the demo benchmarks: {', '.join(added)}")
        benches = catalog.list_benchmarks(ws)
        print(f"workspace {ws.path}")
        for b in benches:
            print(f"  {b.name:<24} {b.kind:<6} {b.questions:>6} questions  {b.images:>5} images")
    print("The desktop app is not built yet; use the commands (vlmdesk --help).")
    return 0
