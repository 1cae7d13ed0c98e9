"""The Arena tab's Live page: an image dropped, a question typed, two tiny local VLMs (saved as hf: models) answer in
worker processes while the window stays live, anonymous until the vote; the vote is in `vlmdesk arena ratings`. A
model that fails stores nothing."""

import json

from PySide6.QtCore import QMimeData, QPointF, Qt, QUrl
from PySide6.QtGui import QDropEvent

from annotation import arena, live_arena
from db import models, open_workspace
from gui.screenshot import VIEWS, Shot, visible_texts
from tests.factories import png_bytes
from vlmdesk.cli import main as cli_main

WAIT = 300_000  # ms: each worker imports the whole stack (torch for hf:) on a busy CI machine


def _live_ws(tmp_path, specs):
    path = tmp_path / "live.sqlite"
    with open_workspace(path) as ws:
        for name, spec in specs.items():
            models.add_model(ws, name, spec)
    (tmp_path / "photo.png").write_bytes(png_bytes())
    return path


def _drop(view, path):
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(path))])
    event = QDropEvent(
        QPointF(5, 5), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier
    )
    view.dropEvent(event)


def _open_live(make_window, path):
    window = make_window(path)
    VIEWS["live"](window, Shot("live"))
    return window, window.view("arena").live


def _counts(path):
    with open_workspace(path) as ws:
        return tuple(
            ws.conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
            for table in ("items", "runs", "predictions", "arena_pairs")
        )


def test_a_live_battle_from_question_to_ratings(
    qtbot, make_window, tmp_path, tiny_llava_dir, tiny_idefics3_dir, capsys
):
    specs = {"tiny-llava": f"hf:{tiny_llava_dir}?device=cpu", "tiny-idefics": f"hf:{tiny_idefics3_dir}?device=cpu"}
    path = _live_ws(tmp_path, specs)
    window, panel = _open_live(make_window, path)
    assert not any(b.isEnabled() for b in panel.buttons.values())  # nothing to vote on yet
    _drop(panel.image, tmp_path / "photo.png")
    assert panel.image.has_image() and panel.image_data == png_bytes()
    qtbot.mouseClick(panel.question.viewport(), Qt.MouseButton.LeftButton)
    qtbot.keyClicks(panel.question, "What is in the picture?")
    qtbot.keyClick(panel.question, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    # Asked: the workers run while the window keeps handling events (this test's waits are its event loop).
    assert panel.busy() and panel.question.toPlainText() == "What is in the picture?"
    assert "answering" in panel.left.title.text() or "loading" in panel.left.title.text()
    assert "waiting for the other model" in panel.right.title.text()  # local models: one after the other
    qtbot.waitUntil(lambda: panel.battle is not None or "failed" in panel.status.text(), timeout=WAIT)
    assert panel.battle is not None, panel.status.text()
    assert all(b.isEnabled() for b in panel.buttons.values())
    texts = visible_texts(window)
    assert not any("tiny" in t or "hf:" in t for t in texts), texts  # anonymous before the vote
    assert "shown when done (no streaming)" in panel.left.title.text()  # local models do not stream
    left_answer = panel.battle.left.text
    # Both answers show (a tiny random model's text holds odd characters, which the text view may render apart).
    assert panel.left.text.toPlainText() and panel.right.text.toPlainText()
    qtbot.keyClick(window, Qt.Key.Key_1)  # the answers in, the focus left the question box: 1 votes
    assert panel.voted and not any(b.isEnabled() for b in panel.buttons.values())
    winner = panel.battle.left.model
    assert f"left was {winner}" in panel.saved.text() and winner in panel.left.title.text()
    with open_workspace(path) as ws:
        bench = live_arena.live_benchmark(ws)
        [pair] = arena.pairs(ws, bench.id)
        assert arena.shown(ws, pair).left_answer == left_answer
        assert [(v.annotator, v.vote) for v in arena.standing_votes(ws)] == [("ann", "left")]
    capsys.readouterr()
    assert cli_main(["--workspace", str(path), "arena", "ratings", "--json", "--bootstrap", "100"]) == 0
    board = json.loads(capsys.readouterr().out)
    assert board["battles"] == 1 and board["models"][0]["model"] == winner and board["models"][0]["wins"] == 1


def test_a_failing_model_says_so_in_one_line_and_stores_nothing(qtbot, make_window, tmp_path):
    path = _live_ws(tmp_path, {"coin": "baseline:random", "broken": f"hf:{tmp_path / 'no-such-model'}"})
    window, panel = _open_live(make_window, path)
    assert panel.set_image_file(str(tmp_path / "photo.png"))
    panel.question.setPlainText("What is it?")
    before = _counts(path)
    panel.ask()
    qtbot.waitUntil(lambda: not panel.busy() and ("failed" in panel.status.text() or panel.battle), timeout=WAIT)
    assert panel.battle is None
    assert "model failed" in panel.status.text() and "no-such-model" in panel.status.text()
    assert "Nothing was stored" in panel.status.text() and "\n" not in panel.status.text()
    assert _counts(path) == before
    assert not any(b.isEnabled() for b in panel.buttons.values())


def test_bad_input_is_said_before_any_model_starts(qtbot, make_window, tmp_path):
    path = _live_ws(tmp_path, {"coin": "baseline:random"})
    window, panel = _open_live(make_window, path)
    panel.ask()
    assert "Choose or drop an image first" in panel.status.text()
    (tmp_path / "notes.png").write_text("no image")
    assert not panel.set_image_file(str(tmp_path / "notes.png")) and "notes.png" in panel.status.text()
    assert panel.set_image_file(str(tmp_path / "photo.png"))
    panel.ask()
    assert "question: empty" in panel.status.text()
    panel.question.setPlainText("What?")
    panel.ask()  # one saved model only
    assert "two different models" in panel.status.text() and not panel.busy()


def test_two_servers_answer_side_by_side_streamed(qtbot, make_window, tmp_path, serve):
    from tests.servers import Step

    def sse(*pieces):
        events = [{"choices": [{"index": 0, "delta": {"content": p}}]} for p in pieces]
        return "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"

    one, two = serve([Step(200, sse("a red ", "bike"))]), serve([Step(200, sse("a ", "motorcycle"))])
    path = _live_ws(tmp_path, {"one": f"openai:m1@{one.url}", "two": f"openai:m2@{two.url}"})
    window, panel = _open_live(make_window, path)
    assert panel.set_image_file(str(tmp_path / "photo.png"))
    panel.question.setPlainText("What is it?")
    panel.ask()
    assert all(job.running() for job in panel.jobs.values())  # servers: both at once
    qtbot.waitUntil(lambda: panel.battle is not None or "failed" in panel.status.text(), timeout=WAIT)
    assert panel.battle is not None, panel.status.text()
    assert all("· streamed" in pane.title.text() for pane in (panel.left, panel.right))
    assert {panel.left.text.toPlainText(), panel.right.text.toPlainText()} == {"a red bike", "a motorcycle"}
    assert one.count == two.count == 1
