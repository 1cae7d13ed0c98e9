"""Annotators on several machines: export on one copy of a workspace, import into another, the same standing records
on both; importing twice adds nothing; a bad line is one error line and nothing written, or skipped and listed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from annotation import alignment, qc, reviews, sync
from db import catalog, open_workspace
from evaluator.formats.importers import import_benchmark
from tests.annotation.test_alignment import SaysA, study  # noqa: F401  (a fixture)
from tests.annotation.test_qc import make_run, write_bench
from vlmdesk.cli import main
from vlmdesk.demo import demo_dir

pytestmark = pytest.mark.base  # also run in the base install (.ci/base-install)


def cli(capsys, ws_path, *args) -> tuple[int, str, str]:
    code = main(["--workspace", str(ws_path), *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def vlmdesk(ws_path, *args) -> subprocess.CompletedProcess:
    """The real command, in a child process (PYTHONPATH is inherited, so it runs this checkout)."""
    return subprocess.run(
        [sys.executable, "-m", "vlmdesk", "--workspace", str(ws_path), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )


def count(path, table: str) -> int:
    with open_workspace(path) as ws:
        return ws.conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]


def lines(path) -> list[dict]:
    return [json.loads(line) for line in open(path, encoding="utf-8")]


def write_lines(path, records) -> str:
    with open(path, "w", encoding="utf-8") as f:
        for r in records:
            f.write((r if isinstance(r, str) else json.dumps(r, ensure_ascii=False)) + "\n")
    return str(path)


# ---- verdicts -------------------------------------------------------------------------------------------


@pytest.fixture
def two_copies(tmp_path):
    """Workspace A with a few verdicts, and B, a copy of its file; then each side adds its own."""
    a, b = tmp_path / "a.sqlite", tmp_path / "b.sqlite"
    with open_workspace(a) as ws:
        import_benchmark(ws, demo_dir() / "demo_mcq.jsonl", fmt="jsonl", name="demo")
        items = catalog.list_items(ws, catalog.benchmark_by_name(ws, "demo").id)
        reviews.add_review(ws, items[0].id, "ana", "ok", seconds=1.5)
        reviews.add_review(ws, items[1].id, "ana", "ambiguous", note="two readings")
    shutil.copyfile(a, b)
    with open_workspace(a) as ws:  # ana goes on working on A: a correction, a new verdict, an undo
        reviews.add_review(ws, items[1].id, "ana", "wrong_answer", corrected_answer="C", note="key is C")
        reviews.add_review(ws, items[2].id, "ana", "bad_image")
        reviews.add_review(ws, items[3].id, "ana", "skip")
        reviews.undo_last(ws, "ana", item_id=items[3].id)
    with open_workspace(b) as ws:  # bob works on B: a verdict, one undone and given again
        reviews.add_review(ws, items[0].id, "bob", "text_answerable")
        reviews.add_review(ws, items[2].id, "bob", "ok")
        reviews.undo_last(ws, "bob", item_id=items[2].id)
        reviews.add_review(ws, items[2].id, "bob", "bad_image", seconds=4)
    return a, b


def standing(path) -> list[tuple]:
    with open_workspace(path) as ws:
        index = {i.id: i.index for i in catalog.list_items(ws, catalog.benchmark_by_name(ws, "demo").id)}
        return sorted(
            (index[r.item_id], r.annotator, r.verdict, r.corrected_answer, r.uuid) for r in reviews.standing_reviews(ws)
        )


def test_verdicts_merge_both_ways_into_identical_standing_verdicts_and_twice_adds_nothing(two_copies, tmp_path):
    a, b = two_copies
    assert standing(a) != standing(b)
    out_a, out_b = tmp_path / "from-a.jsonl", tmp_path / "from-b.jsonl"
    for ws, out in ((a, out_a), (b, out_b)):
        done = vlmdesk(ws, "reviews", "export", "--out", str(out))
        assert done.returncode == 0, done.stderr
    exported = lines(out_a)
    assert [set(r) for r in exported] == [
        {"id", "benchmark", "index", "annotator", "verdict", "answer", "note", "seconds", "at", "withdraws"}
    ] * 6
    assert [r["verdict"] for r in exported] == ["ok", "ambiguous", "wrong_answer", "bad_image", "skip", "undo"]
    assert [r["at"] for r in exported] == sorted(r["at"] for r in exported)
    undo = next(r for r in exported if r["verdict"] == "undo")
    assert undo["withdraws"] == next(r["id"] for r in exported if r["verdict"] == "skip")
    assert next(r for r in exported if r["verdict"] == "wrong_answer")["answer"] == "C"
    assert all(isinstance(r["index"], int) for r in exported)
    done = vlmdesk(b, "reviews", "import", str(out_a), "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "added": 4,
        "by_table": {"reviews": 4},
        "present": 2,
        "skipped_count": 0,
        "unfit_count": 0,
        "skipped": [],
    }
    done = vlmdesk(a, "reviews", "import", str(out_b), "--json")
    assert json.loads(done.stdout)["added"] == 4  # bob's 4 rows; the 2 made before the copy are there already
    assert standing(a) == standing(b)
    assert count(a, "reviews") == count(b, "reviews") == 10
    # Twice: nothing more.
    again = vlmdesk(b, "reviews", "import", str(out_a))
    assert again.returncode == 0 and "imported 0 new" in again.stdout and "6 already present" in again.stdout
    assert count(b, "reviews") == 10 and standing(a) == standing(b)
    # ana's correction stands on both; bob's own correction after his undo too; ana's undone skip nowhere.
    verdicts = {(i, who): v for i, who, v, _, _ in standing(b)}
    assert verdicts[(2, "ana")] == "wrong_answer" and verdicts[(3, "bob")] == "bad_image" and (4, "ana") not in verdicts


def test_an_undo_made_on_one_copy_withdraws_the_verdict_on_the_other(two_copies, tmp_path, capsys):
    a, b = two_copies
    with open_workspace(b) as ws:
        withdrawn = reviews.undo_last(ws, "ana")  # on B, ana withdraws her "ambiguous" (made before the copy)
    assert withdrawn.verdict == "ambiguous"
    code, _, err = cli(capsys, b, "reviews", "export", "--annotator", "ana", "--out", str(tmp_path / "b-ana.jsonl"))
    assert code == 0, err
    assert {r["annotator"] for r in lines(tmp_path / "b-ana.jsonl")} == {"ana"}
    assert cli(capsys, a, "reviews", "import", str(tmp_path / "b-ana.jsonl"))[0] == 0
    with open_workspace(a) as ws:
        history = reviews.history(ws, withdrawn.item_id)
    # On A, ana had corrected it later to wrong_answer: the undo withdraws "ambiguous", the correction still stands.
    assert [(r.verdict, r.withdraws) for r in history] == [
        ("ambiguous", None),
        ("wrong_answer", None),
        ("undo", withdrawn.uuid),
    ]
    assert ("wrong_answer", "C") in {(r[2], r[3]) for r in standing(a) if r[1] == "ana"}


def test_export_filters_by_benchmark_and_names_its_errors(two_copies, capsys, tmp_path):
    a, _ = two_copies
    code, out, _ = cli(capsys, a, "reviews", "export", "--bench", "demo", "--annotator", "nobody")
    assert code == 0 and out == ""
    code, _, err = cli(capsys, a, "reviews", "export", "--bench", "nope")
    assert code == 2 and err.startswith("error: no benchmark named 'nope'")
    code, _, err = cli(capsys, a, "reviews", "export", "--out", str(tmp_path / "missing" / "x.jsonl"))
    assert code == 2 and "no such directory" in err
    # Merging needs the benchmarks: a workspace that does not exist is not created behind the user's back.
    path = write_lines(tmp_path / "in.jsonl", [GOOD])
    code, _, err = cli(capsys, tmp_path / "nowhere.sqlite", "reviews", "import", path)
    assert code == 2 and "no such workspace" in err and not (tmp_path / "nowhere.sqlite").exists()


GOOD = {
    "id": "7f1d2c3e-4b5a-4c6d-8e7f-0a1b2c3d4e5f",
    "benchmark": "demo",
    "index": 1,
    "annotator": "cyd",
    "verdict": "ok",
    "answer": None,
    "note": None,
    "seconds": 3,
    "at": "2026-11-30T10:00:00.000+00:00",
    "withdraws": None,
}
UNDO = {
    **GOOD,
    "id": "8f1d2c3e-4b5a-4c6d-8e7f-0a1b2c3d4e5f",
    "verdict": "undo",
    "withdraws": GOOD["id"],
    "at": "2026-11-30T11:00:01+01:00",
    "seconds": None,
}
BAD_REVIEWS = [
    ({**GOOD, "benchmark": "nope"}, "benchmark", "no benchmark named 'nope'"),
    ({**GOOD, "index": 999}, "index", "no item with index 999"),
    ({**GOOD, "index": "1"}, "index", "no item with index '1'"),  # an integer index stays an integer
    ({**GOOD, "index": True}, "index", "expected an integer or text index"),
    ({**GOOD, "verdict": "great"}, "verdict", "unknown verdict 'great'"),
    # A verdict that does not fit its item is no bad line: tests/annotation/test_item_kinds.py.
    ({**GOOD, "seconds": "3"}, "seconds", "expected a number"),
    ({**GOOD, "seconds": -1}, "seconds", "not within"),
    ({**GOOD, "note": 5}, "note", "expected text"),
    ({**GOOD, "at": "yesterday"}, "at", "not an ISO 8601 time"),
    ({**GOOD, "at": "2026-11-30T10:00:00"}, "at", "no time zone"),
    ({**GOOD, "id": "123"}, "id", "not a uuid"),
    ({**GOOD, "annotator": ""}, "annotator", "empty"),
    ({**GOOD, "annotator": "cyd\x07"}, "annotator", "holds U+0007"),
    ({**GOOD, "annotator": "x" * 101}, "annotator", "longer than 100"),
    ({**GOOD, "annotator": ["cyd"]}, "annotator", "expected a name, got list"),
    ({**GOOD, "note": [[1]]}, "line", "nested deeper than 2"),
    ({**GOOD, "extra": 1}, "extra", "unknown field"),
    ({k: v for k, v in GOOD.items() if k != "at"}, "at", "missing"),
    ({**UNDO, "withdraws": "9f1d2c3e-4b5a-4c6d-8e7f-0a1b2c3d4e5f"}, "withdraws", "names no record known here"),
    ({**GOOD, "withdraws": GOOD["id"]}, "withdraws", "only an undo"),
    ({**UNDO, "index": 2}, "withdraws", "another item or person"),
    ('{"id": ', "line", "not JSON"),
    ("[1, 2]", "line", "expected a JSON object"),
    ('{"seconds": NaN}', "line", "not JSON"),
    ("x" * (sync.MAX_LINE_BYTES + 10), "line", "longer than"),
    # Lone surrogates (written escaped, as JSON allows) and times out of datetime's range were internal errors.
    (json.dumps({**GOOD, "note": "a\ud800"}), "note", "a lone surrogate U+D800"),
    (json.dumps({**GOOD, "benchmark": "de\udc00mo"}), "benchmark", "a lone surrogate U+DC00"),
    ({**GOOD, "at": "0001-01-01T00:00:00+01:00"}, "at", "is not between 2000-01-01 and tomorrow"),
    ({**GOOD, "at": "9999-12-31T23:30:00-01:00"}, "at", "is not between 2000-01-01 and tomorrow"),
    # Garbage that was stored: a NUL, an undo withdrawing nothing, a time that would outrank every correction.
    ({**GOOD, "note": "a\x00b"}, "note", "a NUL character"),
    ({**UNDO, "withdraws": None}, "withdraws", "an undo names the record it withdraws"),
    ({**GOOD, "at": "9999-01-01T00:00:00+00:00"}, "at", "is not between 2000-01-01 and tomorrow"),
    ({**GOOD, "at": "1999-12-31T23:59:59+00:00"}, "at", "is not between 2000-01-01 and tomorrow"),
    (
        '{"id": "2f1d2c3e-4b5a-4c6d-8e7f-0a1b2c3d4e5f", "id": "3f1d2c3e-4b5a-4c6d-8e7f-0a1b2c3d4e5f"}',
        "id",
        "given twice in one record",
    ),
    ({**GOOD, "annotator": "\u202eana"}, "annotator", "U+202E (RIGHT-TO-LEFT OVERRIDE)"),
]


@pytest.mark.parametrize("line, field, what", BAD_REVIEWS, ids=[f"{b[1]}:{b[2][:20]}" for b in BAD_REVIEWS])
def test_a_bad_line_is_one_error_and_nothing_is_written(two_copies, tmp_path, capsys, line, field, what):
    a, _ = two_copies
    before = count(a, "reviews")
    # The last line is good, and is not written either.
    path = write_lines(tmp_path / "in.jsonl", [GOOD, "", line, {**UNDO, "id": "6f1d2c3e-4b5a-4c6d-8e7f-0a1b2c3d4e5f"}])
    code, out, err = cli(capsys, a, "reviews", "import", path)
    assert code == 2 and out == ""
    assert err.startswith(f"error: {path}:3: {field}: ") and err.count("\n") == 1, err
    assert what in err
    assert count(a, "reviews") == before


def test_a_present_id_with_other_content_and_an_unreadable_file_are_errors(two_copies, tmp_path, capsys):
    a, _ = two_copies
    assert cli(capsys, a, "reviews", "export", "--out", str(tmp_path / "mine.jsonl"))[0] == 0
    records = lines(tmp_path / "mine.jsonl")
    path = write_lines(tmp_path / "edited.jsonl", records[:2] + [{**records[2], "note": "rewritten"}])
    code, _, err = cli(capsys, a, "reviews", "import", path)
    assert (code, err) == (2, f"error: {path}:3: id: {records[2]['id']} is in this workspace with a different note\n")
    path = write_lines(tmp_path / "twice.jsonl", [GOOD, {**GOOD, "verdict": "skip"}])
    code, _, err = cli(capsys, a, "reviews", "import", path)
    assert code == 2 and "2: id:" in err and "line 1 of this file with a different verdict" in err
    (tmp_path / "latin1.jsonl").write_bytes(json.dumps(GOOD).encode() + b"\n\xff\n")
    code, _, err = cli(capsys, a, "reviews", "import", str(tmp_path / "latin1.jsonl"))
    assert code == 2 and ":2: line: not UTF-8" in err
    code, _, err = cli(capsys, a, "reviews", "import", str(tmp_path / "absent.jsonl"))
    assert code == 2 and err.startswith(f"error: {tmp_path / 'absent.jsonl'}: file: ")


def test_skip_bad_imports_the_good_lines_and_lists_the_bad_ones(two_copies, tmp_path):
    a, _ = two_copies
    before = count(a, "reviews")
    orphan = {**UNDO, "id": "af1d2c3e-4b5a-4c6d-8e7f-0a1b2c3d4e5f", "withdraws": "bf1d2c3e-4b5a-4c6d-8e7f-0a1b2c3d4e5f"}
    bad_target = {**GOOD, "id": "bf1d2c3e-4b5a-4c6d-8e7f-0a1b2c3d4e5f", "index": 12345}
    path = write_lines(tmp_path / "mixed.jsonl", [GOOD, {**GOOD, "verdict": "meh"}, UNDO, bad_target, orphan])
    done = vlmdesk(a, "reviews", "import", path, "--skip-bad")
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [
        f"skipped: {path}:2: verdict: unknown verdict 'meh' (one of ok, wrong_answer, incomplete, ambiguous, "
        "text_answerable, bad_image, skip, undo)",
        f"skipped: {path}:4: index: benchmark 'demo' has no item with index 12345",
        f"skipped: {path}:5: withdraws: names no record known here (bf1d2c3e-4b5a-4c6d-8e7f-0a1b2c3d4e5f); import "
        "the file that holds it first, or with it",
    ]
    assert "imported 2 new record(s); 0 already present; 3 line(s) skipped" in done.stdout
    assert count(a, "reviews") == before + 2
    with open_workspace(a) as ws:
        cyd = [
            r
            for r in ws.conn.execute(
                "SELECT verdict, created_at, withdraws FROM reviews WHERE annotator = 'cyd' ORDER BY id"
            )
        ]
        assert not [r for r in reviews.standing_reviews(ws) if r.annotator == "cyd"]
    # Times are stored as every local one is: UTC, milliseconds (so text order is time order).
    assert cyd == [("ok", "2026-11-30T10:00:00.000+00:00", None), ("undo", "2026-11-30T10:00:01.000+00:00", GOOD["id"])]


def test_skip_bad_skips_surrogates_and_overflowing_times_instead_of_failing(two_copies, tmp_path):
    a, _ = two_copies
    path = write_lines(
        tmp_path / "odd.jsonl",
        [
            json.dumps({**GOOD, "note": "\ud800"}),
            json.dumps({**GOOD, "id": "5f1d2c3e-4b5a-4c6d-8e7f-0a1b2c3d4e5f", "at": "9999-12-31T23:30:00-01:00"}),
            GOOD,
        ],
    )
    done = vlmdesk(a, "reviews", "import", path, "--skip-bad", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert (report["added"], report["skipped_count"]) == (1, 2)
    assert [(s["line"], s["field"]) for s in report["skipped"]] == [(1, "note"), (2, "at")]


@pytest.mark.parametrize("kind", ["reviews", "align", "qc"])
def test_a_fifo_a_device_or_a_symlink_to_one_is_refused_before_it_is_read(two_copies, tmp_path, kind):
    a, _ = two_copies
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    zero, urandom = tmp_path / "zero.jsonl", tmp_path / "urandom.jsonl"
    zero.symlink_to("/dev/zero")
    urandom.symlink_to("/dev/urandom")
    command = {"reviews": ["reviews", "import"], "align": ["align", "import-labels"], "qc": ["qc", "import-decisions"]}[
        kind
    ]
    for path, what in ((fifo, "a FIFO (named pipe)"), (zero, "a character device"), (urandom, "a character device")):
        done = vlmdesk(a, *command, str(path), "--skip-bad")  # each of these used to block or spin until killed
        assert (done.returncode, done.stderr) == (2, f"error: {path}: file: is {what}, not a regular file\n")


def test_the_first_bad_line_stops_the_import_and_skip_bad_lists_a_bounded_number(two_copies, tmp_path):
    a, _ = two_copies
    path = write_lines(tmp_path / "many.jsonl", ["x"] * 1000 + [GOOD])
    done = vlmdesk(a, "reviews", "import", path)
    assert (done.returncode, done.stderr) == (
        2,
        f"error: {path}:1: line: not JSON (Expecting value: line 1 column 1 (char 0))\n",
    )
    done = vlmdesk(a, "reviews", "import", path, "--skip-bad")
    assert done.returncode == 0, done.stderr
    listed = done.stderr.splitlines()
    assert len(listed) == sync.MAX_LISTED + 1 and listed[0].startswith(f"skipped: {path}:1: line: not JSON")
    assert listed[-1] == f"skipped: … and {1000 - sync.MAX_LISTED} more line(s)"
    assert "imported 1 new record(s); 0 already present; 1000 line(s) skipped" in done.stdout
    done = vlmdesk(a, "reviews", "import", path, "--skip-bad", "--json")
    report = json.loads(done.stdout)
    assert report["skipped_count"] == 1000 and len(report["skipped"]) == sync.MAX_LISTED
    assert report["skipped"][-1]["line"] == sync.MAX_LISTED


def test_records_made_locally_merge_into_a_copy_whatever_the_names(tmp_path):
    """One name rule at every door: what a copy stores, another copy imports; a benchmark keeps matching by its old
    name even when today's rule would refuse it."""
    a, b = tmp_path / "a.sqlite", tmp_path / "b.sqlite"
    long_bench = "b" * 120  # a name an older import allowed
    with open_workspace(a) as ws:
        import_benchmark(ws, demo_dir() / "demo_mcq.jsonl", fmt="jsonl", name="demo")
        ws.conn.execute("UPDATE benchmarks SET name = ? WHERE name = 'demo'", (long_bench,))
        ws.conn.commit()
    shutil.copyfile(a, b)
    names = ["José\u00a0Luis", "Jose\u0301", "x" * 100, "  ana  ", "\u0645\u06cc\u200c\u0646\u0627", "山田\u3000太郎"]
    with open_workspace(a) as ws:
        item = catalog.list_items(ws, catalog.benchmark_by_name(ws, long_bench).id)[0]
        stored = [reviews.add_review(ws, item.id, n, "ok", note="n" * 10_000).annotator for n in names]
        for bad, what in (
            ("x" * 101, "longer than 100"),
            ("ana\u202e", r"U\+202E"),
            ("a\nb", r"U\+000A"),
            ("\u00a0", "required"),
        ):
            with pytest.raises(ValueError, match=what):
                reviews.add_review(ws, item.id, bad, "ok")
        # Notes too: a merge refuses a NUL or more than 10,000 characters, so the door where they are made does.
        for note, what in (("a\x00b", "NUL"), ("n" * 10_001, "at most 10000")):
            with pytest.raises(ValueError, match=what):
                reviews.add_review(ws, item.id, "ana", "ok", note=note)
    assert stored == ["José\u00a0Luis", "José", "x" * 100, "ana", names[4], names[5]]  # NFC, stripped
    out = tmp_path / "a.jsonl"
    for args in (("reviews", "export", "--out", str(out)),):
        done = vlmdesk(a, *args)
        assert done.returncode == 0, done.stderr
    done = vlmdesk(b, "reviews", "import", str(out), "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["added"] == len(names)
    done = vlmdesk(b, "reviews", "import", str(out), "--json")  # twice: all present, nothing differs
    assert (done.returncode, json.loads(done.stdout)["present"]) == (0, len(names)), done.stderr
    with open_workspace(b) as ws:
        assert sorted(r.annotator for r in reviews.standing_reviews(ws)) == sorted(stored)


def test_the_cli_name_options_follow_the_same_rule(two_copies):
    a, _ = two_copies
    for args in (
        ["qc", "decide", "demo", "1", "--reject", "--annotator", "x" * 150],
        ["reviews", "export", "--annotator", "ana\u202e"],
        ["align", "label", "--set", "s", "--annotator", "a\tb"],
    ):
        done = vlmdesk(a, *args)
        assert done.returncode == 2 and "--annotator" in done.stderr and done.stderr.count("\n") == 1, done.stderr


def test_file_bounds(tmp_path, monkeypatch, two_copies, capsys):
    a, _ = two_copies
    monkeypatch.setattr(sync, "MAX_FILE_BYTES", 100)
    path = write_lines(tmp_path / "big.jsonl", [GOOD])
    code, _, err = cli(capsys, a, "reviews", "import", path)
    assert code == 2 and f"{path}: file: " in err and "over the limit of this command" in err


# ---- alignment labels and adjudications -----------------------------------------------------------------


def test_labels_and_adjudications_merge_between_copies(study, tmp_path, capsys):
    ws, path, (first, _) = study
    alignment.build_set(ws, "s", [first], [SaysA()], size=10, seed=0)
    items = alignment.remaining_items(ws, "s", "ana")
    alignment.add_label(ws, items[0], "ana", "A", seconds=2)
    ws.close()
    copy = tmp_path / "copy.sqlite"
    shutil.copyfile(path, copy)
    with open_workspace(path) as a:
        alignment.add_label(a, items[0], "ana", "B")  # a correction after the reveal
        alignment.add_label(a, items[1], "ana", "C")
        alignment.adjudicate(a, items[0], "lead", "B", note="B it is")
    with open_workspace(copy) as b:
        alignment.add_label(b, items[0], "bob", "A")
        alignment.add_label(b, items[1], "bob", "Z")
        alignment.undo_label(b, items[1], "bob")
        alignment.add_label(b, items[2], "bob", "unclear")
    for src, dst in ((path, copy), (copy, path)):
        out = tmp_path / f"{src.stem}.jsonl"
        code, _, err = cli(capsys, src, "align", "export-labels", "--set", "s", "--out", str(out))
        assert code == 0, err
        code, stdout, err = cli(capsys, dst, "align", "import-labels", str(out), "--json")
        assert code == 0, err
    record = lines(tmp_path / "copy.jsonl")[0]
    assert set(record) == {"id", "kind", "set", "response", "annotator", "label", "note", "seconds", "at", "withdraws"}
    assert {r["kind"] for r in lines(tmp_path / "ws.jsonl")} == {"label", "adjudication"}
    results = []
    for p in (path, copy):
        with open_workspace(p) as w:
            results.append(
                (
                    alignment.standing_labels(w, "s"),
                    alignment.final_labels(w, "s"),
                    w.conn.execute("SELECT count(*) FROM labels").fetchone()[0],
                    w.conn.execute("SELECT count(*) FROM adjudications").fetchone()[0],
                    alignment.remaining_for(w, "s", "bob"),
                )
            )
    assert results[0] == results[1]
    labels, finals, n_labels, n_adjudications, left_for_bob = results[0]
    assert labels[items[0]] == {"ana": "B", "bob": "A"} and labels[items[1]] == {"ana": "C"}
    assert finals[items[0]] == alignment.FinalLabel("B", "adjudicated")
    assert (n_labels, n_adjudications, left_for_bob) == (7, 1, 8)
    code, stdout, _ = cli(capsys, copy, "align", "import-labels", str(tmp_path / "ws.jsonl"), "--json")
    assert code == 0 and json.loads(stdout)["added"] == 0


def test_bad_label_lines(study, tmp_path, capsys):
    ws, path, (first, _) = study
    alignment.build_set(ws, "s", [first], [], size=10, seed=0)
    item = alignment.next_for(ws, "s", "ana").item_id
    label = alignment.add_label(ws, item, "ana", "A")
    key = ws.conn.execute("SELECT response_key FROM adjudication_items WHERE id = ?", (item,)).fetchone()[0]
    ws.close()
    good = {
        "id": "1f1d2c3e-4b5a-4c6d-8e7f-0a1b2c3d4e5f",
        "kind": "label",
        "set": "s",
        "response": key,
        "annotator": "bob",
        "label": "B",
        "note": None,
        "seconds": None,
        "at": "2026-11-30T10:00:00Z",
        "withdraws": None,
    }
    cases = [
        ({**good, "set": "t"}, "set", "no adjudication set named 't'"),
        ({**good, "response": "ab" * 32}, "response", "has no response with key"),
        ({**good, "label": "D"}, "label", "is not a label of this response"),
        ({**good, "kind": "vote"}, "kind", "not label or adjudication"),
        ({**good, "label": "undo"}, "withdraws", "an undo names the record"),
        ({**good, "label": "undo", "withdraws": label.uuid}, "withdraws", "another item or person"),
        ({**good, "note": "why"}, "note", "a label has no note"),
    ]
    for line, field, what in cases:
        f = write_lines(tmp_path / "l.jsonl", [good, {**line, "id": "3f1d2c3e-4b5a-4c6d-8e7f-0a1b2c3d4e5f"}])
        code, _, err = cli(capsys, path, "align", "import-labels", f)
        assert code == 2 and err.startswith(f"error: {f}:2: {field}: ") and what in err, err
    assert count(path, "labels") == 1
    code, _, err = cli(capsys, path, "align", "export-labels", "--set", "t")
    assert code == 2 and "no adjudication set named 't'" in err


def test_an_id_names_one_record_across_kinds(study, tmp_path, capsys):
    """A label whose id is an adjudication's was accepted, and the next export could not be imported anywhere."""
    ws, path, (first, _) = study
    alignment.build_set(ws, "s", [first], [], size=10, seed=0)
    item = alignment.next_for(ws, "s", "ana").item_id
    adjudication = alignment.adjudicate(ws, item, "lead", "A", note="x")
    key = ws.conn.execute("SELECT response_key FROM adjudication_items WHERE id = ?", (item,)).fetchone()[0]
    ws.close()
    clash = {
        "id": adjudication.uuid,
        "kind": "label",
        "set": "s",
        "response": key,
        "annotator": "ana",
        "label": "B",
        "note": None,
        "seconds": None,
        "at": "2026-11-30T10:00:00Z",
        "withdraws": None,
    }
    f = write_lines(tmp_path / "clash.jsonl", [clash])
    code, _, err = cli(capsys, path, "align", "import-labels", f)
    assert (code, err) == (
        2,
        f"error: {f}:1: id: {adjudication.uuid} is the id of a record in adjudications here; an id names one record\n",
    )
    assert count(path, "labels") == 0


# ---- QC decisions ---------------------------------------------------------------------------------------


def test_qc_decisions_merge_between_copies_and_bad_lines_are_refused(tmp_path, capsys):
    a, b = tmp_path / "a.sqlite", tmp_path / "b.sqlite"
    with open_workspace(a) as ws:
        import_benchmark(ws, write_bench(tmp_path / "b.jsonl", 20), fmt="jsonl", name="b")
        bench = catalog.benchmark_by_name(ws, "b")
        flagged = qc.compute_stage(ws, bench.id, "consensus", [make_run(ws, "b", "baseline:first", text_only=False)])
        first, second = flagged.candidates[:2]
        qc.decide(ws, first, "consensus", "ann", "confirm", reason="ambiguous")
    shutil.copyfile(a, b)
    with open_workspace(a) as ws:
        qc.decide(ws, first, "consensus", "ann", "reject")  # ann changes her mind on A
    with open_workspace(b) as ws:
        qc.decide(ws, first, "consensus", "bob", "confirm", reason="ambiguous", note="both fit")
        qc.decide(ws, second, "consensus", "bob", "reject")
        qc.undo_decision(ws, second, "consensus", "bob")
    for src, dst in ((a, b), (b, a)):
        out = tmp_path / f"{src.stem}-decisions.jsonl"
        code, _, err = cli(capsys, src, "qc", "export-decisions", "--bench", "b", "--out", str(out))
        assert code == 0, err
        code, _, err = cli(capsys, dst, "qc", "import-decisions", str(out))
        assert code == 0, err
    summaries = []
    for p in (a, b):
        with open_workspace(p) as ws:
            summaries.append(
                ([(c.item_id, c.status, [d.uuid for d in c.resolution.votes]) for c in qc.queue(ws)], qc.summary(ws))
            )
    assert summaries[0] == summaries[1]
    status = {item: s for item, s, _ in summaries[0][0]}
    assert status[first] == "disputed" and status[second] == "pending"  # ann's reject vs bob's confirm; bob undid
    record = lines(tmp_path / "b-decisions.jsonl")[-1]
    assert record["decision"] == "undo" and record["withdraws"] and record["stage"] == "consensus"
    good = {
        **record,
        "id": "2f1d2c3e-4b5a-4c6d-8e7f-0a1b2c3d4e5f",
        "decision": "reject",
        "withdraws": None,
        "annotator": "cyd",
    }
    cases = [
        ({**good, "stage": "vibes"}, "stage", "unknown stage"),
        ({**good, "decision": "confirm"}, "reason", "needs a reason"),
        ({**good, "reason": "ambiguous"}, "reason", "only a confirmation"),
        ({**good, "decision": "confirm", "reason": "wrong_answer"}, "answer", "needs the corrected key"),
        ({**good, "decision": "maybe"}, "decision", "unknown decision"),
        ({**good, "stage": "text-only"}, "stage", "has no text-only flag in this workspace"),
        (
            {**good, "decision": "confirm", "reason": "wrong_answer", "answer": "B", "old_answer": "ZZZ"},
            "old_answer",
            "'ZZZ' is not a key of this item",
        ),
    ]
    before = count(a, "qc_decisions")
    for line, field, what in cases:
        f = write_lines(tmp_path / "d.jsonl", [good, line])
        code, _, err = cli(capsys, a, "qc", "import-decisions", f)
        assert code == 2 and err.startswith(f"error: {f}:2: {field}: ") and what in err, err
    assert count(a, "qc_decisions") == before
