"""The Arena tab, blind: no model name before my vote, nobody else's votes, keys, undo, correction, the note."""

import pytest
from PySide6.QtCore import Qt

from annotation import arena
from db import open_workspace
from gui.arena_view import HIDDEN_MODEL
from gui.screenshot import VIEWS, Shot, visible_texts
from vlmdesk.cli import main as cli_main
from vlmdesk.demo import ensure_demo

MODELS = ("baseline:first", "baseline:random")
BO_NOTE = "bo thinks the left one rambles"


@pytest.fixture
def arena_ws(tmp_path):
    """The demo with two runs on demo-open, one pair per item, and a vote of another annotator (bo)."""
    path = tmp_path / "arena.sqlite"
    with open_workspace(path) as ws:
        ensure_demo(ws)
    for model in MODELS:
        assert cli_main(["--workspace", str(path), "run", "--bench", "demo-open", "--model", model]) == 0
    assert cli_main(["--workspace", str(path), "arena", "pairs", "--bench", "demo-open", "--runs", "1", "2"]) == 0
    with open_workspace(path) as ws:
        first = arena.pairs(ws)[0]
        arena.add_vote(ws, first.id, "bo", "right", note=BO_NOTE)
    return path


def _votes(path, annotator="ann"):
    with open_workspace(path) as ws:
        return [
            (r[0], r[1], r[2])
            for r in ws.conn.execute(
                "SELECT pair_id, vote, note FROM arena_votes WHERE annotator = ? ORDER BY id", (annotator,)
            )
        ]


def _open_arena(make_window, path):
    window = make_window(path)
    window.select_benchmark("demo-open")
    VIEWS["arena"](window, Shot("arena"))
    return window


def _no_model_named(texts):
    return not any(m in t for t in texts for m in MODELS)


def test_no_model_name_shows_before_my_vote_and_my_vote_is_stored(qtbot, arena_ws, make_window):
    window = _open_arena(make_window, arena_ws)
    panel = window.view("arena").vote
    first = panel.pair
    assert first is not None
    texts = visible_texts(window)
    assert _no_model_named(texts), texts
    assert not any(BO_NOTE in t or "bo" == t for t in texts)  # nobody else's vote shows
    assert any("0 voted by you · 8 left for you" in t for t in texts)
    assert sum(HIDDEN_MODEL in t for t in texts) == 2
    assert "A" in texts  # both baselines answered "A"; the answers themselves show
    qtbot.keyClick(window, Qt.Key_1)
    assert _votes(arena_ws) == [(first.id, "left", None)]
    # The vote is committed: the status line names the two models of the pair just voted, and the next pair's
    # models are hidden again.
    assert all(m in panel.saved.text() for m in MODELS)
    assert panel.pair is not None and panel.pair.id != first.id
    assert HIDDEN_MODEL in panel.left.title.text() and HIDDEN_MODEL in panel.right.title.text()
    assert "1 voted by you · 7 left for you" in panel.progress.text()


def test_undo_withdraws_and_a_new_vote_corrects(qtbot, arena_ws, make_window):
    window = _open_arena(make_window, arena_ws)
    panel = window.view("arena").vote
    first = panel.pair
    qtbot.keyClick(window, Qt.Key_4)
    qtbot.keyClick(window, Qt.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert panel.pair.id == first.id  # back on the pair whose vote was withdrawn, names hidden again
    assert _no_model_named(visible_texts(window))
    qtbot.keyClick(window, Qt.Key_2)
    assert [v[1] for v in _votes(arena_ws)] == ["bothbad", "undo", "right"]  # nothing erased
    with open_workspace(arena_ws) as ws:
        assert [(v.pair_id, v.vote) for v in arena.standing_votes(ws, annotator="ann")] == [(first.id, "right")]
    qtbot.keyClick(window, Qt.Key_S)  # skip stores nothing
    assert len(_votes(arena_ws)) == 3


def test_keys_type_in_the_note_and_the_note_goes_with_the_next_vote(qtbot, arena_ws, make_window):
    window = _open_arena(make_window, arena_ws)
    panel = window.view("arena").vote
    first = panel.pair
    qtbot.keyClick(window, Qt.Key_E)
    assert panel.note.hasFocus()
    qtbot.keyClicks(panel.note, "s1 2 tie")
    assert _votes(arena_ws) == [] and panel.pair.id == first.id  # typing did not vote or skip
    qtbot.keyClick(panel.note, Qt.Key_Return)
    qtbot.keyClick(window, Qt.Key_3)
    assert _votes(arena_ws) == [(first.id, "tie", "s1 2 tie")]
    assert panel.note.text() == ""


def test_the_leaderboard_shows_ratings_and_blind_mode_hides_it(qtbot, arena_ws, make_window):
    window = make_window(arena_ws)
    window.select_benchmark("demo-open")
    VIEWS["leaderboard"](window, Shot("leaderboard"))
    board = window.view("arena").board
    assert board.table.rowCount() == 2
    assert {board.table.item(r, 1).text() for r in range(2)} == set(MODELS)
    window.blind_action.setChecked(True)
    VIEWS["leaderboard"](window, Shot("leaderboard"))
    texts = visible_texts(window)
    assert board.cover.hidden and _no_model_named(texts)


def test_file_menu_exports_arena_votes_for_another_copy(qtbot, arena_ws, make_window, tmp_path):
    window = make_window(arena_ws)
    out = tmp_path / "votes.jsonl"
    export = window.export_records("votes", str(out))
    qtbot.waitUntil(lambda: export.finished, timeout=60_000)
    assert export.exit_code == 0 and '"annotator": "bo"' in out.read_text()
    assert any(a.text() == "Import arena votes…" for a in window.menuBar().actions()[0].menu().actions())


def test_an_arena_with_no_pairs_says_why_and_offers_to_draw_them(qtbot, tmp_path, make_window):
    path = tmp_path / "empty-arena.sqlite"
    with open_workspace(path) as ws:
        ensure_demo(ws)
    for model in MODELS:
        assert cli_main(["--workspace", str(path), "run", "--bench", "demo-open", "--model", model]) == 0
    window = make_window(path)
    window.select_benchmark("demo-open")
    window.show_view("arena")
    panel = window.view("arena").vote
    panel.reload()
    assert panel.pair is None and panel.empty.isVisible()
    assert panel.empty.title.text() == "No pairs drawn yet"
    assert [b.text() for b in panel.empty.buttons] == ["Start a run", "Draw arena pairs…"]
    assert window.menu_action("Draw arena pairs…") is not None  # the button's action exists in the window
    assert cli_main(["--workspace", str(path), "arena", "pairs", "--bench", "demo-open", "--runs", "1", "2"]) == 0
    panel.reload()
    assert panel.pair is not None and not panel.empty.isVisible()
