"""Every label correctable from the app, nothing erased: an adjudication label, a QC decision and a Review verdict
are taken back (Ctrl+Z or the page's "change my …" button), given again, and SQLite keeps every row while the
statistics use the correction. The "N left" of a page and of the queue list always agree."""

import sqlite3

from PySide6.QtCore import Qt

from annotation import alignment, qc, reviews
from db import catalog, item_query, open_workspace


def _set_from_run(path, name="fix-set"):
    with open_workspace(path) as ws:
        bench = catalog.benchmark_by_name(ws, "demo")
        run_id = item_query.runs_of_benchmark(ws, bench.id)[0].id
        return alignment.build_set(ws, name, [run_id], [], size=3, seed=1)


def _rows(path, sql, *params):
    with sqlite3.connect(path) as conn:
        return conn.execute(sql, params).fetchall()


def _counts_agree(queues, row, page):
    n = page.remaining() if isinstance(page.remaining(), int) else len(page.remaining())
    assert queues.list.item(row).text().endswith(f"\n{n} left"), queues.list.item(row).text()
    assert page.left.text().startswith(f"{n} left"), page.left.text()
    return n


def test_an_adjudication_label_is_taken_back_after_the_reveal_and_given_again(qtbot, demo_ws, make_window):
    adj_set = _set_from_run(demo_ws)
    window = make_window(demo_ws)
    window.show_view("queues")
    queues = window.view("queues")
    queues.select("adjudication")
    page = queues.adjudication
    total = _counts_agree(queues, 1, page)
    task = page.task
    first, second = list(task.options)[:2]
    qtbot.keyClick(window, Qt.Key_1)  # label: the first option; the extractors' readings are revealed
    assert page.revealed.isVisible() and _counts_agree(queues, 1, page) == total - 1
    qtbot.keyClick(window, Qt.Key_Z, Qt.ControlModifier)  # "I mis-keyed": take it back
    assert not page.revealed.isVisible() and page.reveal_text.text() == ""
    assert page.task.item_id == task.item_id and all(b.isEnabled() for b in page.label_buttons)
    assert _counts_agree(queues, 1, page) == total
    with open_workspace(demo_ws) as ws:
        assert alignment.standing_labels(ws, adj_set.name) == {}
    qtbot.keyClick(window, Qt.Key_2)  # the right label this time
    assert page.revealed.isVisible()
    rows = _rows(
        demo_ws,
        "SELECT choice, withdraws IS NOT NULL, created_at FROM labels WHERE item_id = ? "
        "AND annotator = 'ann' ORDER BY id",
        task.item_id,
    )
    assert [(c, w) for c, w, _ in rows] == [(first, 0), ("undo", 1), (second, 0)] and all(t for _, _, t in rows)
    with open_workspace(demo_ws) as ws:
        assert alignment.standing_labels(ws, adj_set.name) == {task.item_id: {"ann": second}}
        report = alignment.alignment_report(ws, adj_set.name)
    assert report.labelled == 1 and report.progress == {"ann": 1}
    # The button does the same as Ctrl+Z.
    qtbot.mouseClick(page.change, Qt.LeftButton)
    assert not page.revealed.isVisible() and _counts_agree(queues, 1, page) == total
    with open_workspace(demo_ws) as ws:
        assert alignment.standing_labels(ws, adj_set.name) == {}


def test_a_qc_decision_is_changed(qtbot, demo_ws, make_window):
    with open_workspace(demo_ws) as ws:
        bench = catalog.benchmark_by_name(ws, "demo")
        run_id = item_query.runs_of_benchmark(ws, bench.id)[0].id
        flagged = qc.compute_stage(ws, bench.id, "consensus", [run_id]).candidates
    window = make_window(demo_ws)
    window.show_view("queues")
    queues = window.view("queues")
    queues.select("qc")
    page = queues.qc
    assert _counts_agree(queues, 0, page) == len(flagged)
    first = page.candidate.item_id
    qtbot.mouseClick(page.reject, Qt.LeftButton)
    assert _counts_agree(queues, 0, page) == len(flagged) - 1
    assert window.ctx.model.qc[first].label == "possibly flawed · rejected"
    page.setFocus()
    qtbot.keyClick(window, Qt.Key_Z, Qt.ControlModifier)  # change my decision: the same flag is back
    assert page.candidate.item_id == first and _counts_agree(queues, 0, page) == len(flagged)
    assert window.ctx.model.qc[first].label == "possibly flawed · pending"
    page.reason.setCurrentIndex(page.reason.findData("ambiguous"))
    qtbot.mouseClick(page.confirm, Qt.LeftButton)
    with open_workspace(demo_ws) as ws:
        log = qc.history(ws, first, "consensus")
        candidate = next(c for c in qc.queue(ws, benchmark_id=bench.id) if c.item_id == first)
    assert [d.decision for d in log] == ["reject", "undo", "confirm"]
    assert candidate.status == "confirmed" and candidate.resolution.action == "remove"
    # The button, too: it withdraws the confirmation.
    assert page.change.isVisible()
    qtbot.mouseClick(page.change, Qt.LeftButton)
    with open_workspace(demo_ws) as ws:
        assert [d.decision for d in qc.history(ws, first, "consensus")] == ["reject", "undo", "confirm", "undo"]
        assert next(c for c in qc.queue(ws, benchmark_id=bench.id) if c.item_id == first).status == "pending"


def test_a_review_verdict_is_changed_on_the_item(qtbot, demo_ws, make_window):
    window = make_window(demo_ws, advance=False)
    window.show_view("review")
    review = window.view("review")
    item = review.item
    assert not review.change.isVisible()
    qtbot.keyClick(window, Qt.Key_O)
    assert review.change.isVisible()
    qtbot.mouseClick(review.change, Qt.LeftButton)  # "Change my verdict": withdrawn, still on the item
    assert review.item.id == item.id and not review.change.isVisible()
    other = next(letter for letter in "ABCD"[: len(item.options)] if letter != item.answer)
    qtbot.keyClick(window, Qt.Key_1 + "ABCD".index(other))
    qtbot.keyClick(window, Qt.Key_W)
    with open_workspace(demo_ws) as ws:
        log = [(r.verdict, r.corrected_answer) for r in reviews.history(ws, item.id)]
        standing = reviews.standing_reviews(ws, annotator="ann")
        progress = reviews.progress(ws, item.benchmark_id, "ann")
    assert log == [("ok", None), ("undo", None), ("wrong_answer", other)]
    assert [(r.item_id, r.verdict, r.corrected_answer) for r in standing] == [(item.id, "wrong_answer", other)]
    assert progress["mine"] == 1 and progress["reviewed"] == 1


def test_a_label_from_an_earlier_session_is_taken_back_by_ctrl_z(qtbot, demo_ws, make_window):
    """Found walking the app: after a restart, Ctrl+Z on the adjudication page said there was nothing to undo."""
    adj_set = _set_from_run(demo_ws)
    with open_workspace(demo_ws) as ws:
        earlier = alignment.next_for(ws, adj_set.name, "ann")
        alignment.add_label(ws, earlier.item_id, "ann", list(earlier.options)[0])  # a label of an earlier session
    window = make_window(demo_ws)
    window.show_view("queues")
    queues = window.view("queues")
    queues.select("adjudication")
    page = queues.adjudication
    before = _counts_agree(queues, 1, page)
    qtbot.keyClick(window, Qt.Key_Z, Qt.ControlModifier)
    with open_workspace(demo_ws) as ws:
        assert alignment.standing_labels(ws, adj_set.name) == {}
    assert page.task.item_id == earlier.item_id and _counts_agree(queues, 1, page) == before + 1
