"""CircularEval cost: wave-scheduled early termination (vlmdesk) vs all N rotations of every item (VLMEvalKit).

On the demo benchmark, with a tiny random-weight LLaVA loaded through the same hf: path a 7B model uses, and with
the seeded random baseline (whose answers survive a pass about 1/N of the time, like a weak model), at batch size 1
and 8. Prints model calls and wall time of both schedules and their ratios.

    python bench/circular_bench.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from db import catalog, open_workspace  # noqa: E402
from evaluator.backends import load_backend  # noqa: E402
from evaluator.prompts import default_template  # noqa: E402
from evaluator.report import run_report  # noqa: E402
from evaluator.runner import Engine, RunSettings, new_run  # noqa: E402
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3, help="runs per configuration; the median time is printed")
    args = ap.parse_args()
    import torch

    print(
        f"machine: {platform.platform()}, {os.cpu_count()} CPUs, torch {torch.__version__}, "
        f"cuda={torch.cuda.is_available()}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = build_tiny_llava(Path(tmp) / "tiny-llava")
        with open_workspace(Path(tmp) / "ws.sqlite") as ws:
            ensure_demo(ws)
            items = catalog.list_items(ws, catalog.benchmark_by_name(ws, "demo").id)
            print(f"benchmark: demo, {len(items)} items, {sum(len(i.options) for i in items)} rotations in all\n")
            print(
                f"{'model':<16} {'batch':>5} {'schedule':<22} {'calls':>6} {'time s':>8} {'vanilla':>8} {'circular':>9}"
            )
            for name, spec in (("tiny-llava", f"hf:{model_dir}"), ("baseline:random", "baseline:random")):
                backend = load_backend(spec)
                for batch_size in (1, 8):
                    rows = {}
                    for full in (False, True):
                        times, calls, report = [], 0, None
                        for r in range(args.repeat):
                            calls, seconds, report = one_run(
                                ws, backend, full_passes=full, batch_size=batch_size, seed=r
                            )
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
