"""Browse scores an open run's items a page at a time (db/item_query.open_answers): the answers and references of a
page cost the same SQLite steps whatever the size of the run."""

from __future__ import annotations

import json

from db import catalog, item_query, open_workspace, runs
from tests.sqlite_steps import counting_steps

PAGE = 20


def _open_run(ws, n_items: int) -> tuple[list[int], int]:
    """An open benchmark of n_items items (VQA-like: ten references each) and an open run answering them all: (the
    item ids in file order, the run id)."""
    with ws.db.atomic():
        bench_id = catalog.insert_benchmark(
            ws,
            name=f"open-{n_items}",
            kind="open",
            format="jsonl",
            source="gen",
            source_sha256=f"sha-open-{n_items}",
            meta={},
        )
        meta = json.dumps({"references": ["2"] * 7 + ["two"] * 3})
        catalog.insert_items(
            ws,
            [
                (bench_id, k, k, f"q{k}", None, "[]", None, None, None, None, "en", None, 0, meta)
                for k in range(n_items)
            ],
        )
    run_id = runs.create_run(
        ws,
        benchmark_id=bench_id,
        model_spec="baseline:first",
        strategy="open",
        prompt_template="{}",
        extractor="none",
        config={},
        config_key=f"open-{n_items}",
        versions={},
        git_revision=None,
        seed=0,
    )
    ids = [i.id for i in catalog.list_items(ws, bench_id)]
    runs.add_predictions(
        ws,
        [runs.Prediction(run_id, i, 0, (), "prompt", f"answer {i}", None, None, "none", None, None, 1.0) for i in ids],
    )
    return ids, run_id


def test_a_pages_open_answers_cost_the_same_at_any_run_size(tmp_path):
    with open_workspace(tmp_path / "ws.sqlite") as ws:
        steps = []
        for n in (200, 2_000):
            ids, run_id = _open_run(ws, n)
            page = ids[n // 2 : n // 2 + PAGE]
            with counting_steps(ws.conn, every=10) as counted:
                found = item_query.open_answers(ws, run_id, page)
            steps.append(counted.count)
            assert sorted(found) == sorted(page)
            assert found[page[0]] == (f"answer {page[0]}", ("2",) * 7 + ("two",) * 3)
            assert item_query.run_strategy(ws, run_id) == "open"
        assert steps[1] <= 1.1 * steps[0], steps
        # An id the run never answered (or not an item at all) is simply absent.
        assert item_query.open_answers(ws, run_id, [-1]) == {}
