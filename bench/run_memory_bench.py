"""The run engine's memory against the run's size (issue 34): `vlmdesk run --model baseline:random` on a circular
four-option benchmark (MMBench-style, one small shared image) and on a POPE one (yes/no, one pass), at 20k and 100k
items, each run in its own `vlmdesk` process. Prints each process's peak RSS (os.wait4's ru_maxrss) and wall time,
and the largest size's ratios to the smallest's (target: peak RSS ≤ 1.2×; wall time linear, 5×). Asserts nothing.

`--before PATH` measures another checkout in the same run (e.g. `git worktree add /tmp/mem-before <commit>`): its
`vlmdesk` runs from that folder, so it imports that tree's code; each tree gets its own copy of each workspace.

    .venv/bin/python bench/run_memory_bench.py                                   # 20k and 100k, circular and POPE
    .venv/bin/python bench/run_memory_bench.py --before /tmp/mem-before --kinds circular --sizes 20000,100000
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]

# Run in the measured tree (cwd), so the workspace gets that tree's schema: a tree with fewer migrations would refuse
# a file made by a newer one. Only APIs both trees have: catalog's inserts.
BUILD = """
import json, sys
from db import catalog, open_workspace
from tests.factories import png_bytes
path, kind, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
image = png_bytes(size=(32, 32))
with open_workspace(path) as ws:
    with ws.db.atomic():
        sha = "ab" * 32
        catalog.put_image(ws, sha256=sha, data=image, mime="image/png", width=32, height=32)
        bid = catalog.insert_benchmark(
            ws, name="bench", kind="mcq" if kind == "circular" else "yesno", format="jsonl", source="generated",
            source_sha256=f"{kind}-{n}", meta={},
        )
        cats = ("ocr", "scene", "attribute", "spatial", "celebrity", "count")
        for start in range(0, n, 10000):
            catalog.insert_items(ws, [
                (bid, k, k, f"Question {k}: which of these is shown in the picture?", None,
                 json.dumps([f"option {j} of item {k}" for j in range(4)]) if kind == "circular" else "[]",
                 "ABCD"[k % 4] if kind == "circular" else ("yes", "no")[k % 2],
                 cats[k % 6], f"l2-{k % 4}", "dev", "en", sha, 0, "{}")
                for k in range(start, min(n, start + 10000))
            ])
        catalog.finish_benchmark(ws, bid, rows_read=n, rows_folded=0, rows_skipped=0)
"""


def build(tree: Path, path: Path, kind: str, n: int) -> None:
    subprocess.run([sys.executable, "-c", BUILD, str(path), kind, str(n)], cwd=tree, check=True)


def measure(tree: Path, path: Path) -> tuple[float, float, str]:
    """One `vlmdesk run` in its own process, started from `tree`: (peak RSS in MB, wall seconds, its last line)."""
    command = [sys.executable, "-m", "vlmdesk", "run", "--workspace", str(path), "--bench", "bench"]
    command += ["--model", "baseline:random", "--json"]
    t0 = time.perf_counter()
    child = subprocess.Popen(command, cwd=tree, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # wait4 gives this child's own usage; RUSAGE_CHILDREN would be the largest of every child waited for so far.
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - t0
    child.returncode = os.waitstatus_to_exitcode(status)
    out, err = child.communicate()
    if child.returncode != 0:
        raise SystemExit(f"{' '.join(command)} in {tree} exited {child.returncode}: {err.strip()[-500:]}")
    peak_mb = usage.ru_maxrss / (1024 * 1024 if sys.platform == "darwin" else 1024)
    return peak_mb, wall, out.strip().splitlines()[-1]


def stored(path: Path) -> int:
    import sqlite3

    with sqlite3.connect(path) as conn:
        return int(conn.execute("SELECT count(*) FROM predictions").fetchone()[0])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--sizes", default="20000,100000", help="item counts, comma-separated (first and last compared)"
    )
    parser.add_argument("--kinds", default="circular,pope", help="circular, pope or both")
    parser.add_argument("--before", metavar="PATH", help="another checkout measured in the same run")
    parser.add_argument("--keep-dir", metavar="DIR", help="keep the workspaces in DIR (default: a temporary folder)")
    args = parser.parse_args()
    sizes = [int(v) for v in args.sizes.split(",")]
    kinds = args.kinds.split(",")
    trees = {"now": HERE} | ({"before": Path(args.before).resolve()} if args.before else {})
    print(
        f"machine: {platform.platform()}, {os.cpu_count()} CPUs, Python {platform.python_version()}; "
        + ", ".join(f"{name} = {tree}" for name, tree in trees.items()),
        flush=True,
    )
    results: dict[tuple[str, str, int], tuple[float, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(args.keep_dir) if args.keep_dir else Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        for kind in kinds:
            for n in sizes:
                for name, tree in trees.items():
                    path = folder / f"{name}-{kind}-{n}.sqlite"
                    for leftover in folder.glob(f"{path.name}*"):
                        leftover.unlink()
                    t0 = time.perf_counter()
                    build(tree, path, kind, n)
                    built = time.perf_counter() - t0
                    peak, wall, _ = measure(tree, path)
                    results[name, kind, n] = peak, wall
                    print(
                        f"  {name:<7} {kind:<9} {n:>8,} items (built in {built:5.1f} s)  peak RSS {peak:7.1f} MB  "
                        f"wall {wall:7.2f} s  passes stored {stored(path):>9,}",
                        flush=True,
                    )
                    if not args.keep_dir:  # 100k-item workspaces add up
                        for done in folder.glob(f"{path.name}*"):
                            done.unlink()
    first, last = sizes[0], sizes[-1]
    print(f"\n{'tree':<7} {'kind':<9} {'peak RSS ' + f'{last:,}/{first:,}':>22} {'wall ' + f'{last:,}/{first:,}':>20}")
    for (name, kind, n), (peak, wall) in results.items():
        if n == last and (name, kind, first) in results:
            peak0, wall0 = results[name, kind, first]
            print(f"{name:<7} {kind:<9} {peak / peak0:>21.2f}x {wall / wall0:>19.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
