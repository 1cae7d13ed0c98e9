"""The Arena tab, blind: no model name before my vote, nobody else's votes, keys, undo, correction, the note."""

from pathlib import Path

import pytest
from PySide6.QtCore import Qt

import assets
from annotation import arena
from db import open_workspace, runs
from gui.arena_view import HIDDEN_MODEL
from gui.screenshot import VIEWS, Shot, visible_texts
from vlmdesk.cli import main as cli_main
from vlmdesk.demo import ensure_demo

pytestmark = pytest.mark.base  # also run in the base install (.ci/base-install)

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


THREE = ("baseline:first", "baseline:random", "baseline:frequent")


@pytest.fixture
def two_pairs_ws(tmp_path):
    """Three runs on demo-open and two pairs per item: each run's answer to an item shows in both of its pairs."""
    path = tmp_path / "arena2.sqlite"
    with open_workspace(path) as ws:
        ensure_demo(ws)
    for model in THREE:
        assert cli_main(["--workspace", str(path), "run", "--bench", "demo-open", "--model", model]) == 0
    args = ["arena", "pairs", "--bench", "demo-open", "--runs", "1", "2", "3", "--per-item", "2", "--seed", "3"]
    assert cli_main(["--workspace", str(path), *args]) == 0
    return path


def _named(texts) -> bool:
    """A model named anywhere on screen (the saved line, an answer pane's title)."""
    return not _no_model_named([t for t in texts if not t.startswith("run ")]) or any("left was" in t for t in texts)


def test_models_are_named_only_after_every_pair_of_the_item_and_its_pairs_never_come_back_to_back(
    qtbot, two_pairs_ws, make_window
):
    """Two pairs per item (the tester's case): the first vote on an item names nobody — the next pair of the same
    item would show the same run's answer — and that next pair is never the one shown right after it; once both
    pairs of the item have my vote, the saved line names the models of both."""
    window = _open_arena(make_window, two_pairs_ws)
    panel = window.view("arena").vote
    with open_workspace(two_pairs_ws) as ws:
        of_item = {p.id: p.item_id for p in arena.pairs(ws)}
    shown = [panel.pair]
    for key in (Qt.Key_1, Qt.Key_2):
        qtbot.keyClick(window, key)
        texts = visible_texts(window)
        assert not _named(texts), texts  # after the first vote on each of two items: nobody named
        assert "voted on every pair of this question" in panel.saved.text()
        shown.append(panel.pair)
    items = [of_item[p.id] for p in shown]
    assert items[0] != items[1] and items[1] != items[2]  # never back to back
    # Walk on until the first item's second pair comes (the order never puts it next to the first item's first).
    for _ in range(20):
        if of_item[panel.pair.id] == items[0]:
            break
        previous = of_item[panel.pair.id]
        qtbot.keyClick(window, Qt.Key_3)
        assert of_item[panel.pair.id] != previous
    assert of_item[panel.pair.id] == items[0]
    assert HIDDEN_MODEL in panel.left.title.text()  # its first pair is voted, this one not yet: still hidden
    qtbot.keyClick(window, Qt.Key_4)
    saved = panel.saved.text()
    assert "left was" in saved and "in its other pair, left was" in saved  # both pairs of the item named now
    with open_workspace(two_pairs_ws) as ws:
        first_pair = arena.get_pair(ws, shown[0].id)
        assert arena.models_revealed(ws, first_pair, "ann")
    window.view("arena").vote.reload(shown[0].id)  # a pair of a fully voted item shows its models
    assert HIDDEN_MODEL not in panel.left.title.text()


def test_draw_arena_pairs_lists_imported_runs_as_the_command_accepts_them(qtbot, two_pairs_ws, make_window):
    """An imported run (vanilla strategy, an origin) on an open benchmark qualifies for `arena pairs`, so the
    Workspace › Draw arena pairs… dialog offers it: one rule (annotation.arena.arena_runs) for both."""
    from db import catalog, runs

    with open_workspace(two_pairs_ws) as ws:
        bench = catalog.benchmark_by_name(ws, "demo-open")
        owner = runs.Owner.here()
        imported = runs.create_run(
            ws,
            benchmark_id=bench.id,
            model_spec="imported:elsewhere-vlm",
            strategy="vanilla",
            prompt_template="{}",
            extractor="rules",
            config={"origin": {"format": "vlmevalkit", "file": "x.xlsx", "sha256": "0" * 64}},
            config_key="imported",
            versions={},
            git_revision=None,
            seed=0,
            owner=owner,
        )
        items = catalog.list_items(ws, bench.id)
        runs.add_predictions(
            ws,
            [runs.Prediction(imported, i.id, 0, (), "p", "a cat", None, None, "none", "", None, 1.0) for i in items],
            owner,
        )
        assert runs.release(ws, imported, owner, "finished")
        assert imported in {r.id for r in arena.arena_runs(ws)}
    assert (
        cli_main(
            ["--workspace", str(two_pairs_ws), "arena", "pairs", "--bench", "demo-open", "--runs", "1", str(imported)]
        )
        == 0
    )
    window = make_window(two_pairs_ws)
    asked = {}

    def answer(name, fields):
        asked[name] = {f.name: f for f in fields}
        return None

    window.commands.answer = answer
    window.menu_action("Draw arena pairs…").trigger()
    offered = [value for _, value in asked["arena pairs"]["runs"].choices]
    assert str(imported) in offered and {"1", "2", "3"} <= set(offered)


def test_draw_arena_pairs_offers_only_the_chosen_benchmarks_runs(qtbot, arena_ws, make_window):
    """Found walking the app: with Benchmark = demo-open the dialog offered live-arena's runs too (pairs are drawn
    between answers to the same items, so the command refuses them)."""
    from gui.commands import CommandDialog

    image = Path(assets.__file__).parent / "demo" / "images" / "motorcycle.jpg"
    ask = ["--workspace", str(arena_ws), "arena", "ask", "--image", str(image), "--question", "What is it?"]
    assert cli_main([*ask, "--models", *MODELS]) == 0  # the live-arena benchmark, with a run per model (3, 4)
    with open_workspace(arena_ws) as ws:
        by_bench = {r.id: r.benchmark for r in runs.list_runs(ws)}
    assert sorted(b for b in by_bench.values()) == ["demo-open", "demo-open", "live-arena", "live-arena"]
    window = make_window(arena_ws)
    window.select_benchmark("demo-open")
    asked = {}
    window.commands.answer = lambda name, fields: asked.setdefault(name, fields) and None
    window.menu_action("Draw arena pairs…").trigger()
    dialog = CommandDialog("Draw arena pairs", asked["arena pairs"], window)  # the dialog the menu shows
    qtbot.addWidget(dialog)
    bench = dialog.widgets["bench"]
    runs_box = dialog.widgets["runs"]
    assert bench.currentData() == "demo-open"
    for name in ("demo-open", "live-arena"):
        bench.setCurrentIndex(bench.findData(name))
        offered = {int(v) for v in dialog.offered("runs")}
        assert offered and {by_bench[r] for r in offered} == {name}, (name, offered)
        for i in range(runs_box.count()):  # tick every item: only the offered ones are sent
            runs_box.item(i).setCheckState(Qt.CheckState.Checked)
        assert {int(v) for v in dialog.values()["runs"]} == offered
    bench.setCurrentIndex(bench.findData("demo-open"))  # a tick on a run no longer offered does not go with it
    assert {by_bench[int(v)] for v in dialog.values()["runs"]} <= {"demo-open"}
