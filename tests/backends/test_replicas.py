"""Several replicas of one model behind one run (docs/adr/0032), against scripted servers on 127.0.0.1.

Each server answers a pass with a letter chosen by a hash of the pass's own text, so a run's stored passes can be
compared with a run against one healthy server: a pass stored twice, lost, or given another pass's answer shows.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time

import pytest

from db import open_workspace, runs
from evaluator.backends import load_backend
from evaluator.backends.base import BackendError, Query, ServersDown, texts_of
from evaluator.backends.openai_backend import identity_spec, parse_openai_spec, servers_file, with_servers
from evaluator.formats.importers import import_benchmark
from tests.evaluator.test_runner import write_jsonl_bench
from tests.servers import Step, completion, first_then, free_port
from vlmdesk.cli import main

N_ITEMS = 24


def letter_for(text: str) -> str:
    return "ABCD"[hashlib.sha256(text.encode()).digest()[0] % 4]


@pytest.fixture
def bench_ws(tmp_path):
    path = tmp_path / "ws.sqlite"
    with open_workspace(path) as ws:
        import_benchmark(ws, write_jsonl_bench(tmp_path / "b.jsonl", N_ITEMS, n_options=(4,)), fmt="jsonl", name="b")
    return path


def run_cli(path, model: str, *extra: str) -> tuple[int, str]:
    code = main(["--workspace", str(path), "run", "--bench", "b", "--model", model, "--json", *extra])
    return code, ""


def passes(path, run_id: int) -> list[tuple]:
    with sqlite3.connect(path) as conn:
        return sorted(
            conn.execute(
                "SELECT item_id, pass, prompt, response, choice, correct FROM predictions WHERE run_id = ?", (run_id,)
            ).fetchall()
        )


def last_run(path) -> runs.Run:
    with open_workspace(path) as ws:
        return runs.list_runs(ws)[-1]


def healthy_run(path, serve, capsys) -> list[tuple]:
    server = serve(respond=letter_for)
    assert run_cli(path, f"openai:m@{server.url}?retries=0")[0] == 0
    capsys.readouterr()
    return passes(path, last_run(path).id)


# ---- a run over several replicas -------------------------------------------------------------------------------


def test_a_replica_that_fails_for_a_while_is_set_aside_and_used_again(bench_ws, serve, capsys):
    reference = healthy_run(bench_ws, serve, capsys)
    failing_then_well = first_then(
        6,
        lambda text: Step(503, {"error": {"message": "overloaded"}}),
        lambda text: Step(200, completion(letter_for(text))),
    )

    good = serve(respond=lambda text: Step(200, completion(letter_for(text)), delay=0.1))  # the run lasts a while
    flaky = serve(respond=failing_then_well)
    spec = f"openai:m@{good.url},{flaky.url}?concurrency=3&backoff=0.05"
    assert run_cli(bench_ws, spec)[0] == 0
    capsys.readouterr()
    run = last_run(bench_ws)
    assert run.status == "finished" and run.model_spec == spec
    stored = passes(bench_ws, run.id)
    assert [p[:2] for p in stored] == sorted({p[:2] for p in stored})  # every pass once
    # The same passes and answers as against one healthy server (the prompts and answers include the item's text).
    assert [p[1:] for p in stored] == [p[1:] for p in reference]
    assert flaky.count > 6 + 2  # it came back after its failures and answered again
    assert run.versions["backend"]["replicas"] == [
        {"base_url": good.url, "concurrency": 3},
        {"base_url": flaky.url, "concurrency": 3},
    ]


def test_requests_go_to_the_replica_with_the_fewest_in_flight(serve):
    fast = serve(respond=letter_for)
    slow = serve(respond=lambda text: Step(200, completion(letter_for(text)), delay=0.4))
    backend = parse_openai_spec(f"m@{fast.url},{slow.url}?concurrency=2")
    queries = [Query(f"question {i}") for i in range(20)]
    assert texts_of(backend.generate(queries, 2)) == [letter_for(q.prompt) for q in queries]
    assert slow.max_in_flight <= 2 and fast.max_in_flight <= 2
    assert fast.count > slow.count  # the slow replica keeps its requests longer, so it is sent fewer


def test_a_dripping_replica_times_out_in_wall_time_and_its_request_goes_to_another(serve):
    drip = serve([Step(200, completion("A"), drip=0.5)])  # headers at once, then a byte every 0.5 s
    good = serve(respond=letter_for)
    backend = parse_openai_spec(f"m@{drip.url},{good.url}?concurrency=1&timeout=3&backoff=30")
    started = time.monotonic()
    assert texts_of(backend.generate([Query("q0"), Query("q1")], 2)) == [letter_for("q0"), letter_for("q1")]
    took = time.monotonic() - started
    assert 3.0 <= took < 5.0  # one request waited its 3 s deadline, then went to the good replica at once
    assert drip.count == 1 and good.count == 2


def test_retry_after_sets_a_replica_aside_for_that_long(serve):
    limited = serve([Step(429, {"error": {"message": "slow down"}}, {"Retry-After": "30"})])
    good = serve(respond=letter_for)
    backend = parse_openai_spec(f"m@{limited.url},{good.url}?concurrency=1")
    told = []
    backend.on_wait = told.append
    queries = [Query(f"q{i}") for i in range(6)]
    started = time.monotonic()
    assert texts_of(backend.generate(queries, 2)) == [letter_for(q.prompt) for q in queries]
    assert time.monotonic() - started < 10  # nobody waited the 30 s: the other replica answered meanwhile
    assert limited.count == 1 and good.count == 6
    assert [(w.server, w.retry_after_s, w.wait_s) for w in told] == [(limited.url, 30.0, 0.0)]


def test_every_replica_down_stops_the_run_as_interrupted_and_it_resumes_exactly(bench_ws, serve, capsys):
    reference = healthy_run(bench_ws, serve, capsys)
    some_then_down = first_then(10, letter_for, lambda text: Step(503, {"error": {"message": "down"}}))

    a, b = serve(respond=some_then_down), serve(respond=some_then_down)
    spec = f"openai:m@{a.url},{b.url}?concurrency=2&retries=2&backoff=0.01"
    code, _ = run_cli(bench_ws, spec)
    err = capsys.readouterr().err
    run = last_run(bench_ws)
    assert code == 1 and run.status == "interrupted"
    line = err.strip().splitlines()[-1]
    assert line.startswith(f"run {run.id} interrupted: openai: no server answers for model 'm'")
    assert a.url in line and b.url in line and line.endswith(f"continue with: vlmdesk run --resume {run.id}")
    assert len(passes(bench_ws, run.id)) == 10  # every answer that came back was kept

    # The same model served by another replica is the same run: asked again, it continues from its 10 passes.
    c = serve(respond=letter_for)
    before = c.count
    assert run_cli(bench_ws, f"openai:m@{c.url},{free_url()}?concurrency=2&retries=2&backoff=0.01")[0] == 0
    assert json.loads(capsys.readouterr().out)["run_id"] == run.id
    assert last_run(bench_ws).status == "finished"
    stored = passes(bench_ws, run.id)
    assert [p[1:] for p in stored] == [p[1:] for p in reference]
    assert c.count - before == len(stored) - 10  # only the passes not stored were asked


def free_url() -> str:
    return f"http://127.0.0.1:{free_port()}/v1"  # nobody listens there


def test_one_server_out_of_retries_is_servers_down_saying_the_last_error():
    backend = parse_openai_spec(f"m@{free_url()}?retries=1&backoff=0")
    with pytest.raises(ServersDown, match=r"after 2 attempts; last error: connection error"):
        backend.generate([Query("q")], 2)


# ---- specs, identity and the servers file ----------------------------------------------------------------------


def test_replica_specs_round_trip_and_are_checked():
    spec = "m@http://a:8000/v1,http://b:8000/v1?concurrency=32,16"
    backend = parse_openai_spec(spec)
    assert backend.base_urls == ("http://a:8000/v1", "http://b:8000/v1") and backend.concurrencies == (32, 16)
    assert backend.concurrency == 48 and backend.spec == f"openai:{spec}"
    assert parse_openai_spec("m@http://a/v1,http://b/v1?concurrency=4").concurrencies == (4, 4)
    with pytest.raises(BackendError, match="concurrency names 3 values for 2 base URLs"):
        parse_openai_spec("m@http://a/v1,http://b/v1?concurrency=1,2,3")
    with pytest.raises(BackendError, match="a base URL is named twice"):
        parse_openai_spec("m@http://a/v1,http://a/v1")
    with pytest.raises(BackendError, match="concurrency must be at most 1024"):
        parse_openai_spec("m@http://a/v1,http://b/v1?concurrency=1,5000")
    with pytest.raises(BackendError, match="at most 64 base URLs"):
        parse_openai_spec("m@" + ",".join(f"http://h{i}/v1" for i in range(65)))


def test_replicas_do_not_name_the_run_but_one_server_still_does():
    two = identity_spec("m@http://a/v1,http://b/v1?concurrency=8&temperature=0.5")
    three = identity_spec("m@http://c/v1,http://d/v1,http://e/v1?concurrency=4,4,2&temperature=0.5")
    assert two == three == "m@replicas?temperature=0.5"
    assert identity_spec("m@http://a/v1?concurrency=8") == "m@http://a/v1?concurrency=8"  # as stored runs have it
    assert identity_spec("m@http://a/v1,http://b/v1") != identity_spec("other@http://a/v1,http://b/v1")


def test_a_servers_file_names_replicas_and_their_concurrency(tmp_path):
    path = tmp_path / "servers.txt"
    path.write_text("# the cluster\nhttp://node1:8000/v1 32\n\nhttp://node2:8000/v1/   # default concurrency\n")
    assert servers_file(str(path)) == (("http://node1:8000/v1", "http://node2:8000/v1"), (32, None))
    spec = with_servers("openai:qwen?concurrency=16&timeout=30", str(path))
    assert spec == "openai:qwen@http://node1:8000/v1,http://node2:8000/v1?concurrency=32,16&timeout=30"
    assert load_backend(spec).describe()["concurrency"] == 48


@pytest.mark.parametrize(
    "text, match",
    [
        ("node1:8000/v1\n", r"servers.txt:1: url: a base URL starting with http:// or https://"),
        ("http://a/v1 8\nhttp://b/v1 zero\n", r"servers.txt:2: concurrency must be a whole number, got 'zero'"),
        ("http://a/v1 8 9\n", r"servers.txt:1: expected a base URL and at most a concurrency, got 3 fields"),
        ("# nothing\n\n", r"servers.txt: the servers file names no server"),
        ("http://a/v1 0\n", r"servers.txt:1: concurrency must be at least 1, got 0"),
    ],
)
def test_a_bad_servers_file_is_one_line_naming_file_and_line(tmp_path, text, match):
    path = tmp_path / "servers.txt"
    path.write_text(text)
    with pytest.raises(BackendError, match=match):
        servers_file(str(path))


def test_a_servers_file_is_read_bounded(tmp_path):
    path = tmp_path / "servers.txt"
    path.write_bytes(b"http://a/v1\n" * 10_000)
    with pytest.raises(BackendError, match="a servers file is at most 64 KiB"):
        servers_file(str(path))
    path.write_bytes(b"\xff\xfe http://a/v1\n")
    with pytest.raises(BackendError, match="not UTF-8"):
        servers_file(str(path))


def test_run_servers_file_through_the_command(bench_ws, serve, tmp_path, capsys):
    a, b = serve(respond=letter_for), serve(respond=letter_for)
    listing = tmp_path / "servers.txt"
    listing.write_text(f"{a.url} 2\n{b.url} 3\n")
    code = main(["--workspace", str(bench_ws), "run", "--bench", "b", "--model", "openai:m", "--servers", str(listing)])
    assert code == 0
    capsys.readouterr()
    run = last_run(bench_ws)
    assert run.model_spec == f"openai:m@{a.url},{b.url}?concurrency=2,3" and run.status == "finished"
    assert a.count > 0 and b.count > 0
    bad = tmp_path / "bad.txt"
    bad.write_text("ftp://x\n")
    code = main(["--workspace", str(bench_ws), "run", "--bench", "b", "--model", "openai:m", "--servers", str(bad)])
    assert code == 2 and "bad.txt:1: url:" in capsys.readouterr().err


# ---- token usage --------------------------------------------------------------------------------------------------


def test_the_tokens_a_server_reports_are_stored_per_pass_and_summed(bench_ws, serve, capsys):
    def with_usage(text):
        body = completion(letter_for(text))
        body["usage"] = {"prompt_tokens": len(text.split()), "completion_tokens": 1, "total_tokens": 0}
        return Step(200, body)

    server = serve(respond=with_usage)
    assert run_cli(bench_ws, f"openai:m@{server.url}")[0] == 0
    capsys.readouterr()
    run = last_run(bench_ws)
    with open_workspace(bench_ws) as ws:
        stored = runs.predictions_of(ws, run.id)
        usage = runs.token_usage(ws, run.id)
    assert all(p.prompt_tokens and p.prompt_tokens > 5 and p.completion_tokens == 1 for p in stored)
    assert (usage.passes, usage.prompt, usage.completion) == (
        len(stored),
        sum(p.prompt_tokens or 0 for p in stored),
        len(stored),
    )
    assert main(["--workspace", str(bench_ws), "report", str(run.id)]) == 0
    assert f"tokens {usage.prompt:,} prompt + {len(stored):,} completion over {len(stored)} passes" in (
        capsys.readouterr().out
    )


@pytest.mark.parametrize(
    "usage",
    [{"prompt_tokens": -1, "completion_tokens": 2**41}, {"prompt_tokens": "12", "completion_tokens": True}, "lots", []],
)
def test_hostile_usage_is_not_believed(serve, usage):
    body = completion("A")
    body["usage"] = usage
    server = serve([Step(200, body)])
    stream = parse_openai_spec(f"m@{server.url}").open_stream(2)
    try:
        stream.send(0, Query("q"))
        deadline = time.monotonic() + 10
        got = []
        while not got and time.monotonic() < deadline:
            got = stream.answers(0.5)
    finally:
        stream.close()
    assert [(a.key, a.text, a.usage) for a in got] == [(0, "A", None)]


# ---- replicas in processes of their own: one killed, one slowed -------------------------------------------------


def test_a_replica_killed_mid_run_and_another_slowed_store_every_pass_once_with_a_healthy_runs_scores(bench_ws, capsys):
    from tests.server_process import ServerProcess

    with ServerProcess(latency_ms=0, answer="hash") as healthy:
        assert run_cli(bench_ws, f"openai:m@{healthy.url}?retries=0")[0] == 0
    capsys.readouterr()
    reference = passes(bench_ws, last_run(bench_ws).id)

    with (
        ServerProcess(latency_ms=60, answer="hash", seed=1) as doomed,
        ServerProcess(latency_ms=20, answer="hash", seed=2, slow_after=2, slow_ms=300) as slowed,
        ServerProcess(latency_ms=20, answer="hash", seed=3) as steady,
    ):
        killer = threading.Thread(target=lambda: (wait_for_requests(doomed, 8), doomed.kill()), daemon=True)
        killer.start()
        spec = f"openai:m@{doomed.url},{slowed.url},{steady.url}?concurrency=4&backoff=0.2"
        assert run_cli(bench_ws, spec)[0] == 0
        killer.join(timeout=10)
        assert doomed.proc.poll() is not None  # it was killed while the run went on
        served = slowed.stats()["requests"], steady.stats()["requests"]
    capsys.readouterr()
    run = last_run(bench_ws)
    stored = passes(bench_ws, run.id)
    assert run.status == "finished"
    assert [p[:2] for p in stored] == sorted({p[:2] for p in stored})  # every pass stored exactly once
    assert [p[1:] for p in stored] == [p[1:] for p in reference]  # the answers and scores of the healthy run
    assert 2 < served[0] < served[1]  # the slowed replica (its third answer on) was sent fewer than the steady one


def wait_for_requests(server, n: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while server.stats()["requests"] < n and time.monotonic() < deadline:
        time.sleep(0.02)


# ---- kill -9 of a streamed run ------------------------------------------------------------------------------------


def test_a_streamed_run_killed_loses_at_most_the_passes_in_flight_and_resumes_asking_exactly_those(bench_ws):
    import signal
    import subprocess
    import sys

    from tests.server_process import ServerProcess

    with ServerProcess(latency_ms=250, answer="hash") as server:
        spec = f"openai:m@{server.url}?concurrency=4"
        cmd = [sys.executable, "-m", "vlmdesk", "--workspace", str(bench_ws), "run", "--bench", "b", "--model", spec]
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 60
            while stored_count(bench_ws) < 12 and time.monotonic() < deadline:
                time.sleep(0.05)
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
        asked, kept = server.stats()["requests"], stored_count(bench_ws)
        # Lost: the requests in flight (4) and the answers of the last quarter second not yet committed (≤ 4 at 16/s).
        assert 12 <= kept and asked - kept <= 8, (asked, kept)
        server.reset()
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        total = stored_count(bench_ws)
        assert server.stats()["requests"] == total - kept  # the resume asked exactly the passes not stored
    run = last_run(bench_ws)
    assert run.status == "finished" and len({p[:2] for p in passes(bench_ws, run.id)}) == total


def stored_count(path) -> int:
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT count(*) FROM predictions").fetchone()[0]


def test_a_servers_file_that_is_a_fifo_or_the_open_workspace_is_refused_without_opening_it(bench_ws, tmp_path):
    import os

    fifo = tmp_path / "servers.fifo"
    os.mkfifo(fifo)
    with pytest.raises(BackendError, match=r"servers.fifo: cannot read the servers file: is a FIFO"):
        servers_file(str(fifo))  # never opened: a FIFO with no writer would block the command
    with open_workspace(bench_ws) as ws:
        with pytest.raises(BackendError, match="is the workspace this command has open"):
            servers_file(str(bench_ws))
        assert ws.hold_lost() is None  # its locks are still held
