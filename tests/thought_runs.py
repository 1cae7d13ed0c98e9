"""A workspace holding a thinking model's run (issue 36), written through db/runs.add_predictions as the engine
stores one: each pass's thought apart from its answer, the finish reason, reasoning tokens; passes the token budget
cut inside the thought (stage "truncated", no answer) and after it. Shared by the report, export and app tests."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from db import open_workspace, runs
from evaluator.formats.importers import import_benchmark
from tests.evaluator.test_runner import write_jsonl_bench
from vlmdesk.cli import main

SPEC = "openai:qwen3-vl@http://127.0.0.1:9/v1?temperature=0.6&top_p=0.95&concurrency=4&max_pixels=1003520"
SETTINGS = {
    "system": "You are a careful visual assistant. Think step by step, then answer with the option's letter only.",
    "reasoning": "auto",
    "chat_template_kwargs": '{"enable_thinking": true}',
    "thinking_budget": 8192,
    "max_new_tokens": 32768,
}


def thought_of(i: int) -> str:
    """Pass i's thought: a wrong letter named before the right one, long enough to be folded."""
    return f"Pass {i}. The picture shows thing A at first sight, so maybe A. " + "Looking again, " * 30 + "it is B."


def kind_of(i: int) -> str:
    """Pass i's outcome: cut inside the thought, cut after it, or a whole answer."""
    return ("in_thought", "after_thought", "whole")[i % 3]


def thinking_passes(ws, run_id: int, source: list[runs.Prediction]) -> list[runs.Prediction]:
    """`source`'s passes as a thinking model's passes of `run_id` (pass i by kind_of(i))."""
    out = []
    for i, p in enumerate(source):
        kind = kind_of(i)
        common = {"run_id": run_id, "thought": thought_of(i), "prompt_tokens": 100, "reasoning_tokens": 50 + i}
        if kind == "in_thought":  # no answer at all: not read, wrong for a keyed item
            out.append(
                dataclasses.replace(
                    p,
                    **common,
                    response="",
                    choice=None,
                    stage="truncated",
                    reason=None,
                    correct=False if p.answer is not None else None,
                    finish_reason="length",
                    completion_tokens=8192,
                )  # fmt: skip
            )
        else:
            finish = "length" if kind == "after_thought" else "stop"
            out.append(dataclasses.replace(p, **common, finish_reason=finish, completion_tokens=200 + i))
    return out


def thinking_workspace(tmp_path: Path, questions: int = 6) -> tuple[Path, int]:
    """A workspace with benchmark "b" (`questions` items), run 1 (baseline:first, CircularEval, nothing split) and a
    thinking model's run of the same items (run 2, status finished); the path and run 2's id."""
    path = tmp_path / "ws.sqlite"
    with open_workspace(path) as ws:
        import_benchmark(ws, write_jsonl_bench(tmp_path / "b.jsonl", questions), fmt="jsonl", name="b")
    assert main(["--workspace", str(path), "run", "--bench", "b", "--model", "baseline:first", "--json"]) == 0
    with open_workspace(path) as ws:
        first = runs.get_run(ws, 1)
        assert first is not None
        owner = runs.Owner.here()
        run_id = runs.create_run(
            ws,
            benchmark_id=first.benchmark_id,
            model_spec=SPEC,
            strategy=first.strategy,
            prompt_template=first.prompt_template,
            extractor=first.extractor,
            config={**first.config, **SETTINGS},
            config_key="thinking",
            versions={},
            git_revision=None,
            seed=0,
            owner=owner,
        )
        runs.add_predictions(ws, thinking_passes(ws, run_id, runs.predictions_of(ws, 1)), owner)
        runs.release(ws, run_id, owner, "finished")
    return path, run_id
