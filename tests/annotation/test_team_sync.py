"""A team folder: copies of a workspace exchange every kind of human record through their journals in one folder.
After each sync both copies hold the same records, nothing duplicated or lost — through a half-synced folder (a file
cut mid-line), a kill -9 at any point of a sync, hostile files beside the journals, and a copy of a workspace that
writes the same journal."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys

import pytest

from annotation import arena, open_verdicts, qc, reviews, team_plans, team_sync
from db import catalog, open_workspace
from evaluator.formats.importers import import_benchmark
from tests.annotation.test_arena import write_open
from tests.annotation.test_qc import make_run, write_bench
from tests.sqlite_steps import counting_steps
from vlmdesk.cli import main

TABLES = ("reviews", "qc_decisions", "arena_votes", "open_verdicts", "labels", "adjudications", "team_plans")


def vlmdesk_cmd(ws_path, *args) -> list[str]:
    return [sys.executable, "-m", "vlmdesk", "--workspace", str(ws_path), *args]


ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    """A workspace with a multiple-choice benchmark `b` (20 items, a run, its consensus QC stage) and an open one `o`
    (6 items, three runs, arena pairs): what every copy of a study shares before anyone annotates."""
    d = tmp_path_factory.mktemp("base")
    path = d / "base.sqlite"
    with open_workspace(path) as ws:
        import_benchmark(ws, write_bench(d / "b.jsonl", 20), fmt="jsonl", name="b")
        import_benchmark(ws, write_open(d / "o.jsonl"), fmt="jsonl", name="o")
        bench = catalog.benchmark_by_name(ws, "b")
        qc.compute_stage(ws, bench.id, "consensus", [make_run(ws, "b", "baseline:first", text_only=False)])
    for model in ("baseline:first", "baseline:random", "baseline:frequent"):
        assert main(["--workspace", str(path), "run", "--bench", "o", "--model", model, "--json"]) == 0
    assert (
        main(["--workspace", str(path), "arena", "pairs", "--bench", "o", "--runs", "2", "3", "4", "--per-item", "2"])
        == 0
    )
    return path


@pytest.fixture
def copies(base, tmp_path):
    """Two copies of the study's workspace (a for ana, b for bob) and an empty team folder."""
    a, b, folder = tmp_path / "ana.sqlite", tmp_path / "bob.sqlite", tmp_path / "team"
    shutil.copyfile(base, a)
    shutil.copyfile(base, b)
    folder.mkdir()
    return a, b, folder


def work(path, who: str, step: int = 0) -> None:
    """Records of every kind by `who`: verdicts with a note and an undo, QC decisions and an undo, arena votes and
    an undo, open verdicts, and (ana) an assignment plan."""
    with open_workspace(path) as ws:
        bench = catalog.benchmark_by_name(ws, "b")
        items = catalog.list_items(ws, bench.id)
        k = step * 3
        reviews.add_review(ws, items[k].id, who, "ok", seconds=1.5)
        reviews.add_review(ws, items[k + 1].id, who, "ambiguous", note=f"{who} is unsure")
        reviews.add_review(ws, items[k + 2].id, who, "skip")
        reviews.undo_last(ws, who, item_id=items[k + 2].id)
        flagged = [i for (i,) in ws.conn.execute("SELECT item_id FROM qc_flags ORDER BY item_id")]
        qc.decide(ws, flagged[step], "consensus", who, "confirm", reason="ambiguous")
        qc.decide(ws, flagged[step + 1], "consensus", who, "reject")
        qc.undo_decision(ws, flagged[step + 1], "consensus", who)
        pairs = arena.pairs(ws)
        arena.add_vote(ws, pairs[step].id, who, "left", note="sharper")
        arena.add_vote(ws, pairs[step + 1].id, who, "tie")
        arena.undo_last(ws, who, pair_id=pairs[step + 1].id)
        pred = ws.conn.execute(
            "SELECT p.run_id, p.item_id FROM predictions p JOIN runs r ON r.id = p.run_id "
            "JOIN benchmarks b ON b.id = r.benchmark_id WHERE p.pass = 0 AND b.name = 'o' ORDER BY p.run_id, p.item_id"
        ).fetchall()
        open_verdicts.add_verdict(ws, *pred[step], who, open_verdicts.VERDICTS[0])
        if who == "ana" and step == 0:
            team_plans.make_plan(ws, bench, ["ana", "bob", "cy"], 2, 7, author="ana")


def records(path) -> dict[str, list[str]]:
    """Every human record's uuid per table, sorted (a duplicate would show twice: the UNIQUE uuid forbids it)."""
    with open_workspace(path) as ws:
        return {t: sorted(u for (u,) in ws.conn.execute(f"SELECT uuid FROM {t}")) for t in TABLES}


def standing(path) -> tuple:
    with open_workspace(path) as ws:
        return (
            sorted((r.item_id, r.annotator, r.verdict) for r in reviews.standing_reviews(ws)),
            qc.summary(ws),
            sorted((v.pair_id, v.annotator, v.vote, v.uuid) for v in arena.standing_votes(ws)),
        )


def journal(folder, path) -> list[dict]:
    """The lines of this workspace's journal."""
    with open_workspace(path) as ws:
        (name,) = ws.conn.execute("SELECT journal FROM team_folders").fetchone()
    return [json.loads(line) for line in (folder / team_sync.journal_name(name)).read_text().splitlines()]


def sync(path, folder) -> team_sync.SyncReport:
    with open_workspace(path) as ws:
        return team_sync.sync(ws, folder)


def test_two_copies_exchange_every_kind_both_ways_and_a_second_sync_adds_nothing(copies):
    a, b, folder = copies
    work(a, "ana")
    work(b, "bob")
    made_a, made_b = records(a), records(b)
    assert made_a != made_b
    first = sync(a, folder)
    assert first.appended == {"reviews": 4, "qc": 3, "votes": 3, "open": 1, "plans": 1}
    assert first.imported == 0 and first.journal.startswith("vlmdesk-")
    second = sync(b, folder)
    (peer,) = second.peers.values()
    assert peer.added == {"reviews": 4, "qc": 3, "votes": 3, "open": 1, "plans": 1} and peer.skipped_count == 0
    assert sync(a, folder).imported == 11  # bob's 4 + 3 + 3 + 1
    assert records(a) == records(b)
    assert standing(a) == standing(b)
    union = {t: sorted(set(made_a[t]) | set(made_b[t])) for t in TABLES}
    assert records(a) == union  # nothing lost, nothing twice
    # Each journal holds what was made in its copy, once; nothing imported is journaled back.
    lines = journal(folder, a)[1:]
    ids = [line["record"]["id"] for line in lines if line["kind"] != "plans" or line["record"]["record"] == "plan"]
    assert len(ids) == len(set(ids)) and set(ids) == {u for t in TABLES for u in made_a[t]}
    assert len(lines) == len(ids) + 20 * 2  # the plan's 40 assignments travel with it
    before = [(folder / n).read_bytes() for n in sorted(os.listdir(folder))]
    for p in (a, b, a):
        again = sync(p, folder)
        assert again.appended == {} and again.imported == 0
    assert [(folder / n).read_bytes() for n in sorted(os.listdir(folder))] == before
    # More work on both sides: only the new records travel.
    work(a, "ana", step=1)
    work(b, "bob", step=1)
    assert sync(a, folder).appended == {"reviews": 4, "qc": 3, "votes": 3, "open": 1}
    assert sync(b, folder).imported == 11
    assert sync(a, folder).imported == 11
    assert records(a) == records(b) and standing(a) == standing(b)


def test_a_half_synced_folder_is_read_to_its_last_whole_line_and_the_rest_follows(copies, tmp_path):
    """A third process carries ana's journal into bob's folder the way a sync tool does: in pieces, cut mid-line."""
    a, b, folder = copies
    theirs = tmp_path / "bob-side"
    theirs.mkdir()
    work(a, "ana")
    sync(a, folder)
    (name,) = os.listdir(folder)
    data = (folder / name).read_bytes()
    ends = [i + 1 for i, c in enumerate(data) if c == ord("\n")]
    plan_at = next(e for e, line in zip([0, *ends], data.splitlines(), strict=False) if b'"record": "plan"' in line)
    seen = []
    for cut in (ends[0] - 5, ends[0], ends[2] + 17, ends[5] + 1, len(data) - 3, len(data)):
        (theirs / name).write_bytes(data[:cut])  # what the sync tool has copied so far
        report = sync(b, theirs)
        seen.append(report.imported)
        with open_workspace(b) as ws:
            offset = ws.conn.execute("SELECT offset FROM team_peers").fetchone()
        whole = max((e for e in ends if e <= cut), default=0)
        if plan_at < whole < len(data):  # a plan is read whole: its first line waits for its last
            whole = plan_at
        assert offset is None or offset[0] == whole  # read up to the last whole line, never into a partial one
    assert sum(seen) == 12 and seen[0] == 0
    mine = records(a)
    got = records(b)
    assert all(set(mine[t]) <= set(got[t]) for t in TABLES)
    # The tool replaces the file by another copy of it (a new inode, the same bytes): nothing new, nothing twice.
    (theirs / name).unlink()
    (theirs / name).write_bytes(data)
    assert sync(b, theirs).imported == 0 and records(b) == got
    # A file that got shorter than what was read (an older version restored) is read again from the start: the same.
    (theirs / name).write_bytes(data[: ends[3]])
    again = sync(b, theirs)
    assert next(iter(again.peers.values())).reread and again.imported == 0 and records(b) == got


def test_a_kill_9_at_any_point_of_a_sync_then_a_sync_again_leaves_both_the_same(copies):
    a, b, folder = copies
    with open_workspace(a) as ws:
        items = catalog.list_items(ws, catalog.benchmark_by_name(ws, "b").id)
        for n in range(1500):  # enough that a sync takes a while
            reviews.add_review(ws, items[n % 20].id, f"ana{n % 50}", "ok" if n % 3 else "bad_image")
    work(b, "bob")
    killed = 0
    for delay in (0.2, 0.5, 0.8, 1.1, 1.4, 1.8, 2.4):
        for side in (a, b):
            child = subprocess.Popen(vlmdesk_cmd(side, "team", "sync", str(folder)), env=ENV, stdout=subprocess.DEVNULL)
            try:
                child.wait(timeout=delay)
            except subprocess.TimeoutExpired:
                child.send_signal(signal.SIGKILL)
                child.wait()
                killed += 1
    assert killed  # at least one sync was cut short (the rest finished: a kill after its end)
    for side in (a, b, a):
        done = subprocess.run(vlmdesk_cmd(side, "team", "sync", str(folder), "--json"), env=ENV, capture_output=True)
        assert done.returncode == 0, done.stderr
    assert records(a) == records(b) and standing(a) == standing(b)
    assert len(records(a)["reviews"]) == 1500 + 4
    for side in (a, b):  # each journal holds each of its records once, whole lines only
        lines = journal(folder, side)[1:]
        ids = [line["record"]["id"] for line in lines]
        assert len(ids) == len(set(ids))
    assert all(data.endswith(b"\n") for data in (p.read_bytes() for p in folder.iterdir() if p.suffix == ".jsonl"))


def test_an_append_cut_by_a_crash_is_adopted_or_cut_back_never_written_twice(copies, monkeypatch):
    a, b, folder = copies
    work(a, "ana")

    def crash(*_):
        raise KeyboardInterrupt  # the process dies after the write, before the commit

    monkeypatch.setattr(team_sync, "_commit_append", crash)
    with open_workspace(a) as ws, pytest.raises(KeyboardInterrupt):
        team_sync.sync(ws, folder)
    monkeypatch.undo()
    assert sync(a, folder).appended == {}  # the append was whole: adopted, not repeated
    assert len(journal(folder, a)) == 1 + 12 + 40  # the header, ana's records, her plan's 40 assignments
    # A torn append (the process died inside the write): cut back to the last whole line, then written again.
    work(a, "ana", step=1)
    real_write = team_sync._write_all

    def torn(fd, data):
        real_write(fd, data[: len(data) // 2])
        raise KeyboardInterrupt

    monkeypatch.setattr(team_sync, "_write_all", torn)
    with open_workspace(a) as ws, pytest.raises(KeyboardInterrupt):
        team_sync.sync(ws, folder)
    monkeypatch.undo()
    assert sync(a, folder).appended == {"reviews": 4, "qc": 3, "votes": 3, "open": 1}
    lines = journal(folder, a)
    assert len(lines) == 1 + 12 + 40 + 11 and len({line["record"]["id"] for line in lines[1:]}) == 63
    assert sync(b, folder).imported == 23 and records(b) == records(a)


def test_a_copy_of_a_synced_workspace_starts_its_own_journal_and_nothing_is_lost(copies, tmp_path):
    a, b, folder = copies
    work(a, "ana")
    sync(a, folder)
    twin = tmp_path / "ana-laptop.sqlite"
    shutil.copyfile(a, twin)  # copied with its record of the journal it writes
    work(a, "ana", step=1)
    work(twin, "dee", step=2)
    assert sync(a, folder).new_journal is None
    report = sync(twin, folder)
    assert report.new_journal and "another copy" in report.new_journal
    assert len(os.listdir(folder)) == 2
    for p in (b, a, twin, b):
        sync(p, folder)
    assert records(a) == records(b) == records(twin)
    assert standing(a) == standing(b) == standing(twin)
    # My journal deleted from the folder: a new one, with every record made here.
    for name in os.listdir(folder):
        if json.loads((folder / name).read_text().splitlines()[0])["workspace"] == "bob.sqlite":
            (folder / name).unlink()
    work(b, "bob")
    assert "gone" in sync(b, folder).new_journal
    assert sync(a, folder).imported == 11 and records(a) == records(b)


def test_an_undo_that_arrives_before_its_target_waits_for_it(copies, tmp_path):
    a, b, folder = copies
    cy = tmp_path / "cy.sqlite"
    shutil.copyfile(a, cy)
    work(a, "ana")
    sync(a, folder)
    sync(b, folder)
    with open_workspace(b) as ws:  # ana, at bob's machine, withdraws the verdict she made on her own
        assert reviews.undo_last(ws, "ana").verdict == "ambiguous"
    sync(b, folder)
    only_b = tmp_path / "only-b"
    only_b.mkdir()
    (name_a,) = [
        n for n in os.listdir(folder) if n in {team_sync.journal_name(j["id"]) for j in [journal(folder, a)[0]]}
    ]
    for n in os.listdir(folder):
        if n != name_a:
            shutil.copyfile(folder / n, only_b / n)
    report = sync(cy, only_b)  # bob's journal arrived, ana's not yet
    assert report.waiting == 1 and report.imported == 0
    shutil.copyfile(folder / name_a, only_b / name_a)
    report = sync(cy, only_b)
    assert report.waiting == 0
    assert records(cy) == records(b) and standing(cy) == standing(b)


def test_hostile_files_beside_the_journals_are_skipped_and_counted_never_fatal(copies, tmp_path):
    a, b, folder = copies
    work(a, "ana")
    sync(a, folder)
    (name,) = os.listdir(folder)
    good = (folder / name).read_text().splitlines()
    header = json.loads(good[0])
    review = json.loads(good[1])

    def journal_file(fname, lines):
        head = {**header, "id": "0b7cf7a5-5f6e-4e6b-9a2f-3c1d2e3f4a5b"}
        (folder / fname).write_text("".join(line + "\n" for line in [json.dumps(head), *lines]))

    other = {**review, "record": {**review["record"], "id": "9d3f7c1e-2b4a-4c5d-8e6f-7a8b9c0d1e2f", "index": 999}}
    alien = {**review, "record": {**review["record"], "id": "5c2e9b7d-1a3f-4e6d-8b5c-2d1e0f9a8b7c", "benchmark": "zz"}}
    fine = {**review, "record": {**review["record"], "id": "7e1d3c5b-9a8f-4b6e-8d2c-1f0e9d8c7b6a", "index": 5}}
    journal_file(
        "vlmdesk-odd.jsonl",
        ["{not json", "x" * 70_000, json.dumps(other), json.dumps(alien), json.dumps({"kind": "future", "record": {}})]
        + [json.dumps(fine)],
    )
    (folder / "vlmdesk-link.jsonl").symlink_to(folder / name)
    (folder / "vlmdesk-etc.jsonl").symlink_to("/etc/passwd")
    os.mkfifo(folder / "vlmdesk-fifo.jsonl")
    (folder / ".syncthing.vlmdesk-x.jsonl.tmp").write_text("garbage\n")
    (folder / "vlmdesk-y.jsonl.part").write_text("garbage\n")
    (folder / "vlmdesk-notes.jsonl").write_text("just some notes\n")
    shutil.copyfile(b, folder / "vlmdesk-db.jsonl")  # a SQLite file under a journal's name: not a journal
    report = sync(b, folder)
    peers = report.peers
    assert peers[name].added == {"reviews": 4, "qc": 3, "votes": 3, "open": 1, "plans": 1}
    odd = peers["vlmdesk-odd.jsonl"]
    assert odd.added == {"reviews": 1} and odd.skipped_count == 5
    assert [s["field"] for s in odd.skipped] == ["line", "line", "index", "benchmark", "kind"]
    assert "symbolic link" in peers["vlmdesk-link.jsonl"].note and "symbolic link" in peers["vlmdesk-etc.jsonl"].note
    assert peers["vlmdesk-fifo.jsonl"].note == "not a regular file"
    assert "not a vlmdesk journal" in peers["vlmdesk-notes.jsonl"].note
    assert "not a vlmdesk journal" in peers["vlmdesk-db.jsonl"].note or "header" in peers["vlmdesk-db.jsonl"].note
    assert not any(n.endswith((".tmp", ".part")) for n in peers)
    assert sync(b, folder).imported == 0  # bad lines are not read twice


def test_a_sync_costs_what_is_new_not_what_is_stored(copies):
    """SQLite steps of a sync bringing 4 new verdicts each way, after 30 or 600 records synced before."""
    a, b, folder = copies

    def steps(n: int) -> tuple[int, int]:
        out = []
        for p, who in ((a, "ana"), (b, "bob")):
            with open_workspace(p) as ws:
                items = catalog.list_items(ws, catalog.benchmark_by_name(ws, "b").id)
                for k in range(n):
                    reviews.add_review(ws, items[4 + k % 16].id, f"{who}{k}", "ok")  # other items than the new
        for p in (a, b, a, b, a):  # what came in is passed over once more, at the sync after (amortised: new)
            sync(p, folder)
        for p, who in ((a, "ana"), (b, "bob")):
            with open_workspace(p) as ws:
                items = catalog.list_items(ws, catalog.benchmark_by_name(ws, "b").id)
                for k in range(4):
                    reviews.add_review(ws, items[k].id, f"{who}-new", "ok")
        for p in (a, b):
            with open_workspace(p) as ws, counting_steps(ws.conn) as counted:
                team_sync.sync(ws, folder)
            out.append(counted.count)
        return out[0], out[1]

    small = steps(30)
    large = steps(600)  # 20 times as much stored, the same new
    sync(a, folder)
    assert records(a) == records(b)
    print("SQLite steps (x100) of a sync, ana then bob, after 30 / 630 records each:", small, large)
    for s, big in zip(small, large, strict=True):
        assert big < 1.5 * s, (small, large)  # 20x stored: the inserts' B-tree seeks grow by a level at most


def test_the_command_reports_per_journal_and_refuses_a_folder_that_holds_the_workspace(copies, capsys):
    a, b, folder = copies
    work(a, "ana")
    assert main(["--workspace", str(a), "team", "sync", str(folder)]) == 0
    out = capsys.readouterr().out
    assert "appended 12 record(s)" in out
    assert main(["--workspace", str(b), "team", "sync", str(folder), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["imported"] == 12 and report["appended"] == 0
    (peer,) = report["peers"]
    assert peer["by_kind"] == {"reviews": 4, "qc": 3, "votes": 3, "open": 1, "plans": 1}
    assert main(["--workspace", str(b), "team", "sync", str(b.parent)]) == 2
    assert "holds this workspace" in capsys.readouterr().err
    assert main(["--workspace", str(b), "team", "sync", str(folder / "nope")]) == 2
    assert "no such folder" in capsys.readouterr().err


def test_a_second_sync_of_the_same_workspace_waits_its_turn(copies):
    a, _, folder = copies
    sync(a, folder)
    with open_workspace(a) as ws:
        (uid,) = ws.conn.execute("SELECT journal FROM team_folders").fetchone()
    fd = os.open(folder / team_sync.journal_name(uid), os.O_RDONLY)
    try:
        import fcntl

        fcntl.flock(fd, fcntl.LOCK_EX)
        with open_workspace(a) as ws, pytest.raises(team_sync.SyncBusy):
            team_sync.sync(ws, folder)
    finally:
        os.close(fd)
    assert sync(a, folder).appended == {}
