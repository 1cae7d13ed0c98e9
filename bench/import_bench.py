"""Importing an MMBench-dev-sized TSV: wall time and peak memory of `vlmdesk import`, against a naive importer.

Generates a TSV shaped like MMBench_DEV_EN (~4,400 rows: ~1,300 questions x 2-4 circular rows, one ~50 KB JPEG per
question as base64, the copies referring to their question's image by index), then imports it twice, each in a
fresh child process on a fresh workspace:

- streaming: the real command, `vlmdesk --workspace WS import FILE --json`;
- naive: this file run with `--naive-child`: the whole TSV read with `csv` into a list first, every image decoded
  into memory, then checked (PIL) and inserted in one transaction (copies folded by index, nothing else checked).

While each child runs, a thread of this process plays another writer (a run, a verdict): every 50 ms it takes the
workspace's write lock and gives it back, and the longest wait is printed — the naive import holds the lock for
its whole transaction, the real one only for short batches and the final publish.

Each child's peak resident memory comes from os.wait4() (the child's own rusage; the same figure as
getrusage(RUSAGE_CHILDREN).ru_maxrss when it is the only child). On Linux a child's ru_maxrss starts from the
parent's resident size at fork/vfork time, so this parent stays small: the file is generated in a child of its own
(the generator keeps every question's image until the copies are written), and the parent's own peak is printed as
the floor below which no child figure can go. Figures are printed, never asserted.

The parquet case (issue 17) does the same for a Hugging Face parquet shaped like lmms-lab/MMBench, made from the
same rows (every row carries its image inline as {bytes, path}, 100 rows per row group, as `datasets` writes image
columns): `vlmdesk import FILE.parquet`, read one record batch at a time, against a naive reader that loads the
whole table (`pq.read_table(...).to_pylist()`) before it checks and inserts anything.

    python bench/import_bench.py                 # temp dir, removed afterwards
    python bench/import_bench.py --out bench/out --questions 300
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import resource
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TARGET_PEAK_MB = 400


def generate(path: Path, questions: int, side: int) -> int:
    """Write the TSV row by row (write_tsv streams when given a header); returns the number of rows."""
    from tests.factories import HEADER, mmbench_rows, write_tsv

    rows = 0

    def counted():
        nonlocal rows
        for r in mmbench_rows(questions, seed=2024, image_side=side):
            rows += 1
            yield r

    write_tsv(path, counted(), header=HEADER)
    return rows


class LockProbe(threading.Thread):
    """Another writer: takes and releases the workspace's write lock every 50 ms; records the longest wait."""

    def __init__(self, ws: Path):
        super().__init__(daemon=True)
        self.ws, self.stop, self.longest_s, self.tries = ws, threading.Event(), 0.0, 0

    def run(self) -> None:
        while not self.stop.wait(0.05):
            if not self.ws.exists():
                continue
            conn = sqlite3.connect(str(self.ws), timeout=3600)
            try:
                if not conn.execute("SELECT count(*) FROM sqlite_master WHERE name = 'items'").fetchone()[0]:
                    continue  # not migrated yet
                start = time.perf_counter()
                conn.execute("BEGIN IMMEDIATE")
                self.longest_s = max(self.longest_s, time.perf_counter() - start)
                self.tries += 1
                conn.rollback()
            except sqlite3.Error:
                pass
            finally:
                conn.close()


def run_child(argv: list[str], log: Path, ws: Path | None = None) -> dict:
    """Run a child to completion; its wall time, exit status, peak RSS (MB) and, with ws, the longest wait of
    another writer for the workspace's write lock meanwhile."""
    probe = LockProbe(ws) if ws is not None else None
    with open(log, "wb") as out:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
        if probe is not None:
            probe.start()
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
    if probe is not None:
        probe.stop.set()
        probe.join()
    proc.returncode = os.waitstatus_to_exitcode(status)
    # ru_maxrss is KiB on Linux, bytes on macOS.
    peak = usage.ru_maxrss / (1024 * 1024 if sys.platform == "darwin" else 1024)
    return {
        "wall_s": wall,
        "peak_mb": peak,
        "rc": proc.returncode,
        "log": log.read_text(errors="replace"),
        "lock_wait_s": probe.longest_s if probe else None,
        "lock_tries": probe.tries if probe else 0,
    }


def naive_import(tsv: Path, ws_path: Path) -> None:
    """The baseline: everything in memory first, then one transaction."""
    import base64

    from db import catalog, open_workspace
    from evaluator.formats.importers.common import check_image, sha256_bytes
    from evaluator.scoring.language import language_of

    csv.field_size_limit(2**31 - 1)
    with open(tsv, encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    images = {r["index"]: base64.b64decode(r["image"]) for r in rows if len(r["image"]) > 64}
    with open_workspace(ws_path) as ws, ws.db.atomic():
        bid = catalog.insert_benchmark(
            ws, name="naive", kind="mcq", format="mmbench-tsv", source=str(tsv), source_sha256="naive", meta={}
        )
        shas = {}
        for index, data in images.items():
            mime, w, h = check_image(data)
            shas[index] = sha256_bytes(data)
            catalog.put_image(ws, sha256=shas[index], data=data, mime=mime, width=w, height=h)
        items, copies = [], {}
        for pos, r in enumerate(rows, start=1):
            index = int(r["index"])
            if index >= 1_000_000:
                copies[index % 1_000_000] = copies.get(index % 1_000_000, 0) + 1
                continue
            options = [r[L] for L in "ABCD" if r[L] and r[L] != "nan"]
            items.append(
                (
                    bid,
                    pos,
                    index,
                    r["question"],
                    None if r["hint"] in ("", "nan") else r["hint"],
                    json.dumps(options),
                    r["answer"],
                    r["category"],
                    r["l2-category"],
                    r["split"],
                    language_of(r["question"]),
                    shas.get(r["image"]) or shas[r["index"]],
                    0,
                    "{}",
                )
            )
        catalog.insert_items(ws, items)
        ws.conn.executemany(
            "UPDATE items SET circular_copies = ? WHERE benchmark_id = ? AND source_index = ?",
            [(n, bid, i) for i, n in copies.items()],
        )
        catalog.finish_benchmark(ws, bid, rows_read=len(rows), rows_folded=sum(copies.values()), rows_skipped=0)


def to_parquet(tsv: Path, path: Path) -> int:
    """The TSV's rows in lmms-lab/MMBench's parquet layout, written 100 rows per row group; returns the rows."""
    import base64

    import pyarrow as pa
    import pyarrow.parquet as pq

    csv.field_size_limit(2**31 - 1)
    image = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    text = ["question", "hint", "A", "B", "C", "D", "answer", "category"]
    schema = pa.schema(
        [("index", pa.int64())]
        + [(c, pa.string()) for c in text]
        + [("image", image), ("source", pa.string()), ("L2-category", pa.string()), ("split", pa.string())]
    )
    shared: dict[str, bytes] = {}  # the originals' images, which their copies refer to by index
    rows, chunk = 0, []
    with open(tsv, encoding="utf-8", newline="") as f, pq.ParquetWriter(path, schema) as writer:
        for r in csv.DictReader(f, delimiter="\t"):
            data = shared.get(r["image"]) if len(r["image"]) <= 64 else base64.b64decode(r["image"])
            if len(r["image"]) > 64:
                shared[r["index"]] = data
            chunk.append(
                {
                    "index": int(r["index"]),
                    **{c: None if r[c] in ("", "nan") else r[c] for c in text},
                    "image": {"bytes": data, "path": None},
                    "source": r.get("source"),
                    "L2-category": r["l2-category"],
                    "split": r["split"],
                }
            )
            rows += 1
            if len(chunk) == 100:
                writer.write_table(pa.Table.from_pylist(chunk, schema=schema))
                chunk = []
        if chunk:
            writer.write_table(pa.Table.from_pylist(chunk, schema=schema))
    return rows


def naive_parquet(path: Path, ws_path: Path) -> None:
    """The baseline: the whole table in memory as Python rows, then checked and inserted in one transaction."""
    import pyarrow.parquet as pq

    from db import catalog, open_workspace
    from evaluator.formats.importers.common import check_image, sha256_bytes
    from evaluator.scoring.language import language_of

    rows = pq.read_table(path).to_pylist()
    with open_workspace(ws_path) as ws, ws.db.atomic():
        bid = catalog.insert_benchmark(
            ws, name="naive", kind="mcq", format="parquet", source=str(path), source_sha256="naive", meta={}
        )
        items, copies = [], {}
        for pos, r in enumerate(rows, start=1):
            data = r["image"]["bytes"]
            sha = sha256_bytes(data)
            if not catalog.has_image(ws, sha):
                mime, w, h = check_image(data)
                catalog.put_image(ws, sha256=sha, data=data, mime=mime, width=w, height=h)
            if r["index"] >= 1_000_000:
                copies[r["index"] % 1_000_000] = copies.get(r["index"] % 1_000_000, 0) + 1
                continue
            options = [r[L] for L in "ABCD" if r[L]]
            items.append(
                (bid, pos, r["index"], r["question"], r["hint"], json.dumps(options), r["answer"], r["category"],
                 r["L2-category"], r["split"], language_of(r["question"]), sha, 0, "{}")
            )  # fmt: skip
        catalog.insert_items(ws, items)
        ws.conn.executemany(
            "UPDATE items SET circular_copies = ? WHERE benchmark_id = ? AND source_index = ?",
            [(n, bid, i) for i, n in copies.items()],
        )
        catalog.finish_benchmark(ws, bid, rows_read=len(rows), rows_folded=sum(copies.values()), rows_skipped=0)


def workspace_mb(path: Path) -> float:
    return sum(p.stat().st_size for p in (path, Path(f"{path}-wal")) if p.exists()) / 1e6


def machine() -> str:
    return (
        f"{platform.platform()} | {platform.machine()} | {os.cpu_count()} CPUs | Python "
        f"{platform.python_version()} | SQLite {sqlite3.sqlite_version}"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, help="keep the generated file and workspaces here (default: a temp dir)")
    ap.add_argument("--questions", type=int, default=1300, help="distinct questions (default 1300, ~4,400 rows)")
    ap.add_argument("--side", type=int, default=272, help="JPEG side in pixels (272 gives ~50 KB of noise)")
    ap.add_argument("--naive-child", nargs=2, metavar=("TSV", "WS"), help=argparse.SUPPRESS)
    ap.add_argument("--generate-child", metavar="TSV", help=argparse.SUPPRESS)
    ap.add_argument("--parquet-child", nargs=2, metavar=("TSV", "PARQUET"), help=argparse.SUPPRESS)
    ap.add_argument("--naive-parquet-child", nargs=2, metavar=("PARQUET", "WS"), help=argparse.SUPPRESS)
    ap.add_argument("--no-parquet", action="store_true", help="skip the parquet case")
    args = ap.parse_args()
    if args.parquet_child:
        print(to_parquet(Path(args.parquet_child[0]), Path(args.parquet_child[1])))
        return 0
    if args.naive_parquet_child:
        naive_parquet(Path(args.naive_parquet_child[0]), Path(args.naive_parquet_child[1]))
        return 0
    if args.naive_child:
        naive_import(Path(args.naive_child[0]), Path(args.naive_child[1]))
        return 0
    if args.generate_child:
        print(generate(Path(args.generate_child), args.questions, args.side))
        return 0

    tmp = None
    if args.out:
        out = args.out
        out.mkdir(parents=True, exist_ok=True)
    else:
        out = Path(tmp := tempfile.mkdtemp(prefix="vlmdesk-import-bench-"))
    try:
        tsv = out / "MMBench_DEV_EN_bench.tsv"
        gen = run_child(
            [
                sys.executable,
                __file__,
                "--generate-child",
                str(tsv),
                "--questions",
                str(args.questions),
                "--side",
                str(args.side),
            ],
            out / "generate.log",
        )
        if gen["rc"] != 0:
            print(f"generating the file failed:\n{gen['log']}", file=sys.stderr)
            return 1
        rows, questions, gen_s = int(gen["log"].split()[-1]), args.questions, gen["wall_s"]
        file_mb = tsv.stat().st_size / 1e6

        results = {}
        vlmdesk = Path(sys.executable).with_name("vlmdesk")
        for way, argv_for in (
            ("streaming", lambda ws: [str(vlmdesk), "--workspace", str(ws), "import", str(tsv), "--json"]),
            ("naive", lambda ws: [sys.executable, __file__, "--naive-child", str(tsv), str(ws)]),
        ):
            ws = out / f"ws_{way}.sqlite"
            for p in (ws, Path(f"{ws}-wal"), Path(f"{ws}-shm")):
                p.unlink(missing_ok=True)
            r = run_child(argv_for(ws), out / f"{way}.log", ws)
            if r["rc"] != 0:
                print(f"{way} import failed (exit {r['rc']}):\n{r['log']}", file=sys.stderr)
                return 1
            r["ws_mb"] = workspace_mb(ws)
            results[way] = r

        report = json.loads(results["streaming"]["log"].strip().splitlines()[-1])
        s, n = results["streaming"], results["naive"]
        print(f"machine: {machine()}")
        print(f"file: {tsv.name}: {rows} rows, {questions} questions, {file_mb:.1f} MB (generated in {gen_s:.1f} s)")
        print(
            f"streaming import (vlmdesk import): {s['wall_s']:.2f} s, {rows / s['wall_s']:.0f} rows/s, "
            f"peak RSS {s['peak_mb']:.0f} MB, workspace {s['ws_mb']:.1f} MB"
        )
        print(
            f"  questions {report['questions']}, folded {report['rows_folded']}, images {report['images']}, "
            f"skipped {report['rows_skipped']}"
        )
        print(
            f"naive import (csv into memory first): {n['wall_s']:.2f} s, {rows / n['wall_s']:.0f} rows/s, "
            f"peak RSS {n['peak_mb']:.0f} MB, workspace {n['ws_mb']:.1f} MB"
        )
        parent = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / (1 << 20 if sys.platform == "darwin" else 1024)
        print(
            f"longest wait of another writer for the write lock: streaming {s['lock_wait_s'] * 1000:.0f} ms "
            f"({s['lock_tries']} tries), naive {n['lock_wait_s'] * 1000:.0f} ms ({n['lock_tries']} tries)"
        )
        print(f"(this bench's own peak RSS: {parent:.0f} MB — the floor of any child figure)")
        print(
            f"ratio streaming/naive: time {s['wall_s'] / n['wall_s']:.2f}x, "
            f"peak memory {s['peak_mb'] / n['peak_mb']:.2f}x"
        )
        met = "met" if s["peak_mb"] < TARGET_PEAK_MB else "NOT met"
        print(f"peak-memory target < {TARGET_PEAK_MB} MB for the streaming import: {met} ({s['peak_mb']:.0f} MB)")
        return 0 if args.no_parquet else parquet_case(out, tsv, vlmdesk)
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)


def parquet_case(out: Path, tsv: Path, vlmdesk: Path) -> int:
    path = out / "mmbench_dev_en_bench.parquet"
    made = run_child([sys.executable, __file__, "--parquet-child", str(tsv), str(path)], out / "parquet.log")
    if made["rc"] != 0:
        print(f"writing the parquet failed:\n{made['log']}", file=sys.stderr)
        return 1
    rows = int(made["log"].split()[-1])
    results = {}
    for way, argv_for in (
        ("parquet streaming", lambda ws: [str(vlmdesk), "--workspace", str(ws), "import", str(path), "--json"]),
        ("parquet naive", lambda ws: [sys.executable, __file__, "--naive-parquet-child", str(path), str(ws)]),
    ):
        ws = out / f"ws_{way.replace(' ', '_')}.sqlite"
        for p in (ws, Path(f"{ws}-wal"), Path(f"{ws}-shm")):
            p.unlink(missing_ok=True)
        r = run_child(argv_for(ws), out / f"{way.replace(' ', '_')}.log", ws)
        if r["rc"] != 0:
            print(f"{way} import failed (exit {r['rc']}):\n{r['log']}", file=sys.stderr)
            return 1
        r["ws_mb"] = workspace_mb(ws)
        results[way] = r
    report = json.loads(results["parquet streaming"]["log"].strip().splitlines()[-1])
    s, n = results["parquet streaming"], results["parquet naive"]
    print(f"parquet: {path.name}: {rows} rows, {path.stat().st_size / 1e6:.1f} MB, 100 rows per row group")
    for way, r in results.items():
        print(
            f"{way}: {r['wall_s']:.2f} s, {rows / r['wall_s']:.0f} rows/s, peak RSS {r['peak_mb']:.0f} MB, "
            f"workspace {r['ws_mb']:.1f} MB, longest lock wait of another writer {r['lock_wait_s'] * 1000:.0f} ms"
        )
    print(f"  questions {report['questions']}, folded {report['rows_folded']}, images {report['images']}")
    print(
        f"ratio parquet streaming/naive: time {s['wall_s'] / n['wall_s']:.2f}x, "
        f"memory {s['peak_mb'] / n['peak_mb']:.2f}x"
    )
    met = "met" if s["peak_mb"] < TARGET_PEAK_MB else "NOT met"
    print(f"peak-memory target < {TARGET_PEAK_MB} MB for the parquet import: {met} ({s['peak_mb']:.0f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
