"""The openai backend against local servers in processes of their own: requests in flight and throughput, the
schedule before issue 24 (waves of calls) beside the streaming one, one server and several replicas.

Scripted OpenAI-compatible servers (tests/server_process.py; no model) run in child processes, so the client's CPU
is not the server's. Two latency modes in one invocation:

- fixed: every answer after --latency-ms (default 100); the workload is a CircularEval run of --items four-option
  items (default 256);
- varying: 40 ms + an exponential of mean 160 ms (seeded; mean latency 0.2 s); a VanillaEval run of
  --vanilla-items items (default 400).

Each goes through the real engine (evaluator/engine/runner.py: new_run, Engine.execute) at the default batch size (8),
at
each --concurrency (default 32,64) two ways: `old`, the engine walking waves of calls (call_size = max(batch,
concurrency), chunks of 4 × concurrency items: docs/adr/0016) as before issue 24 — OpenAIBackend behind a wrapper
that hides its `open_stream` —, and `new`, plain OpenAIBackend (the engine streams when the backend has an
`open_stream`). Then --replicas server processes (default 3) behind one spec `openai:m@U1,U2,U3?concurrency=C`
(C = --replica-concurrency, default 32, per replica: ideally replicas × C in flight), both schedules; a row says
when the spec cannot be run.

Per row: the requests the servers answered (retries among them), the client's wall time of Engine.execute, the most
in flight (the server's own count; with replicas, the sum of each replica's most, an upper bound), the mean in
flight — the servers' in-flight seconds (each request's arrival to the end of its answer, summed) divided by the
servers' busy window (first arrival to last answer, across replicas: their clocks are the same monotonic clock) —,
the mean time a server held a request (lat ms), req/s (requests / wall), the ideal req/s (concurrency in all / mean
latency), req/s ÷ ideal, mean in flight ÷ concurrency, the new/old speed-up (req/s), CPU ms per request of this
process and of the servers, and "targets": met when mean in flight ≥ 0.9 × concurrency and req/s ≥ 0.85 × ideal
(issue 24's targets).

    python bench/server_bench.py                    # both modes, concurrency 32 and 64, 3 replicas of 32
    python bench/server_bench.py --quick            # small sizes: a smoke test (seconds)
    python bench/server_bench.py [--items 256] [--vanilla-items 400] [--latency-ms 100] [--concurrency 1,8,32,64]
                                 [--replicas 3] [--replica-concurrency 32]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from db import catalog, open_workspace  # noqa: E402
from evaluator.backends.base import BackendError  # noqa: E402
from evaluator.backends.openai_backend import OpenAIBackend, parse_openai_spec  # noqa: E402
from evaluator.engine.prompts import default_template  # noqa: E402
from evaluator.engine.runner import Engine, RunSettings, new_run  # noqa: E402
from evaluator.formats.importers import import_benchmark  # noqa: E402
from tests.factories import png_bytes  # noqa: E402
from tests.server_process import ServerProcess  # noqa: E402

BATCH_SIZE = 8  # vlmdesk run's default
MEAN_IN_FLIGHT_TARGET = 0.9  # × concurrency (issue 24)
RATE_TARGET = 0.85  # × ideal req/s
VARYING_BASE_MS, VARYING_JITTER_MS = 40.0, 160.0


class Waves:
    """A backend without its `open_stream`: the engine walks waves of calls (call_size = max(batch, concurrency),
    chunk_items = 4 × concurrency), each call waiting for its slowest request — the schedule before issue 24.

    A wrapper, not a subclass with `open_stream = None`: the streaming backend's own generate() runs over its
    stream, so the backend keeps it and only the engine does not see it."""

    def __init__(self, backend: OpenAIBackend):
        self.backend = backend
        self.spec = backend.spec

    def __getattr__(self, name: str):
        if name in ("open_stream", "backend"):
            raise AttributeError(name)
        return getattr(self.backend, name)


@dataclass
class Mode:
    name: str
    latency_ms: float
    jitter_mean_ms: float
    bench: str  # the benchmark's name in the workspace
    strategy: str

    @property
    def mean_latency(self) -> float:
        return (self.latency_ms + self.jitter_mean_ms) / 1000


def bench_items(ws, folder: Path, name: str, n: int) -> None:
    (folder / "img.png").write_bytes(png_bytes())
    path = folder / f"{name}.jsonl"
    with open(path, "w") as f:
        for i in range(n):
            options = [f"option {j} of item {i}" for j in range(4)]
            rec = {"index": i, "question": f"Which one, {i}?", "options": options, "answer": "ABCD"[i % 4]}
            f.write(json.dumps({**rec, "image": "img.png"}) + "\n")
    import_benchmark(ws, path, fmt="jsonl", name=name)


def one_run(ws, mode: Mode, backend) -> tuple[int, float, float]:
    """(the engine's model calls, wall seconds, CPU seconds of this process) of one run at the default batch size."""
    bench = catalog.benchmark_by_name(ws, mode.bench)
    settings = RunSettings(strategy=mode.strategy)  # type: ignore[arg-type]
    run = new_run(ws, bench, backend.spec, settings, default_template("mcq"), batch_size=BATCH_SIZE, backend_info={})
    engine = Engine(ws, run, backend, batch_size=BATCH_SIZE)
    t0, cpu0 = time.perf_counter(), time.process_time()
    engine.execute()
    return engine.calls, time.perf_counter() - t0, time.process_time() - cpu0


def measure(ws, mode: Mode, servers: list[ServerProcess], backend, width: int) -> dict:
    """Runs once against `servers` (reset first); the row's figures. `width`: the concurrency in all."""
    for s in servers:
        s.reset()
    calls, wall, cpu = one_run(ws, mode, backend)
    stats = [s.stats() for s in servers]
    used = [st for st in stats if st["requests"]]
    requests = sum(st["requests"] for st in stats)
    window = max(st["last_done"] for st in used) - min(st["first_arrival"] for st in used) if used else 0.0
    mean_in_flight = sum(st["in_flight_seconds"] for st in stats) / window if window > 0 else 0.0
    rate, ideal = requests / wall, width / mode.mean_latency
    return {
        "requests": requests,
        "retried": requests - calls,
        "wall": wall,
        "max_in_flight": sum(st["max_in_flight"] for st in stats),
        "mean_in_flight": mean_in_flight,
        "rate": rate,
        "ideal": ideal,
        "rate_ratio": rate / ideal,
        "flight_ratio": mean_in_flight / width,
        "served_ms": sum(st["in_flight_seconds"] for st in stats) / max(requests, 1) * 1000,
        "cpu_ms": cpu / max(requests, 1) * 1000,
        "server_cpu_ms": sum(st["cpu_seconds"] for st in stats) / max(requests, 1) * 1000,
        "per_replica": [st["requests"] for st in stats],
        "met": mean_in_flight >= MEAN_IN_FLIGHT_TARGET * width and rate >= RATE_TARGET * ideal,
    }


HEADER = (
    f"{'mode':<8} {'concurrency':<12} {'schedule':<8} {'requests':>8} {'retried':>7} {'wall s':>7} {'max in fl':>9} "
    f"{'mean in fl':>10} {'lat ms':>6} {'req/s':>7} {'ideal':>7} {'÷ideal':>6} {'fl÷conc':>7} {'new/old':>7} "
    f"{'CPU ms/req':>10} {'srv CPU ms/req':>14}  targets"
)


def print_row(mode: Mode, label: str, schedule: str, row: dict, speedup: float | None) -> None:
    print(
        f"{mode.name:<8} {label:<12} {schedule:<8} {row['requests']:>8} {row['retried']:>7} {row['wall']:>7.2f} "
        f"{row['max_in_flight']:>9} {row['mean_in_flight']:>10.1f} {row['served_ms']:>6.1f} {row['rate']:>7.1f} "
        f"{row['ideal']:>7.1f} "
        f"{row['rate_ratio']:>6.2f} {row['flight_ratio']:>7.2f} {'' if speedup is None else f'{speedup:.2f}':>7} "
        f"{row['cpu_ms']:>10.2f} {row['server_cpu_ms']:>14.2f}  {'met' if row['met'] else 'not met'}",
        flush=True,
    )


def replica_backend(urls: list[str], concurrency: int, old: bool):
    """The multi-URL spec's backend (no door, as the single-URL rows), behind Waves for the old schedule;
    BackendError where the spec is not supported."""
    backend = parse_openai_spec(f"m@{','.join(urls)}?concurrency={concurrency}&retries=3&backoff=0")
    return Waves(backend) if old else backend


def run_mode(ws, mode: Mode, args, results: list) -> None:
    print(
        f"\n{mode.name} latency: {mode.latency_ms:g} ms"
        + (f" + Exp(mean {mode.jitter_mean_ms:g} ms)" if mode.jitter_mean_ms else "")
        + f" (mean {mode.mean_latency * 1000:g} ms); {mode.strategy} over "
        + f"{args.items if mode.strategy == 'circular' else args.vanilla_items} items",
        flush=True,
    )
    with contextlib.ExitStack() as stack:
        servers = [
            stack.enter_context(
                ServerProcess(latency_ms=mode.latency_ms, jitter_mean_ms=mode.jitter_mean_ms, seed=1 + i)
            )
            for i in range(max(args.replicas, 1))
        ]
        for concurrency in args.concurrency:
            rows = {}
            for schedule in ("old", "new"):
                backend = OpenAIBackend("m", servers[0].url, concurrency=concurrency, retries=3, backoff=0.0)
                backend = Waves(backend) if schedule == "old" else backend
                rows[schedule] = measure(ws, mode, servers[:1], backend, concurrency)
                speedup = rows["new"]["rate"] / rows["old"]["rate"] if schedule == "new" else None
                print_row(mode, str(concurrency), schedule, rows[schedule], speedup)
                results.append((mode.name, str(concurrency), schedule, rows[schedule]))
        if args.replicas < 2:
            return
        c, label = args.replica_concurrency, f"{args.replicas}×{args.replica_concurrency}"
        urls = [s.url for s in servers]
        rows = {}
        for schedule in ("old", "new"):
            try:
                backend = replica_backend(urls, c, old=schedule == "old")
                rows[schedule] = measure(ws, mode, servers, backend, c * len(servers))
            except (BackendError, ValueError, TypeError, AttributeError) as exc:
                # Before the multi-URL spec, "U1,U2,U3" is one mangled base URL: the first server answers 404.
                print(f"{mode.name:<8} {label:<12} {schedule:<8} cannot run: {str(exc)[:100]}", flush=True)
                continue
            speedup = rows["new"]["rate"] / rows["old"]["rate"] if schedule == "new" and "old" in rows else None
            print_row(mode, label, schedule, rows[schedule], speedup)
            print(f"{'':<8} {'':<12} {'':<8} requests per replica: {rows[schedule]['per_replica']}")
            results.append((mode.name, label, schedule, rows[schedule]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--items", type=int, default=None, help="four-option items, CircularEval, fixed latency (256)")
    ap.add_argument("--vanilla-items", type=int, default=None, help="items, VanillaEval, varying latency (400)")
    ap.add_argument("--latency-ms", type=float, default=100.0, help="the fixed mode's answer time (default 100 ms)")
    ap.add_argument(
        "--varying-ms",
        default=f"{VARYING_BASE_MS:g},{VARYING_JITTER_MS:g}",
        help="the varying mode's latency: BASE,MEAN — BASE ms + an exponential of mean MEAN ms (default 40,160)",
    )
    ap.add_argument("--concurrency", default=None, help="concurrency values, one server (default 32,64)")
    ap.add_argument("--replicas", type=int, default=3, help="servers of the replica rows (default 3; <2: none)")
    ap.add_argument("--replica-concurrency", type=int, default=None, help="concurrency per replica (default 32)")
    ap.add_argument("--quick", action="store_true", help="small sizes (32 / 48 items, concurrency 8): a smoke test")
    args = ap.parse_args()
    try:
        varying = tuple(float(v) for v in args.varying_ms.split(","))
    except ValueError:
        varying = ()
    if len(varying) != 2 or min(varying) < 0:
        ap.error("--varying-ms: BASE,MEAN in milliseconds, e.g. 40,160")
    quick = args.quick
    args.items = args.items if args.items is not None else 32 if quick else 256
    args.vanilla_items = args.vanilla_items if args.vanilla_items is not None else 48 if quick else 400
    args.concurrency = [int(c) for c in (args.concurrency or ("8" if quick else "32,64")).split(",")]
    if args.replica_concurrency is None:
        args.replica_concurrency = 8 if quick else 32
    if min(args.concurrency + [args.replica_concurrency, args.items, args.vanilla_items]) < 1:
        ap.error("sizes and concurrencies must be at least 1")

    print(f"machine: {platform.platform()}, {os.cpu_count()} CPUs; batch size {BATCH_SIZE}")
    print(
        "old: waves of calls (open_stream hidden); new: OpenAIBackend as it is"
        + ("" if callable(getattr(OpenAIBackend, "open_stream", None)) else " (it has no open_stream yet: new = old)")
    )
    modes = [
        Mode("fixed", args.latency_ms, 0.0, "fixed", "circular"),
        Mode("varying", varying[0], varying[1], "varying", "vanilla"),
    ]
    results: list = []
    with tempfile.TemporaryDirectory() as tmp:
        with open_workspace(Path(tmp) / "ws.sqlite") as ws:
            bench_items(ws, Path(tmp), "fixed", args.items)
            bench_items(ws, Path(tmp), "varying", args.vanilla_items)
            print(HEADER)
            for mode in modes:
                run_mode(ws, mode, args, results)
    print(f"\ntargets (mean in flight ≥ {MEAN_IN_FLIGHT_TARGET} × concurrency, req/s ≥ {RATE_TARGET} × ideal):")
    for mode_name, label, schedule, row in results:
        print(
            f"  {mode_name:<8} {label:<8} {schedule:<4} {'met' if row['met'] else 'not met'} "
            f"(in flight {row['flight_ratio']:.2f}, req/s {row['rate_ratio']:.2f})"
        )


if __name__ == "__main__":
    main()
