"""A multi-turn pass in Review's predictions: every turn of the dialogue under its pass (read with the same
visible-text collector as `vlmdesk gui --visible-text`), and nothing of it in blind mode before the annotator's
verdict — turns are a model's response."""

from __future__ import annotations

import re

from PySide6.QtCore import Qt

from gui.screenshot import VIEWS, Shot, visible_texts
from vlmdesk.cli import main as cli_main

MARK = "TURN-MARK-6620"


def asker(text: str) -> str:
    if "Reply with the list only" in text:
        return f"Sub-question 1: What is {MARK} in the image?"
    letter = re.search(r"^([A-Z])\. ", text, re.MULTILINE).group(1)
    return f"Analysis: {MARK} reasoning.\nAnswer: {letter}"


def _multi_turn_run(path, serve) -> None:
    server = serve(respond=asker)
    args = ["--workspace", str(path), "run", "--bench", "demo", "--model", "baseline:first", "--strategy", "vanilla"]
    assert cli_main([*args, "--limit", "1", "--multi-turn", f"openai:asker@{server.url}", "--rounds", "2"]) == 0


def _prediction_texts(window) -> list[str]:
    review = window.view("review")
    review.tabs.setCurrentWidget(review.predictions)
    review.predictions.expandAll()
    return visible_texts(window)


def _tree_rows(tree) -> list[list[str]]:
    """Every row of the predictions tree, scrolled into view or not (columns 0 and 2)."""
    rows = []

    def walk(item):
        rows.append([item.text(0), item.text(2)])
        for i in range(item.childCount()):
            walk(item.child(i))

    for i in range(tree.topLevelItemCount()):
        walk(tree.topLevelItem(i))
    return rows


def test_review_shows_every_turn_of_a_multi_turn_pass(qtbot, demo_ws, make_window, serve):
    _multi_turn_run(demo_ws, serve)
    window = make_window(demo_ws)
    VIEWS["review"](window, Shot("review", item="1"))
    texts = _prediction_texts(window)
    assert any(t.startswith("pass 0 · 5 turns") for t in texts) and "1. asker" in texts  # in sight, expanded
    assert any(t.startswith("run 2 · baseline:first · vanilla · multi-turn, asked by openai:asker@") for t in texts)
    # describe (2 turns), one sub-question and its answer, the reasoning: 5 turns, numbered, roles named.
    rows = _tree_rows(window.view("review").predictions)
    turns = [row for row in rows if re.fullmatch(r"\d\. (asker|model)", row[0])]
    assert [name for name, _ in turns] == ["1. asker", "2. model", "3. asker", "4. model", "5. asker"]
    assert turns[2][1] == f"What is {MARK} in the image?" and turns[4][1] == f"Analysis: {MARK} reasoning. Answer: A"
    window.grab().save(str(demo_ws.parent / "multiturn-review.png"))


def test_blind_mode_hides_the_turns_until_my_verdict(qtbot, demo_ws, make_window, serve):
    _multi_turn_run(demo_ws, serve)
    window = make_window(demo_ws, blind=True, advance=False)
    VIEWS["review"](window, Shot("review", item="1"))
    window.view("review").setFocus()
    tree = window.view("review").predictions
    assert MARK not in " ".join(_prediction_texts(window)) and MARK not in str(_tree_rows(tree))
    qtbot.keyClick(window, Qt.Key_O)  # my verdict: the item is judged, its runs' answers show
    assert any(t.startswith("pass 0 · 5 turns") for t in _prediction_texts(window)) and MARK in str(_tree_rows(tree))


def test_the_launcher_adds_the_asker_and_its_rounds(qtbot, demo_ws, make_window):
    window = make_window(demo_ws)
    window.show_view("runs")
    form = window.view("runs").form
    assert "--multi-turn" not in form.command.toPlainText() and not form.rounds.isEnabled()  # off by default
    form.set_choice(bench="demo", model="baseline:first", multi_turn="openai:asker@http://127.0.0.1:9/v1", rounds=3)
    assert form.command.toPlainText().endswith("--multi-turn openai:asker@http://127.0.0.1:9/v1 --rounds 3")
    assert form.rounds.isEnabled()
    window.grab().save(str(demo_ws.parent / "multiturn-launcher.png"))
    form.set_choice(strategy="Likelihood · VanillaEval")  # the asker answers in words: not with likelihood
    assert "--multi-turn" not in form.command.toPlainText() and not form.rounds.isEnabled()
    form.set_choice(bench="demo-pope", strategy="POPE (yes/no)")  # multiple-choice benchmarks only
    assert not form.multi_turn.isEnabled() and "--multi-turn" not in form.command.toPlainText()
