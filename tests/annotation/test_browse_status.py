"""Review status per item, review/QC filters as id sets, and the open conflicts a settler sees."""

import pytest

from annotation import browse, reviews
from db import catalog, item_query, open_workspace
from db.item_query import ItemFilter
from evaluator.formats.importers import import_benchmark
from vlmdesk.demo import demo_dir


@pytest.fixture
def ws(tmp_path):
    with open_workspace(tmp_path / "ws.sqlite") as ws:
        import_benchmark(ws, demo_dir() / "demo_mcq.jsonl", fmt="jsonl", name="demo")
        yield ws


def test_status_labels_and_filters(ws):
    bench = catalog.benchmark_by_name(ws, "demo")
    a, b, c, d = catalog.list_items(ws, bench.id)[:4]
    reviews.add_review(ws, a.id, "ann", "ok")
    reviews.add_review(ws, a.id, "bob", "ok")
    reviews.add_review(ws, b.id, "ann", "wrong_answer", corrected_answer="A")
    reviews.add_review(ws, c.id, "ann", "ok")
    reviews.add_review(ws, c.id, "bob", "ambiguous")
    reviews.add_review(ws, d.id, "bob", "skip")
    reviews.add_review(ws, d.id, "bob", "ok")
    reviews.undo_last(ws, "bob", item_id=d.id)  # d: bob's skip stands again
    e = catalog.list_items(ws, bench.id)[4]
    reviews.add_review(ws, e.id, "ann", "ok")
    reviews.add_review(ws, e.id, "bob", "skip")  # a skip is no second "ok"
    status = browse.review_status(ws, bench.id)
    assert status[a.id].label == "ok ×2"
    assert status[e.id].label == "ok"
    assert status[b.id].label == "wrong key → A"
    assert status[c.id].label == "conflict" and status[c.id].conflict
    assert status[d.id].label == "skipped"

    def ids(which, annotator="ann"):
        only, exclude = browse.review_filter_ids(status, which, annotator)
        return {
            r.id for r in item_query.item_page(ws, bench.id, ItemFilter(only_ids=only, exclude_ids=exclude), limit=100)
        }

    assert ids("reviewed") == {a.id, b.id, c.id, d.id, e.id}
    assert len(ids("unreviewed")) == bench.questions - 5
    assert ids("mine") == {a.id, b.id, c.id, e.id}
    assert d.id in ids("not_mine") and a.id not in ids("not_mine")
    assert ids("conflict") == {c.id}
    assert ids("ambiguous") == {c.id}
    with pytest.raises(ValueError):
        browse.review_filter_ids(status, "great", "ann")
    only, exclude = browse.combine(
        browse.review_filter_ids(status, "mine", "ann"), browse.review_filter_ids(status, "ok", "ann")
    )
    assert only == {a.id, c.id, e.id} and exclude is None


def _open(ws, bench_id, settler):
    """The settler's open conflicts as the queue walks them: next after next, by index."""
    found, after = [], None
    while (item := browse.next_open_conflict(ws, bench_id, settler, after=after)) is not None and item not in found:
        found.append(item)
        after = item
    assert browse.open_conflict_count(ws, bench_id, settler) == len(found)
    assert all(browse.is_open_conflict(ws, bench_id, settler, i) for i in found)
    return found


def test_open_conflicts_leave_the_settlers_queue_once_settled(ws):
    bench = catalog.benchmark_by_name(ws, "demo")
    a, b = catalog.list_items(ws, bench.id)[:2]
    reviews.add_review(ws, a.id, "ann", "ok")
    reviews.add_review(ws, a.id, "bob", "ambiguous")
    reviews.add_review(ws, b.id, "ann", "ok")
    reviews.add_review(ws, b.id, "bob", "bad_image")
    assert _open(ws, bench.id, "eve") == [a.id, b.id]
    reviews.add_review(ws, a.id, "eve", "ambiguous", note="settles")
    assert _open(ws, bench.id, "eve") == [b.id] and not browse.is_open_conflict(ws, bench.id, "eve", a.id)
    assert browse.next_open_conflict(ws, bench.id, "eve", after=b.id) == b.id  # past the last: from the first
    # A verdict newer than the settler's puts the item back in their queue.
    reviews.add_review(ws, a.id, "ann", "text_answerable")
    assert _open(ws, bench.id, "eve") == [a.id, b.id]


def test_the_open_conflict_rule_in_sql_is_the_rule_over_the_standing_verdicts(ws):
    """Settled for a settler: their standing opinion (not a skip) is newer than every other standing opinion."""
    import random

    rng = random.Random(11)
    bench = catalog.benchmark_by_name(ws, "demo")
    items = [i.id for i in catalog.list_items(ws, bench.id)[:6]]
    people = ("ann", "bob", "eve")
    for _ in range(120):
        item, who = rng.choice(items), rng.choice(people)
        if rng.random() < 0.2:
            reviews.undo_last(ws, who, item_id=item)
        else:
            reviews.add_review(ws, item, who, rng.choice(["ok", "ambiguous", "skip", "bad_image"]))
        for settler in people:
            expected = []
            for item_id, standing in sorted(reviews.conflicts(ws, bench.id).items()):
                mine = [r for r in standing if r.annotator == settler]
                others = [r for r in standing if r.annotator != settler]
                if not (mine and (mine[0].created_at, mine[0].id) > max((r.created_at, r.id) for r in others)):
                    expected.append(item_id)
            assert _open(ws, bench.id, settler) == expected


def test_qc_marks_follow_decisions(ws, tmp_path):
    from annotation import qc
    from vlmdesk.cli import main

    ws.close()
    path = str(ws.path)
    assert main(["--workspace", path, "run", "--bench", "demo", "--model", "baseline:first"]) == 0
    with open_workspace(path) as ws2:
        bench = catalog.benchmark_by_name(ws2, "demo")
        run_id = item_query.runs_of_benchmark(ws2, bench.id)[0].id
        result = qc.compute_stage(ws2, bench.id, "consensus", [run_id])
        marks = browse.qc_marks(ws2, bench.id)
        assert set(marks) == set(result.candidates)
        first = result.candidates[0]
        qc.decide(ws2, first, "consensus", "ann", "reject")
        marks = browse.qc_marks(ws2, bench.id)
        assert marks[first].label == "possibly flawed · rejected"
        assert browse.qc_filter_ids(marks, "rejected") == (frozenset({first}), None)
        assert browse.qc_filter_ids(marks, "unflagged") == (None, frozenset(result.candidates))
