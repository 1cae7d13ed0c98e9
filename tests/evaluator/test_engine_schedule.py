"""The engine's scheduling: counters kept incrementally, chunked waves, call sizes, resume — on real workspaces.

Every run here is checked against the definitions: the counters against a full recount of the stored passes, and
the stored passes of a chunked, interrupted and resumed run against one plain run of the same answers.
"""

from __future__ import annotations

import hashlib
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from db import catalog, open_workspace, runs
from evaluator.backends.base import BackendError, call_size, chunk_items
from evaluator.engine.prompts import default_template
from evaluator.engine.runner import Engine, RunSettings, new_run
from evaluator.formats.importers import import_benchmark
from evaluator.scoring.choices import passes_needed, still_alive
from tests.backend_plugins import slow_backend  # noqa: F401 (fixture)
from tests.evaluator.test_runner import write_jsonl_bench
from vlmdesk.cli import main


class Stop(Exception):
    """Raised by the scripted backend to interrupt a run between two stored calls."""


class Scripted:
    """Answers each prompt with a letter (or a non-answer) picked by a hash of the prompt and a salt, so answers
    depend on the query only; optionally chunked, with a call size, and stopping after `stop_after` calls."""

    def __init__(self, salt: int, *, chunk: int | None = None, factor: int = 1, stop_after: int | None = None):
        self.spec = f"scripted:{salt}"
        self.salt, self.chunk_items, self.factor, self.stop_after = salt, chunk, factor, stop_after
        self.calls: list[list[str]] = []  # the prompts of each call, in order

    def call_size(self, batch_size: int) -> int:
        return batch_size * self.factor

    def generate(self, queries, max_new_tokens):
        if self.stop_after is not None and len(self.calls) >= self.stop_after:
            raise Stop()
        self.calls.append([q.prompt for q in queries])
        out = []
        for q in queries:
            h = int.from_bytes(hashlib.sha256(f"{self.salt}|{q.prompt}".encode()).digest()[:4], "big")
            # Right about half of the time on 4 options: most items end early, a few live to the end.
            out.append("I cannot tell." if h % 7 == 0 else q.letters[h % len(q.letters)])
        return out

    def describe(self):
        return {"backend": "scripted"}


@pytest.fixture(scope="module")
def sched_ws(tmp_path_factory):
    """13 items of 2–4 options, some without an answer key (asked to the end)."""
    folder = tmp_path_factory.mktemp("sched")
    src = write_jsonl_bench(folder / "b.jsonl", 10, n_options=(2, 3, 4))
    src2 = write_jsonl_bench(folder / "n.jsonl", 3, n_options=(3, 4), with_answers=False)
    with open(src, "a") as f, open(src2) as g:  # one benchmark: the keyless items get indices 100…
        for line in g:
            rec = json.loads(line)
            f.write(json.dumps({**rec, "index": 100 + rec["index"]}) + "\n")
    path = folder / "ws.sqlite"
    with open_workspace(path) as ws:
        import_benchmark(ws, src, fmt="jsonl", name="b")
    return path


def _engine(ws, backend, settings: RunSettings, batch_size: int, run=None, on_progress=None) -> Engine:
    if run is None:
        bench = catalog.benchmark_by_name(ws, "b")
        run = new_run(
            ws, bench, backend.spec, settings, default_template("mcq"), batch_size=batch_size, backend_info={}
        )
    return Engine(ws, run, backend, batch_size=batch_size, on_progress=on_progress)


def recount(engine: Engine) -> tuple[int, int, int]:
    """(passes stored, items decided, passes left) counted from scratch over the stored passes, by the definitions;
    and alive() of every pass of the items being asked (a chunk at most: the engine holds no more)."""
    items = catalog.list_items(engine.ws, engine.run.benchmark_id, limit=engine.run.limit)
    done: dict[int, dict[int, runs.Prediction]] = {item.id: {} for item in items}
    for p in runs.predictions_of(engine.ws, engine.run.id):
        done[p.item_id][p.pass_] = p
    left = decided = 0
    for item in items:
        passes = done[item.id]
        alive = still_alive((p.correct for p in passes.values()), full_passes=engine.settings.full_passes)
        remaining = passes_needed(engine.run.strategy, len(item.options)) - len(passes) if alive else 0
        left += remaining
        decided += remaining == 0
        for k in range(len(item.options) + 1) if item.id in engine.asking else ():
            expected = (  # alive(): not stored, every earlier pass stored, still alive
                k < passes_needed(engine.run.strategy, len(item.options))
                and k not in passes
                and all(j in passes for j in range(k))
                and alive
            )
            assert engine.alive(item, k) == expected, (item.id, k)
    return sum(map(len, done.values())), decided, left


def counters(engine: Engine) -> tuple[int, int, int]:
    return engine.passes_stored, engine.items_decided(), engine.remaining_upper_bound()


def stored(ws, run_id: int) -> dict[tuple[int, int], tuple]:
    """What decides a run's results, per (item, pass): everything stored but the latency."""
    return {
        (p.item_id, p.pass_): (p.option_order, p.prompt, p.response, p.answer, p.choice, p.stage, p.reason, p.correct)
        for p in runs.predictions_of(ws, run_id)
    }


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    salt=st.integers(0, 10**6),
    full=st.booleans(),
    strategy=st.sampled_from(["circular", "circular", "vanilla"]),
    batch=st.integers(1, 5),
    chunk=st.one_of(st.none(), st.integers(1, 6)),
    factor=st.integers(1, 3),
    stops=st.lists(st.integers(0, 6), max_size=3),
)
def test_counters_match_a_recount_and_chunked_resumed_runs_store_what_a_plain_run_stores(
    sched_ws, salt, full, strategy, batch, chunk, factor, stops
):
    run_settings = RunSettings(strategy=strategy, full_passes=full, seed=salt)
    with open_workspace(sched_ws) as ws:
        plain = _engine(ws, Scripted(salt), run_settings, batch)
        plain.execute()
        assert counters(plain) == recount(plain) == (len(runs.predictions_of(ws, plain.run.id)), plain.items_total, 0)

        checks = []

        def check(_progress) -> None:
            checks.append(counters(engine) == recount(engine))

        run = None
        for stop_after in [*stops, None]:  # interrupted after a few calls, resumed by a fresh engine each time
            backend = Scripted(salt, chunk=chunk, factor=factor, stop_after=stop_after)
            engine = _engine(ws, backend, run_settings, batch, run=run, on_progress=check)
            run = engine.run
            assert counters(engine) == recount(engine)  # as read back from the workspace
            try:
                engine.execute()
            except Stop:
                continue
            break
        assert all(checks)
        assert counters(engine) == recount(engine) and engine.remaining_upper_bound() == 0
        assert all(len(c) <= batch * factor for c in backend.calls)
        # Chunking, call sizes and interruptions change no stored answer.
        assert stored(ws, engine.run.id) == stored(ws, plain.run.id)


def test_chunks_finish_every_wave_before_the_next_chunk_starts(sched_ws):
    with open_workspace(sched_ws) as ws:
        backend = Scripted(3, chunk=4)
        engine = _engine(ws, backend, RunSettings(full_passes=True, seed=3), 2)
        engine.execute()
        chunk_of = {item.id: n // 4 for n, item in enumerate(catalog.list_items(ws, engine.run.benchmark_id))}
        order = {(p.item_id, p.pass_): p.prompt for p in runs.predictions_of(ws, engine.run.id)}
        asked = [key for prompts in backend.calls for prompt in prompts for key, p in order.items() if p == prompt]
    chunks = [chunk_of[item_id] for item_id, _ in asked]
    assert chunks == sorted(chunks) and len(set(chunks)) == 4  # 13 items: chunks of 4, 4, 4, 1
    for c in set(chunks):  # within a chunk, wave by wave
        waves = [k for item_id, k in asked if chunk_of[item_id] == c]
        assert waves == sorted(waves) and max(waves) >= 2


def test_scheduling_hints_are_checked():
    class Bad:
        spec = "bad:x"
        chunk_items = 0

        def call_size(self, batch_size):
            return "8"

    with pytest.raises(BackendError, match="bad:x: chunk_items must be a whole number"):
        chunk_items(Bad())
    with pytest.raises(BackendError, match=r"bad:x: call_size\(8\) must be a whole number"):
        call_size(Bad(), 8)
    assert chunk_items(object()) is None and call_size(object(), 8) == 8


def test_a_chunked_run_through_the_command_stores_what_an_unchunked_one_does(sched_ws, slow_backend, capsys):
    def run(model: str) -> int:
        code = main(["--workspace", str(sched_ws), "run", "--bench", "b", "--model", model, "--seed", "5", "--json"])
        assert code == 0
        return json.loads(capsys.readouterr().out)["run_id"]

    plain, chunked = run("slow:random"), run("slow:random?chunk_items=3")
    with open_workspace(sched_ws) as ws:
        assert runs.get_run(ws, chunked).versions["backend"]["chunk_items"] == 3
        assert stored(ws, chunked) == stored(ws, plain) and stored(ws, plain)
