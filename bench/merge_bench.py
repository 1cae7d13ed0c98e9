"""Merging verdicts (`vlmdesk reviews import`): seconds and SQLite steps per record at two sizes, and their ratios.

Builds a benchmark of --items text items, writes a file of --lines verdicts by --annotators people on random items in
time order (a quarter of the time an undo of what the person's verdict on that item is), and merges it into a fresh
workspace; then the same with a file ten times smaller. Per record, the steps (SQLite virtual-machine instructions,
counted by a progress handler every 1,000) and the seconds should not grow with the file: a ratio near 1 is linear, a
ratio near 10 quadratic (before migration 0022 every verdict re-read every review of its item). With --cli the large
file is also merged by the real command in a child process, timed from outside. Figures are printed, never asserted.

    python bench/merge_bench.py                              # 20,000 items, 200,000 lines
    python bench/merge_bench.py --items 2000 --lines 20000 --cli
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def make_workspace(path: Path, items: int) -> None:
    from db import catalog, open_workspace

    with open_workspace(path) as ws, ws.db.atomic():
        bid = catalog.insert_benchmark(ws, name="b", kind="mcq", format="jsonl", source="s", source_sha256="b", meta={})
        catalog.insert_items(
            ws,
            [
                (bid, k, k, f"Q{k}?", None, json.dumps(["a", "b", "c"]), "A", "c", "l", "s", "en", None, 0, "{}")
                for k in range(items)
            ],
        )
        catalog.finish_benchmark(ws, bid, rows_read=items, rows_folded=0, rows_skipped=0)


def write_log(path: Path, lines: int, items: int, annotators: int, seed: int) -> None:
    rnd = random.Random(seed)
    who = [f"annotator{k}" for k in range(annotators)]
    at = datetime(2026, 1, 1, tzinfo=UTC)
    stands: dict[tuple[int, str], str] = {}
    with open(path, "w", encoding="utf-8") as f:
        for _ in range(lines):
            at += timedelta(milliseconds=1)
            item, person = rnd.randrange(items), rnd.choice(who)
            record = {
                "id": str(uuid.uuid4()),
                "benchmark": "b",
                "index": item,
                "annotator": person,
                "at": at.isoformat(),
            }
            if (item, person) in stands and rnd.random() < 0.25:
                record |= {"verdict": "undo", "withdraws": stands.pop((item, person))}
            else:
                record["verdict"] = rnd.choice(("ok", "ambiguous", "skip", "bad_image"))
                stands[(item, person)] = record["id"]
            f.write(json.dumps(record) + "\n")


def merge_in_process(ws_path: Path, log: Path) -> tuple[float, int]:
    from annotation import sync
    from db import open_workspace

    steps = [0]

    def step() -> int:
        steps[0] += 1
        return 0

    with open_workspace(ws_path) as ws:
        ws.conn.set_progress_handler(step, 1000)
        start = time.perf_counter()
        sync.import_records(ws, log, "reviews")
        return time.perf_counter() - start, steps[0] * 1000


def merge_by_command(ws_path: Path, log: Path) -> float:
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "vlmdesk", "--workspace", str(ws_path), "reviews", "import", str(log), "--json"],
        check=True,
        capture_output=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=20_000)
    parser.add_argument("--lines", type=int, default=200_000)
    parser.add_argument("--annotators", type=int, default=5)
    parser.add_argument("--cli", action="store_true", help="also time the real command on the large file")
    args = parser.parse_args()
    print(
        f"{platform.node()} {platform.processor() or platform.machine()} {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}, SQLite {sqlite3.sqlite_version}, code {ROOT}"
    )
    print(f"{args.items} items, {args.annotators} annotators")
    figures = {}
    with tempfile.TemporaryDirectory() as tmp:
        for lines in (args.lines // 10, args.lines):
            ws_path, log = Path(tmp, f"ws{lines}.sqlite"), Path(tmp, f"log{lines}.jsonl")
            make_workspace(ws_path, args.items)
            write_log(log, lines, args.items, args.annotators, seed=lines)
            seconds, steps = merge_in_process(ws_path, log)
            figures[lines] = (seconds / lines, steps / lines)
            print(
                f"{lines:>9} lines: {seconds:8.2f} s  {seconds / lines * 1e6:8.1f} µs/record  "
                f"{steps / lines:8.0f} steps/record"
            )
        small, large = figures[args.lines // 10], figures[args.lines]
        print(f"ratio large/small per record: seconds {large[0] / small[0]:.2f}, steps {large[1] / small[1]:.2f}")
        if args.cli:
            ws_path, log = Path(tmp, "cli.sqlite"), Path(tmp, f"log{args.lines}.jsonl")
            make_workspace(ws_path, args.items)
            print(f"vlmdesk reviews import of {args.lines} lines: {merge_by_command(ws_path, log):.2f} s")


if __name__ == "__main__":
    main()
