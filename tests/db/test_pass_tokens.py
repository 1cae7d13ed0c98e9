"""The tokens a server said each pass cost (migration 0016): stored with the pass, checked at the door, summed in SQL,
shown by `vlmdesk report` (text and JSON) only when some pass has them; an older workspace gains the columns empty."""

from __future__ import annotations

import dataclasses
import json
import sqlite3

import pytest
from sqlite_utils import Database

from db import item_query, open_workspace, runs, schema
from db.errors import InvalidInput
from evaluator.analysis.report import run_report
from evaluator.formats.importers import import_benchmark
from tests.evaluator.test_runner import write_jsonl_bench
from vlmdesk.cli import main


def _cli(capsys, *args) -> str:
    assert main([str(a) for a in args]) == 0
    return capsys.readouterr().out


@pytest.fixture
def ws_path(tmp_path, capsys):
    """A workspace with one benchmark of 6 questions and run 1: baseline:first under CircularEval (no usage)."""
    path = tmp_path / "ws.sqlite"
    with open_workspace(path) as ws:
        import_benchmark(ws, write_jsonl_bench(tmp_path / "b.jsonl", 6), fmt="jsonl", name="b")
    _cli(capsys, "--workspace", path, "run", "--bench", "b", "--model", "baseline:first", "--json")
    return path


def new_run_like_first(ws, key: str) -> int:
    """A second run with run 1's benchmark and settings and no passes (tests/gui reuses it)."""
    first = runs.get_run(ws, 1)
    assert first is not None
    return runs.create_run(
        ws,
        benchmark_id=first.benchmark_id,
        model_spec="openai:m@http://127.0.0.1:9/v1",
        strategy=first.strategy,
        prompt_template=first.prompt_template,
        extractor=first.extractor,
        config=first.config,
        config_key=key,
        versions={},
        git_revision=None,
        seed=0,
    )


def _copies(ws, run_id: int, tokens) -> list[runs.Prediction]:
    """Run 1's passes as passes of `run_id`, pass i costing tokens(i) = (prompt, completion)."""
    return [
        dataclasses.replace(p, run_id=run_id, prompt_tokens=tokens(i)[0], completion_tokens=tokens(i)[1])
        for i, p in enumerate(runs.predictions_of(ws, 1))
    ]


def _stored_tokens(ws, run_id: int) -> list[tuple]:
    return ws.conn.execute(
        "SELECT prompt_tokens, completion_tokens FROM predictions WHERE run_id = ? ORDER BY item_id, pass", (run_id,)
    ).fetchall()


def test_tokens_round_trip_through_every_reader(ws_path):
    with open_workspace(ws_path) as ws:
        run_id = new_run_like_first(ws, "k2")
        passes = _copies(ws, run_id, lambda i: (100 + i, i) if i % 3 else (None, None))
        passes[1] = dataclasses.replace(passes[1], completion_tokens=None)  # a server that gave one count only
        passes[2] = dataclasses.replace(passes[2], prompt_tokens=2**40, completion_tokens=0)  # the bounds
        runs.add_predictions(ws, passes)
        assert runs.predictions_of(ws, run_id) == passes
        assert _stored_tokens(ws, run_id) == [(p.prompt_tokens, p.completion_tokens) for p in passes]
        assert {type(v) for row in _stored_tokens(ws, run_id) for v in row} <= {int, type(None)}
        # The item view reads whole passes through prediction_from_row too.
        for p in passes[:3]:
            by_run = dict((r.id, ps) for r, ps in item_query.item_predictions(ws, p.item_id))
            assert p in by_run[run_id]
        # Run 1 was stored without usage: its passes read None.
        assert {(p.prompt_tokens, p.completion_tokens) for p in runs.predictions_of(ws, 1)} == {(None, None)}


def test_the_sum_in_sql_is_the_sum_over_the_stored_passes(ws_path):
    with open_workspace(ws_path) as ws:
        run_id = new_run_like_first(ws, "k2")
        runs.add_predictions(ws, _copies(ws, run_id, lambda i: (None, None) if i % 4 == 1 else (37 * i + 5, i % 3)))
        stored = runs.predictions_of(ws, run_id)
        said = [p for p in stored if p.prompt_tokens is not None or p.completion_tokens is not None]
        assert 0 < len(said) < len(stored)
        usage = runs.token_usage(ws, run_id)
        assert usage == runs.TokenUsage(
            len(said),
            sum(p.prompt_tokens or 0 for p in said),
            sum(p.completion_tokens or 0 for p in said),
        )
        assert runs.token_usage(ws, 1) == runs.TokenUsage(0, None, None)
        # Only completion tokens said: the prompt sum is None, not 0.
        only = new_run_like_first(ws, "k3")
        runs.add_predictions(ws, _copies(ws, only, lambda i: (None, 2)))
        assert runs.token_usage(ws, only) == runs.TokenUsage(len(stored), None, 2 * len(stored))


@pytest.mark.parametrize("field", ["prompt_tokens", "completion_tokens"])
@pytest.mark.parametrize("bad", [-1, True, False, "12", 2**41, 2**40 + 1, 3.0])
def test_a_bad_count_refuses_the_whole_batch(ws_path, field, bad):
    with open_workspace(ws_path) as ws:
        run_id = new_run_like_first(ws, "k2")
        passes = _copies(ws, run_id, lambda i: (10, 20))
        passes[-1] = dataclasses.replace(passes[-1], **{field: bad})
        before = ws.conn.execute("SELECT updated_at FROM runs WHERE id = ?", (run_id,)).fetchone()
        with pytest.raises(InvalidInput, match=f"{field} .* is not a whole number of tokens in 0..{2**40}"):
            runs.add_predictions(ws, passes)
        assert ws.conn.execute("SELECT count(*) FROM predictions WHERE run_id = ?", (run_id,)).fetchone() == (0,)
        assert ws.conn.execute("SELECT updated_at FROM runs WHERE id = ?", (run_id,)).fetchone() == before


@pytest.mark.parametrize("bad", ["'many'", "'12 tokens'", "12.5", "-1", str(2**40 + 1), "x'01'"])
def test_the_column_refuses_what_the_door_would(ws_path, bad):
    # What another tool writing the file (or a door left open) cannot store either.
    with sqlite3.connect(ws_path) as conn:
        for column in ("prompt_tokens", "completion_tokens"):
            with pytest.raises(sqlite3.IntegrityError, match="CHECK constraint failed"):
                conn.execute(f"UPDATE predictions SET {column} = {bad} WHERE run_id = 1")
        # The bounds pass; a text or real that is a whole number is stored as that integer (the column's affinity).
        conn.execute(f"UPDATE predictions SET prompt_tokens = {2**40}, completion_tokens = 0 WHERE run_id = 1")
        conn.execute("UPDATE predictions SET prompt_tokens = '12', completion_tokens = 3.0 WHERE run_id = 1")
        stored = conn.execute(
            "SELECT DISTINCT typeof(prompt_tokens), prompt_tokens, typeof(completion_tokens), "
            "completion_tokens FROM predictions WHERE run_id = 1"
        ).fetchall()
        assert stored == [("integer", 12, "integer", 3)]


def test_report_shows_tokens_only_when_a_pass_has_usage(ws_path, capsys):
    w = ("--workspace", ws_path)
    with open_workspace(ws_path) as ws:
        run_id = new_run_like_first(ws, "k2")
        passes = _copies(ws, run_id, lambda i: (1000 + i, 7) if i else (None, None))
        runs.add_predictions(ws, passes)
        prompt = sum(p.prompt_tokens or 0 for p in passes)
        completion = sum(p.completion_tokens or 0 for p in passes)
        assert run_report(ws, 1).tokens is None
        assert run_report(ws, run_id).tokens == runs.TokenUsage(len(passes) - 1, prompt, completion)
    plain = json.loads(_cli(capsys, *w, "report", 1, "--json"))
    assert plain["tokens"] is None
    keys = list(plain)
    assert keys[keys.index("model_calls") + 1] == "tokens"
    said = json.loads(_cli(capsys, *w, "report", run_id, "--json"))
    assert said["tokens"] == {"passes": len(passes) - 1, "prompt": prompt, "completion": completion}
    assert list(said) == keys
    assert "tokens" not in _cli(capsys, *w, "report", 1)
    text = _cli(capsys, *w, "report", run_id)
    line = f"tokens {prompt:,} prompt + {completion:,} completion over {len(passes) - 1} passes"
    assert text.splitlines()[2] == line


def test_an_older_workspace_gains_empty_token_columns(tmp_path):
    path = tmp_path / "old.sqlite"
    db = Database(str(path))
    schema.migrations.apply(db, stop_before="0016_pass_tokens")
    db.execute(f"PRAGMA user_version = {schema.migration_names().index('0016_pass_tokens')}")
    _script = [
        "INSERT INTO benchmarks (id, name, kind, format, source, source_sha256, rows_read, imported_at) "
        "VALUES (1, 'old', 'mcq', 'jsonl', 'old.jsonl', 'abc', 1, '2024-01-01')",
        "INSERT INTO items (id, benchmark_id, position, source_index, question, options, answer) "
        "VALUES (1, 1, 1, 7, 'Old question?', '[\"x\", \"y\"]', 'B')",
        "INSERT INTO runs (id, benchmark_id, model_spec, strategy, prompt_template, extractor, config_key, status, "
        "created_at, updated_at) VALUES (1, 1, 'baseline:first', 'vanilla', '{}', 'rules', 'k', 'finished', '', '')",
        "INSERT INTO predictions (run_id, item_id, pass, option_order, prompt, response, answer, choice, stage, "
        "correct, latency_ms, created_at) VALUES (1, 1, 0, '[0, 1]', 'p', 'A', 'B', 'A', 'rules', 0, 1.5, '')",
    ]
    for statement in _script:
        db.execute(statement)
    db.conn.commit()
    db.close()
    with open_workspace(path) as ws:
        assert ws.schema_version() == schema.latest_version()
        assert "0016_pass_tokens" in schema.migration_names()
        (old,) = runs.predictions_of(ws, 1)
        assert (old.response, old.latency_ms, old.prompt_tokens, old.completion_tokens) == ("A", 1.5, None, None)
        assert runs.token_usage(ws, 1) == runs.TokenUsage(0, None, None)
        report = run_report(ws, 1)
        assert report is not None and report.tokens is None and report.model_calls == 1
        new = dataclasses.replace(old, pass_=1, option_order=(1, 0), prompt_tokens=12, completion_tokens=3)
        runs.add_predictions(ws, [new])
        assert runs.token_usage(ws, 1) == runs.TokenUsage(1, 12, 3)
