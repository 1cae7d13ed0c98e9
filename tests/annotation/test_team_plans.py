"""Assignment plans and gold items (issue 39): the seeded balanced rule, gold keys from QC or a file, progress and gold
accuracy (Wilson = scipy), agreement on the planned overlap, a newer plan superseding, plans between copies, and "my
next item" at a cost that does not grow with the benchmark."""

from __future__ import annotations

import json
import math
from itertools import combinations

import pytest
from scipy.stats import binomtest

from annotation import annotator_stats, reviews, sync, team_plans
from db import catalog, open_workspace
from evaluator.formats.importers import InputError, import_benchmark
from tests.annotation.test_qc import write_bench
from tests.sqlite_steps import counting_steps
from vlmdesk.cli import main as cli_main
from vlmdesk.demo import ensure_demo

REJECTED = ("2", "3", "4", "5", "6", "7")  # QC flags the lead rejects: the stored key stands
CORRECTED = ("8", "A")  # a flag confirmed as a wrong key: A is the key


def cli(path, *args) -> int:
    return cli_main(["--workspace", str(path), *args])


@pytest.fixture
def demo(tmp_path):
    """The demo with a consensus QC stage over baseline:first (it flags every item), 7 keys the lead confirmed, one
    flag left pending and one disputed."""
    path = tmp_path / "lead.sqlite"
    with open_workspace(path) as ws:
        ensure_demo(ws)
    assert cli(path, "run", "--bench", "demo", "--model", "baseline:first") == 0
    assert cli(path, "qc", "consensus", "--bench", "demo", "--run", "1") == 0
    for index in REJECTED:
        assert cli(path, "qc", "decide", "demo", index, "--reject", "--annotator", "lead") == 0
    index, key = CORRECTED
    assert cli(path, "qc", "decide", "demo", index, "--confirm", "--answer", key, "--annotator", "lead") == 0
    assert cli(path, "qc", "decide", "demo", "9", "--reject", "--annotator", "lead") == 0  # disputed: 1 : 1
    assert cli(path, "qc", "decide", "demo", "9", "--confirm", "--reason", "ambiguous", "--annotator", "bo") == 0
    return path


def plan_of(path, capsys, *args) -> dict:
    capsys.readouterr()
    assert cli(path, "team", "plan", "--bench", "demo", *args, "--json") == 0
    return json.loads(capsys.readouterr().out)


def test_three_annotators_overlap_two_five_gold_on_the_demo(demo, capsys):
    plan = plan_of(demo, capsys, "--annotators", "ana,ben,cara", "--overlap", "2", "--gold", "5", "--seed", "1")
    queues = plan["queues"]
    assert list(queues) == ["ana", "ben", "cara"]
    gold = {g["index"] for g in plan["gold"]}
    assert len(gold) == 5
    with open_workspace(demo) as ws:
        bench = catalog.benchmark_by_name(ws, "demo")
        every = {i.index for i in catalog.list_items(ws, bench.id)}
    # Each item exactly twice, a gold item to all three; the flags agree with the gold list.
    count = {i: sum(any(e["index"] == i for e in q) for q in queues.values()) for i in every}
    assert {i for i, n in count.items() if n == 3} == gold
    assert all(n == 2 for i, n in count.items() if i not in gold)
    assert all(e["gold"] == (e["index"] in gold) for q in queues.values() for e in q)
    assert all(len({e["index"] for e in q}) == len(q) for q in queues.values())  # never twice in one queue
    # Loads within 1; every pair shares items, within 1 of each other (pairs balanced: agreement for every pair).
    loads = [sum(not e["gold"] for e in q) for q in queues.values()]
    assert max(loads) - min(loads) <= 1 and sum(loads) == 2 * (len(every) - 5)
    mine = {a: {e["index"] for e in q if not e["gold"]} for a, q in queues.items()}
    shared = [len(mine[a] & mine[b]) for a, b in combinations(mine, 2)]
    assert min(shared) > 0 and max(shared) - min(shared) <= 1
    # Gold spread through each queue: no gap between gold items (or before the first, after the last) longer than
    # the queue's length over the gold count, so never all at the start.
    for q in queues.values():
        at = [n for n, e in enumerate(q) if e["gold"]]
        stride = math.ceil(len(q) / len(at))
        gaps = [at[0], *(b - a for a, b in zip(at, at[1:])), len(q) - 1 - at[-1]]
        assert max(gaps) <= stride and at[0] > 0 and at[-1] >= len(q) - stride
    # Deterministic by seed: the same inputs give the same queues; another seed others.
    again = plan_of(demo, capsys, "--annotators", "ana,ben,cara", "--overlap", "2", "--gold", "5", "--seed", "1")
    assert again["queues"] == queues and again["gold"] == plan["gold"] and again["plan"] == plan["plan"]  # stands
    other = plan_of(demo, capsys, "--annotators", "ana,ben,cara", "--overlap", "2", "--gold", "5", "--seed", "2")
    assert other["queues"] != queues


def test_gold_comes_from_keys_the_lead_confirmed(demo, capsys):
    with open_workspace(demo) as ws:
        bench = catalog.benchmark_by_name(ws, "demo")
        items = {i.index: i for i in catalog.list_items(ws, bench.id)}
        confirmed = team_plans.confirmed_keys(ws, bench.id)
    # Rejected flags keep the stored key; the wrong-key confirmation gives its key; pending and disputed give none.
    expected = {items[int(i)].id: items[int(i)].answer for i in REJECTED} | {items[int(CORRECTED[0])].id: "A"}
    assert confirmed == expected
    plan = plan_of(demo, capsys, "--annotators", "ana,ben", "--overlap", "1", "--gold", "7", "--seed", "3")
    assert {(str(g["index"]), g["answer"]) for g in plan["gold"]} == {
        *((i, items[int(i)].answer) for i in REJECTED),
        CORRECTED,
    }


def test_bad_inputs_are_one_line_and_store_nothing(demo, tmp_path, capsys):
    def refused(*args) -> str:
        capsys.readouterr()
        assert cli(demo, "team", "plan", "--bench", "demo", *args) == 2
        err = capsys.readouterr().err.strip()
        assert "\n" not in err, err
        return err

    assert "only 7 item(s)" in refused("--annotators", "a,b", "--overlap", "1", "--gold", "8", "--seed", "1")
    assert "qc decide" in refused("--annotators", "a,b", "--overlap", "1", "--gold", "8", "--seed", "1")
    assert "named twice" in refused("--annotators", "ana, ana", "--overlap", "1", "--seed", "1")
    assert "more than the 2" in refused("--annotators", "a,b", "--overlap", "3", "--seed", "1")
    assert "U+202E" in refused("--annotators", "a,b\u202e", "--overlap", "1", "--seed", "1")
    gold = tmp_path / "gold.csv"
    gold.write_text("index,answer\n1,C\n2,Z\n")
    assert refused("--annotators", "a,b", "--overlap", "1", "--gold-file", str(gold), "--seed", "1").endswith(
        "gold.csv:3: answer: 'Z' is not a key of item 2: one of A, B, C, D"
    )
    gold.write_text("index,answer\n999,A\n")
    assert "gold.csv:2: index: demo has no item with index '999'" in refused(
        "--annotators", "a", "--overlap", "1", "--gold-file", str(gold), "--seed", "1"
    )
    lines = tmp_path / "gold.jsonl"
    lines.write_text('{"index": 1, "answer": "C"}\n{"index": 2, "answer": "B", "why": 1}\n')
    assert "gold.jsonl:2: why: unknown field" in refused(
        "--annotators", "a", "--overlap", "1", "--gold-file", str(lines), "--seed", "1"
    )
    with open_workspace(demo) as ws:
        assert ws.conn.execute("SELECT count(*) FROM team_plans").fetchone()[0] == 0
        # A plan is append-only: the triggers refuse an edit.
        bench = catalog.benchmark_by_name(ws, "demo")
        team_plans.make_plan(ws, bench, ["a", "b"], 1, 1, author="lead")
        with pytest.raises(Exception, match="append-only"):
            ws.conn.execute("UPDATE team_plan_assignments SET annotator = 'b'")


def test_a_gold_file_gives_the_keys(demo, tmp_path):
    path = tmp_path / "gold.jsonl"
    path.write_text('{"index": 1, "answer": "c"}\n\n{"index": "2", "answer": "B"}\n')
    with open_workspace(demo) as ws:
        bench = catalog.benchmark_by_name(ws, "demo")
        items = {i.index: i.id for i in catalog.list_items(ws, bench.id)}
        assert team_plans.read_gold_file(ws, bench, path) == {items[1]: "C", items[2]: "B"}
        path.write_text("{not json\n")
        with pytest.raises(InputError, match=r"gold.jsonl:1: line: not JSON"):
            team_plans.read_gold_file(ws, bench, path)


def test_a_new_plan_supersedes_and_progress_follows_it(demo):
    with open_workspace(demo) as ws:
        bench = catalog.benchmark_by_name(ws, "demo")
        first = team_plans.make_plan(ws, bench, ["ana", "ben"], 1, 1, author="lead")
        assert team_plans.standing_plan(ws, bench.id) == first
        second = team_plans.make_plan(ws, bench, ["ana", "ben", "cara"], 2, 1, author="lead")
        assert team_plans.standing_plan(ws, bench.id) == second
        found = team_plans.progress(ws, bench.id)
        assert found is not None and found.plan == second
        assert [p.annotator for p in found.people] == ["ana", "ben", "cara"]
        assert len(team_plans.plans(ws, bench.id)) == 2  # the old plan is kept


def test_the_same_command_again_stores_nothing_and_says_the_plan_stands(demo, capsys):
    args = ("team", "plan", "--bench", "demo", "--annotators", "ana,ben,cara", "--overlap", "2", "--seed", "4")
    assert cli(demo, *args) == 0
    first = capsys.readouterr().out
    assert cli(demo, *args, "--json") == 0  # listing it is asking for it again: the same plan, not a second one
    listed = json.loads(capsys.readouterr().out)
    assert cli(demo, *args) == 0
    again = capsys.readouterr().out
    with open_workspace(demo) as ws:
        bench = catalog.benchmark_by_name(ws, "demo")
        assert len(team_plans.plans(ws, bench.id)) == 1
        stood = team_plans.standing_plan(ws, bench.id)
    assert f"plan {stood.uuid} stored" in first and f"plan {stood.uuid} already stands" in again
    assert listed["plan"] == stood.uuid
    assert cli(demo, *args[:-1], "5") == 0  # another seed: another plan, which supersedes
    with open_workspace(demo) as ws:
        assert len(team_plans.plans(ws, bench.id)) == 2


def test_progress_and_gold_accuracy_with_wilson_equal_to_scipy(demo):
    with open_workspace(demo) as ws:
        bench = catalog.benchmark_by_name(ws, "demo")
        items = {i.id: i for i in catalog.list_items(ws, bench.id)}
        keys = team_plans.confirmed_keys(ws, bench.id)
        gold = dict(sorted(keys.items())[:5])
        plan = team_plans.make_plan(ws, bench, ["ana", "ben", "cara"], 2, 1, gold=gold, gold_from="qc", author="lead")
        mine = team_plans.queue(ws, plan.id, "ana")
        right = wrong = 0
        for n, slot in enumerate(mine[:12]):
            item = items[slot.item_id]
            if slot.gold:
                key = gold[item.id]
                # One gold verdict wrong (its first), the others right: ok when the stored key is the gold key,
                # a wrong key naming it when QC corrected it.
                good = n != [s.position for s in mine if s.gold][0]
                if good:
                    verdict, answer = ("ok", None) if item.answer == key else ("wrong_answer", key)
                else:
                    verdict, answer = "ambiguous", None
                reviews.add_review(ws, item.id, "ana", verdict, corrected_answer=answer)
                right, wrong = right + good, wrong + (not good)
                if not good:  # a correction after the feedback showed the key does not count: the first one does
                    key_verdict = ("ok", None) if item.answer == key else ("wrong_answer", key)
                    reviews.add_review(ws, item.id, "ana", key_verdict[0], corrected_answer=key_verdict[1])
            else:
                reviews.add_review(ws, item.id, "ana", "ok")
        reviews.add_review(ws, mine[12].item_id, "ana", "skip")  # a skip is not done
        found = team_plans.progress(ws, bench.id, threshold=0.9)
    ana = found.person("ana")
    assert (ana.planned, ana.done, ana.left) == (len(mine), 12, len(mine) - 12)
    n = right + wrong
    assert n >= 2 and (ana.gold, ana.gold_matched) == (n, right)
    ci = binomtest(right, n).proportion_ci(confidence_level=0.95, method="wilson")
    assert ana.interval == pytest.approx((ci.low, ci.high), abs=1e-12)
    assert ana.flagged == (right / n < 0.9)
    ben = found.person("ben")
    assert (ben.done, ben.gold, ben.interval, ben.flagged) == (0, 0, None, False)


def test_gold_match_rule():
    assert team_plans.gold_match("ok", None, "B", "B") is True
    assert team_plans.gold_match("ok", None, "C", "B") is False  # QC corrected the key to B: "ok" misses it
    assert team_plans.gold_match("wrong_answer", "B", "C", "B") is True
    assert team_plans.gold_match("wrong_answer", "D", "C", "B") is False
    assert team_plans.gold_match("ambiguous", None, "B", "B") is False
    assert team_plans.gold_match("skip", None, "B", "B") is None


def test_agreement_is_reported_on_the_planned_overlap(demo):
    with open_workspace(demo) as ws:
        bench = catalog.benchmark_by_name(ws, "demo")
        plan = team_plans.make_plan(ws, bench, ["ana", "ben", "cara"], 2, 5, author="lead")
        queues = {a: {s.item_id for s in team_plans.queue(ws, plan.id, a)} for a in plan.annotators}
        planned_both = sorted(queues["ana"] & queues["ben"])
        outside = sorted(set(queues["ana"]) - queues["ben"])[:3]  # ben judges these too, unplanned
        for n, item_id in enumerate(planned_both):
            reviews.add_review(ws, item_id, "ana", "ok")
            reviews.add_review(ws, item_id, "ben", "ok" if n % 3 else "ambiguous")
        for item_id in outside:
            reviews.add_review(ws, item_id, "ana", "ok")
            reviews.add_review(ws, item_id, "ben", "bad_image")
        stats = annotator_stats.benchmark_stats(ws, bench.id)
    from sklearn.metrics import cohen_kappa_score

    ana = next(a for a in stats.annotators if a.annotator == "ana")
    assert stats.planned and ana.shared["ben"] == len(planned_both)
    expected = cohen_kappa_score(
        ["ok"] * len(planned_both), ["ok" if n % 3 else "ambiguous" for n in range(len(planned_both))]
    )
    assert ana.kappa["ben"] == pytest.approx(expected)


def test_the_plan_survives_export_and_import_into_another_copy(demo, tmp_path, capsys):
    plan = plan_of(demo, capsys, "--annotators", "ana,ben,cara", "--overlap", "2", "--gold", "5", "--seed", "1")
    out = tmp_path / "plans.jsonl"
    assert cli(demo, "team", "export-plans", "--bench", "demo", "--out", str(out)) == 0
    lines = out.read_text().splitlines()
    assert len({json.loads(line)["id"] for line in lines}) == len(lines)  # each line an id of its own
    copy = tmp_path / "copy.sqlite"
    with open_workspace(copy) as ws:
        ensure_demo(ws)
    # Half the file (a copy synced half-way): the plan is left out whole, not half-stored, and not an error.
    half = tmp_path / "half.jsonl"
    half.write_text("\n".join(lines[: len(lines) // 2]) + "\n")
    with open_workspace(copy) as ws:
        report = sync.import_records(ws, half, "plans")
        assert sum(report.added.values()) == 0 and report.skipped_count == 1 and report.unfit == 0
        assert ws.conn.execute("SELECT count(*) FROM team_plan_assignments").fetchone()[0] == 0
    capsys.readouterr()
    assert cli(copy, "team", "import-plans", str(out), "--json") == 0
    assert json.loads(capsys.readouterr().out)["added"] == len(lines)
    assert cli(copy, "team", "import-plans", str(out), "--json") == 0  # twice: nothing new
    assert json.loads(capsys.readouterr().out)["present"] == len(lines)
    with open_workspace(copy) as ws:
        bench = catalog.benchmark_by_name(ws, "demo")
        there = team_plans.standing_plan(ws, bench.id)
        assert there is not None and there.uuid == plan["plan"]
        assert team_plans.plan_json(ws, there) == plan
    # The same id with other content is refused in one line, nothing written.
    record = json.loads(lines[-1])
    record["position"] = 0 if record["position"] else 1
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(record) + "\n")
    with open_workspace(copy) as ws, pytest.raises(InputError, match=r"bad.jsonl:1: id: .* is not the id of this line"):
        sync.import_records(ws, bad, "plans")


def test_my_next_item_costs_the_same_at_two_sizes(tmp_path):
    """Review's "next" under a plan: the standing plan, where my item is, the next slot, whether it is gold and my next
    item without a verdict — SQLite steps that do not grow with the benchmark."""
    counts = []
    for n in (60, 1200):
        with open_workspace(tmp_path / f"ws{n}.sqlite") as ws:
            import_benchmark(ws, write_bench(tmp_path / f"b{n}.jsonl", n), fmt="jsonl", name="b")
            bench = catalog.benchmark_by_name(ws, "b")
            plan = team_plans.make_plan(ws, bench, ["ana", "ben", "cara"], 2, 1, author="lead")
            middle = team_plans.queue(ws, plan.id, "ana")[len(team_plans.queue(ws, plan.id, "ana")) // 2]
            with counting_steps(ws.conn, every=10) as steps:
                standing = team_plans.standing_plan(ws, bench.id)
                slot = team_plans.slot_of(ws, standing.id, "ana", middle.item_id)
                after = team_plans.step(ws, standing.id, "ana", slot.position)
                team_plans.gold_key(ws, standing.id, after.item_id)
                team_plans.next_unjudged(ws, standing.id, "ana", slot.position)
                team_plans.queue_length(ws, standing.id, "ana")
            counts.append(steps.count)
    assert counts[1] <= counts[0] + 2, counts
