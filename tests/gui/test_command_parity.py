"""Every command of the CLI is reachable from the app (gui/commands.COMMANDS says where, or why not), and the
Workspace menu's commands run the real `vlmdesk` command in a child process: started from the app, finished, their
result in SQLite (or in the file written)."""

import argparse
import json

from db import catalog, open_workspace
from vlmdesk.cli import build_parser
from vlmdesk.cli import main as cli_main

WAIT = 120_000


def cli_commands() -> set[str]:
    """Every leaf command of the parser: "import", "qc text-only", …"""
    parser = build_parser()
    top = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    names = set()
    for name, sub in top.choices.items():
        inner = [a for a in sub._actions if isinstance(a, argparse._SubParsersAction)]
        names |= {f"{name} {leaf}" for leaf in inner[0].choices} if inner else {name}
        if inner and not inner[0].required:  # `benchmarks` lists; `benchmarks tag` is an action beside it
            names.add(name)
    return names


def test_every_cli_command_has_an_app_action_or_a_reason(qtbot, demo_ws, make_window):
    from gui.commands import COMMANDS

    missing = cli_commands() - set(COMMANDS)
    assert not missing, f"commands without an app action or a stated reason (gui/commands.COMMANDS): {missing}"
    assert not set(COMMANDS) - cli_commands(), "COMMANDS names a command the CLI no longer has"
    window = make_window(demo_ws)
    for command, where in COMMANDS.items():
        kind, _, what = where.partition(":")
        assert kind in ("menu", "tab", "none"), command
        if kind == "menu":
            assert window.menu_action(what) is not None, f"{command}: no menu action {what!r}"
        elif kind == "tab":
            assert what in window.views, f"{command}: no tab {what!r}"
        else:
            assert len(what) > 20, f"{command}: say why it has no app action"


def _finish(qtbot, process):
    assert process is not None
    qtbot.waitUntil(lambda: process.finished, timeout=WAIT)
    assert process.exit_code == 0, process.stderr


def test_qc_stages_and_curated_export_from_the_workspace_menu(qtbot, demo_ws, make_window, tmp_path):
    window = make_window(demo_ws)
    commands = window.commands
    asked = []

    def answer(name, fields):
        asked.append((name, [f.name for f in fields]))
        if name == "qc text-only":
            return {"bench": "demo", "models": ["baseline:first", "baseline:random"], "extra": "", "limit": 0}
        if name == "qc consensus":
            runs_field = next(f for f in fields if f.name == "runs")
            return {"bench": "demo", "runs": list(dict(runs_field.offered("demo")).values())}
        return {"bench": "demo", "out": str(tmp_path / "curated.jsonl"), "with_reviews": False}

    commands.answer = answer
    window.menu_action("Run the text-only QC stage…").trigger()
    _finish(qtbot, commands.running[-1] if commands.running else None)
    with open_workspace(demo_ws) as ws:
        text_runs = ws.conn.execute(
            "SELECT count(*) FROM runs WHERE json_extract(config, '$.text_only') = 1"
        ).fetchone()[0]
        stages = {row[0] for row in ws.conn.execute("SELECT DISTINCT stage FROM qc_stage_runs")}
    assert text_runs == 2 and "text-only" in stages
    assert "Text-only QC stage" in window.message_bar.label.text()

    # The consensus dialog offers the finished runs that saw the images only (not the two text-only ones).
    window.menu_action("Compute the consensus QC stage…").trigger()
    process = commands.running[-1]
    _finish(qtbot, process)
    assert process.args[-2:] == ["--run", "1"]
    with open_workspace(demo_ws) as ws:
        assert ws.conn.execute("SELECT count(*) FROM qc_stage_runs WHERE stage = 'consensus'").fetchone()[0] == 1

    window.menu_action("Export the curated benchmark…").trigger()
    _finish(qtbot, commands.running[-1])
    lines = (tmp_path / "curated.jsonl").read_text().splitlines()
    assert len(lines) == 30 and json.loads(lines[0])["question"]
    assert (tmp_path / "curated.jsonl.changes.jsonl").exists()


def test_adjudication_set_rescore_and_check_from_the_workspace_menu(qtbot, demo_ws, make_window):
    assert cli_main(["--workspace", str(demo_ws), "run", "--bench", "demo", "--model", "baseline:random"]) == 0
    window = make_window(demo_ws)
    commands = window.commands
    commands.answer = lambda name, fields: {
        "align sample": {"runs": ["1", "2"], "extractor": "rules", "size": 5, "seed": 1, "name": "study"},
        "rescore": {"run": 2, "extractor": "rules"},
        "check": {"repair": False},
    }[name]
    window.menu_action("Build an adjudication set…").trigger()
    _finish(qtbot, commands.running[-1])
    with open_workspace(demo_ws) as ws:
        sets = [row[0] for row in ws.conn.execute("SELECT name FROM adjudication_sets")]
    assert sets == ["study"]
    window.menu_action("Re-score a run…").trigger()
    _finish(qtbot, commands.running[-1])
    with open_workspace(demo_ws) as ws:
        assert ws.conn.execute("SELECT count(*) FROM scorings WHERE run_id = 2").fetchone()[0] == 1
    window.menu_action("Check and repair the workspace…").trigger()
    process = commands.running[-1]
    _finish(qtbot, process)
    assert "healthy" in process.stdout.lower() or "ok" in process.stdout.lower()


def test_a_failing_command_says_its_error_line_and_a_cancel_stops_it(qtbot, demo_ws, make_window, tmp_path):
    window = make_window(demo_ws)
    process = window.commands.qc_export("no-such-bench", str(tmp_path / "x.tsv"))
    qtbot.waitUntil(lambda: process.finished, timeout=WAIT)
    assert process.exit_code == 2
    assert window.message_bar.label.text().startswith("error:") and "no-such-bench" in window.message_bar.label.text()
    assert not (tmp_path / "x.tsv").exists()


def test_a_pope_set_is_built_and_imported_from_the_workspace_menu(qtbot, demo_ws, make_window, tmp_path):
    import shutil
    from pathlib import Path

    import assets

    images = tmp_path / "imgs"
    images.mkdir()
    source = sorted((Path(assets.__file__).parent / "demo" / "images").glob("*.jpg"))[:4]
    objects = ["dog", "cat", "car", "tree", "cup", "boat"]
    with (tmp_path / "objects.jsonl").open("w") as f:
        for n, jpg in enumerate(source):
            shutil.copy(jpg, images / jpg.name)
            f.write(json.dumps({"image": jpg.name, "objects": objects[n : n + 2]}) + "\n")
    window = make_window(demo_ws)
    commands = window.commands
    commands.answer = lambda name, fields: {
        "annotations": str(tmp_path / "objects.jsonl"),
        "images": str(images),
        "setting": "popular",
        "images_count": 4,
        "per_image": 1,
        "seed": 3,
        "out": str(tmp_path / "mine.jsonl"),
        "name": "my-pope",
    }
    window.menu_action("Build a POPE set…").trigger()
    _finish(qtbot, commands.running[-1])
    with open_workspace(demo_ws) as ws:
        kind, count = ws.conn.execute(
            "SELECT b.kind, count(i.id) FROM benchmarks b JOIN items i ON i.benchmark_id = b.id WHERE b.name = ?",
            ("my-pope",),
        ).fetchone()
        benchmarks = len(catalog.list_benchmarks(ws))
    assert kind == "yesno" and count == 8
    assert window.docks["benchmarks"].widget().count() == benchmarks  # the window refreshed its list


def test_arena_pairs_are_drawn_from_the_workspace_menu(qtbot, demo_ws, make_window):
    for model in ("baseline:random", "baseline:first"):
        assert cli_main(["--workspace", str(demo_ws), "run", "--bench", "demo-open", "--model", model]) == 0
    with open_workspace(demo_ws) as ws:
        open_runs = [r for (r,) in ws.conn.execute("SELECT id FROM runs WHERE strategy = 'open' ORDER BY id")]
        items = ws.conn.execute(
            "SELECT count(*) FROM items JOIN benchmarks b ON b.id = benchmark_id WHERE b.name = 'demo-open'"
        ).fetchone()[0]
    assert len(open_runs) == 2
    window = make_window(demo_ws)
    commands = window.commands
    commands.answer = lambda name, fields: {
        "arena pairs": {"bench": "demo-open", "runs": [str(r) for r in open_runs], "per_item": 1, "seed": 3}
    }[name]
    window.menu_action("Draw arena pairs…").trigger()
    _finish(qtbot, commands.running[-1])
    with open_workspace(demo_ws) as ws:
        assert ws.conn.execute("SELECT count(*) FROM arena_pairs").fetchone()[0] == items
