"""The blind rule (annotation/blind.py): who may see what of an item, and blind adjudication."""

import pytest

from annotation import alignment, blind, reviews
from db import catalog, open_workspace, runs
from evaluator.formats.importers import import_benchmark
from vlmdesk.demo import demo_dir


@pytest.fixture
def ws(tmp_path):
    with open_workspace(tmp_path / "ws.sqlite") as ws:
        import_benchmark(ws, demo_dir() / "demo_mcq.jsonl", fmt="jsonl", name="demo")
        yield ws


def _run(ws, bench_id, responses: list) -> int:
    run_id = runs.create_run(
        ws,
        benchmark_id=bench_id,
        model_spec="test:scripted",
        strategy="vanilla",
        prompt_template="{}",
        extractor="rules",
        config={},
        config_key=f"k{len(responses)}",
        versions={},
        git_revision=None,
        seed=0,
    )
    runs.add_predictions(
        ws,
        [
            runs.Prediction(
                run_id,
                item.id,
                0,
                tuple(range(len(item.options))),
                "prompt",
                text,
                item.answer,
                "A",
                "rules",
                None,
                item.answer == "A",
                1.0,
            )
            for item, text in responses
        ],
    )
    return run_id


def test_judged_items_skip_does_not_count_and_undo_unjudges(ws):
    bench = catalog.benchmark_by_name(ws, "demo")
    a, b, c = catalog.list_items(ws, bench.id)[:3]
    reviews.add_review(ws, a.id, "ann", "ok")
    reviews.add_review(ws, b.id, "ann", "skip")
    reviews.add_review(ws, c.id, "ann", "ambiguous")
    reviews.undo_last(ws, "ann", item_id=c.id)
    reviews.add_review(ws, c.id, "bob", "ok")
    assert blind.judged_item_ids(ws, "ann") == {a.id}
    assert blind.judged_item_ids(ws, "ann", bench.id) == {a.id}
    assert blind.judged_item_ids(ws, "bob") == {c.id}
    kw = {"blind": True, "reveal_after_verdict": True}
    assert blind.may_reveal(ws, a.id, "ann", **kw)
    assert not blind.may_reveal(ws, b.id, "ann", **kw)  # a skip is no way to peek
    assert not blind.may_reveal(ws, c.id, "ann", **kw)  # undone: not judged any more
    assert not blind.may_reveal(ws, a.id, "ann", blind=True, reveal_after_verdict=False)
    assert blind.may_reveal(ws, b.id, "ann", blind=False, reveal_after_verdict=False)
    assert not blind.may_reveal(ws, a.id, "", **kw)
    s = blind.sight(ws, "ann", blind=True, benchmark_id=bench.id)
    assert s.reveals(a.id) and not s.reveals(b.id) and not s.shows_scores
    history = reviews.history(ws, c.id)
    assert [r.annotator for r in s.visible_history(c.id, history)] == ["ann", "ann"]  # bob's verdict hidden
    assert blind.sight(ws, "ann", blind=False).visible_history(c.id, history) == history


def test_adjudication_hides_a_response_until_this_annotator_labels_it(ws):
    bench = catalog.benchmark_by_name(ws, "demo")
    a, b = catalog.list_items(ws, bench.id)[:2]
    run_id = _run(ws, bench.id, [(a, "hmm, A or B"), (b, "B")])  # a: rules undecided -> in the set
    adj = alignment.build_set(ws, "s", [run_id], [], size=0, seed=1)
    assert adj.items == 1
    hidden = blind.adjudication_hidden_passes(ws, "ann", benchmark_id=bench.id)
    assert hidden == {(run_id, a.id, 0)}
    s = blind.sight(ws, "ann", blind=False)
    assert not s.shows_pass(run_id, a.id, 0) and not s.shows_run_result(run_id, a.id)
    assert s.shows_pass(run_id, b.id, 0) and s.shows_run_result(run_id, b.id)
    # A verdict on the item does not lift blind adjudication; only a label does (by this annotator).
    reviews.add_review(ws, a.id, "ann", "ok")
    assert not blind.sight(ws, "ann", blind=True).shows_pass(run_id, a.id, 0)
    task = alignment.next_for(ws, "s", "bob")
    alignment.add_label(ws, task.item_id, "bob", "Z")
    assert blind.adjudication_hidden_passes(ws, "ann") == {(run_id, a.id, 0)}
    assert blind.adjudication_hidden_passes(ws, "bob") == frozenset()
    # The same response in another run is the same response key: hidden as well.
    again = _run(ws, bench.id, [(a, "hmm, A or B")])
    assert blind.adjudication_hidden_passes(ws, "ann", item_ids=[a.id]) == {(run_id, a.id, 0), (again, a.id, 0)}
    alignment.add_label(ws, task.item_id, "ann", "A")
    assert blind.adjudication_hidden_passes(ws, "ann") == frozenset()
    alignment.undo_label(ws, task.item_id, "ann")  # a withdrawn label is no committed label: hidden again
    assert blind.adjudication_hidden_passes(ws, "ann", item_ids=[a.id]) == {(run_id, a.id, 0), (again, a.id, 0)}
