"""Stored runs with chosen passes, for the desiderata tests: the run variants (label_map, corrupt, shots, cot) are
written as config keys, as w3-variants' RunSettings store them, so the report is tested without a model."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from db import catalog, runs
from db.workspace import Workspace
from evaluator.engine.prompts import default_template
from evaluator.formats.importers import import_benchmark
from evaluator.scoring.choices import LETTERS, rotation
from tests.factories import png_bytes


def mcq_bench(ws: Workspace, folder: Path, n: int = 10, n_options: int = 4, name: str = "b") -> catalog.Benchmark:
    """n items of n_options options sharing one image; item i's key is option i mod n_options."""
    (folder / "img.png").write_bytes(png_bytes())
    path = folder / f"{name}.jsonl"
    with open(path, "w") as f:
        for i in range(n):
            rec = {
                "index": i,
                "question": f"Which is item {i}?",
                "options": [f"thing {i} {j}" for j in range(n_options)],
                "answer": LETTERS[i % n_options],
                "image": "img.png",
            }
            f.write(json.dumps(rec) + "\n")
    import_benchmark(ws, path, fmt="jsonl", name=name)
    found = catalog.benchmark_by_name(ws, name)
    assert found is not None
    return found


def stored_run(
    ws: Workspace,
    bench: catalog.Benchmark,
    chosen: list[str | None],
    *,
    model: str = "hf:m",
    config: dict | None = None,
    scores: list[list[float] | None] | None = None,
    responses: list[str] | None = None,
    strategy: str = "vanilla",
) -> int:
    """A finished run whose pass 0 of item i chose letter chosen[i] (None: undecided), with the given scores."""
    owner = runs.Owner.here()
    kind = "yesno" if bench.kind == "yesno" else "mcq"
    base = {
        "strategy": strategy,
        "full_passes": False,
        "limit": None,
        "max_new_tokens": 32,
        "text_only": False,
        "likelihood": False,
        "seed": 0,
        "extractor": "rules",
        "batch_size": 1,
    }
    run_id = runs.create_run(
        ws,
        benchmark_id=bench.id,
        model_spec=model,
        strategy="pope" if kind == "yesno" else strategy,
        prompt_template=default_template(kind).to_json(),
        extractor="rules",
        config={**base, **(config or {})},
        config_key=uuid.uuid4().hex,
        versions={},
        git_revision=None,
        seed=0,
        owner=owner,
    )
    preds = []
    for n, item in enumerate(catalog.list_items(ws, bench.id)):
        if n >= len(chosen):
            break
        order = rotation(len(item.options), 0) if item.options else ()
        choice = chosen[n]
        preds.append(
            runs.Prediction(
                run_id,
                item.id,
                0,
                order,
                "prompt",
                responses[n] if responses else (choice or "?"),
                item.answer,
                choice,
                "likelihood" if scores else "rules",
                None,
                None if item.answer is None else choice == item.answer,
                1.0,
                scores=tuple(scores[n]) if scores and scores[n] is not None else None,
            )
        )
    runs.add_predictions(ws, preds, owner=owner)
    runs.release(ws, run_id, owner, "finished")
    return run_id
