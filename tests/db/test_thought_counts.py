"""A pass's thought, finish reason and reasoning tokens (migration 0024): they round-trip, the sums kept in run_counts
never drift from the passes whatever is written, changed or deleted, a repair derives them afresh, and reading them
costs the same at any size."""

from __future__ import annotations

import dataclasses
import random

import pytest

from db import open_workspace, runs, schema
from db.errors import InvalidInput
from evaluator.formats.importers import import_benchmark
from tests.db.test_pass_tokens import new_run_like_first
from tests.evaluator.test_runner import write_jsonl_bench
from tests.sqlite_steps import counting_steps
from vlmdesk.cli import main


def workspace(tmp_path, n: int):
    path = tmp_path / f"ws{n}.sqlite"
    with open_workspace(path) as ws:
        import_benchmark(ws, write_jsonl_bench(tmp_path / f"b{n}.jsonl", n), fmt="jsonl", name="b")
    assert main(["--workspace", str(path), "run", "--bench", "b", "--model", "baseline:first", "--json"]) == 0
    return path


def thinking_copies(ws, run_id: int, rng: random.Random) -> list[runs.Prediction]:
    out = []
    for p in runs.predictions_of(ws, 1):
        finish = rng.choice([None, "stop", "length"])
        inside = finish == "length" and rng.random() < 0.5
        out.append(
            dataclasses.replace(
                p,
                run_id=run_id,
                response="" if inside else p.response,
                stage="truncated" if inside else p.stage,
                choice=None if inside else p.choice,
                thought=rng.choice([None, "Let me look at the picture.", "思考 " * 50]),
                finish_reason=finish,
                reasoning_tokens=rng.choice([None, 0, 17, 4096]),
            )
        )
    return out


def fresh(ws, run_id: int) -> tuple:
    """The sums as the passes say them now."""
    return ws.conn.execute(
        "SELECT count(*) FILTER (WHERE finish_reason = 'length'), count(*) FILTER (WHERE stage = 'truncated'), "
        "count(*) FILTER (WHERE finish_reason = 'length' AND correct = 0), "
        "count(reasoning_tokens), coalesce(sum(reasoning_tokens), 0) FROM predictions WHERE run_id = ?",
        (run_id,),
    ).fetchone()


def kept(ws, run_id: int) -> tuple:
    t = runs.truncation(ws, run_id)
    row = ws.conn.execute(
        "SELECT reasoning_passes, reasoning_tokens FROM run_counts WHERE run_id = ?", (run_id,)
    ).fetchone()
    return (t.truncated, t.in_thought, t.wrong, row[0], row[1])


def test_thoughts_round_trip_and_the_kept_sums_never_drift(tmp_path):
    rng = random.Random(36)
    with open_workspace(workspace(tmp_path, 12)) as ws:
        run_id = new_run_like_first(ws, "thinking")
        written = thinking_copies(ws, run_id, rng)
        runs.add_predictions(ws, written)
        back = {(p.item_id, p.pass_): p for p in runs.predictions_of(ws, run_id)}
        for p in written:
            got = back[(p.item_id, p.pass_)]
            assert (got.thought, got.finish_reason, got.reasoning_tokens) == (
                p.thought,
                p.finish_reason,
                p.reasoning_tokens,
            )
            assert got.truncated == (p.finish_reason == "length")
        assert kept(ws, run_id) == fresh(ws, run_id) and runs.truncation(ws, run_id).passes == len(written)
        # Changes by any writer (another tool, a repair): an update of each column, a move, a delete.
        ws.conn.execute("UPDATE predictions SET finish_reason = 'length' WHERE run_id = ? AND pass = 0", (run_id,))
        ws.conn.execute("UPDATE predictions SET reasoning_tokens = 5 WHERE run_id = ? AND item_id % 2 = 0", (run_id,))
        ws.conn.execute("UPDATE predictions SET stage = 'rules' WHERE run_id = ? AND item_id % 3 = 0", (run_id,))
        ws.conn.execute("UPDATE predictions SET correct = 1 - correct WHERE run_id = ? AND item_id % 3 = 1", (run_id,))
        assert kept(ws, run_id) == fresh(ws, run_id)
        ws.conn.commit()
        other = new_run_like_first(ws, "other")
        ws.conn.execute("UPDATE predictions SET run_id = ? WHERE run_id = ? AND item_id % 4 = 1", (other, run_id))
        ws.conn.execute("DELETE FROM predictions WHERE run_id = ? AND item_id % 5 = 2", (run_id,))
        assert kept(ws, run_id) == fresh(ws, run_id) and kept(ws, other) == fresh(ws, other)
        expected = fresh(ws, run_id)
        ws.conn.execute("UPDATE run_counts SET truncated = 999, reasoning_tokens = -1")  # damaged: a repair mends it
        ws.conn.commit()
        schema.rebuild_run_figures(ws.db)
        assert kept(ws, run_id) == expected


def test_a_bad_reasoning_count_or_finish_reason_is_refused(tmp_path):
    with open_workspace(workspace(tmp_path, 3)) as ws:
        run_id = new_run_like_first(ws, "bad")
        (first, *_) = runs.predictions_of(ws, 1)
        with pytest.raises(InvalidInput, match="reasoning_tokens"):
            runs.add_predictions(ws, [dataclasses.replace(first, run_id=run_id, reasoning_tokens=-3)])
        with pytest.raises(Exception, match="CHECK constraint failed"):
            runs.add_predictions(ws, [dataclasses.replace(first, run_id=run_id, finish_reason="x" * 41)])
        assert runs.truncation(ws, run_id).passes == 0


def test_reading_the_truncation_costs_the_same_at_any_size(tmp_path):
    costs = []
    for n in (6, 60):
        with open_workspace(workspace(tmp_path, n)) as ws:
            run_id = new_run_like_first(ws, f"size{n}")
            runs.add_predictions(ws, thinking_copies(ws, run_id, random.Random(n)))
            with counting_steps(ws.conn, every=10) as steps:
                runs.truncation(ws, run_id)
                runs.token_usage(ws, run_id)
            costs.append(steps.count)
            assert runs.truncation(ws, run_id).passes > n
    assert costs[0] == costs[1], costs
