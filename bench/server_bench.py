"""The openai backend against a local server with a fixed latency: requests in flight and throughput vs concurrency.

A scripted OpenAI-compatible server (tests/servers.py, in a thread on 127.0.0.1; no model) answers every request
with "A" after --latency-ms. A CircularEval run of `baseline`-free four-option items goes through the real engine and
backend at the default batch size (8), for concurrency 1 / 8 / 32 / 64, two ways in the same process: as the engine
schedules now (each call holds max(batch size, concurrency) queries, waves walked in chunks of 4 × concurrency
items) and as before (each call holds batch-size queries, one chunk). Prints the most requests the server had in
flight at once, the mean in flight (requests × latency / wall time), requests per second, the speed-up, and the
CPU time per request of this process (client and server share it: where it approaches latency / concurrency, the
machine, not the schedule, caps the mean in flight).

    python bench/server_bench.py [--items 256] [--latency-ms 100]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from db import catalog, open_workspace  # noqa: E402
from evaluator.backends.openai_backend import OpenAIBackend  # noqa: E402
from evaluator.importers import import_benchmark  # noqa: E402
from evaluator.prompts import default_template  # noqa: E402
from evaluator.runner import Engine, RunSettings, new_run  # noqa: E402
from tests.factories import png_bytes  # noqa: E402
from tests.servers import FaultServer, Step, completion  # noqa: E402

BATCH_SIZE = 8  # vlmdesk run's default


class Before(OpenAIBackend):
    """The scheduling before issue 14: the engine hands the backend batch-size queries per call, in one chunk."""

    chunk_items = None  # type: ignore[assignment]

    def call_size(self, batch_size: int) -> int:
        return batch_size


def bench_items(ws, folder: Path, n: int) -> None:
    (folder / "img.png").write_bytes(png_bytes())
    path = folder / "b.jsonl"
    with open(path, "w") as f:
        for i in range(n):
            options = [f"option {j} of item {i}" for j in range(4)]
            rec = {"index": i, "question": f"Which one, {i}?", "options": options, "answer": "ABCD"[i % 4]}
            f.write(json.dumps({**rec, "image": "img.png"}) + "\n")
    import_benchmark(ws, path, fmt="jsonl", name="b")


def one_run(ws, backend: OpenAIBackend) -> tuple[int, float, float]:
    """(model calls, wall seconds, CPU seconds of this process) of one CircularEval run at the default batch size."""
    bench = catalog.benchmark_by_name(ws, "b")
    run = new_run(
        ws, bench, backend.spec, RunSettings(), default_template("mcq"), batch_size=BATCH_SIZE, backend_info={}
    )
    engine = Engine(ws, run, backend, batch_size=BATCH_SIZE)
    t0, cpu0 = time.perf_counter(), time.process_time()
    engine.execute()
    return engine.calls, time.perf_counter() - t0, time.process_time() - cpu0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--items", type=int, default=256, help="four-option items per run (default 256)")
    ap.add_argument("--latency-ms", type=float, default=100.0, help="the server's answer time (default 100 ms)")
    ap.add_argument("--concurrency", default="1,8,32,64", help="concurrency values (default 1,8,32,64)")
    args = ap.parse_args()
    latency = args.latency_ms / 1000
    print(f"machine: {platform.platform()}, {os.cpu_count()} CPUs")
    print(
        f"{args.items} four-option items, CircularEval, batch size {BATCH_SIZE}, server latency {args.latency_ms:g} ms"
    )
    print(
        f"{'concurrency':>11} {'schedule':<8} {'requests':>8} {'wall s':>7} {'max in flight':>13} "
        f"{'mean in flight':>14} {'req/s':>7} {'ideal req/s':>11} {'retried':>7} {'CPU ms/req':>10}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        with open_workspace(Path(tmp) / "ws.sqlite") as ws:
            bench_items(ws, Path(tmp), args.items)
            for concurrency in [int(c) for c in args.concurrency.split(",")]:
                rates = {}
                for label, cls in (("before", Before), ("now", OpenAIBackend)):
                    server = FaultServer([Step(200, completion("A"), delay=latency)])
                    try:
                        backend = cls("m", server.url, concurrency=concurrency, retries=3, backoff=0.0)
                        calls, wall, cpu = one_run(ws, backend)
                        rates[label] = calls / wall
                        print(
                            f"{concurrency:>11} {label:<8} {calls:>8} {wall:>7.2f} {server.max_in_flight:>13} "
                            f"{server.count * latency / wall:>14.1f} {calls / wall:>7.1f} "
                            f"{concurrency / latency:>11.1f} {server.count - calls:>7} "
                            f"{cpu / server.count * 1000:>10.1f}"
                        )
                    finally:
                        server.close()
                print(f"{'':>11} {'speed-up':<8} {rates['now'] / rates['before']:>8.2f}")


if __name__ == "__main__":
    main()
