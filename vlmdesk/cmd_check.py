"""`vlmdesk check`: is the workspace file healthy, and `--repair` what can be rebuilt."""

from __future__ import annotations

import json


def register_check(add) -> None:
    p = add(
        description="Check the workspace: SQLite integrity, references between tables, the search index, "
        "images no item uses and the schema version. Without --repair nothing is written. "
        "With --repair, rebuild what can be rebuilt (search index, schema upgrade, orphan images "
        "deleted) and say what was done; damaged pages are never written to — the way to save "
        "what can be read is printed instead. Run --repair while no import is running: an import "
        "stores its images before its items. Exit status 0 when healthy, 1 when problems remain.",
        examples="""
                vlmdesk check
                vlmdesk check --repair
                vlmdesk --workspace team.sqlite check --json""",
    )
    p.add_argument("--repair", action="store_true", help="repair what can be rebuilt, then check again")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(handler=cmd_check)


def cmd_check(args) -> int:
    from db.check import check_workspace
    from vlmdesk.cli import UsageError, workspace_path

    path = workspace_path(args)
    if getattr(args, "read_only", False) and args.repair:
        raise UsageError("--repair writes to the workspace; it cannot be combined with --read-only")
    if not path.exists():
        raise UsageError(f"{path}: no such workspace")
    report = check_workspace(path, repair=args.repair)
    if args.json:
        print(json.dumps(report.as_json(), ensure_ascii=False, indent=2))
    else:
        print(f"workspace {path}{' (read-only)' if report.read_only else ''}")
        for result in report.results:
            print(f"  {'ok' if result.ok else 'PROBLEM':8} {result.title}")
            for text in result.repaired:
                print(f"           repaired: {text}")
            for line in (line for text in result.problems for line in text.splitlines()):
                print(f"           {line}")
        for note in report.notes:
            print(f"  note: {note}")
        problems = sum(not r.ok for r in report.results)
        print(
            "healthy"
            if report.healthy
            else f"{problems} check(s) found problems"
            + ("" if args.repair else " (vlmdesk check --repair rebuilds what can be rebuilt)")
        )
    return 0 if report.healthy else 1
