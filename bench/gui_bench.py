"""GUI latency on a 10,000-item benchmark: time to the first item after opening, and "next" to the new item
fully shown (image painted), with and without prefetching. Prints figures; asserts nothing.

Images: 10,000 distinct JPEGs (640x480 by default, quality 85, ~50 KB — MMBench-like photos) made from the demo photos
with a per-item crop, tint and stripe, stored directly in a fresh workspace (the importer is not what is measured).

    .venv/bin/python bench/gui_bench.py                # 10,000 items, 200 steps per way
    .venv/bin/python bench/gui_bench.py --items 2000 --steps 100 --keep /tmp/gui-bench.sqlite
    .venv/bin/python bench/gui_bench.py --items 1000 --image-size 1920x1440   # where prefetching pays
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _make_jpegs(args) -> list[tuple[str, bytes]]:
    start, count, W, H = args
    from PIL import Image, ImageDraw

    from vlmdesk.demo import demo_dir

    bases = [Image.open(p).convert("RGB").resize((W + 64, H + 48)) for p in sorted((demo_dir() / "images").iterdir())]
    out = []
    for n in range(start, start + count):
        base = bases[n % len(bases)]
        dx, dy = (n * 7) % 64, (n * 13) % 48
        img = base.crop((dx, dy, dx + W, dy + H))
        tint = Image.new("RGB", (W, H), ((n * 37) % 255, (n * 91) % 255, (n * 53) % 255))
        img = Image.blend(img, tint, 0.12)
        ImageDraw.Draw(img).rectangle((0, (n * 29) % H, W, (n * 29) % H + 6), fill=(n % 255, 255 - n % 255, 128))
        buf = io.BytesIO()
        img.save(buf, "JPEG", quality=85)
        data = buf.getvalue()
        out.append((hashlib.sha256(data).hexdigest(), data))
    return out


def build_workspace(path: Path, items: int, size: tuple[int, int] = (640, 480)) -> float:
    from db import catalog, open_workspace
    from tests.factories import CATEGORIES

    t = time.perf_counter()
    W, H = size
    chunks = [(s, min(500, items - s), W, H) for s in range(0, items, 500)]
    with open_workspace(path) as ws, ProcessPoolExecutor() as pool:
        with ws.db.atomic():
            bid = catalog.insert_benchmark(
                ws, name="bench10k", kind="mcq", format="jsonl", source="generated", source_sha256="bench", meta={}
            )
            n = 0
            for images in pool.map(_make_jpegs, chunks):
                rows = []
                for sha, data in images:
                    catalog.put_image(ws, sha256=sha, data=data, mime="image/jpeg", width=W, height=H)
                    cat, l2 = CATEGORIES[n % len(CATEGORIES)]
                    options = [f"option {n}-{j}" for j in range(4)]
                    rows.append(
                        (
                            bid,
                            n,
                            n,
                            f"Question {n}: what does the picture show?",
                            "A hint." if n % 3 else None,
                            json.dumps(options),
                            "ABCD"[n % 4],
                            cat,
                            l2,
                            "dev",
                            "en",
                            sha,
                            0,
                            "{}",
                        )
                    )
                    n += 1
                catalog.insert_items(ws, rows)
            catalog.finish_benchmark(ws, bid, rows_read=items, rows_folded=0, rows_skipped=0)
    return time.perf_counter() - t


def _wait(app, predicate, timeout=10.0) -> None:
    deadline = time.perf_counter() + timeout
    while not predicate():
        app.processEvents()
        if time.perf_counter() > deadline:
            raise TimeoutError("the view did not show the item in time")


def _idle(app, seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        app.processEvents()
        time.sleep(0.001)


def open_window(app, path: Path, config: Path):
    from gui.main_window import MainWindow
    from gui.prefs import Preferences, PreferencesFile

    prefs = PreferencesFile(config / "preferences.json")
    prefs.save(Preferences(annotator="bench"))
    t0 = time.perf_counter()
    window = MainWindow(path, prefs_file=prefs, settings_path=config / "window.ini")
    window.resize(1280, 800)
    window.show()
    browse = window.view("browse")
    _wait(app, lambda: browse.item is not None and browse.image.image_key == browse.item.image_sha256)
    browse.image.viewport().repaint()
    return window, time.perf_counter() - t0


def step_times(app, window, *, prefetch: bool, steps: int, think: float, start_row: int) -> list[float]:
    review = window.view("review")
    window.show_view("review")
    review.prefetch_enabled = prefetch
    window.ctx.loader.clear()
    review.show_row(start_row)
    _wait(app, lambda: review.image.image_key == review.item.image_sha256)
    times = []
    for _ in range(steps):
        _idle(app, think)  # the annotator reading the item: prefetching happens meanwhile
        t0 = time.perf_counter()
        review.next()
        _wait(app, lambda: review.image.image_key == review.item.image_sha256)
        review.image.viewport().repaint()  # synchronous paint: the new image is on screen
        times.append(time.perf_counter() - t0)
    return times


def summary(times: list[float]) -> tuple[float, float]:
    ordered = sorted(times)
    return statistics.median(ordered) * 1000, ordered[int(0.95 * (len(ordered) - 1))] * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--think", type=float, default=0.15, help="seconds between two 'next' (default 0.15)")
    parser.add_argument("--keep", metavar="FILE", help="build (or reuse) the workspace at FILE")
    parser.add_argument("--image-size", default="640x480", help="WIDTHxHEIGHT of the generated JPEGs")
    args = parser.parse_args()

    from PySide6 import __version__ as pyside_version

    from gui.app import application

    print(
        f"machine: {platform.platform()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
        f"PySide6 {pyside_version}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(args.keep) if args.keep else Path(tmp) / "bench.sqlite"
        if not path.exists():
            size = tuple(int(v) for v in args.image_size.split("x"))
            built = build_workspace(path, args.items, size)
            print(
                f"workspace: {args.items:,} items of {args.image_size}, {path.stat().st_size / 1e6:.0f} MB, "
                f"built in {built:.1f} s"
            )
        app = application()
        window, first = open_window(app, path, Path(tmp) / "config")
        print(f"open → first item shown (browse, image painted): {first * 1000:.0f} ms   (target < 1000 ms)")
        results = {}
        for name, prefetch, think in (
            ("prefetch", True, args.think),
            ("no prefetch", False, args.think),
            ("prefetch, no pause", True, 0.0),
        ):
            times = step_times(
                app, window, prefetch=prefetch, steps=args.steps, think=think, start_row=len(results) * (args.steps + 5)
            )
            results[name] = summary(times)
            med, p95 = results[name]
            print(
                f"next → item shown, {name:<19} median {med:6.2f} ms   p95 {p95:6.2f} ms   "
                f"({args.steps} steps, {think * 1000:.0f} ms between)"
            )
        ratio = results["no prefetch"][0] / results["prefetch"][0]
        print(
            f"no prefetch / prefetch (median): {ratio:.1f}x   target: next median < 50 ms "
            f"({'met' if results['prefetch'][0] < 50 else 'NOT met'})"
        )
        window.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
