"""`vlmdesk gui`: open the desktop app, or render one of its views offscreen to a PNG and exit."""
from __future__ import annotations

import os
import re
import sqlite3
import sys
import tempfile
from pathlib import Path
from vlmdesk.args import record_id

from db import catalog
from db.workspace import default_workspace_path


def register(add) -> None:
    p = add("gui", help="open the desktop app (or save a screenshot of a view)",
            description="Open the desktop app on a workspace. With --screenshot, render the window offscreen with "
                        "the workspace's content, save it as PNG and exit (for documentation and checks). "
                        f"Views: {', '.join(SCREENSHOT_VIEWS)}.",
            examples="""
                vlmdesk gui
                vlmdesk gui --workspace team.sqlite
                vlmdesk gui --screenshot docs/screenshots/review.png --view review --bench demo
                vlmdesk gui --screenshot queue.png --view queue --queue adjudication --size 1440x900
                vlmdesk gui --screenshot dashboard.png --view dashboard --run 1 --run 2 --chart drop""")
    p.add_argument("--screenshot", metavar="FILE", help="save a PNG of the window and exit")
    p.add_argument("--view", default="browse", help=f"view to show: {', '.join(SCREENSHOT_VIEWS)} (default browse)")
    p.add_argument("--bench", help="benchmark to show (default: the first)")
    p.add_argument("--queue", choices=("qc", "adjudication", "conflicts"),
                   help="queue page for --view queue (default: the first with work left)")
    p.add_argument("--item", help="item index to show (default: the first; review: the first with predictions)")
    p.add_argument("--size", default="1280x800", help="window size for --screenshot, WIDTHxHEIGHT (default 1280x800)")
    p.add_argument("--run", type=record_id, action="append", metavar="RUN_ID",
                   help="--view dashboard: runs to show (repeatable; default: the benchmark's latest, up to 3)")
    p.add_argument("--chart", choices=("l2", "category", "drop", "pope"), help="--view dashboard: the chart")
    p.add_argument("--launch", metavar="SPEC", default="baseline:random?delay_ms=120",
                   help="--view launcher: the model of the run started for the picture (default a slowed baseline)")
    p.set_defaults(handler=cmd_gui)


def _prepare_browse(window, args) -> None:
    window.show_view("browse")
    if args.item:
        _select_item(window, args.item)


def _prepare_review(window, args) -> None:
    review = window.view("review")
    window.show_view("review")
    if args.item:
        _select_item(window, args.item)
    else:
        model = window.ctx.model
        # The most telling first picture: an item that some run got wrong, so predictions and the key both show.
        row = model.find_row(0, 1, lambda r: r.run_result == "wrong") if model.filter.run_id else None
        review.show_row(row or 0)


def _prepare_queue(window, args) -> None:
    queues = window.view("queues")
    window.show_view("queues")
    queues.refresh()
    name = args.queue or next((n for n, _, page in queues.pages
                               if (page.remaining() if n != "qc" else len(page.remaining()))), "qc")
    queues.select(name)


def _prepare_launcher(window, args) -> None:
    """A run in progress (a real `vlmdesk run` child process, --new so the picture repeats) and one queued."""
    import time

    from PySide6.QtWidgets import QApplication

    from gui.run_queue import RunRequest, run_args

    runs_view = window.view("runs")
    window.show_view("runs")
    bench = window.ctx.benchmark
    runs_view.form.set_choice(bench=bench.name, model=args.launch)
    job = runs_view.queue.submit(RunRequest((*run_args(bench=bench.name, model=args.launch), "--new"),
                                            f"{args.launch} on {bench.name}"))
    others = [b for b in catalog.list_benchmarks(window.ws) if b.id != bench.id]
    if others:
        runs_view.queue.submit(RunRequest(run_args(bench=others[0].name, model="baseline:first"),
                                          f"baseline:first on {others[0].name}"))
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and job.state in ("queued", "running"):
        QApplication.processEvents()
        total = job.progress.get("items_total") or 0
        if total and job.progress.get("items_done", 0) >= 0.4 * total and "calls_per_s" in job.progress:
            break
        time.sleep(0.02)
    runs_view.jobs.setCurrentRow(0)


def _prepare_dashboard(window, args) -> None:
    from evaluator.plots import bar_target
    from vlmdesk.cli import UsageError

    dash = window.view("results")
    window.show_view("results")
    run_ids = args.run or sorted(r.id for r in list(window.ctx.runs.values())[:3])  # newest first
    if not run_ids:
        raise UsageError("--view dashboard: the benchmark has no runs (vlmdesk run …)")
    dash.show_runs(run_ids, chart=args.chart)
    # The items behind a bar, as after a click: the first ability's CircularEval bar of the first run.
    bars = [bar_target(b) for b in dash.chart.bars()]
    target = next((t for t in bars if t.get("group") and t.get("strategy") == "circular"), None) or \
        next(iter(bars), None)
    if target:
        dash.show_items_of(target)


def _prepare_alignment(window, args) -> None:
    window.show_view("alignment")
    window.view("alignment").refresh()


SCREENSHOT_VIEWS = {"browse": _prepare_browse, "review": _prepare_review, "queue": _prepare_queue,
                    "launcher": _prepare_launcher, "dashboard": _prepare_dashboard, "alignment": _prepare_alignment}
"""--view name -> function(window, args) that puts the window in that state. Later views register here."""


def _select_item(window, index: str) -> None:
    from evaluator.importers.common import index_for_lookup
    from vlmdesk.cli import UsageError

    bench = window.ctx.benchmark
    item = catalog.item_by_index(window.ws, bench.id, index_for_lookup(index))
    row = window.ctx.model.find_row(0, 1, lambda r: item is not None and r.id == item.id)
    if row is None:
        raise UsageError(f"benchmark {bench.name!r} has no item with index {index!r}")
    window.view("browse").table.selectRow(row)
    window.view("review").show_row(row)


def _size(text: str) -> tuple[int, int]:
    from vlmdesk.cli import UsageError

    m = re.fullmatch(r"(\d{3,5})x(\d{3,5})", text.strip())
    if not m:
        raise UsageError(f"--size: expected WIDTHxHEIGHT like 1280x800, got {text!r}")
    return int(m.group(1)), int(m.group(2))


def cmd_gui(args) -> int:
    from vlmdesk.cli import UsageError

    path = Path(getattr(args, "workspace", None) or default_workspace_path())
    if args.view not in SCREENSHOT_VIEWS:
        raise UsageError(f"--view: unknown view {args.view!r} (one of {', '.join(SCREENSHOT_VIEWS)})")
    if not args.screenshot:
        return start_gui(path, first_start=getattr(args, "workspace", None) is None,
                         read_only=getattr(args, "read_only", False))
    size = _size(args.size)
    if not path.exists():
        raise UsageError(f"no workspace at {path}")
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    return screenshot(path, Path(args.screenshot), view=args.view, size=size, args=args)


def start_gui(path: Path, *, first_start: bool, read_only: bool = False) -> int:
    from vlmdesk.cli import UsageError

    if read_only:
        raise UsageError("--read-only applies to commands; the app opens a file it cannot write read-only by itself")
    if (sys.platform.startswith("linux") and not os.environ.get("QT_QPA_PLATFORM")
            and not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY")):
        raise UsageError("no display to open the app on (no $DISPLAY or $WAYLAND_DISPLAY); use the commands "
                         "(vlmdesk --help) or vlmdesk gui --screenshot FILE")
    from db.workspace import open_workspace
    from vlmdesk.demo import ensure_demo

    # Opened (and read) here first: a file that cannot be a workspace is one line and exit 2, before any window.
    with open_workspace(path) as ws:
        catalog.list_benchmarks(ws)
        added = ensure_demo(ws) if first_start and not ws.read_only else []
    if added:
        print(f"created {path} with the demo benchmarks: {', '.join(added)}", file=sys.stderr)
    from gui.app import run

    return run(path)


def screenshot(path: Path, out: Path, *, view: str, size: tuple[int, int], args) -> int:
    from PySide6.QtCore import QCoreApplication

    from gui.app import application
    from gui.main_window import MainWindow
    from gui.prefs import Preferences, PreferencesFile
    from vlmdesk.cli import UsageError

    app = application()
    with tempfile.TemporaryDirectory() as config:  # a picture never reads or changes the user's settings
        prefs = PreferencesFile(Path(config) / "preferences.json")
        prefs.save(Preferences(annotator="annotator"))
        shown = path
        if view == "launcher":  # its picture starts real runs: on a copy, so the workspace keeps no trace of them
            shown = Path(config) / path.name
            with sqlite3.connect(path) as source, sqlite3.connect(shown) as copy:
                source.backup(copy)
        window = MainWindow(shown, prefs_file=prefs, settings_path=Path(config) / "window.ini")
        window.workspace_label.setText(f"Workspace: {path}")
        try:
            if window.ctx is None:
                raise UsageError(window.message_bar.label.text())
            if args.bench:
                try:
                    window.select_benchmark(args.bench)
                except ValueError as exc:
                    raise UsageError(str(exc)) from None
            window.resize(*size)
            window.show()
            SCREENSHOT_VIEWS[view](window, args)
            _settle(app, window)
            out.parent.mkdir(parents=True, exist_ok=True)
            if not window.grab().save(str(out), "PNG"):
                raise UsageError(f"could not write {out}")
        finally:
            window.close()
            QCoreApplication.processEvents()
    print(f"saved {out} ({size[0]}x{size[1]}, view {view})")
    return 0


def _settle(app, window) -> None:
    """Let decoding workers finish and their images reach the views before the picture is taken."""
    from PySide6.QtCore import QCoreApplication, QEvent

    for _ in range(5):
        app.processEvents()
        window.ctx.loader.pool.waitForDone(5000)
        app.processEvents()
        # Widgets replaced with deleteLater() go only when the event loop runs; there is none here.
        QCoreApplication.sendPostedEvents(None, QEvent.DeferredDelete)
