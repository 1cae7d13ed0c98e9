"""A thinking model's passes in the real window (issue 36): each pass's thought folded under it ("Thought (N words)",
opened with the keyboard), a pass cut off by the token budget shown as such, never as a plain wrong answer; in blind
mode the thought is hidden exactly when the response is, and appearing with it moves nothing under the pointer."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QRect, Qt
from PySide6.QtWidgets import QWidget

from db import open_workspace, runs
from gui.item_panel import CUT_IN_THOUGHT, CUT_MARK, THOUGHT_ROLE, PredictionsView
from gui.screenshot import visible_texts
from tests.thought_runs import thinking_workspace

pytestmark = pytest.mark.base


def _passes(path, run_id: int) -> dict[tuple[int, int], runs.Prediction]:
    with open_workspace(path) as ws:
        return {(p.item_id, p.pass_): p for p in runs.predictions_of(ws, run_id)}


def _run_row(view: PredictionsView, run_id: int):
    return next(
        view.topLevelItem(i)
        for i in range(view.topLevelItemCount())
        if view.topLevelItem(i).text(0).startswith(f"run {run_id} ")
    )


def _geometry(widget: QWidget) -> QRect:
    return QRect(widget.mapTo(widget.window(), widget.rect().topLeft()), widget.size())


def _save(window, tmp_path, name: str) -> None:
    assert window.grab().save(str(tmp_path / f"{name}.png"), "PNG")  # looked at while writing this test


def test_the_thought_is_folded_under_its_pass_and_opens_with_the_keyboard(qtbot, tmp_path, make_window):
    path, run_id = thinking_workspace(tmp_path)
    stored = _passes(path, run_id)
    window = make_window(path)
    window.resize(1024, 700)
    window.show_view("review")
    review = window.view("review")
    view = review.predictions
    item_id = review.item.id
    top = _run_row(view, run_id)
    pass_rows = [top.child(i) for i in range(top.childCount())]
    assert pass_rows
    for row in pass_rows:
        p = stored[(item_id, int(row.text(0).split()[1]))]
        thought = next(row.child(i) for i in range(row.childCount()) if row.child(i).data(0, THOUGHT_ROLE))
        words = len(p.thought.split())
        assert thought.text(0) == f"Thought ({words:,} words)" and thought.data(0, THOUGHT_ROLE) == p.thought
        assert row.isExpanded() and not thought.isExpanded()  # the toggle in sight, the thought folded
        assert thought.childCount() == 0  # written when opened: a folded thought costs one row
        assert p.thought not in row.text(2)  # the response column is the answer only
        if p.stage == "truncated":
            assert row.text(2) == CUT_IN_THOUGHT and row.text(3) == "no answer" and row.text(4) == CUT_MARK
            assert "inside the thought" in row.toolTip(0) and "Counted wrong" in row.toolTip(0)
        elif p.truncated:
            assert row.text(0).endswith(CUT_MARK) and "after the thought" in row.toolTip(0)
            assert row.text(2) == " ".join(p.response.split()) and row.text(4) in ("✓", "✗")
        else:
            assert CUT_MARK not in row.text(0)
    _save(window, tmp_path, "folded")

    # The keyboard: Tab into the passes, Down to the thought row, Space opens it (Right and Left are Review's
    # next and previous item), Enter folds it again; the item shown stays.
    first = next(r for r in view.thought_rows() if r.parent() is pass_rows[0])
    view.setFocus()
    view.setCurrentItem(pass_rows[0])
    qtbot.keyClick(view, Qt.Key.Key_Down)
    assert view.currentItem() is first
    qtbot.keyClick(view, Qt.Key.Key_Space)
    assert first.isExpanded() and review.item.id == item_id
    assert first.child(0).text(0) in visible_texts(window)  # the thought's first line now reads on screen
    for row in view.thought_rows():
        row.setExpanded(True)
        lines = [row.child(i).text(0) for i in range(row.childCount())]
        assert " ".join(lines).split() == row.data(0, THOUGHT_ROLE).split()  # every word of it, in order
        room = view.viewport().width() - view.indentation() * 4
        assert max(view.fontMetrics().horizontalAdvance(line) for line in lines) <= room  # none cut short
    _save(window, tmp_path, "unfolded")
    qtbot.keyClick(view, Qt.Key.Key_Return)
    assert not first.isExpanded()


def test_blind_mode_hides_the_thought_exactly_when_the_response_and_moves_nothing(qtbot, tmp_path, make_window):
    path, run_id = thinking_workspace(tmp_path)
    stored = _passes(path, run_id)
    window = make_window(path, blind=True)
    window.resize(1024, 700)
    window.show_view("review")
    review = window.view("review")
    view = review.predictions
    item = review.item
    mine = [p for (item_id, _), p in stored.items() if item_id == item.id]
    assert mine and all(p.thought for p in mine)
    texts = " ".join(visible_texts(window))
    assert view.topLevelItemCount() == 0 and not view.thought_rows()
    for p in mine:  # neither the thought nor a word of its outcome before the verdict
        assert p.thought[:40] not in texts
    assert CUT_IN_THOUGHT not in texts and "Thought (" not in texts
    _save(window, tmp_path, "blind-before")

    review.setFocus()
    qtbot.keyClick(window, Qt.Key.Key_O)  # the verdict: the item's passes and thoughts now show
    qtbot.keyClick(window, Qt.Key.Key_K)  # back to the judged item
    qtbot.waitUntil(lambda: review.item.id == item.id)
    qtbot.waitUntil(lambda: bool(view.thought_rows()))
    assert {r.data(0, THOUGHT_ROLE) for r in view.thought_rows()} >= {p.thought for p in mine}
    # Opening a thought moves nothing outside the list: no verdict button, not the tabs.
    buttons = {name: _geometry(b) for name, b in review.verdict_buttons.items() if b.isVisible()}
    tabs = _geometry(review.tabs)
    for row in view.thought_rows():
        row.setExpanded(True)
    qtbot.wait(10)
    assert {name: _geometry(b) for name, b in review.verdict_buttons.items() if b.isVisible()} == buttons
    assert _geometry(review.tabs) == tabs
    _save(window, tmp_path, "blind-after")


def test_a_pass_without_a_thought_has_no_thought_row(qtbot, tmp_path, make_window):
    path, _ = thinking_workspace(tmp_path)
    window = make_window(path)
    window.show_view("review")
    view = window.view("review").predictions
    baseline = _run_row(view, 1)
    assert baseline.childCount() and all(
        baseline.child(i).childCount() == 0 and CUT_MARK not in baseline.child(i).text(0)
        for i in range(baseline.childCount())
    )


def test_the_launcher_offers_the_thinking_settings(qtbot, tmp_path, make_window):
    from evaluator.backends import REGISTRY
    from evaluator.engine.runner import MAX_NEW_TOKENS

    path, _ = thinking_workspace(tmp_path)
    window = make_window(path)
    window.show_view("runs")
    form = window.view("runs").form
    assert form.max_tokens.maximum() == MAX_NEW_TOKENS == 32768
    editor = form.model.lineEdit()
    assert all(f"{entry.name}:" in editor.placeholderText() for entry in REGISTRY.help_entries())
    form.set_choice(
        bench="b",
        model="openai:qwen3-vl@http://127.0.0.1:9/v1",
        max_tokens=16384,
        thinking_budget=8192,
        reasoning="<t>,</t>",
        chat_kwargs='{"enable_thinking": true, "a": 1}',
        system="Answer with a letter.",
    )
    args = form.request().args
    pairs = {args[i]: args[i + 1] for i in range(len(args) - 1) if args[i].startswith("--")}
    assert pairs["--max-new-tokens"] == "16384" and pairs["--thinking-budget"] == "8192"
    assert pairs["--reasoning"] == "<t>,</t>" and pairs["--system"] == "Answer with a letter."
    assert pairs["--chat-template-kwargs"] == '{"a": 1, "enable_thinking": true}'  # one text for one setting
    assert form.start.isEnabled() and "--thinking-budget 8192" in form.command.toPlainText()
    window.grab().save(str(tmp_path / "launcher.png"), "PNG")

    # What cannot run is said, and nothing starts.
    for name, value, words in (
        ("chat_kwargs", "[1, 2]", "a JSON object"),
        ("chat_kwargs", "{oops", "not JSON"),
        ("thinking_budget", 16384, "must be below max new tokens"),
    ):
        form.set_choice(**{name: value})
        assert not form.start.isEnabled() and words in form.problem.text() and words in form.start.toolTip()
        form.set_choice(chat_kwargs="", thinking_budget=0)
        assert form.start.isEnabled() and form.problem.text() == ""
    # Defaults leave the command as it was: none of the thinking flags.
    form.set_choice(reasoning="auto", system="")
    assert not any(a in form.request().args for a in ("--reasoning", "--system", "--chat-template-kwargs"))


def test_results_runs_list_says_the_cut_off_passes_and_reasoning_tokens(qtbot, tmp_path, make_window):
    from evaluator.analysis.report import describe_tokens, describe_truncation

    path, run_id = thinking_workspace(tmp_path)
    with open_workspace(path) as ws:
        expected = [describe_tokens(runs.token_usage(ws, run_id)), describe_truncation(runs.truncation(ws, run_id))]
    window = make_window(path)
    window.show_view("results")
    listing = window.view("results").runs
    qtbot.waitUntil(lambda: not listing.computing and run_id in listing.summaries)
    row = listing.model.payloads.index(run_id)
    tip = listing.model.data(listing.model.index(row, listing.model_column), Qt.ItemDataRole.ToolTipRole)
    assert all(line in tip.splitlines() for line in expected) and "reasoning" in expected[0]


def test_the_runs_list_shows_the_cut_off_passes_where_the_status_is(qtbot, tmp_path, make_window):
    path, run_id = thinking_workspace(tmp_path)
    with open_workspace(path) as ws:
        cut = runs.truncation(ws, run_id).truncated
    window = make_window(path)
    window.show_view("runs")
    listing = window.view("runs").runs
    qtbot.waitUntil(lambda: not listing.computing and run_id in listing.summaries)
    row = listing.model.payloads.index(run_id)
    status = listing.model.columns.index("Status")
    cell = listing.model.index(row, status)
    assert listing.model.data(cell) == f"finished · ✂ {cut}" and cut > 0
    assert f"{cut} passes cut off by the token budget" in listing.model.data(cell, Qt.ItemDataRole.ToolTipRole)
    first = listing.model.payloads.index(1)  # the plain run beside it: its status alone
    assert listing.model.data(listing.model.index(first, status)) == "finished"
