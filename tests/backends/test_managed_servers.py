"""Servers vlmdesk starts, feeds and stops (evaluator/backends/managed.py, docs/adr/0053).

`vllm:` and `sglang:` build their documented command lines, refuse bad specs in one line without starting anything,
and name a run by its model and answer-changing settings only. The lifecycle — start, wait for /v1/models, a real
run through the engine's stream, stop; the server killed mid-run, the run interrupted naming the log, run again and
finished asking only what was missing — runs end to end with `transformers serve` of a tiny random LLaVA standing in
for the server command (tests/managed_plugins.py registers it as `tserve:` through the same Recipe machinery)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest

from db import open_workspace, runs
from db.catalog import benchmark_by_name
from db.platform_io import pid_alive
from evaluator.backends import BackendError, check_spec, load_backend, run_identity
from evaluator.backends.base import ServersDown
from evaluator.backends.managed import SGLANG, VLLM, parse
from evaluator.engine.launch import prepare_run, run_or_resume, server_logs
from evaluator.engine.prompts import default_template
from evaluator.engine.runner import RunSettings
from evaluator.formats.importers import import_benchmark
from tests.evaluator.test_runner import write_jsonl_bench
from tests.managed_plugins import tserve  # noqa: F401  (a fixture)

# ---- command lines ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "recipe, rest, expected",
    [
        (VLLM, "Qwen/Qwen2.5-VL-3B-Instruct", "vllm serve Qwen/Qwen2.5-VL-3B-Instruct --host 127.0.0.1 --port 8123"),
        (
            VLLM,
            "Qwen/Qwen3-VL-8B-Instruct?tp=2&dp=2&max_model_len=32768&reasoning_parser=qwen3",
            "vllm serve Qwen/Qwen3-VL-8B-Instruct --host 127.0.0.1 --port 8123 --tensor-parallel-size 2 "
            "--data-parallel-size 2 --max-model-len 32768 --reasoning-parser qwen3",
        ),
        (
            VLLM,
            "/models/internvl?gpu_memory_utilization=0.85&dtype=bfloat16&max_images=4&trust_remote_code=1"
            "&served_model_name=iv&extra_args=--enable-prefix-caching --kv-cache-dtype fp8&temperature=0.6",
            "vllm serve /models/internvl --host 127.0.0.1 --port 8123 --served-model-name iv "
            "--gpu-memory-utilization 0.85 --dtype bfloat16 --limit-mm-per-prompt '{\"image\": 4}' "
            "--trust-remote-code --enable-prefix-caching --kv-cache-dtype fp8",
        ),
        (
            SGLANG,
            "Qwen/Qwen3-VL-8B-Instruct?tp=2&dp=2&max_model_len=32768&reasoning_parser=qwen3",
            "PY -m sglang.launch_server --model-path Qwen/Qwen3-VL-8B-Instruct --host 127.0.0.1 --port 8123 "
            "--tp-size 2 --dp-size 2 --context-length 32768 --reasoning-parser qwen3",
        ),
        (
            SGLANG,
            "m?gpu_memory_utilization=0.7&dtype=half&quantization=fp8&trust_remote_code=1",
            "PY -m sglang.launch_server --model-path m --host 127.0.0.1 --port 8123 --mem-fraction-static 0.7 "
            "--dtype half --quantization fp8 --trust-remote-code",
        ),
        # dtype=auto is the default: left out; trust_remote_code=0 is the switch off
        (VLLM, "m?dtype=auto&trust_remote_code=0", "vllm serve m --host 127.0.0.1 --port 8123"),
    ],
)
def test_documented_command_lines(recipe, rest, expected):
    program = "vllm" if recipe is VLLM else "PY"
    import shlex

    assert shlex.join(recipe.command(parse(recipe, rest), program, 8123)) == expected


@pytest.mark.parametrize(
    "spec, match",
    [
        ("vllm:?tp=2", "a model is required"),
        ("vllm:m?tp=0", "tp must be in 1..512, got 0"),
        ("vllm:m?tp=two", "tp must be a whole number"),
        ("vllm:m?gpu_memory_utilization=1.5", "gpu_memory_utilization must be in 0.05..1"),
        ("vllm:m?dtype=fp3", "dtype must be one of auto, half"),
        ("vllm:m?reasoning_parser=qwen3;rm", "reasoning_parser must be a name"),
        ("vllm:m?tp=1&tp=2", "'tp' is given twice"),
        ("vllm:m?trust_remote_code=yes", "trust_remote_code is a switch"),
        ("vllm:m?extra_args=--port 9", "--port is vlmdesk's to set"),
        ("vllm:m?extra_args=--api-key=abc", "--api-key is vlmdesk's to set"),
        ("vllm:m?extra_args='unclosed", "cannot split"),
        ("vllm:m?startup_timeout=0", "startup_timeout must be in 1..604800"),
        ("vllm:--help", "not starting with '-'"),
        ("vllm:m@http://node1:8000/v1", "for a server already running use openai:"),
        ("sglang:m?max_images=4", "'max_images' is not one sglang: takes"),
        ("vllm:m?colour=red", "vllm: unknown option 'colour'"),  # an unknown option is the openai: backend's
        ("vllm:m?temperature=9", "vllm: temperature must be at most 2"),
        ("sglang:m?concurrency=0", "sglang: concurrency must be at least 1"),
    ],
)
def test_bad_specs_are_refused_in_one_line_and_nothing_starts(spec, match, tmp_path):
    with pytest.raises(BackendError, match=match) as err:
        check_spec(spec)
    assert "\n" not in str(err.value)
    with pytest.raises(BackendError, match=match):  # loading checks it the same way, before starting anything
        load_backend(spec, log_dir=tmp_path / "logs")
    assert not (tmp_path / "logs").exists()


def test_a_run_is_named_by_the_model_and_what_changes_answers():
    base = "vllm:Qwen/Qwen3-VL-8B-Instruct?max_model_len=32768&reasoning_parser=qwen3&temperature=0.6"
    same = [
        base + "&tp=2&dp=2&concurrency=128&timeout=3000&gpu_memory_utilization=0.8&startup_timeout=60&bin=/opt/vllm",
        "vllm:Qwen/Qwen3-VL-8B-Instruct?temperature=0.6&tp=8&reasoning_parser=qwen3&max_model_len=32768&dtype=auto",
    ]
    assert {run_identity(s) for s in same} == {run_identity(base)}
    assert run_identity(base) == (
        "vllm:Qwen/Qwen3-VL-8B-Instruct?max_model_len=32768&reasoning_parser=qwen3&temperature=0.6"
    )
    differ = [
        base.replace("qwen3", "deepseek_r1"),
        base.replace("32768", "8192"),
        base.replace("0.6", "0.7"),
        base + "&dtype=float16",
        base + "&extra_args=--kv-cache-dtype fp8",
        base.replace("vllm:", "sglang:"),
    ]
    assert len({run_identity(s) for s in [base, *differ]}) == 1 + len(differ)


def test_a_missing_server_program_is_one_line_saying_what_to_install(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no vllm on it
    with pytest.raises(BackendError, match=r"vllm: the 'vllm' command is not on PATH; install it \(pip install vllm\)"):
        load_backend("vllm:Qwen/Qwen2.5-VL-3B-Instruct", log_dir=tmp_path / "logs")
    # SGLang runs as `PYTHON -m sglang.launch_server`: a Python without it is found by asking its version
    python = tmp_path / "python"
    python.write_text("#!/bin/sh\necho 'No module named sglang' >&2\nexit 1\n")
    python.chmod(0o755)
    with pytest.raises(BackendError, match=r"sglang: .* not installed there \(pip install \"sglang\[all\]\"\)") as err:
        load_backend(f"sglang:m?bin={python}", log_dir=tmp_path / "logs")
    assert "\n" not in str(err.value)
    assert not (tmp_path / "logs").exists()  # nothing was started


# ---- the lifecycle, with transformers serve standing in -----------------------------------------------------------


@pytest.fixture
def bench_ws(tmp_path):
    path = tmp_path / "ws.sqlite"
    with open_workspace(path) as ws:
        import_benchmark(ws, write_jsonl_bench(tmp_path / "b.jsonl", 16), fmt="jsonl", name="b")
    return path


def _launch(ws, spec: str):
    return prepare_run(
        ws, benchmark_by_name(ws, "b"), spec, RunSettings(max_new_tokens=4), default_template("mcq"), batch_size=None
    )


def test_a_server_that_exits_before_answering_fails_at_once_with_its_last_lines(tserve, tmp_path):
    with pytest.raises(BackendError) as err:
        load_backend(f"tserve:{tmp_path / 'no-such-model'}", log_dir=tmp_path / "logs")
    message = str(err.value)
    assert "\n" not in message
    assert "tserve server (pid " in message and "before it answered; its log: " in message
    log = next((tmp_path / "logs").iterdir())
    assert str(log) in message
    assert "transformers.cli.transformers serve" in log.read_text()  # the command line, then the server's output


def test_start_run_stop_then_killed_mid_run_is_interrupted_and_resumed(tserve, tiny_llava_dir, bench_ws):
    spec = f"tserve:{tiny_llava_dir}?concurrency=1"
    with open_workspace(bench_ws) as ws:
        # 1. started, fed, stopped: a real run through the engine's stream
        launch = _launch(ws, f"tserve:{tiny_llava_dir}?concurrency=4&temperature=0")
        server = launch.backend.backend.server
        assert pid_alive(server.pid)
        engine = run_or_resume(ws, launch)
        assert runs.get_run(ws, launch.run.id).status == "finished"
        assert engine.calls > 0 and engine.passes_stored == engine.calls
        assert server.exited() is not None and not pid_alive(server.pid)  # stopped with the run
        stored_info = runs.get_run(ws, launch.run.id).versions["backend"]  # the server's version and argv
        assert stored_info["backend"] == "tserve" and stored_info["server"]["pid"] == server.pid
        assert stored_info["server"]["version"] == __import__("transformers").__version__
        assert stored_info["server"]["argv"][1:4] == ["-m", "transformers.cli.transformers", "serve"]

        # 2. another run (another temperature: another identity), its server SIGKILLed while the run streams
        launch = _launch(ws, spec + "&temperature=0.5")
        first = launch.backend.backend.server
        log_path = first.log.path
        assert log_path.parent == server_logs(ws)

        def kill_once(event):
            if pid_alive(first.pid) and getattr(event, "passes_done", 0) >= 1:
                os.kill(first.pid, signal.SIGKILL)

        with pytest.raises(ServersDown) as err:
            run_or_resume(ws, launch, on_progress=kill_once)
        run = runs.get_run(ws, launch.run.id)
        assert run.status == "interrupted"
        assert "\n" not in run.error and str(log_path) in run.error and "killed by signal 9" in run.error
        assert str(log_path) in str(err.value)
        stored = run.predictions
        assert 0 < stored

        # 3. run again: a fresh server, the same run resumed, only what is missing asked
        again = _launch(ws, spec + "&temperature=0.5")
        assert again.run.id == launch.run.id and again.resumed
        second = again.backend.backend.server
        assert second.pid != first.pid and second.port
        engine = run_or_resume(ws, again)
        run = runs.get_run(ws, again.run.id)
        assert run.status == "finished"
        assert engine.calls == run.predictions - stored  # nothing asked twice
        assert not pid_alive(second.pid)


def test_a_vlmdesk_ended_by_sigterm_while_waiting_leaves_no_server(tserve, tiny_llava_dir, tmp_path):
    # The server is asked to start with a deadline far away; vlmdesk gets SIGTERM while it waits: the server's whole
    # process group is gone afterwards.
    script = textwrap.dedent(
        f"""
        import os, sys, time
        os.environ["VLMDESK_PLUGINS"] = "tests.managed_plugins"
        from evaluator.backends.managed import ManagedServer
        original = ManagedServer.wait_ready
        def announce(self, deadline_s):
            print(self.pid, flush=True)
            return original(self, deadline_s)
        ManagedServer.wait_ready = announce
        from evaluator.backends import load_backend
        backend = load_backend("tserve:{tiny_llava_dir}", log_dir={str(tmp_path / "logs")!r})
        print("ready", flush=True)
        time.sleep(600)
        """
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", script],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    try:
        pid = int(proc.stdout.readline())
        assert pid_alive(pid)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) != 0
        with pytest.raises(ProcessLookupError):
            os.killpg(pid, 0)  # no process of the server's group is left
    finally:
        if proc.poll() is None:
            proc.kill()
