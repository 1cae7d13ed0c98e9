"""A one-command GPU check of `vllm:` (issue 36, docs/adr/0053): vlmdesk starts a real vLLM server, runs a small
benchmark through it, stops it; then kills the server in the middle of a second run and resumes that run.

    python bench/vllm_gpu_check.py                                     # Qwen/Qwen2.5-VL-3B-Instruct (hub or cache)
    python bench/vllm_gpu_check.py --model /models/Qwen2.5-VL-3B-Instruct --options max_model_len=8192
    python bench/vllm_gpu_check.py --model /models/qwen3-vl --options reasoning_parser=qwen3

Needs a GPU, vLLM installed (`pip install vllm`, the `vllm` command on PATH) and the model's weights (a hub name
downloads them; a folder is used as is). Under 10 minutes for a 3B model on one H100 (two server starts, each some
1–2 minutes with CUDA graphs; `--options extra_args=--enforce-eager` starts faster). Prints, each on one line: the
server's version and command line, its startup time, the run's wall time, passes per second, accuracy and tokens,
that the server is gone after the run, and the interrupted-then-resumed run's figures (passes asked again: 0). It
exits 1 when a check fails. Everything is written to a temporary workspace, removed at the end (--keep DIR keeps it).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def vlmdesk(ws: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "vlmdesk", "--workspace", str(ws), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )


def stored(ws: Path, run_id: int) -> dict:
    sys.path.insert(0, str(ROOT))
    from db import open_workspace, runs

    with open_workspace(ws, create=False) as w:
        run = runs.get_run(w, run_id)
        return {"status": run.status, "predictions": run.predictions, "error": run.error, "info": run.versions}


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="Qwen/Qwen2.5-VL-3B-Instruct", help="a hub name or a local folder")
    parser.add_argument("--options", default="max_model_len=8192", help="more vllm: spec options, a&b=c form")
    parser.add_argument("--keep", type=Path, help="keep the workspace and server logs in this folder")
    args = parser.parse_args()
    if shutil.which("vllm") is None:
        print("vllm_gpu_check: the `vllm` command is not on PATH (pip install vllm); nothing was run", file=sys.stderr)
        return 2
    folder = Path(args.keep or tempfile.mkdtemp(prefix="vllm-check-"))
    folder.mkdir(parents=True, exist_ok=True)
    ws = folder / "ws.sqlite"
    failed: list[str] = []
    try:
        done = vlmdesk(ws, "demo")
        if done.returncode != 0:
            print(f"vlmdesk demo failed: {done.stderr.strip()[-500:]}", file=sys.stderr)
            return 1
        spec = f"vllm:{args.model}?{args.options}" if args.options else f"vllm:{args.model}"

        # 1. start, run, stop: the demo's 30 multiple-choice items (CircularEval)
        t0 = time.monotonic()
        done = vlmdesk(ws, "run", "--bench", "demo", "--model", spec, "--json")
        wall = time.monotonic() - t0
        if done.returncode != 0:
            print(f"run 1 failed: {done.stderr.strip()[-800:]}", file=sys.stderr)
            return 1
        run_id = json.loads(done.stdout.strip().splitlines()[-1])["run_id"]
        run = stored(ws, run_id)
        server = run["info"]["backend"]["server"]
        print(f"vLLM {server['version']}: {' '.join(server['argv'])}")
        report = json.loads(vlmdesk(ws, "report", str(run_id), "--json").stdout)
        passes = run["predictions"]
        print(f"run {run_id}: {run['status']}, {passes} passes in {wall:.1f} s wall (server start included)")
        shown = {k: report.get(k) for k in ("overall", "tokens", "truncation", "model_calls")}
        print(f"run {run_id} report: {json.dumps(shown)[:800]}")
        gone = not alive(server["pid"])
        print(f"server pid {server['pid']} gone after the run: {gone}")
        if run["status"] != "finished" or not gone:
            failed.append("run 1 did not finish, or its server is still running")

        # 2. the server killed mid-run (demo-pope, 48 yes/no items at concurrency 4), then the run resumed
        slow = f"{spec}&concurrency=4" if "?" in spec else f"{spec}?concurrency=4"
        proc = subprocess.Popen(
            [sys.executable, "-m", "vlmdesk", "--workspace", str(ws), "run", "--bench", "demo-pope"]
            + ["--model", slow, "--json-progress"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        killed: dict[str, int] = {}

        def kill_after_first_progress() -> None:
            assert proc.stdout is not None
            for line in proc.stdout:
                event = json.loads(line)
                if event.get("event") == "progress" and event.get("passes_done", 0) >= 4 and not killed:
                    pid = server_pid(ws, event["run_id"])
                    os.kill(pid, signal.SIGKILL)
                    killed.update(pid=pid, run=event["run_id"], at=event["passes_done"])

        reader = threading.Thread(target=kill_after_first_progress, daemon=True)
        reader.start()
        proc.wait(timeout=900)
        reader.join(timeout=5)
        err = proc.stderr.read() if proc.stderr else ""
        if not killed:
            failed.append("run 2 finished before its server could be killed")
        else:
            first = stored(ws, killed["run"])
            print(f"run {killed['run']} after SIGKILL of pid {killed['pid']}: {first['status']}: {first['error']}")
            print(f"  vlmdesk said: {err.strip().splitlines()[-1] if err.strip() else '(nothing)'}")
            t0 = time.monotonic()
            vlmdesk(ws, "run", "--resume", str(killed["run"]), "--json")
            final = stored(ws, killed["run"])
            print(
                f"run {killed['run']} resumed: {final['status']}, {first['predictions']} passes kept, "
                f"{final['predictions'] - first['predictions']} asked in {time.monotonic() - t0:.1f} s"
            )
            if first["status"] != "interrupted" or final["status"] != "finished":
                failed.append("run 2 was not interrupted then finished")
            left = [p for p in Path("/proc").iterdir() if p.name.isdigit() and _serves(p, args.model)]
            print(f"vLLM servers of this model left running: {len(left)}")
            if left:
                failed.append("a server is still running after the resumed run")
    finally:
        if args.keep is None:
            shutil.rmtree(folder, ignore_errors=True)
    for line in failed:
        print(f"FAILED: {line}")
    return 1 if failed else 0


def _serves(proc: Path, model: str) -> bool:
    """Whether /proc/PID is a `vllm serve MODEL` process."""
    try:
        argv = (proc / "cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return b"serve" in argv and model.encode() in argv and any(a.endswith(b"vllm") for a in argv[:2])


def server_pid(ws: Path, run_id: int) -> int:
    """The pid of the server serving a run now (stored with the run when it started)."""
    return int(stored(ws, run_id)["info"]["backend"]["server"]["pid"])


if __name__ == "__main__":
    sys.exit(main())
