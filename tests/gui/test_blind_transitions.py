"""Blind means blind across LIVE transitions, not only in fresh renders: every tab is first put in a state that
shows hidden data (an item in full, the QC flag, a revealed adjudication, the arena's named models, the items
behind a Results bar), then blind mode is turned on, the annotator changes (Annotator › Change name…) or the
workspace is reopened; walking every tab afterwards — without clicking what it shows — finds none of the seeded
marker strings of tests/gui/test_blind.py. Before the transition the same walk finds them, so the test can fail."""

from __future__ import annotations

import pytest
from PySide6.QtWidgets import QInputDialog

from annotation import alignment, reviews
from db import open_workspace
from gui.arena_view import HIDDEN_MODEL
from gui.screenshot import VIEWS, Shot, visible_texts
from tests.gui.test_blind import ADJ_RESPONSE, RESPONSE, _markers, seeded  # noqa: F401 — the fixture, shared
from vlmdesk.cli import main as cli_main

ARENA_MODELS = ("baseline:first", "baseline:random", "baseline:frequent")
NEWCOMER = "newcomer-4417"


@pytest.fixture
def staged(seeded):
    """test_blind's seeded workspace, plus three runs on demo-open and two arena pairs per item, and "ann" judged
    item 1 (so blind mode with "reveal after my verdict" shows it to them in full)."""
    path, first, _, scores = seeded
    for model in ARENA_MODELS:
        assert cli_main(["--workspace", str(path), "run", "--bench", "demo-open", "--model", model]) == 0
    with open_workspace(path) as ws:
        run_ids = [r[0] for r in ws.conn.execute("SELECT id FROM runs ORDER BY id DESC LIMIT 3")]
    args = ["arena", "pairs", "--bench", "demo-open", "--runs", *map(str, sorted(run_ids)), "--per-item", "2"]
    assert cli_main(["--workspace", str(path), *args]) == 0
    with open_workspace(path) as ws:
        reviews.add_review(ws, first.id, "ann", "ok")
    return path, first, scores


def _arena_markers() -> dict[str, callable]:
    """A model named in the arena: a saved line that names them, or an answer pane's title without the mask."""

    def named(lines):
        return any("left was " in t for t in lines) or any(
            t.startswith(("Left — ", "Right — ")) and HIDDEN_MODEL not in t for t in lines
        )

    return {"arena model named": named}


def _prepare(window) -> None:
    """Every tab showing what the blind rule hides from someone who has not judged item 1 (the first item)."""
    VIEWS["browse"](window, Shot("browse", item="1", tab="predictions"))
    VIEWS["review"](window, Shot("review", item="1", tab="predictions"))
    VIEWS["results"](window, Shot("results", runs=(1,)))
    VIEWS["alignment"](window, Shot("alignment"))
    VIEWS["runs"](window, Shot("runs"))
    window.select_benchmark("demo-open")
    VIEWS["arena"](window, Shot("arena"))
    panel = window.view("arena").vote
    for _ in range(20):  # vote until the saved line names the models (every pair of an item voted)
        if panel.pair is None or "left was " in panel.saved.text():
            break
        panel.vote("tie")
    window.select_benchmark("demo")
    VIEWS["queue"](window, Shot("queue", queue="qc"))  # the QC flag of item 1, the page left visible


def _walk(window) -> dict[str, list[str]]:
    """Every tab's visible texts, as it stands: each tab shown (as a click on it does), its inner pages too."""
    seen: dict[str, list[str]] = {}
    for name in window.views:
        if name == "arena":
            window.select_benchmark("demo-open")
        window.show_view(name)
        view = window.view(name)
        seen[name] = visible_texts(window)
        if name in ("browse", "review"):
            view.tabs.setCurrentWidget(view.history)
            seen[f"{name}-history"] = visible_texts(window)
            view.tabs.setCurrentWidget(view.predictions)
        if name == "queues":
            for page in ("adjudication", "conflicts"):
                view.select(page)
                seen[f"queues-{page}"] = visible_texts(window)
            view.select("qc")
        if name == "arena":
            window.select_benchmark("demo")
    return seen


def _leaks(seen, scores, *, arena_names: bool = True) -> dict[str, set[str]]:
    markers = {**_markers(scores), **(_arena_markers() if arena_names else {})}
    found = {}
    for where, texts in seen.items():
        allowed = {ADJ_RESPONSE} if where == "queues-adjudication" else set()  # the response to label is the task
        hits = {m for m, test in markers.items() if m not in allowed and test(texts)}
        if hits:
            found[where] = hits
    return found


def _change_name(window, monkeypatch, name: str) -> None:
    monkeypatch.setattr(QInputDialog, "getText", lambda *a, **k: (name, True))
    window.menu_action("Change name…").trigger()
    assert window.ctx.annotator == name


def _reopen(window, tmp_path, path, monkeypatch) -> None:
    other = tmp_path / "other.sqlite"
    assert window.open_workspace(other)
    _change_name(window, monkeypatch, NEWCOMER)
    assert window.open_workspace(path)


# Blind mode reveals an item judged by this annotator ("reveal after my verdict"): off for the blind transitions,
# so item 1 must hide; the arena names models after one's own votes whatever the toggle (on for the name changes).
NO_REVEAL = {"reveal_after_verdict": False}
TRANSITIONS = {
    # name: (prefs to start with, what changes)
    "blind turned on": (NO_REVEAL, lambda window, **_: window.blind_action.setChecked(True)),
    "blind off and on again": (
        {"blind": True, **NO_REVEAL},
        lambda window, **_: (window.blind_action.setChecked(False), window.blind_action.setChecked(True)),
    ),
    "annotator changed": (
        {"blind": True},
        lambda window, monkeypatch, **_: _change_name(window, monkeypatch, NEWCOMER),
    ),
    "workspace reopened": (
        {"blind": True},
        lambda window, monkeypatch, tmp_path, path: _reopen(window, tmp_path, path, monkeypatch),
    ),
}


@pytest.mark.parametrize("transition", list(TRANSITIONS))
def test_no_tab_keeps_hidden_data_across_a_live_transition(
    qtbot, staged, make_window, monkeypatch, tmp_path, transition
):
    path, _, scores = staged
    prefs, change = TRANSITIONS[transition]
    window = make_window(path, **prefs)
    _prepare(window)
    if window.ctx.prefs.blind:  # blind and not revealing: what the walk must find shows with blind off
        window.blind_action.setChecked(False)
    before = _leaks(_walk(window), scores)
    # The walk can see what a transition must hide: item 1 in full, the QC flag's key, the arena's names.
    assert {"answer key", RESPONSE, "arena model named"} <= set().union(*before.values()), before
    window.blind_action.setChecked(prefs.get("blind", False))
    _prepare(window)
    change(window, monkeypatch=monkeypatch, tmp_path=tmp_path, path=path)
    assert window.ctx.prefs.blind
    assert _leaks(_walk(window), scores, arena_names="blind" not in transition) == {}


def test_the_visible_queues_page_counts_for_the_new_name_at_once(qtbot, staged, make_window, monkeypatch):
    """Annotator › Change name… while Queues is the tab in sight: its list counts the new name's queue now, not
    after another click on the tab (ann labelled the set's one response; the newcomer has it still to do)."""
    path, _, _ = staged
    with open_workspace(path) as ws:
        alignment.add_label(ws, alignment.next_for(ws, "study", "ann").item_id, "ann", "A")
    window = make_window(path, blind=True)
    VIEWS["queue"](window, Shot("queue", queue="qc"))
    queues = window.view("queues")
    assert queues.list.item(1).text() == "Extractor adjudication\n0 left"
    _change_name(window, monkeypatch, NEWCOMER)
    assert queues.list.item(1).text() == "Extractor adjudication\n1 left"
    assert queues.bars["adjudication"].toolTip() == "0 of 1 done by you, 1 left"
