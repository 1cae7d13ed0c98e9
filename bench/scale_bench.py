"""The queries behind Browse's facets and run-result filter and the arena's next pair, at 10k / 100k / 1M items (issue
27, docs/adr/0044): each measured the new way (by index, over what triggers keep) and the old way (the SQL or the
Python the app ran before) in one run, on one workspace per size. Prints figures and ratios; asserts nothing.

Each workspace: one benchmark of N text items (no images: they are not what is measured), a finished VanillaEval run
over every item (two in three right), a second run, and an arena pair per item between the two.

    .venv/bin/python bench/scale_bench.py                                  # 10k, 100k, 1M (1M builds in ~2 min)
    .venv/bin/python bench/scale_bench.py --sizes 10000,100000 --keep-dir /tmp/scale-bench
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

CATEGORIES = ("ocr", "scene", "attribute", "spatial", "celebrity", "count")


def old_result() -> str:
    """The run result as the app computed it before migration 0020: the rule (its SQL home, migration 0020) as an
    aggregate over each listed item's passes, asked per item."""
    from db.schema import RUN_RESULT_SQL

    return (
        f"(SELECT CASE WHEN count(*) = 0 THEN 'none' ELSE {RUN_RESULT_SQL} END FROM predictions p "
        "JOIN runs r ON r.id = p.run_id WHERE p.run_id = ? AND p.item_id = i.id)"
    )


def build(path: Path, n: int) -> float:
    from db import catalog, open_workspace

    t = time.perf_counter()
    with open_workspace(path) as ws:
        with ws.db.atomic():
            bid = catalog.insert_benchmark(
                ws, name="scale", kind="mcq", format="jsonl", source="generated", source_sha256="scale", meta={}
            )
            catalog.insert_items(
                ws,
                [
                    (bid, k, k, f"Question {k}?", None, json.dumps(["a", "b", "c", "d"]), "ABCD"[k % 4])
                    + (CATEGORIES[k % 6], f"l2-{k % 4}", "dev", "en", None, 0, "{}")
                    for k in range(n)
                ],
            )
            catalog.finish_benchmark(ws, bid, rows_read=n, rows_folded=0, rows_skipped=0)
            run_ids = [
                ws.conn.execute(
                    "INSERT INTO runs (benchmark_id, model_spec, strategy, prompt_template, extractor, config_key, "
                    "status, created_at, updated_at) VALUES (?, ?, 'vanilla', '{}', 'rules', ?, 'finished', 'now', "
                    "'now')",
                    (bid, spec, spec),
                ).lastrowid
                for spec in ("baseline:first", "baseline:random")
            ]
            ids = [r[0] for r in ws.conn.execute("SELECT id FROM items ORDER BY position")]
            for run_id in run_ids:
                ws.conn.executemany(
                    "INSERT INTO predictions (run_id, item_id, pass, option_order, prompt, response, answer, choice, "
                    "stage, correct, created_at) VALUES (?, ?, 0, '[0, 1, 2, 3]', 'p', 'A', 'A', 'A', 'rules', ?, "
                    "'now')",
                    ((run_id, i, int(k % 3 != 0)) for k, i in enumerate(ids)),
                )
            ws.conn.executemany(
                "INSERT INTO arena_pairs (uuid, benchmark_id, item_id, left_run_id, right_run_id, position, seed, "
                "created_at) VALUES (?, ?, ?, ?, ?, ?, 0, 'now')",
                ((str(uuid.uuid4()), bid, i, run_ids[0], run_ids[1], k + 1) for k, i in enumerate(ids)),
            )
    return time.perf_counter() - t


def timed(fn, repeat: int = 5) -> float:
    """Median seconds of `repeat` calls (after one warm-up call)."""
    fn()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def measure(path: Path) -> dict[str, tuple[float, float]]:
    """name -> (new seconds, old seconds)."""
    from annotation import arena
    from db import item_query, open_workspace
    from db.item_query import ItemFilter

    out = {}
    with open_workspace(path) as ws:
        bid, run_id = ws.conn.execute("SELECT benchmark_id, min(id) FROM runs").fetchone()
        out["facets (3 columns)"] = (
            timed(lambda: item_query.facet_values(ws, bid)),
            timed(
                lambda: [
                    ws.conn.execute(
                        f"SELECT DISTINCT coalesce({c}, '') FROM items WHERE benchmark_id = ? ORDER BY 1", (bid,)
                    ).fetchall()
                    for c in ("category", "l2_category", "split")
                ]
            ),
        )
        for result in ("wrong", "none"):
            f = ItemFilter(run_id=run_id, run_result=result)
            out[f"run result {result}: count"] = (
                timed(lambda f=f: item_query.count_items(ws, bid, f)),
                timed(
                    lambda result=result: ws.conn.execute(
                        f"SELECT count(*) FROM items i WHERE i.benchmark_id = ? AND {old_result()} = ?",
                        (bid, run_id, result),
                    ).fetchone()
                ),
            )
            out[f"run result {result}: first page"] = (
                timed(lambda f=f: item_query.item_page(ws, bid, f)),
                timed(
                    lambda result=result: ws.conn.execute(
                        f"SELECT i.id FROM items i WHERE i.benchmark_id = ? AND {old_result()} = ? "
                        "ORDER BY i.position, i.id LIMIT 200",
                        (bid, run_id, result),
                    ).fetchall()
                ),
            )
        shown = [arena.next_left(ws, bid, "bench")]
        arena.add_vote(ws, shown[0].id, "bench", "left")

        def new_next() -> None:
            arena.next_left(ws, bid, "bench", after=shown[0])
            arena.progress(ws, bid, "bench")

        def old_next() -> None:
            arena.next_pair(arena.left_for(ws, bid, "bench"), after_item=shown[0].item_id)
            len(arena.pairs(ws, bid))

        out["arena: next pair + progress"] = (timed(new_next), timed(old_next, repeat=2))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,100000,1000000", help="item counts, comma-separated")
    parser.add_argument("--keep-dir", metavar="DIR", help="build (or reuse) the workspaces in DIR")
    args = parser.parse_args()
    print(f"machine: {platform.platform()}, {os.cpu_count()} CPUs, Python {platform.python_version()}")
    sizes = [int(v) for v in args.sizes.split(",")]
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(args.keep_dir) if args.keep_dir else Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        for n in sizes:
            path = folder / f"scale-{n}.sqlite"
            if not path.exists():
                print(f"workspace: {n:,} items, 2 runs, {n:,} arena pairs, built in {build(path, n):.1f} s", flush=True)
            results[n] = measure(path)
            for name, (new, old) in results[n].items():
                print(
                    f"  {n:>9,} items  {name:<30} new {new * 1000:9.2f} ms   old {old * 1000:9.2f} ms   "
                    f"old/new {old / max(new, 1e-9):8.1f}x",
                    flush=True,
                )
    print(f"\n{'':<32}" + "".join(f"{n:>12,} new" for n in sizes) + f"{'ratio last/first':>18}")
    for name in results[sizes[0]]:
        cells = "".join(f"{results[n][name][0] * 1000:>13.2f} ms" for n in sizes)
        ratio = results[sizes[-1]][name][0] / max(results[sizes[0]][name][0], 1e-9)
        print(f"{name:<32}{cells}{ratio:>17.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
