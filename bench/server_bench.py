"""The openai backend against local servers in processes of their own: requests in flight and client CPU.

Scripted OpenAI-compatible servers (tests/server_process.py; no model) run in child processes, so the client's CPU
is not the server's. Two latency modes in one invocation: fixed (every answer after --latency-ms, default 100) and
varying (40 ms + an exponential of mean 160 ms, seeded; --varying-ms BASE,MEAN).

**Transports** (the default; issue 36, docs/adr/0052). Three clients in the same run, against the same servers, one
after another for each row: `bound`, asyncio + an httpx2 AsyncClient per replica with `concurrency` coroutines per
replica posting (each encodes its body and parses the answer's JSON, nothing else); `sdk`, the openai backend's
stream as it is (OpenAIStream: the openai SDK's AsyncOpenAI clients on one event loop, driven as the engine drives
it — send while load < capacity, take the answers); `today`, the same stream and scheduling with the transport as
committed at 3e5fa3b (httpx2 POSTs from a pool of threads, docs/adr/0032), its module text read from git. With one
server × --concurrency (default 32) and --replicas servers × --replica-concurrency (default 3 × 32). Each request
is a chat completion with an image and a prompt of its own (--requests per server, default 1200). Per row: requests,
wall s, the mean in flight (the servers' own count: in-flight seconds summed over the busy window), its ratio to
the bound's, client CPU ms per request (this process, every thread), its ratio to the bound's, and the targets:
mean in flight ≥ 0.95 × the bound's and client CPU ≤ 1.5 × the bound's.

**Schedules** (--schedules; issue 24): the real engine (Engine.execute) walking waves of calls (`old`: the backend's
`open_stream` hidden) beside streaming (`new`), at each --concurrency and over --replicas; per row the requests,
wall time, most and mean in flight, req/s against the ideal (concurrency / mean latency), CPU ms per request of this
process and of the servers, and issue 24's targets (mean in flight ≥ 0.9 × concurrency, req/s ≥ 0.85 × ideal).

    python bench/server_bench.py                    # transports: both modes, 1 × 32 and 3 × 32
    python bench/server_bench.py --quick            # small sizes: a smoke test (seconds)
    python bench/server_bench.py --schedules        # the engine's two schedules (issue 24)
    python bench/server_bench.py [--requests 1200] [--rounds 1] [--latency-ms 100] [--varying-ms 40,160]
                                 [--concurrency 32] [--replicas 3] [--replica-concurrency 32]
                                 [--items 256] [--vanilla-items 400]   # (--schedules: the runs' sizes)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from db import catalog, open_workspace  # noqa: E402
from evaluator.backends.base import BackendError, Query  # noqa: E402
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
ROOT = Path(__file__).resolve().parents[1]
TODAY = "3e5fa3b"  # the commit whose transport is "today's": httpx2 POSTs from a pool of threads (ADR 0032)
FLIGHT_TARGET, CPU_TARGET = 0.95, 1.5  # × the bound's (issue 36)


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


# ---- transports: the SDK's, today's and the bound ------------------------------------------------------------


def today_module():
    """evaluator/backends/openai_stream.py as committed at TODAY, loaded beside the current one (its relative
    imports resolve in evaluator.backends); None, with why, where git cannot give it."""
    try:
        text = subprocess.run(
            ["git", "show", f"{TODAY}:evaluator/backends/openai_stream.py"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        return None, f"git show {TODAY}: {exc}"
    name = f"evaluator.backends._openai_stream_{TODAY}"
    spec = importlib.util.spec_from_loader(name, loader=None)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    module.__package__ = "evaluator.backends"
    sys.modules[name] = module
    exec(compile(text, f"openai_stream.py@{TODAY}", "exec"), module.__dict__)
    return module, ""


def request_bodies(backend: OpenAIBackend, n: int) -> list[dict]:
    """n chat-completion bodies as the engine builds them: an image and a prompt of its own each."""
    png = png_bytes()
    return [backend._request_body(Query(f"Which one, {i}? A. a B. b C. c D. d", (png,)), 16) for i in range(n)]


def drive(stream, bodies: list[dict]) -> None:
    """What the engine does with a stream, without scoring or storing: keep it full, take every answer."""
    sent = got = 0
    try:
        while got < len(bodies):
            while sent < len(bodies) and stream.load() < stream.capacity:
                stream.send_body(sent, bodies[sent])
                sent += 1
            got += len(stream.answers(0.1))
    finally:
        stream.close()


async def bound_client(urls: list[str], per: int, bodies: list[dict]) -> None:
    """The bound: `per` coroutines per server, each posting the next body with httpx2 and parsing the answer."""
    import httpx2

    clients = [
        httpx2.AsyncClient(
            base_url=url + "/",
            headers={"Authorization": "Bearer EMPTY", "Content-Type": "application/json"},
            limits=httpx2.Limits(max_connections=None, max_keepalive_connections=1024),
            timeout=60,
        )
        for url in urls
    ]
    todo = iter(bodies)

    async def worker(client) -> None:
        for body in todo:
            response = await client.post("chat/completions", content=json.dumps(body).encode())
            json.loads(response.content)["choices"][0]["message"]["content"]

    await asyncio.gather(*[worker(c) for c in clients for _ in range(per)])
    for c in clients:
        await c.aclose()


def transport_row(servers: list[ServerProcess], client: str, per: int, bodies: list[dict], today) -> dict:
    """One client's run over `servers` (reset first): the figures of its row."""
    urls = [s.url for s in servers]
    for s in servers:
        s.reset()
    t0, cpu0 = time.perf_counter(), time.process_time()
    if client == "bound":
        asyncio.run(bound_client(urls, per, bodies))
    else:
        backend = OpenAIBackend("m", urls if len(urls) > 1 else urls[0], concurrency=per, retries=3, backoff=0.0)
        if client == "today":
            backend._httpx, backend._clients = today.make_clients(backend)
            stream = today.OpenAIStream(backend, 16)
        else:
            stream = backend.open_stream(16)
        drive(stream, bodies)
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    stats = [s.stats() for s in servers]
    used = [st for st in stats if st["requests"]]
    requests = sum(st["requests"] for st in stats)
    window = max(st["last_done"] for st in used) - min(st["first_arrival"] for st in used) if used else 0.0
    return {
        "requests": requests,
        "wall": wall,
        "mean_in_flight": sum(st["in_flight_seconds"] for st in stats) / window if window > 0 else 0.0,
        "cpu_ms": cpu / max(requests, 1) * 1000,
        "per_replica": [st["requests"] for st in stats],
    }


TRANSPORT_HEADER = (
    f"{'mode':<8} {'servers':<8} {'client':<6} {'requests':>8} {'wall s':>7} {'mean in fl':>10} {'÷bound':>6} "
    f"{'CPU ms/req':>10} {'÷bound':>6}  targets"
)


def run_transports(args) -> None:
    today, why = today_module()
    print(
        "clients: bound (asyncio + httpx2, N coroutines), sdk (OpenAIStream through the openai SDK), "
        f"today (OpenAIStream as at {TODAY}: httpx2 from a thread pool)"
        + ("" if today else f" — today cannot run: {why}")
    )
    clients = ["bound", "sdk"] + (["today"] if today else [])
    modes = [("fixed", args.latency_ms, 0.0), ("varying", args.varying[0], args.varying[1])]
    layouts = [(1, args.concurrency[0])] + ([(args.replicas, args.replica_concurrency)] if args.replicas > 1 else [])
    verdicts = []
    print(TRANSPORT_HEADER, flush=True)
    for mode, base, jitter in modes:
        with contextlib.ExitStack() as stack:
            servers = [
                stack.enter_context(ServerProcess(latency_ms=base, jitter_mean_ms=jitter, seed=1 + i))
                for i in range(max(layouts[-1][0], 1))
            ]
            for count, per in layouts:
                label = f"{count}×{per}"
                bodies = request_bodies(OpenAIBackend("m", servers[0].url), args.requests * count)
                rows: dict[str, list[dict]] = {c: [] for c in clients}
                for client in clients:  # not counted: imports (the SDK's is 0.4 s), first connections
                    transport_row(servers[:count], client, per, bodies[: 2 * per * count], today)
                for _ in range(args.rounds):  # the clients in turn, each round: a busy moment hits them alike
                    for client in clients:
                        rows[client].append(transport_row(servers[:count], client, per, bodies, today))
                mean = {
                    c: {k: sum(r[k] for r in rs) / len(rs) for k in ("wall", "mean_in_flight", "cpu_ms")}
                    for c, rs in rows.items()
                }
                bound = mean["bound"]
                for client in clients:
                    m, last = mean[client], rows[client][-1]
                    flight, cpu = m["mean_in_flight"] / bound["mean_in_flight"], m["cpu_ms"] / bound["cpu_ms"]
                    met = flight >= FLIGHT_TARGET and cpu <= CPU_TARGET
                    print(
                        f"{mode:<8} {label:<8} {client:<6} {last['requests']:>8} {m['wall']:>7.2f} "
                        f"{m['mean_in_flight']:>10.1f} {flight:>6.2f} {m['cpu_ms']:>10.2f} {cpu:>6.2f}  "
                        + ("(the bound)" if client == "bound" else "met" if met else "not met")
                        + (f"  per server {last['per_replica']}" if count > 1 else ""),
                        flush=True,
                    )
                    if client != "bound":
                        verdicts.append((mode, label, client, flight, cpu, met))
    print(f"\ntargets (mean in flight ≥ {FLIGHT_TARGET} × the bound's, client CPU ≤ {CPU_TARGET} × the bound's):")
    for mode, label, client, flight, cpu, met in verdicts:
        print(
            f"  {mode:<8} {label:<6} {client:<6} {'met' if met else 'not met'} (in flight {flight:.2f}, CPU {cpu:.2f})"
        )


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
    ap.add_argument(
        "--concurrency", default=None, help="concurrency values, one server (default 32; --schedules: 32,64)"
    )
    ap.add_argument("--replicas", type=int, default=3, help="servers of the replica rows (default 3; <2: none)")
    ap.add_argument("--replica-concurrency", type=int, default=None, help="concurrency per replica (default 32)")
    ap.add_argument("--quick", action="store_true", help="small sizes (concurrency 8, few requests): a smoke test")
    ap.add_argument("--schedules", action="store_true", help="the engine's two schedules (issue 24) instead")
    ap.add_argument("--requests", type=int, default=None, help="transports: requests per server (default 1200)")
    ap.add_argument("--rounds", type=int, default=1, help="transports: runs of each client per row, averaged")
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
    default = "8" if quick else "32,64" if args.schedules else "32"
    args.concurrency = [int(c) for c in (args.concurrency or default).split(",")]
    args.requests = args.requests if args.requests is not None else 96 if quick else 1200
    args.varying = varying
    if args.replica_concurrency is None:
        args.replica_concurrency = 8 if quick else 32
    if min(args.concurrency + [args.replica_concurrency, args.items, args.vanilla_items, args.requests]) < 1:
        ap.error("sizes and concurrencies must be at least 1")
    if args.rounds < 1:
        ap.error("--rounds must be at least 1")

    print(f"machine: {platform.platform()}, {os.cpu_count()} CPUs")
    if not args.schedules:
        run_transports(args)
        return

    print(f"batch size {BATCH_SIZE}")
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
