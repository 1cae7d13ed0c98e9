"""The streaming schedule (docs/adr/0032) against a scripted stream, on real workspaces.

The scripted stream answers exactly as tests/evaluator/test_engine_schedule.py's Scripted backend (a hash of the
prompt), but in an order of its choosing: each `answers()` returns a random part of what is in flight, sometimes
nothing. Every send is checked against CircularEval's rules as it happens, and the stored passes of a streamed,
interrupted and resumed run against a run of the wave engine over the same answers.
"""

from __future__ import annotations

from random import Random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from db import open_workspace, runs
from evaluator.backends.base import Answer, Query, Usage
from evaluator.engine.runner import Engine, RunSettings
from tests.evaluator.test_engine_schedule import (  # noqa: F401 (sched_ws: a fixture)
    Scripted,
    Stop,
    _engine,
    counters,
    recount,
    sched_ws,
    stored,
)


class ScriptedStream:
    """A stream over Scripted's answers, returned in a random order; `stop_after` answers, then Stop."""

    def __init__(self, backend: Streamed, capacity: int, rng: Random, stop_after: int | None):
        self.backend, self.capacity, self.rng, self.stop_after = backend, capacity, rng, stop_after
        self.flight: dict[int, Query] = {}
        self.answered = 0

    def send(self, key: int, query: Query) -> None:
        assert key not in self.flight and len(self.flight) < self.capacity
        self.backend.check_send(query.prompt)
        self.flight[key] = query

    def load(self) -> int:
        return len(self.flight)

    def answers(self, timeout: float) -> list[Answer]:
        if self.stop_after is not None and self.answered >= self.stop_after:
            raise Stop()
        if not self.flight or self.rng.random() < 0.2:
            return []  # nothing came within the timeout
        most = len(self.flight) if self.stop_after is None else min(len(self.flight), self.stop_after - self.answered)
        keys = self.rng.sample(sorted(self.flight), self.rng.randint(1, most))
        out = []
        for key in keys:
            query = self.flight.pop(key)
            (text,) = self.backend.answer([query])
            self.backend.events.append(("answer", query.prompt))
            self.answered += 1
            out.append(Answer(key, text, 1.0, Usage(len(query.prompt), 1)))
        return out

    def close(self) -> None:
        self.backend.events.append(("close", ""))
        self.flight.clear()


class Streamed(Scripted):
    """Scripted's answers through a stream. `check_send` holds the engine to the rules at every send: pass k + 1 of
    an item only once pass k's answer came back (and was right, unless every pass is asked), never while another
    pass of the item is in flight."""

    def __init__(self, salt, capacity, seed, stop_after, engine_of, full, events=None, chunk=None):
        super().__init__(salt, chunk=chunk)  # a chunk: the items are read that many at a time
        self.capacity, self.rng, self.stop_after = capacity, Random(seed), stop_after
        self.engine_of, self.full = engine_of, full
        self.events: list[tuple[str, str]] = [] if events is None else events  # shared by the engines of one run

    def answer(self, queries):
        return Scripted.generate(self, queries, 0)

    def generate(self, queries, max_new_tokens):
        raise AssertionError("a streamed run asks through the stream only")

    def open_stream(self, max_new_tokens: int) -> ScriptedStream:
        self.began = len(self.events)  # what an earlier engine left in flight was abandoned
        return ScriptedStream(self, self.capacity, self.rng, self.stop_after)

    def check_send(self, prompt: str) -> None:
        engine: Engine = self.engine_of()
        item, k = engine_pass_of(engine, prompt)
        assert engine.alive(item, k), (item.id, k)  # due: not stored, every earlier pass stored, the item alive
        if k > 0:  # pass k - 1's answer came back before this send (and was right, unless every pass is asked)
            assert ("answer", engine._pose(item, k - 1).query.prompt) in self.events
            assert self.full or engine.asking[item.id].marks[k - 1] is not False
        in_flight = {p for kind, p in self.events[self.began :] if kind == "send"} - {
            p for kind, p in self.events if kind == "answer"
        }
        assert not any(engine_pass_of(engine, p)[0].id == item.id for p in in_flight)
        self.events.append(("send", prompt))


def engine_pass_of(engine: Engine, prompt: str):
    """The (item, k) whose query has this prompt (prompts name their item and show its rotation), among the items
    being asked: a pass is sent, or in flight, only while its item is."""
    for item in (slot.item for slot in engine.asking.values()):
        for k in range(len(item.options)):
            if engine._pose(item, k).query.prompt == prompt:
                return item, k
    raise AssertionError(f"no pass has the prompt {prompt[:60]!r}")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    salt=st.integers(0, 10**6),
    full=st.booleans(),
    strategy=st.sampled_from(["circular", "circular", "vanilla"]),
    capacity=st.integers(1, 6),
    seed=st.integers(0, 10**6),
    stops=st.lists(st.integers(0, 12), max_size=3),
    chunk=st.one_of(st.none(), st.integers(1, 5)),
)
def test_the_stream_keeps_the_rules_and_stores_what_the_wave_engine_stores(
    sched_ws, salt, full, strategy, capacity, seed, stops, chunk
):
    run_settings = RunSettings(strategy=strategy, full_passes=full, seed=salt)
    with open_workspace(sched_ws) as ws:
        waves = _engine(ws, Scripted(salt), run_settings, 3)
        waves.execute()

        run, now, events, sent = None, [], [], 0  # now[-1]: the engine running
        for stop_after in [*stops, None]:  # interrupted after a few answers, resumed by a fresh engine each time
            backend = Streamed(salt, capacity, seed + len(now), stop_after, lambda: now[-1], full, events, chunk)
            engine = _engine(ws, backend, run_settings, 3, run=run)
            now.append(engine)
            run = engine.run
            assert counters(engine) == recount(engine)
            try:
                engine.execute()
            except Stop:
                continue
            break
        sent = sum(kind == "send" for kind, _ in events)
        assert engine.remaining_upper_bound() == 0 and counters(engine) == recount(engine)
        assert not engine.asking  # every item was let go once nothing of it was due or in flight
        # Early termination asks exactly the passes the wave engine asks: the same stored passes, the same scores.
        assert stored(ws, engine.run.id) == stored(ws, waves.run.id)
        # Every answer that came back before an interruption was stored: only the requests in flight are asked again.
        assert len(stored(ws, engine.run.id)) <= sent <= len(stored(ws, engine.run.id)) + capacity * len(stops)
        tokens = {(p.item_id, p.pass_): (p.prompt_tokens, p.completion_tokens) for p in runs.predictions_of(ws, run.id)}
        assert all(pt is not None and pt > 0 and ct == 1 for pt, ct in tokens.values())


def test_a_stream_in_flight_is_closed_when_the_run_stops(sched_ws):
    engine = None
    backend = Streamed(1, 4, 1, 5, lambda: engine, False)
    with open_workspace(sched_ws) as ws:
        engine = _engine(ws, backend, RunSettings(seed=1), 3)
        with pytest.raises(Stop):
            engine.execute()
        assert backend.events[-1] == ("close", "")
        assert len(runs.predictions_of(ws, engine.run.id)) == 5  # the answers before the stop, committed
