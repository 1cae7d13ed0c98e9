"""Test-only plugins for open runs, named in VLMDESK_PLUGINS by the tests that use them.

- `parrot:<answers.json>` answers each open question from a JSON object {question text: answer} (the prompt starts
  with the question as written; an unknown question gets "no idea"), so an open run stores chosen answers through
  the ordinary run path.
- The open metric `answered_chars` scores every answered item (no references needed) from the workspace alone —
  the shape an LLM judge's stored judgements take — to show an entry need not read (response, references).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from db import runs
from db.workspace import Workspace
from evaluator.backends.base import BackendEntry, Query
from evaluator.scoring.open_metrics import OpenAnswer, OpenMetricEntry


class Parrot:
    def __init__(self, path: str):
        with open(path, encoding="utf-8") as f:
            self.answers: dict[str, str] = json.load(f)
        self.spec = f"parrot:{path}"

    def describe(self) -> dict[str, Any]:
        return {"backend": "parrot"}

    def generate(self, queries: Sequence[Query], max_new_tokens: int) -> list[str]:
        found = self.answers.items()
        return [next((a for q, a in found if query.prompt.startswith(q)), "no idea") for query in queries]

    def score(self, queries: Sequence[Query], candidates: Sequence[Sequence[str]]) -> list[list[float]]:
        raise NotImplementedError


BACKENDS = (
    BackendEntry(
        name="parrot",
        syntax="parrot:<answers.json>",
        help="tests only: answers open questions from a JSON file",
        build=lambda rest, context: Parrot(rest),
        validate=lambda rest: None,
    ),
)


def _answered_chars(ws: Workspace, run_id: int, answers: Sequence[OpenAnswer]) -> dict[int, float]:
    stored = {p.item_id: p.response for p in runs.predictions_of(ws, run_id) if p.pass_ == 0}
    return {i: min(1.0, len(r) / 100) for i, r in stored.items() if i % 2 == 0}


OPEN_METRICS = (
    OpenMetricEntry(
        "answered_chars",
        "chars",
        "tests only: an answer's length / 100, read from the workspace, even items only",
        _answered_chars,
        needs_references=False,
    ),
)


def run_parrot(path, bench: str, answers: dict[str, str], folder, monkeypatch) -> None:
    """An open run of the parrot on `bench` of the workspace at `path` (its answers written to `folder`), through
    `vlmdesk run`; the plugins are named for that run only, so an app opened after it shows the built-in metrics."""
    from evaluator.registry import PLUGINS_ENV
    from vlmdesk.cli import main

    file = folder / "answers.json"
    file.write_text(json.dumps(answers))
    monkeypatch.setenv(PLUGINS_ENV, "tests.open_plugins")
    assert main(["--workspace", str(path), "run", "--bench", bench, "--model", f"parrot:{file}"]) == 0
    monkeypatch.delenv(PLUGINS_ENV)
