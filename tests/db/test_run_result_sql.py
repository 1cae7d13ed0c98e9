"""The run result per item and run, computed in SQL (db/item_query.py, for paging and QC) and in Python
(evaluator/scoring/choices.py, for reports): the same answers on generated runs stored in a real workspace — every
pass/fail pattern, missing passes, undecided answers, items without a key, VanillaEval, CircularEval and POPE."""

import itertools
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotation import qc
from db import catalog, item_query, open_workspace, runs
from db.item_query import RUN_RESULTS, ItemFilter
from evaluator.analysis import report
from evaluator.scoring import choices

_names = itertools.count()

# One item's stored passes: per pass, absent / right / wrong / undecided (no choice read: stored as wrong).
PASS_STATES = ("absent", "right", "wrong", "undecided")


@st.composite
def generated_runs(draw):
    strategy = draw(st.sampled_from(["circular", "vanilla", "pope"]))
    items = []
    for _ in range(draw(st.integers(1, 6))):
        n = 0 if strategy == "pope" else draw(st.integers(2, 5))
        keyed = draw(st.booleans())
        asked = choices.passes_needed(strategy, n)
        items.append((n, keyed, [draw(st.sampled_from(PASS_STATES)) for _ in range(asked)]))
    return strategy, items


@pytest.fixture(scope="module")
def ws(tmp_path_factory):
    with open_workspace(tmp_path_factory.mktemp("run-result") / "ws.sqlite") as ws:
        yield ws


def _store(ws, strategy, items):
    """A benchmark with these items and one finished run with these passes; (benchmark id, run id)."""
    kind = "yesno" if strategy == "pope" else "mcq"
    with ws.db.atomic():
        bench_id = catalog.insert_benchmark(
            ws,
            name=f"gen-{next(_names)}",
            kind=kind,
            format="jsonl",
            source="gen",
            source_sha256=f"sha-{next(_names)}",
            meta={},
        )
        catalog.insert_items(
            ws,
            [
                (
                    bench_id,
                    position,
                    position,
                    f"question {position}",
                    None,
                    json.dumps([f"option {j}" for j in range(n)]),
                    (choices.YES_NO[position % 2] if n == 0 else choices.LETTERS[position % n]) if keyed else None,
                    None,
                    None,
                    None,
                    "en",
                    None,
                    0,
                    "{}",
                )
                for position, (n, keyed, _) in enumerate(items)
            ],
        )
    run_id = runs.create_run(
        ws,
        benchmark_id=bench_id,
        model_spec="baseline:first",
        strategy=strategy,
        prompt_template="{}",
        extractor="rules",
        config={},
        config_key=f"k{next(_names)}",
        versions={},
        git_revision=None,
        seed=0,
    )
    stored = catalog.list_items(ws, bench_id)
    predictions = []
    for item, (n, _keyed, states) in zip(stored, items):
        for k, state in enumerate(states):
            if state == "absent":
                continue
            order = choices.rotation(n, k) if n else ()
            answer = choices.displayed_answer(item.answer, order)
            other = next(a for a in choices.answer_keys(n) if a != answer)
            choice = {"right": answer, "wrong": other, "undecided": None}[state]
            if answer is None and choice is None and state == "right":
                choice = choices.answer_keys(n)[0]  # no key: any reading is as unscored as another
            correct = None if answer is None else choice == answer
            predictions.append(
                runs.Prediction(
                    run_id,
                    item.id,
                    k,
                    order,
                    "prompt",
                    str(choice),
                    answer,
                    choice,
                    "rules" if choice else "none",
                    None,
                    correct,
                    1.0,
                )
            )
    runs.add_predictions(ws, predictions)
    with ws.db.atomic():
        ws.conn.execute("UPDATE runs SET status = 'finished', finished_at = created_at WHERE id = ?", (run_id,))
    return bench_id, run_id


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(generated=generated_runs())
def test_sql_run_result_is_the_python_rule(ws, generated):
    strategy, items = generated
    bench_id, run_id = _store(ws, strategy, items)
    stored = catalog.list_items(ws, bench_id)
    by_item: dict[int, dict] = {i.id: {} for i in stored}
    for p in runs.predictions_of(ws, run_id):
        by_item[p.item_id][p.pass_] = p
    expected = {i.id: choices.item_result(strategy, len(i.options), choices.marks_of(by_item[i.id])) for i in stored}

    rows = item_query.item_page(ws, bench_id, ItemFilter(run_id=run_id), limit=100)
    assert {r.id: r.run_result for r in rows} == expected
    for result in RUN_RESULTS:
        wanted = {i for i, r in expected.items() if r == result}
        only = ItemFilter(run_id=run_id, run_result=result)
        assert item_query.count_items(ws, bench_id, only) == len(wanted)
        assert {r.id for r in item_query.item_page(ws, bench_id, only)} == wanted
    assert item_query.run_results(ws, [run_id]) == {i: {run_id: r} for i, r in expected.items() if r != "none"}
    # QC's "answered correctly" is the same run result, over the items with a key that the run asked.
    assert qc.circular_correctness(ws, [run_id]) == {
        i: {run_id: r == "right"} for i, r in expected.items() if r not in ("none", "unscored")
    }
    # The report counts the same items right.
    for result in report.group_items(ws, run_id):
        result_here = expected[result.item_id]
        if result.answer is None:
            assert result_here in ("unscored", "none")
            continue
        if strategy == "pope":
            assert result.strict == (result_here == "right" if result_here != "none" else None)
        elif strategy == "circular":
            assert result.circular == (result_here == "right")
        else:
            assert result.vanilla == (result_here == "right")


def test_every_result_and_pattern_is_reached(ws):
    """The generated runs can reach every run result (a generator that never made 'pending' would prove little)."""
    reached = set()
    for strategy, n, keyed in (("circular", 3, True), ("circular", 3, False), ("vanilla", 4, True), ("pope", 0, True)):
        asked = choices.passes_needed(strategy, n)
        for states in itertools.product(PASS_STATES, repeat=asked):
            bench_id, run_id = _store(ws, strategy, [(n, keyed, list(states))])
            reached |= {r.run_result for r in item_query.item_page(ws, bench_id, ItemFilter(run_id=run_id))}
    assert reached == set(RUN_RESULTS)


def test_the_search_treats_every_cjk_letter_as_spaceless():
    """db/item_query.py keeps its own character class (db cannot import evaluator): it must cover the ideographs
    and kana and hangul evaluator/scoring/choices.py names, or a Chinese search would go to the word index and find
    nothing."""
    for low, high in _ranges(choices.CJK_SCRIPTS):
        for code in {low, high, (low + high) // 2}:
            assert item_query._SPACELESS.search(chr(code)), hex(code)
    assert not item_query._SPACELESS.search("Ｂ abc")


def _ranges(chars: str) -> list[tuple[int, int]]:
    return [(ord(chars[i]), ord(chars[i + 2])) for i in range(0, len(chars), 3)]


def _kept(ws, run_id):
    return sorted(ws.conn.execute("SELECT item_id, position, result FROM run_item_results WHERE run_id = ?", (run_id,)))


def _rule(ws, bench_id, run_id, strategy):
    by_item: dict[int, dict] = {i.id: {} for i in catalog.list_items(ws, bench_id)}
    for p in runs.predictions_of(ws, run_id):
        by_item[p.item_id][p.pass_] = p
    items = {i.id: i for i in catalog.list_items(ws, bench_id)}
    return {
        i: choices.item_result(strategy, len(items[i].options), choices.marks_of(passes))
        for i, passes in by_item.items()
    }


def test_the_kept_results_follow_every_write_to_passes_items_and_runs(ws):
    """run_item_results (migration 0020) is derived: after passes are added, rescored, deleted, an item's options
    change or the run's strategy, it holds what the rule says — and a rebuild from scratch holds the same."""
    from db import schema

    items = [(3, True, ["right", "right", "wrong"]), (2, True, ["right", "absent"]), (4, False, ["right"] * 4)]
    items += [(2, True, ["right", "right"]), (3, True, ["absent"] * 3)]
    bench_id, run_id = _store(ws, "circular", items)
    ids = [i.id for i in catalog.list_items(ws, bench_id)]

    def check(strategy):
        expected = _rule(ws, bench_id, run_id, strategy)
        rows = item_query.item_page(ws, bench_id, ItemFilter(run_id=run_id), limit=100)
        assert {r.id: r.run_result for r in rows} == expected
        for result in RUN_RESULTS:
            f = ItemFilter(run_id=run_id, run_result=result)
            wanted = [i for i in ids if expected[i] == result]
            assert [r.id for r in item_query.item_page(ws, bench_id, f)] == wanted
            assert item_query.count_items(ws, bench_id, f) == len(wanted)
        kept = _kept(ws, run_id)
        with ws.db.atomic():
            schema.rebuild_run_results(ws.db)
        assert _kept(ws, run_id) == kept

    check("circular")
    with ws.db.atomic():  # a rescoring: the first item's wrong pass is right after all
        ws.conn.execute("UPDATE predictions SET correct = 1 WHERE run_id = ? AND item_id = ?", (run_id, ids[0]))
    check("circular")
    with ws.db.atomic():  # a pass taken away: right → pending
        ws.conn.execute("DELETE FROM predictions WHERE run_id = ? AND item_id = ? AND pass = 1", (run_id, ids[3]))
    check("circular")
    with ws.db.atomic():  # fewer options: two right rotations are enough now
        ws.conn.execute('UPDATE items SET options = \'["a", "b"]\' WHERE id = ?', (ids[0],))
    check("circular")
    with ws.db.atomic():
        ws.conn.execute("UPDATE runs SET strategy = 'vanilla' WHERE id = ?", (run_id,))
    check("vanilla")
    with ws.db.atomic():  # an item removed: its results go with it
        ws.conn.execute("DELETE FROM items WHERE id = ?", (ids[1],))
    ids.remove(ids[1])
    check("vanilla")
    with ws.db.atomic():  # the run deleted: its passes go (cascade), and their results with them
        ws.conn.execute("DELETE FROM runs WHERE id = ?", (run_id,))
    assert _kept(ws, run_id) == []
