"""`vlmdesk run --json-progress` lines as typed events: the lines keep their documented keys in order, and each
line reads back as its event (what the app does with another process's output), anything else as None."""

from __future__ import annotations

import json

import pytest

from db import open_workspace
from evaluator.engine.progress import DoneEvent, Progress, StartEvent, read_event
from evaluator.formats.importers import import_benchmark
from tests.evaluator.test_runner import write_jsonl_bench
from vlmdesk.cli import main

KEYS = {
    "start": ["event", "run_id", "resumed", "benchmark_id", "items_total", "passes_done"],
    "progress": [
        "event",
        "run_id",
        "wave",
        "passes_done",
        "items_done",
        "items_total",
        "calls",
        "calls_per_s",
        "eta_s",
    ],
    "done": ["event", "run_id", "model_calls"],
}


def test_json_progress_lines_are_typed_events_with_their_documented_keys(tmp_path, capsys):
    ws_path = tmp_path / "ws.sqlite"
    with open_workspace(ws_path) as ws:
        import_benchmark(ws, write_jsonl_bench(tmp_path / "b.jsonl", 12), fmt="jsonl", name="b")
    assert (
        main(
            [
                "--workspace",
                str(ws_path),
                "run",
                "--bench",
                "b",
                "--model",
                "baseline:random",
                "--batch-size",
                "4",
                "--json-progress",
            ]
        )
        == 0
    )
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [list(obj) for obj in lines] == [KEYS[obj["event"]] for obj in lines]
    events = [read_event(obj) for obj in lines]
    assert isinstance(events[0], StartEvent) and isinstance(events[-1], DoneEvent)
    assert all(isinstance(e, Progress) for e in events[1:-1]) and len(events) > 3
    assert events[0] == StartEvent(1, False, 1, 12, 0)
    assert events[-2].items_done == events[-2].items_total == 12
    assert [e.to_json() for e in events] == lines  # read back and written again: the same lines


@pytest.mark.parametrize(
    "obj",
    [
        None,
        [],
        "start",
        {},
        {"event": "finish", "run_id": 1},
        {"event": "done", "run_id": 1},  # a field missing
        {"event": "done", "run_id": "1", "model_calls": 3},  # a string where a number belongs
        {"event": "done", "run_id": True, "model_calls": 3},  # a bool is not an id
        {"event": "start", "run_id": 1, "resumed": 0, "benchmark_id": 1, "items_total": 3, "passes_done": 0},
        {
            "event": "progress",
            "run_id": 1,
            "wave": 0,
            "passes_done": 1,
            "items_done": 1,
            "items_total": 3,
            "calls": 1,
            "calls_per_s": "fast",
            "eta_s": None,
        },
    ],
)
def test_anything_else_is_not_an_event(obj):
    assert read_event(obj) is None


def test_an_unknown_eta_and_integer_rates_are_read():
    line = {
        "event": "progress",
        "run_id": 2,
        "wave": 1,
        "passes_done": 5,
        "items_done": 4,
        "items_total": 9,
        "calls": 5,
        "calls_per_s": 3,
        "eta_s": None,
    }
    assert read_event(line) == Progress(2, 1, 5, 4, 9, 5, 3, None)
