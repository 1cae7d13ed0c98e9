"""A model's smoke test: load it (or reach its server) and answer one benchmark item, timed.

What `vlmdesk models test` prints and the app's Models panel shows (run as a separate process there, so a model
that crashes or runs out of memory cannot take the window down).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Any

from db import catalog
from db.errors import InvalidInput, NotFound
from db.workspace import Workspace
from evaluator.backends import BackendError, Query
from evaluator.backends.base import close_backend, texts_of
from evaluator.engine.launch import open_backend
from evaluator.engine.prompts import default_template
from evaluator.scoring.choices import YESNO_CANDIDATES, letters, pass_correct, read_yes_no
from evaluator.scoring.extraction import extract_by_rules

DEMO_BENCHMARK = "demo"


@dataclass(frozen=True)
class ModelCheck:
    spec: str
    backend: dict[str, Any]  # the backend's describe(): resolved settings, no secrets
    benchmark: str
    item_index: str
    prompt: str
    response: str
    choice: str | None
    answer: str | None
    correct: bool | None
    load_s: float
    answer_s: float

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def validate_spec(spec: str) -> str:
    """The spec, stripped, if a registered backend can read it; InvalidInput otherwise (backends.check_spec)."""
    from evaluator.backends import check_spec

    try:
        return check_spec(spec)
    except BackendError as exc:
        raise InvalidInput(str(exc)) from None


def check_model(
    ws: Workspace, spec: str, *, benchmark: str | None = None, item_index: str | None = None, max_new_tokens: int = 32
) -> ModelCheck:
    """Load the model a spec names and ask it one item (default: the first item of the demo benchmark, else of the
    first multiple-choice benchmark). Raises BackendError (load or call failed) or NotFound (no such item)."""
    bench = _benchmark(ws, benchmark)
    items = catalog.list_items(ws, bench.id)
    if item_index is not None:
        items = [i for i in items if str(i.index) == str(item_index)]
    if not items:
        raise NotFound(
            f"benchmark {bench.name!r} has no item {item_index!r}"
            if item_index is not None
            else f"benchmark {bench.name!r} has no items"
        )
    item = items[0]
    started = time.perf_counter()
    backend = open_backend(ws, bench.id, spec, seed=0, batch_size=1)
    load_s = time.perf_counter() - started
    prompt = default_template(bench.kind).render(
        question=item.question, hint=item.hint, options=item.options, language=item.language
    )
    image = catalog.image_bytes(ws, item.image_sha256) if item.image_sha256 else None
    candidates = tuple(letters(len(item.options))) if bench.kind == "mcq" else YESNO_CANDIDATES
    started = time.perf_counter()
    try:
        said = backend.generate([Query(prompt, (image[0],) if image else (), candidates)], max_new_tokens)
    finally:
        close_backend(backend)  # a server it started (vllm:, sglang:) is stopped: one item is all it was asked
    response = texts_of(said)[0]
    answer_s = time.perf_counter() - started
    if bench.kind == "mcq":
        choice = extract_by_rules(response, dict(zip(candidates, item.options))).choice
    else:
        choice = read_yes_no(response)
    return ModelCheck(
        spec=backend.spec,
        backend=backend.describe(),
        benchmark=bench.name,
        item_index=str(item.index),
        prompt=prompt,
        response=response,
        choice=choice,
        answer=item.answer,
        correct=pass_correct(choice, item.answer),
        load_s=round(load_s, 3),
        answer_s=round(answer_s, 3),
    )


def _benchmark(ws: Workspace, name: str | None) -> catalog.Benchmark:
    benches = catalog.list_benchmarks(ws)
    if name is not None:
        found = next((b for b in benches if b.name == name), None)
        if found is None:
            raise NotFound(f"no benchmark named {name!r}")
        return found
    found = (
        next((b for b in benches if b.name == DEMO_BENCHMARK), None)
        or next((b for b in benches if b.kind == "mcq"), None)
        or (benches[0] if benches else None)
    )
    if found is None:
        raise NotFound("the workspace has no benchmark to test with (vlmdesk import FILE)")
    return found
