"""A run's report and its runs-list line at a million passes (issue 34): read from the figures the workspace keeps as
passes are stored (migration 0021) against counted from every item and pass as before, in one run on one workspace;
`vlmdesk report N` as a command both ways; and what keeping the figures costs a stored pass — SQLite steps and µs per
pass on migration 0020's schema, with 0021 as first committed (from git) and with 0021 as it is. Prints figures and
ratios; asserts nothing.

The workspace: one benchmark of text items (4 options, 6 categories, 4 L2 abilities, 2 splits) and one finished
CircularEval run over every item whose passes are stored through the ordinary INSERT (so every trigger runs): three
items in four right on all 4 rotations, the fourth wrong at pass 0 — 3.25 passes per item.

    .venv/bin/python bench/report_bench.py                      # 1M passes (~308k items); builds in a few minutes
    .venv/bin/python bench/report_bench.py --passes 100000 --keep-dir /tmp/report-bench
    .venv/bin/python bench/report_bench.py --store-only --store-items 20000    # the stored-pass comparison alone
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import cast

from sqlite_utils import Database

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CATEGORIES = ("ocr", "scene", "attribute", "spatial", "celebrity", "count")
# Migration 0021 as first committed (each stored pass derived its pair's figures again from all its passes), read from
# git for the write-cost comparison.
FIRST_0021 = "b88f845"


def _passes_of(k: int) -> list[tuple[int, int]]:
    """(pass, correct) of item k: wrong at pass 0 one item in four, else right on all four rotations."""
    return [(0, 0)] if k % 4 == 0 else [(p, 1) for p in range(4)]


def build(path: Path, n_items: int) -> tuple[int, float]:
    """The workspace with its run: (run id, seconds to store the passes)."""
    from db import catalog, open_workspace
    from db.workspace import inserted_id

    with open_workspace(path) as ws:
        with ws.db.atomic():
            bid = catalog.insert_benchmark(
                ws, name="report", kind="mcq", format="jsonl", source="generated", source_sha256="report", meta={}
            )
            catalog.insert_items(
                ws,
                [
                    (bid, k, k, f"Question {k}?", None, json.dumps(["a", "b", "c", "d"]), "ABCD"[k % 4])
                    + (CATEGORIES[k % 6], f"l2-{k % 4}", f"split-{k % 2}", "en", None, 0, "{}")
                    for k in range(n_items)
                ],
            )
            catalog.finish_benchmark(ws, bid, rows_read=n_items, rows_folded=0, rows_skipped=0)
            run_id = inserted_id(
                ws.conn.execute(
                    "INSERT INTO runs (benchmark_id, model_spec, strategy, prompt_template, extractor, config_key, "
                    "status, created_at, updated_at, finished_at) VALUES (?, 'baseline:first', 'circular', '{}', "
                    "'rules', 'k', 'finished', '2026-01-01T00:00:00', '2026-01-01T00:10:00', '2026-01-01T00:10:00')",
                    (bid,),
                )
            )
        ids = [r[0] for r in ws.conn.execute("SELECT id FROM items WHERE benchmark_id = ? ORDER BY position", (bid,))]
        return run_id, store_passes(ws, run_id, ids)


def store_passes(ws, run_id: int, ids: list[int]) -> float:
    """Seconds to store the run's passes, 10k items per transaction (as the engine commits batches)."""
    t = time.perf_counter()
    for start in range(0, len(ids), 10_000):
        with ws.db.atomic():
            ws.conn.executemany(
                "INSERT INTO predictions (run_id, item_id, pass, option_order, prompt, response, answer, choice, "
                "stage, correct, latency_ms, created_at, prompt_tokens, completion_tokens) "
                "VALUES (?, ?, ?, ?, 'p', 'A', 'A', ?, 'rules', ?, 1.0, 'now', 120, 3)",
                (
                    (run_id, i, k, json.dumps([(j + k) % 4 for j in range(4)]), "A" if correct else "B", correct)
                    for n, i in enumerate(ids[start : start + 10_000], start)
                    for k, correct in _passes_of(n)
                ),
            )
    return time.perf_counter() - t


def timed(fn: Callable[[], object], repeat: int) -> float:
    """Median seconds of `repeat` calls after one warm-up call."""
    fn()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def command(path: Path, run_id: int, *, kept: bool) -> float:
    """Wall seconds of `vlmdesk report RUN` in a fresh process (imports included); the counted way swaps run_report
    for the reference that counts from the passes."""
    swap = (
        ""
        if kept
        else "import evaluator.analysis.report as r; "
        "r.run_report = lambda ws, i, scoring=None: r._report(ws, i, scoring, kept=False); "
    )
    code = f"import sys; {swap}from vlmdesk.cli import main; sys.exit(main(sys.argv[1:]))"
    argv = [sys.executable, "-c", code, "report", str(run_id), "--workspace", str(path)]
    t = time.perf_counter()
    subprocess.run(argv, check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t


def schemas() -> dict[str, Callable[[Database], None] | None]:
    """What a workspace holds past migration 0020, by name: nothing, 0021 as first committed (when git can show it),
    0021 as it is."""
    from db import schema

    found: dict[str, Callable[[Database], None] | None] = {"0020 only": None}
    shown = subprocess.run(
        ["git", "-C", str(ROOT), "show", f"{FIRST_0021}:db/schema.py"], capture_output=True, text=True, check=False
    )
    if shown.returncode == 0:  # this repository's own file, as it was
        first: dict[str, object] = {}
        exec(compile(shown.stdout, f"{FIRST_0021}:db/schema.py", "exec"), first)
        found[f"0021 at {FIRST_0021}"] = cast(Callable[[Database], None], first["_m0021"])
    found["0021 now"] = schema._m0021
    return found


def store_cost(
    path: Path, upgrade: Callable[[Database], None] | None, n_items: int, *, tokens: bool, steps: bool
) -> float:
    """SQLite virtual-machine steps (`steps`) or µs per stored pass of a CircularEval run on n_items items, in a
    workspace migrated to 0020 and then upgraded: the passes inserted wave by wave (pass 0 of every item, then pass
    1...), 10k a transaction as the engine commits. Counting steps slows SQLite down, so a time is taken without;
    the first 1,000 passes prepare the statements and are left out."""
    from db import schema

    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    db = Database(str(path))
    schema.migrations.apply(db, stop_before="0021_run_figures")
    if upgrade is not None:
        with db.atomic():
            upgrade(db)
    conn = db.conn
    conn.execute("PRAGMA foreign_keys = ON")  # a workspace's pragmas (db/workspace.py)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    with conn:
        conn.execute(
            "INSERT INTO benchmarks (name, kind, format, source, source_sha256, rows_read, imported_at) "
            "VALUES ('store', 'mcq', 'jsonl', 'generated', 'store', 0, 'now')"
        )
        conn.executemany(
            "INSERT INTO items (benchmark_id, position, source_index, question, options, answer, category, "
            'l2_category, split) VALUES (1, ?, ?, \'q\', \'["a", "b", "c", "d"]\', ?, ?, ?, ?)',
            [(k, k, "ABCD"[k % 4], CATEGORIES[k % 6], f"l2-{k % 4}", f"split-{k % 2}") for k in range(n_items)],
        )
        run_id = conn.execute(
            "INSERT INTO runs (benchmark_id, model_spec, strategy, prompt_template, extractor, config_key, status, "
            "created_at, updated_at) VALUES (1, 'baseline:first', 'circular', '{}', 'rules', 'k', 'running', 'now', "
            "'now')"
        ).lastrowid
    ids = [r[0] for r in conn.execute("SELECT id FROM items ORDER BY position")]
    rows = [
        (run_id, item, k, json.dumps([(j + k) % 4 for j in range(4)]), "A" if right else "B", right)
        for k in range(4)
        for n, item in enumerate(ids)
        for pass_, right in _passes_of(n)
        if pass_ == k
    ]
    insert = (
        "INSERT INTO predictions (run_id, item_id, pass, option_order, prompt, response, answer, choice, stage, "
        "correct, latency_ms, created_at, prompt_tokens, completion_tokens) VALUES (?, ?, ?, ?, 'p', 'A', 'A', ?, "
        f"'rules', ?, 1.0, 'now', {'120, 3' if tokens else 'NULL, NULL'})"
    )
    with conn:
        conn.executemany(insert, rows[:1_000])
    counted = [0]

    def step() -> int:
        counted[0] += 1
        return 0

    if steps:
        conn.set_progress_handler(step, 1)
    t = time.perf_counter()
    for start in range(1_000, len(rows), 10_000):
        with conn:
            conn.executemany(insert, rows[start : start + 10_000])
    seconds = time.perf_counter() - t
    conn.close()
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    return counted[0] / (len(rows) - 1_000) if steps else seconds / (len(rows) - 1_000) * 1e6


def print_store_costs(folder: Path, n_items: int, repeat: int) -> None:
    """What keeping the figures costs a stored pass: steps and µs per pass under each schema, with and without the
    tokens a server says, and the ratios to 0020's (the time: the best of `repeat` builds)."""
    passes = sum(len(_passes_of(k)) for k in range(n_items))
    print(f"storing a CircularEval run's passes, {n_items:,} items ({passes:,} passes), 10k a transaction:")
    for tokens in (True, False):
        base: tuple[float, float] | None = None
        for name, upgrade in schemas().items():
            path = folder / "store.sqlite"
            steps = store_cost(path, upgrade, n_items, tokens=tokens, steps=True)
            micros = min(store_cost(path, upgrade, n_items, tokens=tokens, steps=False) for _ in range(repeat))
            base = base or (steps, micros)
            print(
                f"  {'with' if tokens else 'no':>4} tokens  {name:<16} {steps:7.1f} steps/pass "
                f"({steps / base[0]:4.2f}x)  {micros:6.1f} µs/pass ({micros / base[1]:4.2f}x)",
                flush=True,
            )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--passes", type=int, default=1_000_000, help="passes of the run (default 1,000,000)")
    parser.add_argument("--keep-dir", metavar="DIR", help="build (or reuse) the workspace in DIR")
    parser.add_argument("--repeat", type=int, default=5, help="timed calls of each kept read (median)")
    parser.add_argument("--store-items", type=int, default=20_000, help="items of the stored-pass comparison")
    parser.add_argument("--store-only", action="store_true", help="only compare what storing a pass costs")
    args = parser.parse_args()
    from db import open_workspace
    from evaluator.analysis import report

    print(f"machine: {platform.platform()}, {os.cpu_count()} CPUs, Python {platform.python_version()}")
    n_items = round(args.passes / 3.25)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(args.keep_dir) if args.keep_dir else Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        if args.store_only:
            print_store_costs(folder, args.store_items, 3)
            return 0
        path = folder / f"report-{n_items}.sqlite"
        if not path.exists():
            t = time.perf_counter()
            run_id, stored = build(path, n_items)
            print(
                f"workspace: {n_items:,} items, built in {time.perf_counter() - t:.1f} s "
                f"({stored:.1f} s storing passes)"
            )
        with open_workspace(path) as ws:
            run_id = ws.conn.execute("SELECT max(id) FROM runs").fetchone()[0]
            passes = runs_passes(ws, run_id)
            print(f"run {run_id}: {passes:,} passes over {n_items:,} items", flush=True)
            kept = report.run_report(ws, run_id)
            counted = report._report(ws, run_id, None, kept=False)
            assert kept is not None and counted is not None
            print(f"kept report == counted report: {kept.to_json() == counted.to_json()}")
            rows = [
                ("run_report", timed(lambda: report.run_report(ws, run_id), args.repeat)),
                ("run_report counted", timed(lambda: report._report(ws, run_id, None, kept=False), 1)),
                ("run_summary (runs list line)", timed(lambda: report.run_summary(ws, run_id), args.repeat)),
            ]
        rows.append(("vlmdesk report (process)", statistics.median(command(path, run_id, kept=True) for _ in range(3))))
        rows.append(("vlmdesk report counted (process)", command(path, run_id, kept=False)))
        for name, seconds in rows:
            print(f"  {name:<34} {seconds * 1000:10.1f} ms", flush=True)
        print(f"  run_report: counted / kept {rows[1][1] / rows[0][1]:,.0f}x")
        print(f"  vlmdesk report: counted / kept {rows[4][1] / rows[3][1]:,.1f}x")
        print_store_costs(folder, args.store_items, 3)
    return 0


def runs_passes(ws, run_id: int) -> int:
    return ws.conn.execute("SELECT passes FROM run_counts WHERE run_id = ?", (run_id,)).fetchone()[0]


if __name__ == "__main__":
    sys.exit(main())
