"""GUI latency at 10k / 100k / 1M items in one run (issue 27): time to the first item after opening, "next" and a
verdict to the new item fully shown (image painted), and Browse's filter "not reviewed by me", each workspace holding
10,000 standing verdicts of three annotators (the window's annotator among them). Prints figures; asserts nothing.

With runs (issue 34, `--runs`): the window's first paint on workspaces holding R finished CircularEval runs of P passes
each (every item of a P/4-item benchmark asked in its 4 rotations), beside the demo's (one baseline run) in the same
process, with ratios; then the Runs tab: shown ("computing…") and its figures drawn. Run workspaces are built by
INSERT … SELECT over a recursive CTE, one transaction per run (10 × 1M passes: minutes), and reused from --keep-dir.

The first window of the process is opened once before measuring (imports are not the benchmark's size), and a
workspace of an older schema is migrated before its window opens. Run it from an old checkout (copy this file there)
for old and new side by side; an older checkout cannot open a workspace this one migrated, so give it its own
--keep-dir.

Images: distinct JPEGs (160x120 by default, quality 85) made from the demo photos with a per-item crop, tint and
stripe, stored directly in a fresh workspace (the importer is not what is measured). 1M items at 160x120 is ~1 GB.

    .venv/bin/python bench/gui_bench.py                                  # 10k, 100k, 1M
    .venv/bin/python bench/gui_bench.py --sizes 10000,100000 --steps 100 --keep-dir /tmp/gui-bench
    .venv/bin/python bench/gui_bench.py --sizes 1000 --image-size 1920x1440   # where prefetching pays
    .venv/bin/python bench/gui_bench.py --sizes '' --runs 3x100000,10x1000000 --keep-dir /tmp/gui-bench
    .venv/bin/python bench/gui_bench.py --sizes '' --runs 3x10000                # a quick look
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
        add_verdicts(ws, bid, VERDICTS)
    return time.perf_counter() - t


ANNOTATORS = ("bench", "bob", "cy")
VERDICTS = 10_000


def add_verdicts(ws, benchmark_id: int, n: int) -> None:
    """n standing verdicts of three annotators, spread over the benchmark (every k-th item, three per item)."""
    from db.catalog import now_iso

    ids = [r[0] for r in ws.conn.execute("SELECT id FROM items WHERE benchmark_id = ? ORDER BY id", (benchmark_id,))]
    n = min(n, len(ANNOTATORS) * len(ids))
    per_item = -(-n // len(ANNOTATORS))
    stride = max(1, len(ids) // per_item)
    # Mostly agreeing: one item in ten has a dissenting verdict (a conflict for the queues).
    rows = [
        (ids[(k // 3) * stride], ANNOTATORS[k % 3], "ambiguous" if k % 30 == 1 else "ok", now_iso()) for k in range(n)
    ]
    with ws.db.atomic():
        ws.conn.executemany("INSERT INTO reviews (item_id, annotator, verdict, created_at) VALUES (?, ?, ?, ?)", rows)


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


def step_times(
    app, window, *, prefetch: bool, steps: int, think: float, start_row: int, verdict: bool = False
) -> list[float]:
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
        if verdict:
            review.verdict("ok")  # saved, then on to the next item (the default "advance")
        else:
            review.next()
        _wait(app, lambda: review.image.image_key == review.item.image_sha256)
        review.image.viewport().repaint()  # synchronous paint: the new image is on screen
        times.append(time.perf_counter() - t0)
    return times


def summary(times: list[float]) -> tuple[float, float]:
    ordered = sorted(times)
    return statistics.median(ordered) * 1000, ordered[int(0.95 * (len(ordered) - 1))] * 1000


def filter_time(window) -> float:
    """Browse's review filter "not reviewed by me": the listing counted and its first page shown."""
    from db.item_query import ItemFilter

    model = window.ctx.model
    t0 = time.perf_counter()
    model.set_filter(ItemFilter(run_id=model.filter.run_id), review="not_mine")
    window.view("browse").table.viewport().repaint()
    took = time.perf_counter() - t0
    model.set_filter(ItemFilter(run_id=model.filter.run_id))
    return took


def next_unreviewed_times(app, window, steps: int) -> list[float]:
    """ "Next unreviewed" (N) from the first item, over items the window's annotator and two others judged."""
    review = window.view("review")
    review.show_row(0)
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        review.next_unreviewed()
        _wait(app, lambda: review.image.image_key == review.item.image_sha256)
        review.image.viewport().repaint()
        times.append(time.perf_counter() - t0)
        review.verdict("ok")  # judged: the next N walks past it
    return times


def build_demo(path: Path) -> None:
    from db import open_workspace
    from vlmdesk.cli import main as cli_main
    from vlmdesk.demo import ensure_demo

    with open_workspace(path) as ws:
        ensure_demo(ws)
    cli_main(["--workspace", str(path), "run", "--bench", "demo", "--model", "baseline:first"])


def build_runs_workspace(path: Path, count: int, passes: int) -> float:
    """`count` finished CircularEval runs of `passes` passes each over one benchmark of passes / 4 items (four
    options, every item asked in its four rotations, one pass in five wrong), the items showing the demo photos."""
    from PIL import Image

    from db import catalog, open_workspace
    from tests.factories import CATEGORIES
    from vlmdesk.demo import demo_dir

    t = time.perf_counter()
    items = max(1, passes // 4)
    with open_workspace(path) as ws:
        shas = []
        with ws.db.atomic():
            for photo in sorted((demo_dir() / "images").iterdir()):
                data = photo.read_bytes()
                sha = hashlib.sha256(data).hexdigest()
                with Image.open(photo) as img:
                    catalog.put_image(ws, sha256=sha, data=data, mime="image/jpeg", width=img.width, height=img.height)
                shas.append(sha)
            bid = catalog.insert_benchmark(
                ws, name="runs-bench", kind="mcq", format="jsonl", source="generated", source_sha256="runs", meta={}
            )
            ws.conn.execute(
                "WITH RECURSIVE n(k) AS (SELECT 0 UNION ALL SELECT k + 1 FROM n WHERE k + 1 < :items) "
                "INSERT INTO items (benchmark_id, position, source_index, question, hint, options, answer, category, "
                "l2_category, split, language, image_sha256, circular_copies, meta) "
                "SELECT :bid, k, k, 'Question ' || k || ': what does the picture show?', NULL, "
                '\'["a cat", "a dog", "a tree", "a car"]\', char(65 + k % 4), '
                "json_extract(:cats, '$[' || (k % :ncats) || '][0]'), "
                "json_extract(:cats, '$[' || (k % :ncats) || '][1]'), "
                "'dev', 'en', json_extract(:shas, '$[' || (k % :nshas) || ']'), 0, '{}' FROM n",
                {
                    "items": items,
                    "bid": bid,
                    "cats": json.dumps(CATEGORIES),
                    "ncats": len(CATEGORIES),
                    "shas": json.dumps(shas),
                    "nshas": len(shas),
                },
            )
            catalog.finish_benchmark(ws, bid, rows_read=items, rows_folded=0, rows_skipped=0)
        for r in range(count):
            with ws.db.atomic():
                run_id = ws.conn.execute(
                    "INSERT INTO runs (benchmark_id, model_spec, strategy, prompt_template, extractor, config_key, "
                    "status, created_at, updated_at, finished_at) VALUES (?, ?, 'circular', '{}', 'rules', ?, "
                    "'finished', '2026-01-01T00:00:00+00:00', '2026-01-01T01:00:00+00:00', "
                    "'2026-01-01T01:00:00+00:00')",
                    (bid, f"baseline:bench-{r}", f"bench-{r}"),
                ).lastrowid
                # Pass k shows the options rotated by k: the key's displayed letter is (key - k) mod 4.
                ws.conn.execute(
                    "WITH RECURSIVE k(pass) AS (SELECT 0 UNION ALL SELECT pass + 1 FROM k WHERE pass < 3) "
                    "INSERT INTO predictions (run_id, item_id, pass, option_order, prompt, response, answer, choice, "
                    "stage, correct, created_at) "
                    "SELECT :run, i.id, k.pass, json_array(k.pass, (k.pass + 1) % 4, (k.pass + 2) % 4, "
                    "(k.pass + 3) % 4), 'p', 'r', char(65 + (unicode(i.answer) - 65 - k.pass + 4) % 4), "
                    "char(65 + (unicode(i.answer) - 65 - k.pass + 4 + ((i.id * 7 + k.pass + :run) % 5 = 0)) % 4), "
                    "'rules', (i.id * 7 + k.pass + :run) % 5 != 0, '2026-01-01T00:30:00+00:00' "
                    "FROM items i, k WHERE i.benchmark_id = :bid ORDER BY i.id, k.pass",
                    {"run": run_id, "bid": bid},
                )
    return time.perf_counter() - t


class _Painted:
    """Notes when a widget is first painted (an event filter): the window's first paint, a tab's."""

    def __init__(self, widget):
        from PySide6.QtCore import QEvent, QObject

        class Filter(QObject):
            def eventFilter(inner, watched, event):  # noqa: N805 — Qt's signature
                if event.type() == QEvent.Type.Paint and self.at is None:
                    self.at = time.perf_counter()
                return False

        self.at: float | None = None
        self.filter = Filter(widget)
        widget.installEventFilter(self.filter)


def runs_figures(app, path: Path, config: Path, timeout: float) -> dict[str, float]:
    """First paint of the window, then the Runs tab: painted (its figures computing), figures drawn (ms)."""
    from gui.main_window import MainWindow
    from gui.prefs import Preferences, PreferencesFile
    from gui.runs_list import COMPUTING

    prefs = PreferencesFile(config / "preferences.json")
    prefs.save(Preferences(annotator="bench"))
    t0 = time.perf_counter()
    window = MainWindow(path, prefs_file=prefs, settings_path=config / "window.ini")
    window.resize(1280, 800)
    painted = _Painted(window.tabs)
    window.show()
    _wait(app, lambda: painted.at is not None, timeout)
    out = {"first paint": (painted.at - t0) * 1000}
    view = window.view("runs")
    shown = _Painted(view.runs.table.viewport())
    t1 = time.perf_counter()
    window.show_view("runs")
    _wait(app, lambda: shown.at is not None, timeout)
    out["Runs tab painted"] = (shown.at - t1) * 1000
    computing = any(COMPUTING in row for row in view.runs.model.rows)
    try:
        _wait(app, lambda: not view.runs.computing, timeout)
        view.runs.table.viewport().repaint()
        out["Runs figures drawn"] = (time.perf_counter() - t1) * 1000
    except TimeoutError:
        out["Runs figures drawn"] = float("inf")
    out["computing… shown"] = float(computing)
    window.close()
    window.deleteLater()
    app.processEvents()
    return out


def measure_runs(app, folder: Path, config: Path, args) -> None:
    specs = [s for s in args.runs.split(",") if s]
    shapes = [("demo", 0, 0)] + [(s, *(int(v) for v in s.split("x"))) for s in specs]
    paths = {}
    for name, count, passes in shapes:
        path = paths[name] = folder / (f"runs-{name}.sqlite" if count else "demo.sqlite")
        if not path.exists():
            t = time.perf_counter()
            part = path.with_name(path.name + ".part")  # a build cut short is never reused as a whole one
            for stale in part.parent.glob(part.name + "*"):
                stale.unlink()
            if count:
                build_runs_workspace(part, count, passes)
            else:
                build_demo(part)
            part.rename(path)
            print(f"workspace {name}: {path.stat().st_size / 1e6:.0f} MB, built in {time.perf_counter() - t:.1f} s")
    warm, _ = open_window(app, paths["demo"], config / "warm")  # the process's imports: not the runs' size
    warm.close()
    warm.deleteLater()
    app.processEvents()
    results: dict[str, dict[str, float]] = {}
    for name, _, _ in shapes:
        tries = [runs_figures(app, paths[name], config / f"{name}-{k}", args.figures_timeout) for k in range(3)]
        results[name] = {key: statistics.median(t[key] for t in tries) for key in tries[0]}
        print(f"  {name:<14} " + "   ".join(f"{k} {v:,.0f}" for k, v in results[name].items()), flush=True)
    keys = ("first paint", "Runs tab painted", "Runs figures drawn")
    print(f"\n{'runs × passes':<16}" + "".join(f"{k + ' (ms)':>24}" for k in keys) + f"{'first paint / demo':>22}")
    for name, _, _ in shapes:
        cells = "".join(f"{results[name][k]:>24,.0f}" for k in keys)
        ratio = results[name]["first paint"] / results["demo"]["first paint"]
        print(f"{name:<16}{cells}{ratio:>21.2f}x")
    print("target: first paint within 1.5x the demo's at every size (median of 3 windows each, after imports)")


def measure(app, path: Path, config: Path, args) -> dict[str, tuple[float, float]]:
    from db import open_workspace

    open_workspace(path).close()  # a workspace of an older schema is migrated once: not part of "first item"
    window, first = open_window(app, path, config)
    out: dict[str, tuple[float, float]] = {"first item": (first * 1000, first * 1000)}
    start = 10
    for name, prefetch, verdict in (
        ("next", True, False),
        ("next, no prefetch", False, False),
        ("verdict", True, True),
    ):
        conn, vm = window.ctx.ws.conn, [0]

        def count(vm: list[int] = vm) -> int:
            vm[0] += 1
            return 0

        conn.set_progress_handler(count, 100)  # SQLite's work, in hundreds of VM steps: the same on a busy machine
        times = step_times(
            app, window, prefetch=prefetch, steps=args.steps, think=args.think, start_row=start, verdict=verdict
        )
        conn.set_progress_handler(None, 0)
        start += args.steps + 5
        out[name] = summary(times)
        out[f"{name}: SQLite steps"] = (vm[0] * 100 / args.steps, vm[0] * 100 / args.steps)
    out["next unreviewed"] = summary(next_unreviewed_times(app, window, max(5, args.steps // 5)))
    filters = sorted(filter_time(window) for _ in range(3))
    out["filter not mine"] = (filters[1] * 1000, filters[-1] * 1000)
    window.close()
    window.deleteLater()
    app.processEvents()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,100000,1000000", help="item counts, comma-separated")
    parser.add_argument("--steps", type=int, default=150)
    parser.add_argument("--think", type=float, default=0.05, help="seconds between two keypresses (default 0.05)")
    parser.add_argument("--keep-dir", metavar="DIR", help="build (or reuse) the workspaces in DIR")
    parser.add_argument("--image-size", default="160x120", help="WIDTHxHEIGHT of the generated JPEGs")
    parser.add_argument(
        "--runs",
        default="3x100000,10x1000000",
        help="workspaces with runs, RUNSxPASSES comma-separated, measured beside the demo ('' for none)",
    )
    parser.add_argument("--figures-timeout", type=float, default=600, help="seconds to wait for the Runs figures")
    args = parser.parse_args()

    from PySide6 import __version__ as pyside_version

    from gui.app import application

    print(
        f"machine: {platform.platform()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
        f"PySide6 {pyside_version}"
    )
    sizes = [int(v) for v in args.sizes.split(",") if v]
    results: dict[int, dict[str, tuple[float, float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(args.keep_dir) if args.keep_dir else Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        app = application()
        if args.runs:
            measure_runs(app, folder, Path(tmp) / "config-runs", args)
        if not sizes:
            return 0
        warmed = False
        for n in sizes:
            path = folder / f"bench-{n}-{args.image_size}.sqlite"
            if not path.exists():
                size = tuple(int(v) for v in args.image_size.split("x"))
                built = build_workspace(path, n, size)
                print(
                    f"workspace: {n:,} items of {args.image_size}, {VERDICTS:,} verdicts, "
                    f"{path.stat().st_size / 1e6:.0f} MB, built in {built:.1f} s"
                )
            if not warmed:  # the process's first window pays Python's and Qt's imports: not the benchmark's size
                warmed = True
                window, cold = open_window(app, path, Path(tmp) / "config-warm-up")
                window.close()
                window.deleteLater()
                app.processEvents()
                print(f"  first window of the process (imports included): {cold * 1000:.0f} ms")
            results[n] = measure(app, path, Path(tmp) / f"config-{n}", args)
            for name, (med, p95) in results[n].items():
                if "steps" in name:
                    print(f"  {n:>9,} items  {name:<28} {med:10.0f} per keypress (mean)", flush=True)
                else:
                    print(f"  {n:>9,} items  {name:<28} median {med:8.2f} ms   p95 {p95:8.2f} ms", flush=True)
    print(f"\n{'':<28}" + "".join(f"{n:>14,}" for n in sizes) + f"{'ratio last/first':>18}")
    for name in results[sizes[0]]:
        unit = "  " if "steps" in name else "ms"
        cells = "".join(f"{results[n][name][0]:>11.1f} {unit}" for n in sizes)
        ratio = results[sizes[-1]][name][0] / max(results[sizes[0]][name][0], 1e-9)
        print(f"{name:<28}{cells}{ratio:>17.2f}x")
    print(
        "targets: next and verdict median and p95 < 16 ms at every size, ratio <= 1.5; first item < 1000 ms; "
        "filter < 300 ms (figures are medians; p95 above)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
