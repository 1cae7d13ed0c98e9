"""Blind means blind: in blind mode no view of the real window shows, for an item the annotator has not judged, any
of a set of seeded marker strings (another annotator's name, note and corrected key, a model response, an
extractor's reading, the answer key, run correctness, scores) — read with the same visible-text collector as
`vlmdesk gui --visible-text`. With blind off the same views show them, so the test can fail. Blind adjudication
hides a queued response in Browse and Review whatever the toggle says, until the annotator's own label."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from annotation import alignment, qc, reviews
from annotation.blind import HIDDEN_TEXT as HIDDEN
from db import catalog, open_workspace, runs
from evaluator.analysis.report import run_summary
from gui.runs_list import pct
from gui.screenshot import VIEWS, Shot, settle, visible_texts
from vlmdesk.cli import main as cli_main

pytestmark = pytest.mark.base  # also run in the base install (.ci/base-install)

OTHER, THIRD = "otherann-7731", "thirdann-2209"
NOTE = "NOTE-MARK-5521 the eyes look green to me"
RESPONSE = "RESP-MARK-8812: the answer is B"
READING = "READ-MARK-4410 letter B after 'answer is'"
ADJ_RESPONSE = "ADJ-MARK-3391 hmm, A or B"
CORRECTED = "wrong key → D"  # the other annotator's correction of item 1's key (C)


@pytest.fixture
def seeded(demo_ws):
    """The demo workspace (run 1: baseline:first) plus a scripted run 2 whose item 1 response and reading carry
    markers and whose item 2 response is undecided (so it sits in a blind adjudication set, labelled by OTHER);
    OTHER and THIRD disagree about item 1; a consensus QC stage flags the items no run got right."""
    with open_workspace(demo_ws) as ws:
        bench = catalog.benchmark_by_name(ws, "demo")
        items = catalog.list_items(ws, bench.id)
        owner = runs.Owner.here()
        run_id = runs.create_run(
            ws,
            benchmark_id=bench.id,
            model_spec="test:scripted",
            strategy="vanilla",
            prompt_template="{}",
            extractor="rules",
            config={},
            config_key="scripted",
            versions={},
            git_revision=None,
            seed=0,
            owner=owner,
        )
        passes = []
        for n, item in enumerate(items):
            order = tuple(range(len(item.options)))
            if n == 0:
                passes.append(
                    runs.Prediction(
                        run_id,
                        item.id,
                        0,
                        order,
                        "p",
                        RESPONSE,
                        item.answer,
                        "B",
                        "rules",
                        READING,
                        item.answer == "B",
                        1.0,
                    )
                )
            elif n == 1:
                passes.append(
                    runs.Prediction(
                        run_id, item.id, 0, order, "p", ADJ_RESPONSE, item.answer, None, "none", "undecided", False, 1.0
                    )
                )
            else:
                passes.append(
                    runs.Prediction(
                        run_id,
                        item.id,
                        0,
                        order,
                        "p",
                        "A",
                        item.answer,
                        "A",
                        "rules",
                        "letter",
                        item.answer == "A",
                        1.0,
                    )
                )
        runs.add_predictions(ws, passes, owner)
        assert runs.release(ws, run_id, owner, "finished")
        adj = alignment.build_set(ws, "study", [run_id], [], size=0, seed=1)
        assert adj.items == 1
        alignment.add_label(ws, alignment.next_for(ws, "study", OTHER).item_id, OTHER, "A")
        reviews.add_review(ws, items[0].id, OTHER, "wrong_answer", corrected_answer="D", note=NOTE)
        reviews.add_review(ws, items[0].id, THIRD, "ok")
        assert qc.compute_stage(ws, bench.id, "consensus", [1]).candidates
        scores = {pct(s.vanilla) for r in (1, run_id) if (s := run_summary(ws, r)) and s.vanilla is not None}
    return demo_ws, items[0], items[1], scores


def _markers(scores) -> dict[str, callable]:
    """name -> test over the visible lines."""

    def contains(s):
        return lambda lines: any(s in line for line in lines)

    found = {
        m: contains(m)
        for m in (OTHER, THIRD, NOTE, RESPONSE, READING, ADJ_RESPONSE, CORRECTED, "✓ right", "✗ wrong", "flawed · ")
    }
    found["answer key"] = lambda lines: any(line == "answer key" or line.startswith("answer key ·") for line in lines)
    found["model test answer"] = lambda lines: any(line.startswith(("Response: ", "Choice: ")) for line in lines)
    for s in scores:
        found[f"score {s}"] = contains(s)
    return found


# view -> (Shot, markers that must show with blind off)
VIEW_CASES = {
    "browse-predictions": (
        Shot("browse", item="1", tab="predictions"),
        {RESPONSE, READING, "answer key", "✗ wrong", "flawed · "},
    ),
    "browse-history": (Shot("browse", item="1", tab="history"), {OTHER, THIRD, NOTE, CORRECTED}),
    "review-predictions": (Shot("review", item="1", tab="predictions"), {RESPONSE, READING, "answer key", "✗ wrong"}),
    "review-history": (Shot("review", item="1", tab="history"), {OTHER, THIRD, NOTE, CORRECTED}),
    "queue-qc": (Shot("queue", queue="qc"), {"answer key"}),
    "queue-adjudication": (Shot("queue", queue="adjudication"), {ADJ_RESPONSE}),
    "queue-conflicts": (Shot("queue", queue="conflicts"), {OTHER, NOTE, CORRECTED}),
    "runs": (Shot("runs"), {"score"}),
    "results": (Shot("results", runs=(1,)), {"✗ wrong"}),
    "alignment": (Shot("alignment"), {OTHER}),
    "models": (Shot("models"), {"model test answer"}),
}


def _shows(texts, markers, wanted):
    return {name for name, test in markers.items() if test(texts) and any(name.startswith(w) for w in wanted)}


@pytest.mark.parametrize("case", list(VIEW_CASES))
def test_blind_mode_hides_every_marker_in_every_view(qtbot, seeded, make_window, case):
    path, first, _, scores = seeded
    shot, expected = VIEW_CASES[case]
    markers = _markers(scores)
    window = make_window(path)
    VIEWS[shot.view](window, shot)
    settle(QApplication.instance(), window)  # figures computed off the GUI thread (gui/background.py) are drawn
    if case == "models":  # a model test answers a demo item: its response, choice and key
        models = window.view("models")
        assert models.add_model("always-A", "baseline:first")
        models.test_button.click()
        qtbot.waitUntil(lambda: models.process.finished, timeout=120_000)  # a child process on a busy machine
    texts = visible_texts(window)
    assert _shows(texts, markers, expected) == {n for n in markers if any(n.startswith(w) for w in expected)}, texts

    window.blind_action.setChecked(True)  # what the B key and View › Blind mode do
    VIEWS[shot.view](window, shot)
    settle(QApplication.instance(), window)
    texts = visible_texts(window)
    allowed = {ADJ_RESPONSE} if case == "queue-adjudication" else set()  # the response to label is the task
    leaks = {name for name, test in markers.items() if name not in allowed and test(texts)}
    assert leaks == set(), texts
    assert "Blind" in texts  # the status bar says so
    if case in ("results", "alignment"):
        assert any("hidden in blind mode" in t for t in texts)
    if case == "runs":
        assert "Scores hidden in blind mode" in texts


def _review_texts(window, tab: str) -> list[str]:
    review = window.view("review")
    review.tabs.setCurrentWidget(getattr(review, tab))
    return visible_texts(window)


def test_my_verdict_reveals_the_item_and_skip_does_not(qtbot, seeded, make_window):
    path, first, _, scores = seeded
    window = make_window(path, blind=True, advance=False)
    VIEWS["review"](window, Shot("review", item="1"))
    review = window.view("review")
    review.setFocus()
    assert RESPONSE not in " ".join(_review_texts(window, "predictions"))
    qtbot.keyClick(window, Qt.Key_S)  # a skip is no verdict: it must not be a way to peek
    assert review.item.id == first.id
    texts = _review_texts(window, "predictions")
    assert RESPONSE not in " ".join(texts) and "answer key" not in texts
    assert OTHER not in " ".join(_review_texts(window, "history"))
    qtbot.keyClick(window, Qt.Key_O)
    assert RESPONSE in " ".join(_review_texts(window, "predictions"))
    history = " ".join(_review_texts(window, "history"))
    assert OTHER in history and NOTE in history
    # Browse follows: the run column and the QC mark of the judged item show, others' verdicts with them.
    VIEWS["browse"](window, Shot("browse", item="1"))
    texts = visible_texts(window)
    assert "✗ wrong" in texts and any(t.startswith("flawed · ") for t in texts)
    # Undo un-judges: hidden again.
    VIEWS["review"](window, Shot("review", item="1"))
    review.setFocus()
    qtbot.keyClick(window, Qt.Key_Z, Qt.ControlModifier)
    assert RESPONSE not in " ".join(_review_texts(window, "predictions"))


def test_reveal_after_verdict_off_keeps_judged_items_hidden(qtbot, seeded, make_window):
    path, first, _, _ = seeded
    with open_workspace(path) as ws:
        reviews.add_review(ws, first.id, "ann", "ok")
    window = make_window(path, blind=True, reveal_after_verdict=False)
    VIEWS["review"](window, Shot("review", item="1"))
    assert RESPONSE not in " ".join(_review_texts(window, "predictions"))
    window.reveal_action.setChecked(True)
    assert RESPONSE in " ".join(_review_texts(window, "predictions"))


def test_b_toggles_blind_mode_from_any_tab_and_the_views_follow(qtbot, seeded, make_window):
    path, first, _, _ = seeded
    window = make_window(path)
    VIEWS["browse"](window, Shot("browse", item="1", tab="predictions"))
    window.view("browse").table.setFocus()
    assert RESPONSE in " ".join(visible_texts(window))
    qtbot.keyClick(window.view("browse").table, Qt.Key_B)
    assert window.ctx.prefs.blind and window.blind_label.isVisible()
    texts = visible_texts(window)
    assert RESPONSE not in " ".join(texts) and "✗ wrong" not in texts  # no re-selection needed
    window.view("browse").search.setFocus()
    qtbot.keyClick(window.view("browse").search, Qt.Key_B)  # typing in a field types
    assert window.ctx.prefs.blind and window.view("browse").search.text() == "b"
    window.show_view("results")
    window.view("results").setFocus()
    qtbot.keyClick(window.view("results"), Qt.Key_B)
    assert not window.ctx.prefs.blind and not window.blind_label.isVisible()


def test_blind_adjudication_hides_the_queued_response_with_blind_off_until_my_label(qtbot, seeded, make_window):
    path, _, second, _ = seeded
    window = make_window(path)
    for shot in (Shot("browse", item="2", tab="predictions"), Shot("review", item="2", tab="predictions")):
        VIEWS[shot.view](window, shot)
        texts = visible_texts(window)
        assert ADJ_RESPONSE not in " ".join(texts)
        assert "hidden until your label (blind adjudication)" in texts
    # The Browse run column does not tell the run's verdict on that item either, nor does its result filter.
    browse = window.view("browse")
    browse.select_combo(browse.result, "wrong")
    assert window.ctx.model.row_of(second.id) is None
    browse.clear_filters()
    # Nor do the items behind a Results bar.
    results = window.view("results")
    window.show_view("results")
    results.show_items_of({"run": 2, "level": "all", "strategy": "vanilla"})
    qtbot.waitUntil(lambda: not results.items_computing, timeout=10_000)
    row = results.items.payloads.index(second.id)
    assert results.items.rows[row][1] == "hidden until your label (blind adjudication)"
    with open_workspace(path) as ws:
        alignment.add_label(ws, alignment.next_for(ws, "study", "ann").item_id, "ann", "B")
    VIEWS["review"](window, Shot("review", item="2", tab="predictions"))
    assert ADJ_RESPONSE in " ".join(visible_texts(window))
    window.show_view("results")  # a tab out of sight lists nothing
    results.show_items_of({"run": 2, "level": "all", "strategy": "vanilla"})
    qtbot.waitUntil(lambda: not results.items_computing, timeout=10_000)
    assert results.items.rows[row][1] == "✗ wrong"


def test_the_check_hook_writes_the_visible_texts(seeded, tmp_path):
    path, *_ = seeded
    out, txt = tmp_path / "shot.png", tmp_path / "texts.txt"
    args = [
        "--workspace",
        str(path),
        "gui",
        "--screenshot",
        str(out),
        "--view",
        "review",
        "--item",
        "1",
        "--tab",
        "history",
        "--annotator",
        "ann",
        "--visible-text",
        str(txt),
    ]
    assert cli_main(args) == 0
    lines = txt.read_text(encoding="utf-8").splitlines()
    assert out.stat().st_size > 0 and NOTE in lines and "Annotator: ann" in lines
    assert cli_main([*args, "--blind"]) == 0
    lines = txt.read_text(encoding="utf-8").splitlines()
    assert NOTE not in lines and OTHER not in " ".join(lines) and "Blind" in lines
    assert cli_main([*args[:-2], "--annotator", " "]) == 2
    assert cli_main([*args[:-1], str(tmp_path)]) == 2  # --visible-text names a folder: one line, nothing written


def test_a_blind_wrong_key_verdict_naming_the_key_is_said_after_the_reveal_and_corrected_in_one_key(
    qtbot, seeded, make_window
):
    """Blind Review, W then the key's own letter: recorded as said (the key stays hidden while judging), then, with
    the item revealed, Review stays on it, says that the verdict names the key, and O appends the correction."""
    path, first, _, _ = seeded
    window = make_window(path, blind=True)
    VIEWS["review"](window, Shot("review", item="1"))
    review = window.view("review")
    review.setFocus()
    assert "answer key" not in visible_texts(window)
    qtbot.keyClick(window, Qt.Key_W)
    assert "answer key" not in visible_texts(window) and review.hint_label.isVisible()  # nothing told yet
    qtbot.keyClick(window, getattr(Qt, f"Key_{'ABCDEFGHI'.index(first.answer) + 1}"))  # the key's own letter
    assert review.item.id == first.id  # not advanced past the contradiction
    texts = visible_texts(window)
    assert "answer key" in texts  # revealed after my verdict
    note = f"Your “wrong key → {first.answer}” names the key itself: O says the key is right"
    assert any(t.startswith(note) for t in texts), texts
    qtbot.keyClick(window, Qt.Key_O)
    assert not review.contradiction.isVisible()
    with open_workspace(path) as ws:
        mine = [(r.verdict, r.corrected_answer) for r in reviews.history(ws, first.id) if r.annotator == "ann"]
    assert mine == [("wrong_answer", first.answer), ("ok", None)]  # appended: the log keeps both


def test_alignment_in_blind_mode_says_hidden_not_no_set_when_a_set_appeared(qtbot, demo_ws, make_window):
    """Shown with no adjudication set, then a labelled set is built elsewhere and blind mode goes on: the tab says
    "hidden in blind mode" as Results does, never "No adjudication set yet" with an offer to build one."""
    window = make_window(demo_ws)
    VIEWS["alignment"](window, Shot("alignment"))
    assert "No adjudication set yet" in visible_texts(window)
    with open_workspace(demo_ws) as ws:
        assert alignment.build_set(ws, "study", [1], [], size=3, seed=1).items
        alignment.add_label(ws, alignment.next_for(ws, "study", OTHER).item_id, OTHER, "A")
    window.blind_action.setChecked(True)
    window.refresh()
    texts = visible_texts(window)
    assert "No adjudication set yet" not in texts and "Build an adjudication set…" not in texts
    assert any(HIDDEN in t for t in texts)
