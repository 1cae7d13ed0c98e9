"""Merges stay linear (issue 40): merging a file of N records costs the same SQLite steps whether the workspace
already holds few or ten times more records of that kind on the same items, by the same people, with withdrawals.
Before migration 0022 every merged verdict re-read every review of its item: a merge was quadratic per item."""

from __future__ import annotations

import json
import random
import shutil
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from annotation import alignment, qc, sync
from annotation.standing import REVIEWS
from annotation.standing import live as live_rule
from db import catalog, open_workspace, runs
from evaluator.formats.importers import import_benchmark
from tests.annotation.test_alignment import OPTIONS, RESPONSES, SaysA, _run
from tests.annotation.test_arena import MODELS, cli, write_open
from tests.annotation.test_qc import make_run, write_bench
from tests.db.test_counts import kept, recount
from tests.factories import png_bytes
from tests.sqlite_steps import counting_steps

pytestmark = pytest.mark.base

WHO = ("ana", "bo", "cy")
N = 200  # records in the merged file
SMALL, LARGE = 200, 2_000  # records the workspace holds before, on the same items


def _reviews_and_qc(path: Path, items: int) -> None:
    with open_workspace(path) as ws:
        import_benchmark(ws, write_bench(path.parent / "b.jsonl", items), fmt="jsonl", name="b")
        bench = catalog.benchmark_by_name(ws, "b")
        # Constant baselines are never circularly right: the consensus stage flags every item.
        qc.compute_stage(ws, bench.id, "consensus", [make_run(ws, "b", "baseline:first", text_only=False)])


def _labels(path: Path) -> None:
    (path.parent / "img.png").write_bytes(png_bytes())
    src = path.parent / "s.jsonl"
    src.write_text(
        "".join(
            json.dumps({"index": i, "question": f"Q{i}?", "image": "img.png", "options": OPTIONS, "answer": "A"}) + "\n"
            for i in range(len(RESPONSES))
        )
    )
    with open_workspace(path) as ws:
        import_benchmark(ws, src, fmt="jsonl", name="b")
        bench_id = catalog.benchmark_by_name(ws, "b").id
        first = _run(ws, bench_id, RESPONSES)
        second = _run(ws, bench_id, RESPONSES[:1] + ["dog"] + RESPONSES[2:])
        alignment.build_set(ws, "s1", [first, second], [SaysA()], size=len(RESPONSES), seed=7)


def _open(path: Path, capsys) -> None:
    assert cli(capsys, path, "import", str(write_open(path.parent / "o.jsonl")), "--name", "o")[0] == 0
    for model in MODELS:
        assert cli(capsys, path, "run", "--bench", "o", "--model", model, "--json")[0] == 0
    assert cli(capsys, path, "arena", "pairs", "--bench", "o", "--runs", "1", "2", "3", "--per-item", "3")[0] == 0


def _scopes(ws, kind: str) -> list[dict]:
    """What a record of `kind` is about, by the names that travel between copies."""
    if kind == "reviews":
        return [
            {"benchmark": "b", "index": i.index} for i in catalog.list_items(ws, catalog.benchmark_by_name(ws, "b").id)
        ]
    if kind == "qc":
        return [
            {"benchmark": "b", "index": index, "stage": stage}
            for index, stage in ws.conn.execute(
                "SELECT i.source_index, f.stage FROM qc_flags f JOIN items i ON i.id = f.item_id WHERE f.active"
            )
        ]
    if kind == "labels":
        return [
            {"kind": "label", "set": "s1", "response": key}
            for (key,) in ws.conn.execute("SELECT response_key FROM adjudication_items")
        ]
    if kind == "votes":
        return [{"pair": pair} for (pair,) in ws.conn.execute("SELECT uuid FROM arena_pairs")]
    return [
        {"benchmark": "o", "index": index, "run": config, "answer": runs.answer_key(response), "role": "verdict"}
        for index, config, response in ws.conn.execute(
            "SELECT i.source_index, r.config_key, p.response FROM predictions p JOIN runs r ON r.id = p.run_id "
            "JOIN items i ON i.id = p.item_id WHERE p.pass = 0"
        )
    ]


VALUES = {  # the field holding a record's value, and values a record of each kind may take
    "reviews": ("verdict", ("ok", "ambiguous", "skip", "bad_image")),
    "qc": ("decision", ("reject",)),
    "labels": ("label", ("Z", "unclear")),
    "votes": ("vote", ("left", "right", "tie")),
    "open": ("verdict", ("right", "partly", "wrong")),
}


class _Log:
    """Records of one kind as another copy would export them: corrections, undos of what stands (some of records
    already in the workspace), in time order."""

    def __init__(self, kind: str, scopes: list[dict], seed: int, *, undo: float = 0.25, who: tuple[str, ...] = WHO):
        self.kind, self.scopes, self.rnd, self.undo, self.who = kind, scopes, random.Random(seed), undo, who
        self.at = datetime(2026, 1, 1, tzinfo=UTC)
        self.stands: dict[tuple[int, str], str] = {}
        self.written: list[dict] = []

    def records(self, n: int) -> list[dict]:
        field, values = VALUES[self.kind]
        out = []
        for _ in range(n):
            self.at += timedelta(milliseconds=1)
            scope, who = self.rnd.randrange(len(self.scopes)), self.rnd.choice(self.who)
            target = self.stands.get((scope, who))
            record = {**self.scopes[scope], "id": str(uuid.uuid4()), "annotator": who, "at": self.at.isoformat()}
            if target is not None and self.rnd.random() < self.undo:
                record |= {field: "undo", "withdraws": self.stands.pop((scope, who))}
            else:
                record[field] = self.rnd.choice(values)
                self.stands[(scope, who)] = record["id"]
            out.append(record)
        self.written += out
        return out


def _write(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def _merge_steps(ws, path: Path, kind: str) -> int:
    with counting_steps(ws.conn) as steps:
        report = sync.import_records(ws, path, kind)
    assert report.skipped_count == 0 and sum(report.added.values()) == N - N // 10, report
    return steps.count


@pytest.mark.parametrize("kind", [k for k in sync.KINDS if k != "plans"])  # plans: whole, never undone (below)
def test_a_merge_costs_the_same_whatever_the_workspace_holds_on_the_same_items(kind, tmp_path, capsys):
    world = tmp_path / "world.sqlite"
    if kind in ("reviews", "qc"):
        _reviews_and_qc(world, 12)
    elif kind == "labels":
        _labels(world)
    else:
        _open(world, capsys)
    steps = {}
    for held in (SMALL, LARGE):
        path = tmp_path / f"held{held}.sqlite"
        shutil.copy(world, path)
        with open_workspace(path) as ws:
            log = _Log(kind, _scopes(ws, kind), seed=held)
            sync.import_records(ws, _write(tmp_path / f"before{held}.jsonl", log.records(held)), kind)
            # The file: new records (undos of records held here among them) and some this copy holds already.
            present = random.Random(1).sample(log.written, N // 10)
            merged = _write(tmp_path / f"merge{held}.jsonl", log.records(N - N // 10) + present)
            steps[held] = _merge_steps(ws, merged, kind)
            if kind == "reviews":
                assert kept(ws) == recount(ws)
                live = set(ws.conn.execute("SELECT review_id FROM review_live"))
                assert live == set(ws.conn.execute(f"SELECT t.id FROM reviews t WHERE {live_rule(REVIEWS, 't')}"))
    assert steps[LARGE] <= 1.3 * steps[SMALL], steps


def test_a_person_undoing_on_one_item_again_and_again_costs_the_same_per_record(tmp_path):
    """Verdict, undo, verdict, undo… on one item: every undo withdraws what stands and nothing older stands, so a
    walk back to the newest record still standing would read the whole history each time."""
    world = tmp_path / "world.sqlite"
    _reviews_and_qc(world, 1)
    steps = {}
    for held in (SMALL, LARGE):
        path = tmp_path / f"held{held}.sqlite"
        shutil.copy(world, path)
        with open_workspace(path) as ws:
            log = _Log("reviews", _scopes(ws, "reviews"), seed=1, undo=1.0, who=("ana",))
            sync.import_records(ws, _write(tmp_path / f"before{held}.jsonl", log.records(held)), "reviews")
            steps[held] = _merge_steps(ws, _write(tmp_path / f"merge{held}.jsonl", log.records(N - N // 10)), "reviews")
            assert kept(ws) == recount(ws)
    assert steps[LARGE] <= 1.3 * steps[SMALL], steps


def test_merging_a_plan_costs_the_same_whatever_plans_the_workspace_holds(tmp_path):
    """Assignment plans travel whole (annotation/team_plans.py): merging one made on another copy costs the same with
    2 or 20 other plans of the benchmark already held."""
    from annotation import team_plans

    world = tmp_path / "world.sqlite"
    _reviews_and_qc(world, 12)
    elsewhere = tmp_path / "elsewhere.sqlite"
    shutil.copy(world, elsewhere)
    with open_workspace(elsewhere) as ws:
        team_plans.make_plan(ws, catalog.benchmark_by_name(ws, "b"), ["ana", "ben", "cara"], 2, 99, author="lead")
        exported = list(sync.export_records(ws, "plans", benchmark="b"))
    steps = {}
    for held in (2, 20):
        path = tmp_path / f"held{held}.sqlite"
        shutil.copy(world, path)
        with open_workspace(path) as ws:
            bench = catalog.benchmark_by_name(ws, "b")
            for seed in range(held):
                team_plans.make_plan(ws, bench, ["ana", "ben", "cara", "dan"], 2, seed, author="lead")
            with counting_steps(ws.conn) as counted:
                report = sync.import_records(ws, _write(tmp_path / f"plan{held}.jsonl", exported), "plans")
            assert sum(report.added.values()) == len(exported) and report.skipped_count == 0, report
            steps[held] = counted.count
    assert steps[20] <= 1.3 * steps[2], steps
