"""`vlmdesk gui`: open the desktop app, or render one of its views offscreen to a PNG (gui/screenshot.py) and exit."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from gui.prefs import SCALE_RANGE
from gui.screenshot import TABS, VIEWS
from vlmdesk.args import float_in, int_in, record_id


def register_gui(add) -> None:
    p = add(
        description="Open the desktop app on a workspace. With --screenshot, render the window offscreen with "
        "the workspace's content, save it as PNG and exit (for documentation and checks); "
        "--visible-text also lists every text visible in the window, one per line (the check hook "
        f"of blind mode). Views: {', '.join(VIEWS)}.",
        examples="""
                vlmdesk gui
                vlmdesk gui --workspace team.sqlite
                vlmdesk gui --screenshot docs/screenshots/review.png --view review --bench demo
                vlmdesk gui --screenshot queue.png --view queue --queue adjudication --size 1440x900
                vlmdesk gui --screenshot results.png --view results --run 1 --run 2 --chart drop
                vlmdesk gui --screenshot b.png --view review --item 5 --tab history --blind --visible-text b.txt""",
    )
    p.add_argument("--screenshot", metavar="FILE", help="save a PNG of the window and exit")
    p.add_argument("--view", default="browse", help=f"view to show: {', '.join(VIEWS)} (default browse)")
    p.add_argument("--bench", help="benchmark to show (default: the first)")
    p.add_argument(
        "--queue",
        choices=("qc", "adjudication", "conflicts", "open"),
        help="queue page for --view queue (default: the first with work left)",
    )
    p.add_argument("--item", help="item index to show (default: the first; review: the first with predictions)")
    p.add_argument("--tab", choices=TABS, help="--view browse/review: the lower tab to show (default predictions)")
    p.add_argument("--size", default="1280x800", help="window size for --screenshot, WIDTHxHEIGHT (default 1280x800)")
    p.add_argument(
        "--run",
        type=record_id,
        action="append",
        metavar="RUN_ID",
        help="--view results: runs to show (repeatable; default: the benchmark's latest, up to 3)",
    )
    p.add_argument(
        "--chart",
        choices=("l2", "category", "drop", "pope", "open", "radar", "reliability", "robustness"),
        help="--view results: the chart (l2, category, drop, pope, open: open runs by metric); --view desiderata: "
        "the figure (radar, reliability, robustness)",
    )
    p.add_argument(
        "--launch",
        metavar="SPEC",
        default="baseline:random",
        help="--view launcher: the model of the run started for the picture (default baseline:random, "
        "which may finish before the picture: a slow model shows it running)",
    )
    p.add_argument(
        "--annotator",
        metavar="NAME",
        default="annotator",
        help="--screenshot: the session's annotator for the picture (default 'annotator')",
    )
    p.add_argument("--blind", action="store_true", help="--screenshot: blind mode on for the picture")
    p.add_argument("--theme", choices=("light", "dark"), default="light", help="--screenshot: the theme of the picture")
    p.add_argument(
        "--text-scale",
        type=float_in(*SCALE_RANGE, "a text scale"),
        default=1.0,
        metavar="SCALE",
        help="--screenshot: the text size of the picture, as View › Larger text sets it (1.25: two steps larger; "
        f"{SCALE_RANGE[0]}–{SCALE_RANGE[1]}, default 1.0)",
    )
    p.add_argument(
        "--image",
        type=int_in(1, 64, "an image's number"),
        default=1,
        metavar="N",
        help="--screenshot --view review/browse: which of the item's images is shown (1: the first)",
    )
    p.add_argument(
        "--visible-text",
        metavar="TXT",
        help="--screenshot: also write every text visible in the window to TXT, one per line",
    )
    p.set_defaults(handler=cmd_gui)


def _size(text: str) -> tuple[int, int]:
    from vlmdesk.cli import UsageError

    m = re.fullmatch(r"(\d{3,5})x(\d{3,5})", text.strip())
    if not m:
        raise UsageError(f"--size: expected WIDTHxHEIGHT like 1280x800, got {text!r}")
    return int(m.group(1)), int(m.group(2))


def cmd_gui(args) -> int:
    from db.workspace import default_workspace_path
    from gui.screenshot import ScreenshotError, Shot
    from vlmdesk.cli import UsageError

    path = Path(getattr(args, "workspace", None) or default_workspace_path())
    if args.view not in VIEWS:
        raise UsageError(f"--view: unknown view {args.view!r} (one of {', '.join(VIEWS)})")
    if not args.screenshot:
        if args.visible_text or args.blind:
            raise UsageError("--visible-text and --blind go with --screenshot")
        return start_gui(
            path, first_start=getattr(args, "workspace", None) is None, read_only=getattr(args, "read_only", False)
        )
    annotator = args.annotator.strip()
    if not annotator or len(annotator) > 100 or any(not ch.isprintable() for ch in annotator):
        raise UsageError(f"--annotator: a printable name of 1 to 100 characters, got {args.annotator!r}")
    shot = Shot(
        view=args.view,
        bench=args.bench,
        item=args.item,
        queue=args.queue,
        tab=args.tab,
        runs=tuple(args.run or ()),
        chart=args.chart,
        launch=args.launch,
        size=_size(args.size),
        annotator=annotator,
        blind=args.blind,
        theme=args.theme,
        font_scale=args.text_scale,
        image=args.image,
    )
    for option, value in (("--screenshot", args.screenshot), ("--visible-text", args.visible_text)):
        if value and Path(value).is_dir():
            raise UsageError(f"{option}: {value} is a directory; give a file name")
    if not path.exists():
        raise UsageError(f"no workspace at {path}")
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from gui.screenshot import take

    out = Path(args.screenshot)
    try:
        texts = take(path, out, shot, visible_text=Path(args.visible_text) if args.visible_text else None)
    except ScreenshotError as exc:
        raise UsageError(str(exc)) from None
    print(
        f"saved {out} ({shot.size[0]}x{shot.size[1]}, view {shot.view})"
        + (f"; {len(texts)} visible texts in {args.visible_text}" if args.visible_text else "")
    )
    return 0


def start_gui(path: Path, *, first_start: bool, read_only: bool = False) -> int:
    from db import catalog
    from vlmdesk.cli import UsageError

    if read_only:
        raise UsageError("--read-only applies to commands; the app opens a file it cannot write read-only by itself")
    if (
        sys.platform.startswith("linux")
        and not os.environ.get("QT_QPA_PLATFORM")
        and not os.environ.get("DISPLAY")
        and not os.environ.get("WAYLAND_DISPLAY")
    ):
        raise UsageError(
            "no display to open the app on (no $DISPLAY or $WAYLAND_DISPLAY); use the commands "
            "(vlmdesk --help) or vlmdesk gui --screenshot FILE"
        )
    from db.workspace import open_workspace
    from vlmdesk.demo import ensure_demo

    # Opened (and read) here first: a file that cannot be a workspace is one line and exit 2, before any window.
    with open_workspace(path, probe=True) as ws:  # probe: a damaged page the views read is found here too
        catalog.list_benchmarks(ws)
        added = ensure_demo(ws) if first_start and not ws.read_only else []
    if added:
        print(f"created {path} with the demo benchmarks: {', '.join(added)}", file=sys.stderr)
    from gui.app import run

    return run(path)
