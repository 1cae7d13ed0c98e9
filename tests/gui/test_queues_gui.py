"""Queues in the real window: blind extractor adjudication, QC decisions, conflicts."""

from PySide6.QtCore import Qt

from annotation import alignment, qc, reviews
from db import catalog, item_query, open_workspace


def _adjudication(path, make_window):
    """A window on the workspace at Queues › Extractor adjudication: (window, queues view, adjudication page)."""
    window = make_window(path)
    window.show_view("queues")
    queues = window.view("queues")
    queues.select("adjudication")
    return window, queues, queues.adjudication


def _set_from_run(path, name="first-set"):
    with open_workspace(path) as ws:
        bench = catalog.benchmark_by_name(ws, "demo")
        run_id = item_query.runs_of_benchmark(ws, bench.id)[0].id
        return alignment.build_set(ws, name, [run_id], [], size=3, seed=1)


def _visible_texts(widget):
    from PySide6.QtWidgets import QLabel

    return " ".join(label.text() for label in widget.findChildren(QLabel) if label.isVisibleTo(widget))


def test_blind_adjudication_reveals_extractor_outputs_only_after_the_label(qtbot, demo_ws, make_window):
    adj_set = _set_from_run(demo_ws)
    window, queues, page = _adjudication(demo_ws, make_window)
    assert page.set_combo.currentData() == adj_set.name
    task = page.task
    assert task is not None and page.response.text() == task.response
    assert f"{adj_set.items} left" in page.left.text()
    # Before the label: the outputs box is hidden, nothing visible names an extractor or its reading.
    assert not page.revealed.isVisible() and page.reveal_text.text() == ""
    assert "rules" not in _visible_texts(page)
    page.setFocus()
    qtbot.keyClick(window, Qt.Key_1)  # the first option, from the keyboard
    first = next(iter(task.options))
    with open_workspace(demo_ws) as ws:
        labels = alignment.standing_labels(ws, adj_set.name)
        assert labels == {task.item_id: {"ann": first}}
        outputs = alignment.reveal(ws, task.item_id, "ann")
    assert page.revealed.isVisible()
    assert "rules" in page.reveal_text.text() and (outputs["rules"].choice or "undecided") in page.reveal_text.text()
    assert f"{adj_set.items - 1} left" in queues.list.item(1).text()
    qtbot.keyClick(window, Qt.Key_Return)  # next response, outputs hidden again
    assert page.task.item_id != task.item_id and not page.revealed.isVisible()


def test_qc_confirm_and_reject_from_the_queue(qtbot, demo_ws, make_window):
    with open_workspace(demo_ws) as ws:
        bench = catalog.benchmark_by_name(ws, "demo")
        run_id = item_query.runs_of_benchmark(ws, bench.id)[0].id
        flagged = qc.compute_stage(ws, bench.id, "consensus", [run_id]).candidates
    window = make_window(demo_ws)
    window.show_view("queues")
    queues = window.view("queues")
    queues.select("qc")
    page = queues.qc
    assert f"{len(flagged)} left" in page.left.text()
    first = page.candidate.item_id
    # "Wrong answer key" is offered first, but confirming it waits for the right answer to be picked.
    assert page.reason.currentData() == "wrong_answer" and page.answer.currentData() is None
    assert not page.confirm.isEnabled()
    page.answer.setCurrentIndex(1)
    assert page.confirm.isEnabled()
    page.reason.setCurrentIndex(page.reason.findData("ambiguous"))
    page.note.setText("two readings")
    qtbot.mouseClick(page.confirm, Qt.LeftButton)
    second = page.candidate.item_id
    qtbot.mouseClick(page.reject, Qt.LeftButton)
    with open_workspace(demo_ws) as ws:
        (d1,) = qc.history(ws, first, "consensus")
        (d2,) = qc.history(ws, second, "consensus")
    assert (d1.decision, d1.reason, d1.note, d1.annotator) == ("confirm", "ambiguous", "two readings", "ann")
    assert (d2.decision, d2.reason) == ("reject", None)
    assert f"{len(flagged) - 2} left" in page.left.text()
    assert window.ctx.model.qc[first].label == "possibly flawed · confirmed"


def test_conflicts_are_listed_and_settled(qtbot, demo_ws, make_window):
    with open_workspace(demo_ws) as ws:
        item = catalog.list_items(ws, catalog.benchmark_by_name(ws, "demo").id)[3]
        reviews.add_review(ws, item.id, "bob", "ok")
        reviews.add_review(ws, item.id, "eve", "ambiguous", note="hard to see")
    window = make_window(demo_ws)
    window.show_view("queues")
    queues = window.view("queues")
    queues.select("conflicts")
    page = queues.conflicts
    assert page.item.id == item.id and "1 left" in page.left.text()
    assert "hard to see" in page.verdicts.text() and "bob" in page.verdicts.text()
    qtbot.mouseClick(page.buttons["ambiguous"], Qt.LeftButton)
    assert "0 left" in page.left.text()
    with open_workspace(demo_ws) as ws:
        mine = [r for r in reviews.history(ws, item.id) if r.annotator == "ann"]
    assert [(r.verdict, r.note.startswith("settles conflict")) for r in mine] == [("ambiguous", True)]


def test_queues_refresh_before_the_first_annotator_name_is_given(qtbot, tmp_path):
    """On the very first start the name is asked in a modal dialog while the window already refreshes its views:
    with no annotator yet, the adjudication queue has nothing for anybody (it raised BadName on stderr)."""
    from db import open_workspace as _open
    from gui.main_window import MainWindow
    from gui.prefs import Preferences, PreferencesFile
    from vlmdesk.cli import main as _cli
    from vlmdesk.demo import ensure_demo

    path = tmp_path / "first.sqlite"
    with _open(path) as ws:
        ensure_demo(ws)
    assert _cli(["--workspace", str(path), "run", "--bench", "demo", "--model", "baseline:random"]) == 0
    assert _cli(["--workspace", str(path), "align", "sample", "--run", "1", "--size", "3", "--name", "s"]) == 0
    pf = PreferencesFile(tmp_path / "config" / "preferences.json")
    pf.save(Preferences())
    window = MainWindow(path, prefs_file=pf, settings_path=tmp_path / "config" / "window.ini")
    qtbot.addWidget(window)
    queues = window.view("queues")
    queues.refresh()  # raised BadName before
    assert queues.adjudication.task is None and queues.adjudication.remaining() == 0
    window.ctx.update_prefs(annotator="ann")
    queues.refresh()
    assert queues.adjudication.task is not None


def test_an_unclear_label_is_revealed_as_left_out_of_the_alignment_figures(qtbot, demo_ws, make_window):
    adj_set = _set_from_run(demo_ws)
    window, queues, page = _adjudication(demo_ws, make_window)
    task = page.task
    qtbot.keyClicks(window, "?")  # unclear
    with open_workspace(demo_ws) as ws:
        assert alignment.standing_labels(ws, adj_set.name) == {task.item_id: {"ann": alignment.UNCLEAR}}
        report = alignment.alignment_report(ws, adj_set.name)
    # The report leaves the item out of every extractor's figures: the reveal neither agrees nor differs.
    assert report.final.unclear == 1 and all(e.overall.n == 0 for e in report.extractors.values())
    shown = page.reveal_text.text()
    assert page.revealed.isVisible() and "unclear</b> — left out of the alignment figures" in shown
    assert "rules" in shown and "agrees" not in shown and "differs" not in shown and shown.count("✓") == 1
    qtbot.keyClick(window, Qt.Key_Return)
    first = next(iter(page.task.options))
    qtbot.keyClick(window, Qt.Key_1)  # a letter is compared: ✓ or ✗ per extractor, as the report counts it
    assert "agrees" in page.reveal_text.text() or "differs" in page.reveal_text.text()
    assert f"label <b>{first}</b>." in page.reveal_text.text()


def test_a_finished_set_says_what_to_do_next_instead_of_an_empty_response(qtbot, demo_ws, make_window):
    adj_set = _set_from_run(demo_ws)
    window, queues, page = _adjudication(demo_ws, make_window)
    for _ in range(adj_set.items):
        qtbot.keyClick(window, Qt.Key_1)
        qtbot.keyClick(window, Qt.Key_Return)
    assert page.task is None and page.left.text() == "0 left for you"
    # No empty question, options and response box: the next steps in their place.
    assert not page.response.isVisibleTo(page) and not page.question.isVisibleTo(page)
    text = page.done_text.text()
    assert f"Every response in set {adj_set.name} has your label" in text
    assert "vlmdesk align sample --run RUN --size 50 --name NAME" in text  # the real command's flags
    assert [b.text() for b in page.done_buttons] == ["Build an adjudication set…", "See the alignment figures"]
    assert queues.bars["adjudication"].text() == f"Extractor {adj_set.items} / {adj_set.items}"
    qtbot.mouseClick(page.done_buttons[1], Qt.LeftButton)
    assert window.tabs.currentWidget() is window.view("alignment")
    # Another set with work: the next step is to label it, one click away.
    other = _set_from_run(demo_ws, name="second-set")
    window.show_view("queues")
    queues.refresh()
    queues.select("adjudication")
    assert page.set_combo.currentData() == adj_set.name and page.task is None
    assert f"set second-set ({other.items} left)" in page.done_text.text()
    assert page.done_buttons[0].text() == "Label set second-set"
    qtbot.mouseClick(page.done_buttons[0], Qt.LeftButton)
    assert page.set_combo.currentData() == "second-set" and page.task is not None
    assert page.response.isVisibleTo(page) and page.response.text() == page.task.response


def test_qc_with_every_flag_decided_shows_next_steps_in_the_item_s_place(qtbot, demo_ws, make_window):
    """Every flag of demo has ann's decision (the last one given on the page): no empty item, but where flags wait
    (demo-pope), the stages that make more, and the way back to the last decision; blind, nothing of a key or of
    anyone else's decision on it."""
    from gui.empty_states import CONSENSUS, TEXT_ONLY
    from tests.annotation.test_qc_export import consensus_over_first

    with open_workspace(demo_ws) as ws:
        bench = catalog.benchmark_by_name(ws, "demo")
        run_id = item_query.runs_of_benchmark(ws, bench.id)[0].id
        flagged = qc.compute_stage(ws, bench.id, "consensus", [run_id]).candidates
        consensus_over_first(ws, "demo-pope")
        pope = catalog.benchmark_by_name(ws, "demo-pope")
        pope_left = len(qc.queue(ws, benchmark_id=pope.id, status="pending"))
        queue = qc.queue(ws, benchmark_id=bench.id)
        for c in queue[1:]:
            qc.decide(ws, c.item_id, c.stage, "ann", "reject")
        qc.decide(ws, queue[1].item_id, queue[1].stage, "bob", "confirm", reason="ambiguous", note="bob-note")
        last = queue[0]
    assert flagged and pope_left
    window = make_window(demo_ws, blind=True)
    window.show_view("queues")
    queues = window.view("queues")
    queues.select("qc")
    page = queues.qc
    assert page.area.currentIndex() == 0 and page.candidate.item_id == last.item_id
    asked: list[str] = []
    window.ctx.actionRequested.disconnect(window.trigger)  # a stage's dialog is not what is tested
    window.ctx.actionRequested.connect(asked.append)
    qtbot.mouseClick(page.reject, Qt.LeftButton)
    # The next steps where the item was: no empty question, options or image, and not the "no flags yet" state.
    assert page.candidate is None and page.area.currentIndex() == 1 and not page.empty.isVisible()
    assert not page.panel.isVisibleTo(page) and not page.image.isVisibleTo(page)
    text = page.done_text.text()
    assert "Every quality-control flag on demo has your decision" in text
    assert f"Flags wait for you on demo-pope ({pope_left} left)" in text
    assert page.done_left.text() == "0 left for you" and "0 left" in queues.list.item(0).text()
    assert [b.text() for b in page.done_buttons] == [TEXT_ONLY[0], CONSENSUS[0], "Change my decision  Ctrl+Z"]
    assert all(b.isVisibleTo(page) for b in page.done_buttons)
    shown = text + _visible_texts(page)
    assert "bob" not in shown and "confirm" not in shown and "ambiguous" not in shown
    assert not any(f"answer {a}" in shown.lower() for a in "ABCD")
    qtbot.mouseClick(page.done_buttons[1], Qt.LeftButton)
    assert asked == [CONSENSUS[1]]
    # Change my decision: the flag is back in the item's place, to decide again.
    qtbot.mouseClick(page.done_buttons[2], Qt.LeftButton)
    assert page.area.currentIndex() == 0 and page.candidate.item_id == last.item_id
    assert page.panel.isVisibleTo(page) and "1 left" in page.left.text()
