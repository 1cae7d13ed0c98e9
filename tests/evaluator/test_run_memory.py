"""A run's memory does not grow with the run (issue 34): the engine reads its items a chunk at a time and lets go of
what it stored, whatever the run's size — counted (items and stored passes alive, SQLite steps), never timed.
"""

from __future__ import annotations

import gc
import json
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from db import catalog, open_workspace, run_items, runs
from db.catalog import Item
from evaluator.backends.baseline import BaselineBackend
from evaluator.engine import runner
from evaluator.engine.prompts import default_template
from evaluator.engine.runner import Engine, RunSettings, new_run
from tests.sqlite_steps import counting_steps


class Stop(Exception):
    """Raised by the counting backend to interrupt a run between two stored calls."""


class Counting:
    """baseline:random's answers; at each call, how many items and stored passes are alive in this process."""

    spec = "counting:random"

    def __init__(self, chunk: int | None, stop_after: int | None = None):
        self.chunk_items, self.stop_after = chunk, stop_after
        self.answers = BaselineBackend("random")
        self.held: list[tuple[int, int]] = []
        # What earlier tests of this process left alive is not the engine's: counted once here and taken off.
        gc.collect()
        self.before = _alive()

    def generate(self, queries, max_new_tokens):
        if self.stop_after is not None and len(self.held) >= self.stop_after:
            raise Stop()
        alive = _alive()
        self.held.append((alive[Item] - self.before[Item], alive[runs.Prediction] - self.before[runs.Prediction]))
        return self.answers.generate(queries, max_new_tokens)

    def describe(self):
        return {"backend": "counting"}


def _alive() -> Counter:
    return Counter(type(o) for o in gc.get_objects())


def build(path, n: int, *, kind: str = "mcq") -> None:
    """n four-option items (or yes/no questions), without images: only the engine's own holdings are counted."""
    with open_workspace(path) as ws, ws.db.atomic():
        bid = catalog.insert_benchmark(
            ws, name="b", kind=kind, format="jsonl", source="generated", source_sha256=f"{kind}{n}", meta={}
        )
        options = json.dumps([f"option {j}" for j in range(4)]) if kind == "mcq" else "[]"
        answers = "ABCD" if kind == "mcq" else ("yes", "no")
        catalog.insert_items(
            ws,
            [
                (bid, k, k, f"Question {k}?", None, options, answers[k % len(answers)])
                + (None, None, None, "en", None, 0, "{}")
                for k in range(n)
            ],
        )


def held_during_a_resumed_run(path, chunk: int | None, batch: int) -> tuple[int, int, int]:
    """(most items, most stored passes) alive at any call of a run interrupted halfway and resumed, and the
    passes the run stored."""
    with open_workspace(path) as ws:
        bench = catalog.benchmark_by_name(ws, "b")
        template = default_template(bench.kind)
        run = new_run(ws, bench, Counting.spec, RunSettings(), template, batch_size=batch, backend_info={})
        first = Counting(chunk, stop_after=bench.questions // (2 * batch))
        with pytest.raises(Stop):
            Engine(ws, run, first, batch_size=batch).execute()
        second = Counting(chunk)
        engine = Engine(ws, run, second, batch_size=batch)
        engine.execute()
        assert engine.remaining_upper_bound() == 0 and not engine.asking
        held = first.held + second.held
        return max(h[0] for h in held), max(h[1] for h in held), len(runs.predictions_of(ws, run.id))


@pytest.mark.parametrize("declared", [True, False], ids=["backend's chunk", "engine's chunk"])
@pytest.mark.parametrize("kind", ["mcq", "yesno"])
def test_the_engine_holds_a_chunk_of_items_and_no_stored_pass_at_any_run_size(tmp_path, monkeypatch, declared, kind):
    chunk, batch = 25, 10
    if not declared:  # the engine's own chunk, made small enough to see at these sizes
        monkeypatch.setattr(runner, "CHUNK_ITEMS", chunk)
        monkeypatch.setattr(runner, "CHUNK_CALLS", 1)
    found = {}
    for n in (100, 400):
        build(tmp_path / f"{n}.sqlite", n, kind=kind)
        found[n] = held_during_a_resumed_run(tmp_path / f"{n}.sqlite", chunk if declared else None, batch)
    # Every pass of the run was asked (and the bigger run stored more of them than a chunk) ...
    assert found[400][2] >= 400 and found[100][2] >= 100
    # ... while the items alive never exceeded a chunk, and no stored pass outlived its call, at either size.
    for items, passes, _ in found.values():
        assert 0 < items <= chunk and passes == 0


def page_steps(ws, fn) -> int:
    """SQLite virtual-machine steps of reading what fn reads (counted by the progress handler, one call a step)."""
    with counting_steps(ws.conn, every=1) as steps:
        fn()
    return steps.count


def test_a_page_of_items_and_its_stored_passes_cost_the_page_not_the_pages_before_it(tmp_path):
    """The last page of a 2,000-item run costs what the last of a 200-item run does: keyset pages, and stored
    passes sought by item (a planner walking the run's passes, or an OFFSET, would cost ten times more)."""
    last = {}
    for n in (200, 2000):
        path = tmp_path / f"{n}.sqlite"
        build(path, n)
        with open_workspace(path) as ws:
            bench = catalog.benchmark_by_name(ws, "b")
            run = new_run(
                ws, bench, "baseline:random", RunSettings(), default_template("mcq"), batch_size=1, backend_info={}
            )
            Engine(ws, run, BaselineBackend("random"), batch_size=50).execute()  # every pass stored
            pages = run_items.item_pages(ws, bench.id, limit=None, page=50)
            *_, last_page = (page_steps(ws, lambda: next(pages)) for _ in range(n // 50))  # noqa: B023 (called at once)
            ids = [i.id for i in catalog.list_items(ws, bench.id)[-50:]]
            marks = page_steps(ws, lambda: list(run_items.stored_marks(ws, run.id, ids)))  # noqa: B023
            last[n] = (last_page, marks)
    assert last[2000][0] <= last[200][0] * 1.1 and last[2000][1] <= last[200][1] * 1.1, last


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(answers=st.lists(st.one_of(st.none(), st.sampled_from(["", "A", "B", "C", "yes", "no", "é"])), max_size=12))
def test_the_frequent_answer_counted_in_sql_is_the_most_frequent_key_least_of_ties(tmp_path, answers):
    path = tmp_path / "f.sqlite"
    with open_workspace(path) as ws, ws.db.atomic():
        bid = catalog.insert_benchmark(ws, name="f", kind="mcq", format="jsonl", source="g", source_sha256="f", meta={})
        catalog.insert_items(
            ws,
            [
                (bid, k, k, "Q?", None, '["a", "b"]', a, None, None, None, "en", None, 0, "{}")
                for k, a in enumerate(answers)
            ],
        )
        found = run_items.frequent_answer(ws, bid)
        ws.conn.execute("DELETE FROM benchmarks WHERE id = ?", (bid,))
    counts = Counter(a for a in answers if a)
    assert found == (min(counts, key=lambda a: (-counts[a], a)) if counts else None)
