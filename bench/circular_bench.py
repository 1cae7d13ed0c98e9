"""CircularEval cost: wave-scheduled early termination (vlmdesk) vs all N rotations of every item (VLMEvalKit).

On the demo benchmark, with a tiny random-weight LLaVA loaded through the same hf: path a 7B model uses, and with
the seeded random baseline (whose answers survive a pass about 1/N of the time, like a weak model), at batch size 1
and 8. Prints model calls and wall time of both schedules and their ratios.

Then the engine's own overhead (bookkeeping: scheduling, counters, progress events; not the model and not SQLite)
per pass, with `baseline:random` at batch size 8 over 1k / 10k / 40k four-option items, measured two ways in the
same process: the engine as it is (counters kept as passes are stored) and, as a reference, the bookkeeping it
replaced (every item scanned after every batch; run up to --old-max items, since it grows with the square of the
run). Also the 5k / 20k wall-time ratio (linear: 4).

    python bench/circular_bench.py [--repeat 3] [--sizes 1000,10000,40000] [--old-max 10000] [--skip-demo]
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
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from db.errors import MissingExtra  # noqa: E402
from evaluator.backends.hf import require_hf  # noqa: E402

try:  # before anything loads a model: the base install has no torch (one line, exit 2, as `vlmdesk` says it)
    require_hf("bench/circular_bench.py")
except MissingExtra as exc:
    print(f"error: {exc}", file=sys.stderr)
    sys.exit(2)

from db import catalog, open_workspace, runs  # noqa: E402
from evaluator.analysis.report import run_report  # noqa: E402
from evaluator.backends import load_backend  # noqa: E402
from evaluator.engine.progress import Progress  # noqa: E402
from evaluator.engine.prompts import default_template  # noqa: E402
from evaluator.engine.runner import Engine, RunSettings, n_passes, new_run  # noqa: E402
from evaluator.formats.importers import import_benchmark  # noqa: E402
from tests.factories import png_bytes  # noqa: E402
from tests.tiny_models import build_tiny_llava  # noqa: E402
from vlmdesk.demo import ensure_demo  # noqa: E402


def one_run(ws, backend, *, full_passes: bool, batch_size: int, seed: int) -> tuple[int, float, dict]:
    bench = catalog.benchmark_by_name(ws, "demo")
    settings = RunSettings(full_passes=full_passes, max_new_tokens=8, seed=seed)
    run = new_run(ws, bench, backend.spec, settings, default_template("mcq"), batch_size=batch_size, backend_info={})
    engine = Engine(ws, run, backend, batch_size=batch_size)
    t0 = time.perf_counter()
    engine.execute()
    return engine.calls, time.perf_counter() - t0, run_report(ws, run.id)


class ScanningEngine(Engine):
    """The bookkeeping before issue 14, kept as the reference: after every batch the passes left, the items decided
    and the passes stored are recounted over every item, and alive() rereads an item's stored passes."""

    def _record(self, p):
        self.passes_stored += p.pass_ not in self.done[p.item_id]
        self.done[p.item_id][p.pass_] = p

    def alive(self, item, k):
        passes = self.done[item.id]
        return (
            k < n_passes(item, self.run.strategy)
            and k not in passes
            and all(j in passes for j in range(k))
            and self._still_alive(item)
        )

    def _still_alive(self, item):
        return self.settings.full_passes or not any(p.correct is False for p in self.done[item.id].values())

    def remaining_for(self, item):
        return n_passes(item, self.run.strategy) - len(self.done[item.id]) if self._still_alive(item) else 0

    def execute(self):
        self.items = runs.items_of(self.ws, self.run)  # every item and every pass held, as then
        self.done = {item.id: {} for item in self.items}
        started = time.monotonic()
        waves = max((n_passes(i, self.run.strategy) for i in self.items), default=0)
        for k in range(waves):
            todo = [item for item in self.items if self.alive(item, k)]
            todo.sort(key=lambda item: len(item.question) + sum(map(len, item.options)) + len(item.hint or ""))
            for start in range(0, len(todo), self.batch_size):
                self._ask(todo[start : start + self.batch_size], k)
                rate = self.calls / max(time.monotonic() - started, 1e-9)
                left = sum(self.remaining_for(item) for item in self.items)
                self.on_progress(
                    Progress(
                        self.run.id,
                        k,
                        sum(map(len, self.done.values())),
                        sum(1 for item in self.items if self.remaining_for(item) == 0),
                        len(self.items),
                        self.calls,
                        round(rate, 3),
                        round(left / rate, 1) if rate > 0 else None,
                    )
                )


class Timed:
    """Seconds spent in a function (the model's generate, SQLite's add_predictions), summed over calls."""

    def __init__(self, fn):
        self.fn, self.seconds = fn, 0.0

    def __call__(self, *args, **kwargs):
        t0 = time.perf_counter()
        try:
            return self.fn(*args, **kwargs)
        finally:
            self.seconds += time.perf_counter() - t0


def four_option_bench(ws, folder: Path, n: int) -> str:
    """n four-option items sharing one image (a free model: only the engine and SQLite cost anything)."""
    name = f"four-{n}"
    path = folder / f"{name}.jsonl"
    (folder / "img.png").write_bytes(png_bytes())
    with open(path, "w") as f:
        for i in range(n):
            options = [f"option {j} of item {i}" for j in range(4)]
            f.write(
                json.dumps(
                    {
                        "index": i,
                        "question": f"Which one, {i}?",
                        "options": options,
                        "answer": "ABCD"[i % 4],
                        "image": "img.png",
                    }
                )
            )
            f.write("\n")
    import_benchmark(ws, path, fmt="jsonl", name=name)
    return name


def overhead_run(ws, name: str, engine_class: type[Engine]) -> tuple[int, float, float]:
    """(passes, wall s, engine overhead s) of one baseline:random run at batch size 8."""
    bench = catalog.benchmark_by_name(ws, name)
    backend = load_backend("baseline:random", seed=1)
    settings = RunSettings(seed=1)
    run = new_run(ws, bench, backend.spec, settings, default_template("mcq"), batch_size=8, backend_info={})
    engine = engine_class(ws, run, backend, batch_size=8)
    model = backend.generate = Timed(backend.generate)  # type: ignore[method-assign]
    store = Timed(runs.add_predictions)
    original, runs.add_predictions = runs.add_predictions, store
    try:
        t0 = time.perf_counter()
        engine.execute()
        wall = time.perf_counter() - t0
    finally:
        runs.add_predictions = original
    return engine.passes_stored, wall, wall - model.seconds - store.seconds


def engine_overhead(tmp: Path, sizes: list[int], old_max: int, repeat: int) -> None:
    print(
        f"\nengine overhead, baseline:random, batch 8, four-option items (overhead = wall - model - SQLite; "
        f"best of {repeat}, the machine's other load only adds)"
    )
    print(f"{'items':>7} {'engine':<22} {'passes':>7} {'wall s':>8} {'overhead s':>11} {'µs/pass':>8}")
    walls: dict[tuple[str, int], float] = {}
    for n in sorted(set(sizes) | {5000, 20000}):
        for label, cls in (("counters (now)", Engine), ("full rescan (before)", ScanningEngine)):
            if cls is ScanningEngine and n > old_max:
                continue
            results = []
            for r in range(repeat):  # each run in a workspace of its own: no run pays for another's rows
                with open_workspace(tmp / f"overhead-{n}-{cls.__name__}-{r}.sqlite") as ws:
                    results.append(overhead_run(ws, four_option_bench(ws, tmp, n), cls))
            passes, wall, overhead = min(results, key=lambda r: r[1])
            walls[(label, n)] = wall
            if n in sizes:
                print(f"{n:>7} {label:<22} {passes:>7} {wall:>8.2f} {overhead:>11.2f} {overhead / passes * 1e6:>8.1f}")
    for label in ("counters (now)", "full rescan (before)"):
        if (label, 20000) in walls:
            ratio = walls[(label, 20000)] / walls[(label, 5000)]
            print(f"wall-time ratio 20k / 5k items, {label}: {ratio:.2f} (linear: 4)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--repeat",
        type=int,
        default=3,
        help="runs per configuration; the median (demo) or best (overhead) time is printed",
    )
    ap.add_argument("--sizes", default="1000,10000,40000", help="item counts of the overhead table")
    ap.add_argument("--old-max", type=int, default=10000, help="largest run measured with the old bookkeeping")
    ap.add_argument("--skip-demo", action="store_true", help="only the engine overhead table")
    args = ap.parse_args()
    import torch

    print(
        f"machine: {platform.platform()}, {os.cpu_count()} CPUs, torch {torch.__version__}, "
        f"cuda={torch.cuda.is_available()}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        if not args.skip_demo:
            demo(Path(tmp), args.repeat)
        engine_overhead(Path(tmp), [int(n) for n in args.sizes.split(",")], args.old_max, args.repeat)


def demo(tmp: Path, repeat: int) -> None:
    """Waves + early stop vs all N rotations on the demo benchmark."""
    model_dir = build_tiny_llava(Path(tmp) / "tiny-llava")
    with open_workspace(Path(tmp) / "ws.sqlite") as ws:
        ensure_demo(ws)
        items = catalog.list_items(ws, catalog.benchmark_by_name(ws, "demo").id)
        print(f"benchmark: demo, {len(items)} items, {sum(len(i.options) for i in items)} rotations in all\n")
        print(f"{'model':<16} {'batch':>5} {'schedule':<22} {'calls':>6} {'time s':>8} {'vanilla':>8} {'circular':>9}")
        for name, spec in (("tiny-llava", f"hf:{model_dir}"), ("baseline:random", "baseline:random")):
            backend = load_backend(spec)
            for batch_size in (1, 8):
                rows = {}
                for full in (False, True):
                    times, calls, report = [], 0, None
                    for r in range(repeat):
                        calls, seconds, report = one_run(ws, backend, full_passes=full, batch_size=batch_size, seed=r)
                        times.append(seconds)
                    t = sorted(times)[len(times) // 2]
                    rows[full] = (calls, t)
                    label = "all N rotations" if full else "waves + early stop"
                    print(
                        f"{name:<16} {batch_size:>5} {label:<22} {calls:>6} {t:>8.3f} "
                        f"{report.mcq.overall.vanilla:>8.3f} {report.mcq.overall.circular:>9.3f}"
                    )
                (c0, t0), (c1, t1) = rows[False], rows[True]
                print(f"{'':<16} {'':>5} {'ratio (waves / all)':<22} {c0 / c1:>6.2f} {t0 / t1:>8.2f}\n")


if __name__ == "__main__":
    main()
