"""QC stages select exactly the items their rules name; decisions are an append-only log resolved per reviewer."""

from __future__ import annotations

import hashlib
import json
import random
import sqlite3

import pytest

from annotation import qc
from db import catalog, open_workspace, runs
from evaluator.engine.launch import execute_run, open_backend, start_run
from evaluator.engine.prompts import default_template
from evaluator.engine.runner import RunSettings
from evaluator.formats.importers import import_benchmark
from tests.factories import png_bytes
from vlmdesk.demo import ensure_demo

LETTERS = "ABCD"


def write_bench(path, n: int):
    """n items, mostly two options (so a random guesser is sometimes right in every rotation), answers spread."""
    (path.parent / "img.png").write_bytes(png_bytes())
    with open(path, "w") as f:
        for i in range(n):
            k = 3 if i % 5 == 0 else 2
            f.write(
                json.dumps(
                    {
                        "index": i,
                        "question": f"Which is thing {i}?",
                        "image": "img.png",
                        "options": [f"thing {i} {j}" for j in range(k)],
                        "answer": LETTERS[(i * 7) % k],
                        "category": f"cat{i % 3}",
                    }
                )
                + "\n"
            )
    return path


@pytest.fixture
def ws(tmp_path):
    with open_workspace(tmp_path / "ws.sqlite") as ws:
        import_benchmark(ws, write_bench(tmp_path / "b.jsonl", 80), fmt="jsonl", name="b")
        yield ws


def make_run(ws, bench_name: str, spec: str, *, text_only: bool, strategy: str = "circular") -> int:
    bench = catalog.benchmark_by_name(ws, bench_name)
    settings = RunSettings(strategy=strategy, text_only=text_only)
    template = default_template(bench.kind)
    backend = open_backend(ws, bench.id, spec, seed=0)
    run = start_run(ws, bench, spec, settings, template, backend, batch_size=16)
    execute_run(ws, run, backend, batch_size=16)
    return run.id


def random_guess(seed: int, prompt: str, letters) -> str:
    # baseline:random's documented rule, recomputed here: a choice seeded by the seed and the prompt text.
    return random.Random(hashlib.sha256(f"{seed}\0{prompt}".encode()).digest()).choice(letters)


def circular_right(item, seed: int) -> bool:
    template = default_template("mcq")
    n = len(item.options)
    for k in range(n):
        shown = tuple(item.options[(i + k) % n] for i in range(n))
        prompt = template.render(question=item.question, hint=item.hint, options=shown, language=item.language)
        if random_guess(seed, prompt, tuple(LETTERS[:n])) != LETTERS[(LETTERS.index(item.answer) - k) % n]:
            return False
    return True


def indexes(ws, item_ids) -> set:
    return {i.index for i in catalog.list_items(ws, catalog.benchmark_by_name(ws, "b").id) if i.id in set(item_ids)}


def test_text_only_flags_items_more_than_half_of_the_runs_answer_in_every_rotation(ws):
    bench = catalog.benchmark_by_name(ws, "b")
    seeds = (1, 2, 3)
    run_ids = [make_run(ws, "b", f"baseline:random?seed={s}", text_only=True) for s in seeds]
    result = qc.compute_stage(ws, bench.id, "text-only", run_ids)
    items = catalog.list_items(ws, bench.id)
    right = {i.index: sum(circular_right(i, s) for s in seeds) for i in items}
    expected = {index for index, n in right.items() if n >= 2}
    assert 3 <= len(expected) < len(items)  # the case is not degenerate
    assert any(n == 1 for n in right.values())  # one right run of three is not enough
    assert indexes(ws, result.candidates) == expected
    assert result.items_evaluated == 80 and result.run_ids == tuple(run_ids)
    flagged = qc.queue(ws, benchmark_id=bench.id)
    assert {c.index for c in flagged} == expected and {c.status for c in flagged} == {"pending"}
    for c in flagged:
        assert c.run_ids == tuple(run_ids)
        assert len(c.correct_run_ids) == right[c.index]


def test_constant_baselines_are_never_circularly_right_so_consensus_flags_everything(ws):
    bench = catalog.benchmark_by_name(ws, "b")
    text = [make_run(ws, "b", s, text_only=True) for s in ("baseline:first", "baseline:frequent")]
    assert qc.compute_stage(ws, bench.id, "text-only", text).candidates == ()
    vlm = [make_run(ws, "b", s, text_only=False) for s in ("baseline:first", "baseline:frequent")]
    result = qc.compute_stage(ws, bench.id, "consensus", vlm)
    assert len(result.candidates) == 80


def test_consensus_flags_exactly_the_items_no_run_gets_right(ws):
    bench = catalog.benchmark_by_name(ws, "b")
    seeds = (4, 5)
    run_ids = [make_run(ws, "b", f"baseline:random?seed={s}", text_only=False) for s in seeds]
    run_ids.append(make_run(ws, "b", "baseline:first", text_only=False))
    result = qc.compute_stage(ws, bench.id, "consensus", run_ids)
    expected = {i.index for i in catalog.list_items(ws, bench.id) if not any(circular_right(i, s) for s in seeds)}
    assert 0 < len(expected) < 80
    assert indexes(ws, result.candidates) == expected


def test_pope_single_pass_rules_with_baselines_of_known_answers(tmp_path):
    with open_workspace(tmp_path / "ws.sqlite") as ws:
        ensure_demo(ws)
        bench = catalog.benchmark_by_name(ws, "demo-pope")
        items = catalog.list_items(ws, bench.id)
        # baseline:first always says "Yes": right exactly on the yes-labelled questions.
        first = make_run(ws, "demo-pope", "baseline:first", text_only=False)
        yes = {i.id for i in items if i.answer == "yes"}
        assert 0 < len(yes) < len(items)
        assert set(qc.compute_stage(ws, bench.id, "consensus", [first]).candidates) == {i.id for i in items} - yes
        # Text-only: first alone is "more than half" of one run.
        first_blind = make_run(ws, "demo-pope", "baseline:first", text_only=True)
        assert set(qc.compute_stage(ws, bench.id, "text-only", [first_blind]).candidates) == yes


def test_rerunning_a_stage_replaces_flags_and_keeps_decisions(ws):
    bench = catalog.benchmark_by_name(ws, "b")
    first = make_run(ws, "b", "baseline:first", text_only=False)
    r4 = make_run(ws, "b", "baseline:random?seed=4", text_only=False)
    qc.compute_stage(ws, bench.id, "consensus", [first])
    everything = qc.queue(ws, benchmark_id=bench.id)
    assert len(everything) == 80
    # A decision on an item the second computation will drop (random seed 4 gets it right).
    dropped = next(c for c in everything if circular_right(_item(ws, c.item_id), 4))
    qc.decide(ws, dropped.item_id, "consensus", "ann", "confirm", reason="ambiguous")
    second = qc.compute_stage(ws, bench.id, "consensus", [first, r4])
    assert dropped.item_id in second.withdrawn and dropped.item_id not in second.candidates
    assert second.added == ()
    active = qc.queue(ws, benchmark_id=bench.id)
    assert all(c.run_ids == (first, r4) for c in active) and dropped.item_id not in {c.item_id for c in active}
    withdrawn = [c for c in qc.queue(ws, benchmark_id=bench.id, include_withdrawn=True) if not c.active]
    assert sorted(c.item_id for c in withdrawn) == sorted(second.withdrawn)
    kept = next(c for c in withdrawn if c.item_id == dropped.item_id)
    assert kept.status == "confirmed" and kept.run_ids == (first,)  # the runs of the last computation that flagged it
    # Back to the first run set: the flag is active again and its decision is still there.
    third = qc.compute_stage(ws, bench.id, "consensus", [first])
    assert dropped.item_id in third.added
    again = next(c for c in qc.queue(ws, benchmark_id=bench.id) if c.item_id == dropped.item_id)
    assert again.status == "confirmed" and [d.reason for d in again.history] == ["ambiguous"]
    assert [h["stage"] for h in qc.stage_history(ws, bench.id)] == ["consensus"] * 3


def _item(ws, item_id):
    return next(i for i in catalog.list_items(ws, catalog.benchmark_by_name(ws, "b").id) if i.id == item_id)


@pytest.mark.parametrize(
    "stage, runs_of, message",
    [
        ("consensus", lambda ids: [ids["blind"]], "without images"),
        ("text-only", lambda ids: [ids["vlm"]], "saw the images"),
        ("consensus", lambda ids: [ids["vanilla"]], "vanilla"),
        ("consensus", lambda ids: [ids["vlm"], ids["vlm"]], "named twice"),
        ("consensus", lambda ids: [ids["other"]], "not of this one"),
        ("consensus", lambda ids: [ids["vlm"] + 100], "no run"),
        ("consensus", lambda ids: [ids["unfinished"]], "not finished"),
    ],
)
def test_stages_refuse_runs_that_do_not_fit(ws, tmp_path, stage, runs_of, message):
    bench = catalog.benchmark_by_name(ws, "b")
    import_benchmark(ws, write_bench(tmp_path / "other.jsonl", 3), fmt="jsonl", name="other")
    ids = {
        "blind": make_run(ws, "b", "baseline:first", text_only=True),
        "vlm": make_run(ws, "b", "baseline:first", text_only=False),
        "vanilla": make_run(ws, "b", "baseline:first", text_only=False, strategy="vanilla"),
        "other": make_run(ws, "other", "baseline:first", text_only=False),
    }
    unfinished = start_run(
        ws,
        bench,
        "baseline:random",
        RunSettings(),
        default_template("mcq"),
        open_backend(ws, bench.id, "baseline:random", seed=0),
        batch_size=8,
    )
    ids["unfinished"] = unfinished.id
    with pytest.raises(qc.QCError, match=message):
        qc.compute_stage(ws, bench.id, stage, runs_of(ids))
    assert ws.conn.execute("SELECT count(*) FROM qc_flags").fetchone()[0] == 0


@pytest.fixture
def flagged(ws):
    bench = catalog.benchmark_by_name(ws, "b")
    qc.compute_stage(ws, bench.id, "consensus", [make_run(ws, "b", "baseline:first", text_only=False)])
    return ws, catalog.list_items(ws, bench.id)


def test_latest_decision_per_reviewer_counts_and_ties_are_disputed(flagged):
    ws, items = flagged
    a, b, c = items[0], items[1], items[2]
    qc.decide(ws, a.id, "consensus", "ann", "reject")
    qc.decide(ws, a.id, "consensus", "ann", "confirm", reason="bad_image", note="too dark")
    status = {x.item_id: x for x in qc.queue(ws)}
    assert status[a.id].status == "confirmed" and status[a.id].resolution.action == "remove"
    assert [d.decision for d in status[a.id].history] == ["reject", "confirm"]  # nothing was overwritten
    assert not status[a.id].resolution.disagreement
    # Two reviewers, opposite outcomes: a tie, listed as a disagreement.
    qc.decide(ws, b.id, "consensus", "ann", "confirm", reason="ambiguous")
    qc.decide(ws, b.id, "consensus", "bob", "reject")
    # Three reviewers, two agree: the majority stands, the disagreement is still listed.
    qc.decide(ws, c.id, "consensus", "ann", "confirm", reason="ambiguous")
    qc.decide(ws, c.id, "consensus", "bob", "confirm", reason="bad_image")
    qc.decide(ws, c.id, "consensus", "cat", "reject")
    status = {x.item_id: x for x in qc.queue(ws)}
    assert status[b.id].status == "disputed" and status[b.id].resolution.action is None
    assert status[c.id].status == "confirmed" and status[c.id].resolution.action == "remove"
    assert {x.item_id for x in qc.queue(ws, disagreements_only=True)} == {b.id, c.id}
    assert [x.item_id for x in qc.queue(ws, status="disputed")] == [b.id]
    # The queue lists pending candidates first.
    order = [x.status for x in qc.queue(ws)]
    assert order == sorted(order, key=["pending", "disputed", "confirmed", "rejected"].index)
    assert order[0] == "pending"


def test_answer_corrections_keep_old_and_new_and_differing_answers_dispute(flagged):
    ws, items = flagged
    item = items[0]
    d = qc.decide(ws, item.id, "consensus", "ann", "confirm", answer="b")  # reason inferred: wrong_answer
    assert (d.reason, d.old_answer, d.new_answer) == ("wrong_answer", item.answer, "B")
    c = next(x for x in qc.queue(ws) if x.item_id == item.id)
    assert (c.status, c.resolution.action, c.resolution.answer) == ("confirmed", "correct", "B")
    # The item's own key is never edited: the correction lives in the decision.
    assert catalog.item_by_index(ws, item.benchmark_id, item.index).answer == item.answer
    assert (len(item.options), item.answer) == (3, "A")
    qc.decide(ws, item.id, "consensus", "bob", "confirm", reason="wrong_answer", answer="C")
    c = next(x for x in qc.queue(ws) if x.item_id == item.id)
    assert c.status == "disputed" and c.resolution.disagreement


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"decision": "confirm"}, "needs a reason"),
        ({"decision": "confirm", "reason": "wrong_answer"}, "needs the corrected answer"),
        ({"decision": "confirm", "reason": "ambiguous", "answer": "B"}, "only a wrong-answer"),
        ({"decision": "confirm", "answer": "Q"}, "not one of"),
        ({"decision": "reject", "reason": "other"}, "takes no reason"),
        ({"decision": "maybe"}, "unknown decision"),
        ({"decision": "confirm", "reason": "typo"}, "unknown reason"),
        ({"decision": "reject", "annotator": " "}, "annotator"),
        ({"decision": "reject", "stage": "text-only"}, "no text-only flag"),
    ],
)
def test_bad_decisions_are_refused_and_nothing_is_written(flagged, kwargs, message):
    ws, items = flagged
    kwargs = {"annotator": "ann", "stage": "consensus", **kwargs}
    with pytest.raises(qc.QCError, match=message):
        qc.decide(ws, items[0].id, kwargs.pop("stage"), kwargs.pop("annotator"), kwargs.pop("decision"), **kwargs)
    assert ws.conn.execute("SELECT count(*) FROM qc_decisions").fetchone()[0] == 0


def test_decision_on_the_current_key_is_refused_and_log_is_append_only(flagged):
    ws, items = flagged
    with pytest.raises(qc.QCError, match="already the answer key"):
        qc.decide(ws, items[0].id, "consensus", "ann", "confirm", answer=items[0].answer)
    qc.decide(ws, items[0].id, "consensus", "ann", "reject")
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        ws.conn.execute("UPDATE qc_decisions SET decision = 'confirm'")


def test_summary_counts_per_stage_reason_and_item_category(flagged):
    ws, items = flagged
    bench = catalog.benchmark_by_name(ws, "b")
    blind = make_run(ws, "b", "baseline:random?seed=1", text_only=True)
    text = qc.compute_stage(ws, bench.id, "text-only", [blind])
    assert text.candidates
    qc.decide(ws, items[0].id, "consensus", "ann", "confirm", reason="ambiguous")
    qc.decide(ws, items[1].id, "consensus", "ann", "confirm", answer="A" if items[1].answer != "A" else "B")
    qc.decide(ws, items[2].id, "consensus", "ann", "reject")
    qc.decide(ws, items[3].id, "consensus", "ann", "reject")
    qc.decide(ws, items[3].id, "consensus", "bob", "confirm", reason="other")
    qc.decide(ws, text.candidates[0], "text-only", "ann", "confirm")
    [s] = qc.summary(ws)
    con, txt = s["stages"]["consensus"], s["stages"]["text-only"]
    assert (con["candidates"], con["confirmed"], con["rejected"], con["disputed"], con["pending"]) == (80, 2, 1, 1, 76)
    assert con["by_reason"] == {"ambiguous": 1, "wrong_answer": 1} and con["disagreements"] == 1
    assert sum(c["candidates"] for c in con["by_item_category"].values()) == 80
    assert set(con["by_item_category"]) == {"cat0", "cat1", "cat2"}
    assert con["by_item_category"][items[0].category]["confirmed"] >= 1
    assert txt["category"] == "text-answerable" and txt["confirmed"] == 1
    assert txt["by_reason"] == {"text_answerable": 1}
    assert s["total"]["candidates"] == 80 + len(text.candidates)
    assert runs.get_run(ws, blind).status == "finished"  # the stage's runs are ordinary, kept runs


def test_the_streamed_queue_is_the_queue_in_the_same_order_across_chunks(tmp_path):
    """qc.iter_queue (what `vlmdesk qc list` streams) lists what qc.queue lists, in its order, past a chunk of 500."""
    with open_workspace(tmp_path / "ws.sqlite") as ws:
        rng = random.Random(7)
        with ws.db.atomic():
            bid = catalog.insert_benchmark(
                ws, name="big", kind="mcq", format="jsonl", source="s", source_sha256="big", meta={}
            )
            n = 700
            positions = list(range(n))
            rng.shuffle(positions)  # ids and positions in different orders: the queue is in file order
            catalog.insert_items(
                ws,
                [
                    (bid, p, p, f"Q{p}?", None, json.dumps(["a", "b"]), "A", "c", None, None, "en", None, 0, "{}")
                    for p in positions
                ],
            )
            catalog.finish_benchmark(ws, bid, rows_read=n, rows_folded=0, rows_skipped=0)
            stage_run = ws.conn.execute(
                "INSERT INTO qc_stage_runs (benchmark_id, stage, run_ids, items_evaluated, candidates, created_at) "
                "VALUES (?, 'consensus', '[1]', ?, ?, 'now')",
                (bid, n, n),
            ).lastrowid
            ids = [r[0] for r in ws.conn.execute("SELECT id FROM items")]
            rng.shuffle(ids)
            for k, item_id in enumerate(ids):
                for stage in ("consensus", "text-only") if k % 3 == 0 else ("consensus",):
                    ws.conn.execute(
                        "INSERT INTO qc_flags (benchmark_id, item_id, stage, stage_run_id, run_ids, correct_run_ids, "
                        "active, flagged_at, updated_at) VALUES (?, ?, ?, ?, '[1]', '[]', ?, 'now', 'now')",
                        (bid, item_id, stage, stage_run, int(k % 11 != 0)),
                    )
        for item_id in [i for k, i in enumerate(ids[:160]) if k % 11]:  # confirmed, rejected, disputed among pending
            for who in ("ann", "bob") if rng.random() < 0.5 else ("ann",):
                decision = rng.choice(["confirm", "reject"])
                qc.decide(
                    ws, item_id, "consensus", who, decision, reason="ambiguous" if decision == "confirm" else None
                )
        for kwargs in (
            {},
            {"include_withdrawn": True},
            {"status": "confirmed"},
            {"stage": "text-only"},
            {"disagreements_only": True, "benchmark_id": bid},
        ):
            listed = qc.queue(ws, **kwargs)
            assert len(listed) > 40 or kwargs.get("disagreements_only")
            assert list(qc.iter_queue(ws, **kwargs)) == listed, kwargs
        assert len(qc.queue(ws)) > 500  # more than one chunk
        assert [c.status for c in qc.queue(ws)][:1] == ["pending"] and "confirmed" in {c.status for c in qc.queue(ws)}
