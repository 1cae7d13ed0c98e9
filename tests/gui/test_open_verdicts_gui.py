"""The Queues tab's Open answers page, blind: no model, no metric score and nobody else's verdict before my own
verdict is saved; keys 1-3 commit at once, Enter goes on, Ctrl+Z withdraws and a new verdict corrects, keys are off
while typing the note."""

import pytest
from PySide6.QtCore import Qt

from annotation import open_verdicts as ov
from db import open_workspace
from evaluator.scoring.open_metrics import item_scores
from gui.screenshot import VIEWS, Shot, visible_texts
from vlmdesk.cli import main as cli_main
from vlmdesk.demo import ensure_demo

MODELS = ("baseline:first", "baseline:frequent")
METRICS = ("exact_match", "word_match", "vqa_accuracy", "anls", "cider")
BO_NOTE = "bo finds this one vague"


@pytest.fixture
def open_ws(tmp_path):
    """The demo with two baseline runs on demo-open (ids 1, 2) and another annotator's verdict on every answer."""
    path = tmp_path / "open.sqlite"
    with open_workspace(path) as ws:
        ensure_demo(ws)
    for model in MODELS:
        assert cli_main(["--workspace", str(path), "run", "--bench", "demo-open", "--model", model]) == 0
    with open_workspace(path) as ws:
        for unit in ov.queue(ws, [1, 2]):
            ov.add_verdict(ws, *unit, "bo", "partly", note=BO_NOTE)
    return path


def _open_page(make_window, path, **prefs):
    window = make_window(path, **prefs)
    window.select_benchmark("demo-open")
    VIEWS["queue"](window, Shot("queue", queue="open"))
    page = window.view("queues").open_answers
    assert page.isVisible() and page.task is not None
    return window, page


def _mine(path):
    with open_workspace(path) as ws:
        return [
            tuple(r)
            for r in ws.conn.execute(
                "SELECT run_id, item_id, verdict FROM open_verdicts WHERE annotator = 'ann' ORDER BY id"
            )
        ]


def _blind(texts) -> bool:
    words = (*MODELS, *METRICS, BO_NOTE, "partly:", "bo")
    return not any(w == t or (len(w) > 3 and w in t) for t in texts for w in words)


def test_nothing_of_the_answer_is_revealed_before_my_verdict_and_all_of_it_after(qtbot, open_ws, make_window):
    window, page = _open_page(make_window, open_ws)
    texts = visible_texts(window)
    assert _blind(texts), texts
    assert not page.revealed.isVisible() and page.reveal_text.text() == ""
    assert any("16 left for you" in t for t in texts)
    t = page.task
    assert t.answer in texts and any(r in " ".join(texts) for r in t.item.references)  # the references show
    qtbot.keyClick(window, Qt.Key_1)
    assert _mine(open_ws) == [(t.run_id, t.item.id, "right")]
    # Committed: now the model and the metrics' scores of this answer show (only of this one).
    assert page.revealed.isVisible()
    shown = page.reveal_text.text()
    with open_workspace(open_ws) as ws:
        model = ov.reveal_model(ws, *t.unit, "ann")
        scores = {name: s[t.item.id] for name, s in item_scores(ws, t.run_id).items() if t.item.id in s}
    assert model in shown and all(f"{name}&nbsp;<b>{v:.2f}</b>" in shown for name, v in scores.items()) and scores
    assert BO_NOTE not in " ".join(visible_texts(window))  # another's verdict stays hidden after mine too
    qtbot.keyClick(window, Qt.Key_2)  # a verdict key while the scores show does nothing: Ctrl+Z first
    assert len(_mine(open_ws)) == 1
    qtbot.keyClick(window, Qt.Key_Return)
    assert page.task.item.id != t.item.id and not page.revealed.isVisible()
    assert _blind(visible_texts(window))
    assert any("15 left for you" in x for x in visible_texts(window))


def test_undo_shows_the_answer_again_and_a_new_verdict_corrects(qtbot, open_ws, make_window):
    window, page = _open_page(make_window, open_ws)
    t = page.task
    qtbot.keyClick(window, Qt.Key_3)
    qtbot.keyClick(window, Qt.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert page.task.unit == t.unit and not page.revealed.isVisible()
    assert all(b.isEnabled() for b in page.buttons.values())
    assert _blind(visible_texts(window))
    qtbot.keyClick(window, Qt.Key_2)
    with open_workspace(open_ws) as ws:
        assert [v.verdict for v in ov.history(ws, *t.unit, "ann")] == ["wrong", "undo", "partly"]
        assert ov.standing_verdicts(ws, [1, 2], annotator="ann") == {t.unit: {"ann": "partly"}}
    # Typing a note: the keys type, they do not judge; the note goes with the next verdict.
    qtbot.keyClick(window, Qt.Key_Return)
    qtbot.keyClick(window, Qt.Key_E)
    assert page.note.hasFocus()
    qtbot.keyClicks(page.note, "1 2 3 vague")
    assert len(_mine(open_ws)) == 3 and page.note.text() == "1 2 3 vague"  # wrong, undo, partly: nothing new
    qtbot.keyClick(page.note, Qt.Key_Return)
    assert not page.note.hasFocus()
    qtbot.keyClick(window, Qt.Key_1)
    with open_workspace(open_ws) as ws:
        (note,) = ws.conn.execute("SELECT note FROM open_verdicts WHERE annotator = 'ann' ORDER BY id DESC LIMIT 1")
    assert note == ("1 2 3 vague",) and len(_mine(open_ws)) == 4


def test_the_page_fits_1024_by_700_dark_with_large_text(qtbot, open_ws, make_window, tmp_path):
    window, page = _open_page(make_window, open_ws, theme="dark", font_scale=1.3)
    window.resize(1024, 700)
    qtbot.wait(10)
    for b in page.buttons.values():
        assert b.isVisible() and b.visibleRegion().boundingRect().width() >= b.width() - 1
    assert window.grab().save(str(tmp_path / "open-dark.png"))


def test_the_alignment_tabs_open_metrics_page_is_align_open_and_blind_mode_hides_it(qtbot, open_ws, make_window):
    from annotation.open_alignment import open_alignment, stored_scores
    from db import catalog
    from gui.verdicts_view import APP_BOOTSTRAP

    with open_workspace(open_ws) as ws:
        for unit in ov.queue(ws, [1, 2])[:10]:
            ov.add_verdict(ws, *unit, "ann", "wrong" if unit[0] == 1 else "partly")
        expected = open_alignment(
            ws, catalog.benchmark_by_name(ws, "demo-open"), [1, 2], stored_scores, resamples=APP_BOOTSTRAP
        )
    window = make_window(open_ws)
    window.select_benchmark("demo-open")
    window.show_view("alignment")
    view = window.view("alignment")
    view.inner.setCurrentWidget(view.open_metrics)
    panel = view.open_metrics
    assert panel.isVisible() and panel.report == expected
    rows = {row[0]: row for row in panel.table.rows}
    assert set(rows) == set(expected.metrics)
    m = expected.metrics["word_match"]
    assert rows["word_match"][4] == (
        "–" if m.cohen_kappa is None else f"{m.cohen_kappa:.3f} ({m.kappa_95[0]:.3f}–{m.kappa_95[1]:.3f})"
    )
    assert rows["word_match"][3] == f"{100 * m.accuracy:.1f} % ({100 * m.wilson_95[0]:.1f}–{100 * m.wilson_95[1]:.1f})"
    assert "Annotators ann, bo" in panel.summary.text()
    window.blind_action.setChecked(True)
    assert not panel.isVisible() and view.cover.hidden


def test_adjudicating_shows_everyones_verdicts_and_records_the_final_word(qtbot, open_ws, make_window):
    with open_workspace(open_ws) as ws:
        split = ov.queue(ws, [1, 2])[:2]
        for unit in split:
            ov.add_verdict(ws, *unit, "cy", "right", note="cy likes it")
    window, page = _open_page(make_window, open_ws)
    assert not page.others.isVisible() and "cy likes it" not in " ".join(visible_texts(window))  # judging: blind
    qtbot.keyClick(window, Qt.Key_A)
    assert page.mode.isChecked() and page.task.unit in split
    shown = page.others.text()
    assert page.others.isVisible() and "cy" in shown and "cy likes it" in shown and BO_NOTE in shown
    assert any("2 to adjudicate" in t for t in visible_texts(window))
    first = page.task.unit
    qtbot.keyClick(window, Qt.Key_2)
    with open_workspace(open_ws) as ws:
        assert ov.human_labels(ws, [1, 2])[first] == ov.HumanLabel("partly", "adjudicated")
    assert "adjudication" in page.reveal_text.text()
    qtbot.keyClick(window, Qt.Key_Return)
    assert page.task.unit != first and any("1 to adjudicate" in t for t in visible_texts(window))
    qtbot.keyClick(window, Qt.Key_Z, Qt.KeyboardModifier.ControlModifier)  # withdraws the adjudication
    assert page.task.unit == first
    with open_workspace(open_ws) as ws:
        assert ov.human_labels(ws, [1, 2])[first] == ov.HumanLabel(None, "tie")
        assert ov.standing_verdicts(ws, [1, 2], annotator="ann") == {}  # nothing of mine as an annotator
    qtbot.keyClick(window, Qt.Key_A)  # back to judging, blind again
    assert not page.mode.isChecked() and not page.others.isVisible()
