"""Verdicts that fit the item (issue 35, docs/adr/0049): each kind of item (multiple-choice, yes/no, open) takes its
own verdicts and corrected answers, refused otherwise at every door: annotation/reviews.add_review, migration 0023's
trigger under any writer, `vlmdesk reviews add`, and a merge from another copy (which leaves such a record out and
lists it, merging the rest). A skip is no verdict: progress leaves out items only skipped."""

from __future__ import annotations

import json
import shutil
import sqlite3
import uuid

import pytest

from annotation import annotator_stats, item_kinds, reviews, sync
from annotation.item_kinds import INCOMPLETE, VERDICTS_BY_KIND, WRONG
from db import catalog, open_workspace, schema
from db.errors import InvalidInput
from evaluator.formats.importers import import_benchmark
from tests.annotation.test_qc import write_bench
from tests.sqlite_steps import counting_steps
from vlmdesk.cli import main
from vlmdesk.demo import import_demo

pytestmark = pytest.mark.base  # also run in the base install (.ci/base-install)

BENCH = {"mcq": "demo", "yesno": "demo-pope", "open": "demo-open"}
GIVEN = {"mcq": " b ", "yesno": "YES", "open": "  a tabby cat "}  # corrected answers as typed…
STORED = {"mcq": "B", "yesno": "yes", "open": "a tabby cat"}  # …and as stored


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """A workspace with the demo's three benchmarks: one of each kind; each test works on a copy."""
    path = tmp_path_factory.mktemp("kinds") / "demo.sqlite"
    with open_workspace(path) as ws:
        import_demo(ws)
    return path


@pytest.fixture
def path(demo, tmp_path):
    shutil.copyfile(demo, tmp_path / "ws.sqlite")
    return tmp_path / "ws.sqlite"


def _item(ws, kind: str, n: int = 0) -> catalog.Item:
    bench = catalog.benchmark_by_name(ws, BENCH[kind])
    assert bench is not None and bench.kind == kind
    return catalog.list_items(ws, bench.id)[n]


def _count(ws) -> int:
    return int(ws.conn.execute("SELECT count(*) FROM reviews").fetchone()[0])


@pytest.mark.parametrize("kind", item_kinds.KINDS)
def test_the_verdicts_that_fit_are_stored_with_the_corrected_answer_normalised(path, kind):
    with open_workspace(path) as ws:
        item = _item(ws, kind)
        assert len(item.options) >= 2 if kind == "mcq" else not item.options
        for n, verdict in enumerate(VERDICTS_BY_KIND[kind]):
            given = GIVEN[kind] if verdict in (WRONG, INCOMPLETE) else None
            review = reviews.add_review(ws, item.id, f"ann{n}", verdict, corrected_answer=given)
            expected = STORED[kind] if given else None
            assert (review.verdict, review.corrected_answer) == (verdict, expected)
            stored = ws.conn.execute("SELECT verdict, corrected_answer FROM reviews WHERE uuid = ?", (review.uuid,))
            assert stored.fetchone() == (verdict, expected)
        if kind == "open":  # references incomplete: the missing answer may be left unsaid
            assert reviews.add_review(ws, item.id, "bo", INCOMPLETE).corrected_answer is None
    assert item_kinds.verdict_label(WRONG, kind) == ("wrong reference" if kind == "open" else "wrong key")
    assert item_kinds.verdict_label(INCOMPLETE, kind) == "references incomplete"


MISFITS = [  # kind, verdict, corrected answer given, what the one-line error says
    ("mcq", INCOMPLETE, None, "verdict 'incomplete' does not fit a multiple-choice item (one of ok, wrong_answer,"),
    ("yesno", INCOMPLETE, None, "verdict 'incomplete' does not fit a yes/no item"),
    ("mcq", WRONG, None, "needs the right option's letter (one of A, B"),
    ("mcq", WRONG, "", "needs the right option's letter"),
    ("mcq", WRONG, "yes", "needs the right option's letter"),
    ("mcq", WRONG, "Z", "got 'Z'"),  # beyond the item's options
    ("mcq", WRONG, "AB", "got 'AB'"),  # "AB" is in the text "ABC", not among the letters
    ("yesno", WRONG, None, "needs the right answer, yes or no, got none"),
    ("yesno", WRONG, "A", "yes or no, got 'A'"),
    ("open", WRONG, None, "a wrong-reference verdict on an open item needs the right answer as text"),
    ("open", WRONG, " \n ", "needs the right answer as text"),
    ("open", "ok", "a cat", "the verdict 'ok' takes no corrected answer"),
    ("mcq", "skip", "B", "takes no corrected answer"),
    ("open", WRONG, "x" * 1001, "a corrected answer of 1001 characters; at most 1000"),
    ("open", INCOMPLETE, "a\x00b", "contains a NUL character"),
    ("mcq", "great", None, "unknown verdict 'great'"),
]


@pytest.mark.parametrize(
    ("kind", "verdict", "given", "says"), MISFITS, ids=[f"{m[0]}-{m[1]}-{m[2]!r:.8}" for m in MISFITS]
)
def test_a_misfit_is_refused_by_add_review_in_one_line_and_nothing_is_written(path, kind, verdict, given, says):
    with open_workspace(path) as ws:
        item = _item(ws, kind)
        with pytest.raises(InvalidInput) as caught:
            reviews.add_review(ws, item.id, "ann", verdict, corrected_answer=given)
        assert says in str(caught.value) and "\n" not in str(caught.value)
        assert _count(ws) == 0


def _raw_insert(conn: sqlite3.Connection, item_id: int, verdict: str, answer: str | None, withdraws=None) -> str:
    uid = str(uuid.uuid4())
    conn.execute(
        "INSERT INTO reviews (item_id, annotator, verdict, corrected_answer, created_at, uuid, withdraws) "
        "VALUES (?, 'tool', ?, ?, '2026-12-01T00:00:00.000+00:00', ?, ?)",
        (item_id, verdict, answer, uid, withdraws),
    )
    return uid


RAW_MISFITS = [  # what another writer might try: refused by the trigger, named in its message
    ("mcq", INCOMPLETE, None, "an incomplete verdict fits only an open item"),
    ("yesno", INCOMPLETE, "yes", "an incomplete verdict fits only an open item"),
    ("yesno", WRONG, "maybe", "a wrong_answer on a yes/no item needs corrected_answer yes or no"),
    ("yesno", WRONG, None, "yes or no"),
    ("yesno", WRONG, "Yes", "yes or no"),  # the door takes the stored form: add_review stores "yes"
    ("mcq", WRONG, "Z", "needs the letter of one of its options"),
    ("mcq", WRONG, "b", "needs the letter of one of its options"),
    ("mcq", WRONG, "AB", "needs the letter of one of its options"),
    ("mcq", WRONG, None, "needs the letter of one of its options"),
    ("open", WRONG, None, "a wrong_answer on an open item needs the right answer"),
    ("open", WRONG, " \n\t", "needs the right answer"),
    ("open", "wrong-answer", "x", "unknown verdict"),
]


def test_the_trigger_refuses_a_misfit_from_any_writer_and_lets_undo_rows_pass(path):
    with open_workspace(path) as ws:
        items = {kind: _item(ws, kind) for kind in item_kinds.KINDS}
    conn = sqlite3.connect(path)  # another tool, an older vlmdesk: plain SQL, no vlmdesk code
    conn.execute("PRAGMA foreign_keys = ON")
    try:
        for kind, verdict, answer, says in RAW_MISFITS:
            with pytest.raises(sqlite3.IntegrityError, match=f"^reviews: .*{says}"):
                _raw_insert(conn, items[kind].id, verdict, answer)
        assert conn.execute("SELECT count(*) FROM reviews").fetchone() == (0,)
        # What fits passes, stored as written; an undo always passes (it names what it withdraws).
        stored = [_raw_insert(conn, items[kind].id, WRONG, STORED[kind]) for kind in item_kinds.KINDS]
        stored.append(_raw_insert(conn, items["open"].id, INCOMPLETE, None))
        for uid in stored:
            _raw_insert(conn, items["mcq"].id, "undo", None, withdraws=uid)
        conn.commit()
    finally:
        conn.close()
    with open_workspace(path) as ws:
        assert _count(ws) == 8 and reviews.standing_reviews(ws) == []


def _trigger_accepts(conn: sqlite3.Connection, item_id: int, verdict: str, answer: str | None) -> bool:
    conn.execute("SAVEPOINT try")
    try:
        _raw_insert(conn, item_id, verdict, answer)
        return True
    except sqlite3.IntegrityError:
        return False
    finally:
        conn.execute("ROLLBACK TO try")
        conn.execute("RELEASE try")


def test_the_trigger_and_item_kinds_say_the_same(path):
    """Migration 0023 writes the rule out in SQL (a released migration never changes): it must take every verdict
    item_kinds.corrected_answer takes, as stored, and nothing on the kind's rule that it refuses."""
    with open_workspace(path) as ws:
        items = {kind: _item(ws, kind) for kind in item_kinds.KINDS}
    answers = (None, "", " ", "A", "b", "C", "D", "Z", "AB", "yes", "No", "a cat")
    conn = sqlite3.connect(path)
    try:
        checked = 0
        for kind, item in items.items():
            for verdict in (*item_kinds.ALL_VERDICTS, "great"):
                for answer in answers:
                    try:
                        stored = item_kinds.corrected_answer(kind, verdict, answer, n_options=len(item.options))
                    except InvalidInput:
                        stored = "refused"
                    if stored != "refused":
                        assert _trigger_accepts(conn, item.id, verdict, stored), (kind, verdict, answer)
                    # The trigger leaves a stray answer on another verdict to the app; on the kind's rule it is no
                    # laxer than item_kinds.
                    if _trigger_accepts(conn, item.id, verdict, answer):
                        carried = answer if verdict in (WRONG, INCOMPLETE) else None
                        item_kinds.corrected_answer(kind, verdict, carried, n_options=len(item.options))
                    checked += 1
        assert checked == 3 * (len(item_kinds.ALL_VERDICTS) + 1) * len(answers)
    finally:
        conn.close()


@pytest.mark.parametrize("kind", item_kinds.KINDS)
def test_undo_withdraws_a_verdict_on_every_kind_and_names_no_row_id(path, kind):
    with open_workspace(path) as ws:
        item = _item(ws, kind)
        reviews.add_review(ws, item.id, "ann", "ok")
        given = reviews.add_review(ws, item.id, "ann", WRONG, corrected_answer=GIVEN[kind])
        withdrawn = reviews.undo_last(ws, "ann", item_id=item.id)
        assert withdrawn is not None and withdrawn.uuid == given.uuid
        assert [r.verdict for r in reviews.standing_reviews(ws, item_id=item.id)] == ["ok"]
        undo = reviews.history(ws, item.id)[-1]
        # The undo names its target by uuid; its note says nothing (an internal row id meant nothing to people).
        assert (undo.verdict, undo.withdraws, undo.note, undo.corrected_answer) == ("undo", given.uuid, None, None)
        assert reviews.undo_last(ws, "ann", item_id=item.id).verdict == "ok"
        assert reviews.standing_reviews(ws, item_id=item.id) == []


def test_progress_and_the_annotators_view_leave_out_items_only_skipped(path):
    with open_workspace(path) as ws:
        a, b, c = (_item(ws, "open", n) for n in range(3))
        bench = a.benchmark_id

        def progress(who: str) -> tuple[int, int]:
            p = reviews.progress(ws, bench, who)
            stats = annotator_stats.benchmark_stats(ws, bench)
            assert stats.reviewed_items == p["reviewed"]  # the Annotators view agrees
            mine = {s.annotator: s.items for s in stats.annotators}.get(who, 0)
            assert mine == p["mine"]
            return p["reviewed"], p["mine"]

        reviews.add_review(ws, a.id, "ann", "skip")
        assert progress("ann") == (0, 0)  # a skip is no verdict
        reviews.add_review(ws, a.id, "bob", "ok")
        assert progress("ann") == (1, 0) and progress("bob") == (1, 1)
        reviews.add_review(ws, b.id, "ann", "skip")
        assert progress("ann") == (1, 0)
        reviews.add_review(ws, b.id, "ann", INCOMPLETE, corrected_answer="a tabby")  # a correction of the skip
        assert progress("ann") == (2, 1)
        reviews.add_review(ws, c.id, "ann", "ok")
        reviews.add_review(ws, c.id, "ann", "skip")  # a verdict corrected to a skip un-judges the item
        assert progress("ann") == (2, 1)
        reviews.undo_last(ws, "ann", item_id=c.id)  # the ok stands again
        assert progress("ann") == (3, 2)
        reviews.undo_last(ws, "ann", item_id=b.id)  # back to the skip
        assert progress("ann") == (2, 1)
        assert annotator_stats.benchmark_stats(ws, bench).annotators[0].verdicts == {"skip": 2, "ok": 1}


def _held(path, items: int, verdicts: int) -> int:
    """A workspace of one multiple-choice benchmark of `items` items holding `verdicts` standing records by three
    people, a third of them skips; returns the benchmark id."""
    with open_workspace(path) as ws:
        import_benchmark(ws, write_bench(path.parent / f"b{items}.jsonl", items), fmt="jsonl", name="b")
        bench = catalog.benchmark_by_name(ws, "b")
        assert bench is not None
        ids = [i.id for i in catalog.list_items(ws, bench.id)]
        with ws.db.atomic():
            ws.conn.executemany(
                "INSERT INTO reviews (item_id, annotator, verdict, corrected_answer, created_at) "
                "VALUES (?, ?, ?, ?, ?)",
                [
                    (
                        ids[k % items],
                        ("ann", "bob", "cy")[k // items % 3],
                        ("ok", "skip", WRONG)[k % 3],
                        "B" if k % 3 == 2 else None,
                        f"2026-01-01T00:00:00.{k % 1000:03d}+00:00",
                    )
                    for k in range(verdicts)
                ],
            )
        return bench.id


def test_a_verdict_at_the_door_and_progress_cost_the_same_whatever_the_workspace_holds(tmp_path):
    """The kind's lookup, the trigger and the counts that leave skips out read the item and its own records only."""
    steps = {}
    for items, held in ((40, 100), (2000, 6000)):
        path = tmp_path / f"w{items}.sqlite"
        bench = _held(path, items, held)
        with open_workspace(path) as ws:
            item = catalog.list_items(ws, bench)[1]
            with counting_steps(ws.conn, every=10) as counted:
                for who in ("ann", "dee"):
                    reviews.add_review(ws, item.id, who, "skip")
                    reviews.add_review(ws, item.id, who, WRONG, corrected_answer="a")
                    with pytest.raises(InvalidInput):
                        reviews.add_review(ws, item.id, who, INCOMPLETE)
                    reviews.progress(ws, bench, who)
                    reviews.undo_last(ws, who, item_id=item.id)
                    reviews.progress(ws, bench, who)
            steps[items] = counted.count
            p = reviews.progress(ws, bench, "ann")
            assert p["mine"] == len({k % items for k in range(held) if k // items % 3 == 0 and k % 3 != 1})
    assert steps[2000] <= 1.3 * steps[40], steps


# ------------------------------------------------------------------------------------------------ the command


def cli(capsys, path, *args) -> tuple[int, str, str]:
    code = main(["--workspace", str(path), *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_the_command_refuses_a_misfit_in_one_line_and_takes_what_fits(path, capsys):
    add = ("reviews", "add", "--annotator", "ana", "--bench")
    code, out, err = cli(capsys, path, *add, "demo", "--item", "1", "--verdict", "incomplete")
    assert (code, out) == (2, "")
    assert err == (
        "error: verdict 'incomplete' does not fit a multiple-choice item (one of ok, wrong_answer, ambiguous, "
        "text_answerable, bad_image, skip)\n"
    )
    code, _, err = cli(capsys, path, *add, "demo-pope", "--item", "1", "--verdict", "wrong_answer", "--answer", "C")
    assert (
        code == 2 and err == "error: a wrong-key verdict on a yes/no item needs the right answer, yes or no, got 'C'\n"
    )
    code, _, err = cli(capsys, path, *add, "demo-open", "--item", "1", "--verdict", "wrong_answer")
    assert code == 2 and err.count("\n") == 1 and "needs the right answer as text" in err
    with open_workspace(path) as ws:
        assert _count(ws) == 0
    assert cli(capsys, path, *add, "demo", "--item", "1", "--verdict", "wrong_answer", "--answer", "b")[:2] == (
        0,
        "demo #1: wrong key → B saved\n",
    )
    assert cli(capsys, path, *add, "demo-pope", "--item", "1", "--verdict", "wrong_answer", "--answer", "No")[:2] == (
        0,
        "demo-pope #1: wrong key → no saved\n",
    )
    assert cli(capsys, path, *add, "demo-open", "--item", "1", "--verdict", "incomplete", "--answer", "a tabby")[
        :2
    ] == (0, "demo-open #1: references incomplete → a tabby saved\n")
    assert cli(capsys, path, *add, "demo-open", "--item", "1", "--verdict", "undo")[:2] == (
        0,
        "demo-open #1: withdrew references incomplete\n",
    )
    assert cli(capsys, path, *add, "demo-open", "--item", "1", "--verdict", "undo")[1] == (
        "demo-open #1: nothing of yours stands on this item\n"
    )
    # The export writes each verdict with its answer (an incomplete one's too), undos naming their target.
    code, out, _ = cli(capsys, path, "reviews", "export")
    records = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and [(r["benchmark"], r["verdict"], r["answer"], r["note"]) for r in records] == [
        ("demo", WRONG, "B", None),
        ("demo-pope", WRONG, "no", None),
        ("demo-open", INCOMPLETE, "a tabby", None),
        ("demo-open", "undo", None, None),
    ]
    assert records[3]["withdraws"] == records[2]["id"]


def test_the_help_lists_the_verdicts_of_each_kind(capsys):
    for argv in (["reviews", "--help"], ["reviews", "add", "--help"]):
        with pytest.raises(SystemExit):
            main(argv)
        out = capsys.readouterr().out
        assert "  mcq (multiple-choice): ok, wrong_answer, ambiguous, text_answerable, bad_image, skip\n" in out
        assert "  yesno (yes/no): ok, wrong_answer, ambiguous, text_answerable, bad_image, skip\n" in out
        assert "  open: ok, wrong_answer, incomplete, ambiguous, text_answerable, bad_image, skip\n" in out


# -------------------------------------------------------------------------------------- another copy's records


def _record(bench: str, index, verdict: str, answer=None, *, at: str, withdraws=None, uid=None) -> dict:
    return {
        "id": uid or str(uuid.uuid4()),
        "benchmark": bench,
        "index": index,
        "annotator": "old",
        "verdict": verdict,
        "answer": answer,
        "note": None,
        "seconds": None,
        "at": f"2026-11-30T10:00:0{at}.000+00:00",
        "withdraws": withdraws,
    }


def test_a_merge_leaves_out_and_lists_each_record_that_does_not_fit_and_merges_the_rest(path, tmp_path, capsys):
    """An older vlmdesk stored verdicts that do not fit; its copy keeps them for good. They are listed, one line
    each, with the undos that withdraw them; everything else merges; one already here (stored before 0023) is
    present; a merge never stops half-written."""
    with open_workspace(path) as ws:  # a misfit this copy holds from before migration 0023
        ws.conn.execute("DROP TRIGGER reviews_fit_the_item")
        with ws.db.atomic():
            _raw_insert(ws.conn, _item(ws, "mcq", 2).id, INCOMPLETE, None)
            ws.conn.execute(schema._VERDICT_DOOR)
        (held,) = sync.export_records(ws, "reviews")
    ok = _record("demo", 1, "ok", at=1)
    misfit = _record("demo", 2, INCOMPLETE, at=2)
    records = [
        ok,
        misfit,
        _record("demo", 2, "undo", at=3, withdraws=misfit["id"]),
        _record("demo-pope", 1, WRONG, "maybe", at=4),
        _record("demo-open", 1, WRONG, " a tabby ", at=5),
        _record("demo-open", 2, WRONG, None, at=6),
        held,
    ]
    file = tmp_path / "old.jsonl"
    file.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    code, out, err = cli(capsys, path, "reviews", "import", str(file))
    assert code == 0, err
    assert err.splitlines() == [
        f"skipped: {file}:2: verdict: verdict 'incomplete' does not fit a multiple-choice item (one of ok, "
        "wrong_answer, ambiguous, text_answerable, bad_image, skip): not merged",
        f"skipped: {file}:3: withdraws: withdraws line 2, not merged either",
        f"skipped: {file}:4: answer: a wrong-key verdict on a yes/no item needs the right answer, yes or no, got "
        "'maybe': not merged",
        f"skipped: {file}:6: answer: a wrong-reference verdict on an open item needs the right answer as text: not "
        "merged",
    ]
    assert out == "imported 2 new record(s); 1 already present; 4 line(s) skipped (4 not fitting their item's kind)\n"
    with open_workspace(path) as ws:
        merged = ws.conn.execute("SELECT verdict, corrected_answer FROM reviews WHERE annotator = 'old' ORDER BY id")
        assert merged.fetchall() == [("ok", None), (WRONG, "a tabby")]
    # Twice: nothing more, the same lines listed; as JSON, the unfit counted.
    code, out, _ = cli(capsys, path, "reviews", "import", str(file), "--json")
    report = json.loads(out)
    assert (code, report["added"], report["present"], report["skipped_count"], report["unfit_count"]) == (0, 0, 3, 4, 4)
    # A bad line (not a misfit) still stops the merge at once, nothing written, as before.
    file.write_text(json.dumps(_record("demo", 3, "ok", at=7)) + "\n" + json.dumps(_record("nope", 1, "ok", at=8)))
    code, _, err = cli(capsys, path, "reviews", "import", str(file))
    assert code == 2 and err == f"error: {file}:2: benchmark: no benchmark named 'nope' in this workspace\n"
    with open_workspace(path) as ws:
        assert _count(ws) == 3
