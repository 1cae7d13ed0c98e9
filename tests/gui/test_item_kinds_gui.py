"""Every kind of item shown as what it is, in Review and Browse, blind and not (issue 35): a multiple-choice item's
option cards, a POPE item's Yes and No cards, an open item's reference answers (one; VQA's ten grouped with their
counts; five captions as a list; none for a live-arena question) and never Yes/No cards; the verdicts that fit the
kind, on the buttons and the keys; an open run's scores in Predictions and in Browse's Run column."""

from __future__ import annotations

import json

import pytest
from PySide6.QtCore import Qt

from annotation import live_arena, reviews
from db import catalog, open_workspace
from evaluator.engine.live import LiveAnswer
from evaluator.formats.importers import import_benchmark
from evaluator.formats.importers.common import index_for_lookup
from gui.item_panel import LIVE_NO_REFERENCE, REFERENCES_HIDDEN
from gui.screenshot import VIEWS, Shot, take, visible_texts
from tests.open_plugins import run_parrot
from vlmdesk.demo import demo_dir

VQA = ["2"] * 7 + ["two"] * 3
CAPTIONS = [
    "A red cup of espresso on a saucer.",
    "A cup of coffee with a spoon on a wooden table.",
    "Espresso in a red cup, a spoon beside it.",
    "A red coffee cup and saucer on wood.",
    "A small cup of coffee with crema.",
]
ONE = "looking through a camera"
OPEN_MIX = [
    {"index": "1", "question": "What is the man doing?", "answer": ONE, "image": "cameraman.jpg", "category": "one"},
    {"index": "2", "question": "How many wheels?", "answer": VQA, "image": "motorcycle.jpg", "category": "vqa"},
    {"index": "3", "question": "Describe the image.", "answer": CAPTIONS, "image": "coffee.jpg", "category": "cap"},
]
ANSWERS = {
    "What is the man doing?": "He is looking through a camera on a tripod.",
    "How many wheels?": "two",
    "Describe the image.": "A red cup of espresso with a spoon on a saucer.",
}


@pytest.fixture
def kinds_ws(demo_ws, tmp_path, monkeypatch):
    """Every kind: demo (multiple choice, run 1 of baseline:first), demo-pope (yes/no), demo-open (one reference
    each), open-mix (one reference, VQA's ten, five captions; run of the test parrot: its answers above), and a
    live-arena battle (two runs of one pass)."""
    images = demo_dir() / "images"
    folder = tmp_path / "mix"
    folder.mkdir()
    for row in OPEN_MIX:
        (folder / row["image"]).write_bytes((images / row["image"]).read_bytes())
    (folder / "mix.jsonl").write_text("".join(json.dumps(r) + "\n" for r in OPEN_MIX))
    with open_workspace(demo_ws) as ws:
        import_benchmark(ws, folder / "mix.jsonl", fmt="jsonl", name="open-mix")
        live_arena.record_battle(
            ws,
            (images / "pagoda.jpg").read_bytes(),
            "Which city is this?",
            LiveAnswer("baseline:first", "Kyoto.", 10.0, {}, False),
            LiveAnswer("baseline:random", "Beijing.", 12.0, {}, False),
        )
    run_parrot(demo_ws, "open-mix", ANSWERS, tmp_path, monkeypatch)
    return demo_ws


def _demo_open_reference() -> str:
    first = json.loads((demo_dir() / "demo_open.jsonl").read_text().splitlines()[0])
    return first["answer"]


# (benchmark, index, kind, what shows the key when not blind, what must not show blind before a verdict)
ITEMS = [
    ("demo", "1", "mcq", ["Yellowish green", "answer key"], []),  # blind: no green card (key_visible)
    ("demo-pope", "1", "yesno", ["Yes", "No", "answer key"], []),
    ("demo-open", "1", "open", ["Reference answer · the answer key", _demo_open_reference()], [_demo_open_reference()]),
    ("open-mix", "2", "open", ["10 reference answers · 2 distinct · the answer key", "2 ×7 · two ×3"], ["2 ×7"]),
    ("open-mix", "3", "open", ["5 reference answers · the answer key", *(f"• {c}" for c in CAPTIONS)], CAPTIONS),
    ("live-arena", "1", "open", [LIVE_NO_REFERENCE], ["the answer key"]),
]


def _show(window, bench: str, index: str) -> None:
    window.select_benchmark(bench)
    VIEWS["review"](window, Shot("review", item=index))


def _texts(window) -> str:
    return "\n".join(visible_texts(window))


@pytest.mark.parametrize("blind", [False, True])
def test_each_kind_shows_what_verifies_it_in_review_and_browse(qtbot, kinds_ws, make_window, blind):
    window = make_window(kinds_ws, blind=blind)
    window.resize(1024, 700)
    review, browse = window.view("review"), window.view("browse")
    geometry = {}
    for bench, index, kind, key_texts, hidden_texts in ITEMS:
        _show(window, bench, index)
        for view in (review, browse):
            window.show_view("review" if view is review else "browse")
            qtbot.wait(10)
            texts = _texts(window)
            panel = view.panel
            assert panel.kind == kind, (bench, index)
            live = bench == "live-arena"
            if kind == "open":
                # No option cards of any sort: the references where they would be.
                assert panel.rows == [] and "Yes" not in visible_texts(window) and "W 1" not in texts
            if not blind or live:  # a live-arena question has no references at all: nothing to hide
                assert all(t in texts for t in key_texts), (bench, index, view, key_texts)
            else:
                assert not any(t in texts for t in hidden_texts), (bench, index, view)
                hidden = REFERENCES_HIDDEN if kind == "open" else "Answer key hidden (blind mode)"
                assert hidden in texts, (bench, index, view)
                assert not panel.key_visible()
            if view is review:
                buttons = {b.text() for b in review.offered_buttons()}
                wrong = "Wrong ref   W" if kind == "open" else "Wrong key   W"
                assert (wrong in buttons) != live  # a question without references has none to call wrong
                assert ("Refs incomplete   R" in buttons) == (kind == "open")
                assert ("Refs incomplete   R" in texts) == (kind == "open")
                # Moving between kinds moves no button: every one keeps its place, shown or not.
                geometry.setdefault("bar", review.verdict_bar.geometry())
                assert review.verdict_bar.geometry() == geometry["bar"], (bench, index)
                for verdict, button in review.verdict_buttons.items():
                    assert button.geometry() == geometry.setdefault(verdict, button.geometry()), (verdict, bench)


def test_blind_references_show_once_my_verdict_stands(qtbot, kinds_ws, make_window):
    window = make_window(kinds_ws, blind=True, advance=False)
    window.resize(1024, 700)
    _show(window, "open-mix", "2")
    review = window.view("review")
    review.setFocus()
    assert "2 ×7 · two ×3" not in _texts(window) and REFERENCES_HIDDEN in _texts(window)
    assert review.predictions.topLevelItemCount() == 0  # the run's answer and its scores hide with the key
    qtbot.keyClick(window, Qt.Key_O)
    texts = _texts(window)
    assert "2 ×7 · two ×3" in texts and REFERENCES_HIDDEN not in texts and review.panel.key_visible()
    assert "VQA 100 %" in texts


def _standing(path) -> dict[int, tuple[str, str | None]]:
    with open_workspace(path) as ws:
        return {r.item_id: (r.verdict, r.corrected_answer) for r in reviews.standing_reviews(ws, annotator="ann")}


def _item_id(path, bench: str, index: str) -> int:
    with open_workspace(path) as ws:
        found = catalog.benchmark_by_name(ws, bench)
        assert found is not None
        item = catalog.item_by_index(ws, found.id, index_for_lookup(index))
        assert item is not None
        return item.id


def test_the_keys_of_each_kind_store_the_verdicts_that_fit_it(qtbot, kinds_ws, make_window):
    window = make_window(kinds_ws, advance=False)
    review = window.view("review")
    ignored: list[str] = []
    review.keyIgnored.connect(ignored.append)
    one, vqa, captions = (_item_id(kinds_ws, "open-mix", i) for i in "123")
    live = _item_id(kinds_ws, "live-arena", "1")
    mcq = _item_id(kinds_ws, "demo", "1")

    def key(k, widget=None):
        qtbot.keyClick(widget or window, k)

    # An open item: option keys do nothing, and say so.
    _show(window, "open-mix", "1")
    review.setFocus()
    key(Qt.Key_1)
    assert _standing(kinds_ws) == {} and "no options" in ignored[-1]
    # W asks for the right answer; the keys type into it; Esc cancels; nothing is stored.
    key(Qt.Key_W)
    assert review.answer.hasFocus() and review.note_slot.currentWidget() is review.answer
    qtbot.keyClicks(review.answer, "oups")
    key(Qt.Key_Escape, review.answer)
    assert _standing(kinds_ws) == {} and not review.answer.isVisible() and review.note.isVisible()
    # W, the answer typed (O and S type, they decide nothing), Enter: a wrong reference with its right answer.
    key(Qt.Key_W)
    key(Qt.Key_Return, review.answer)  # nothing typed: a wrong reference needs the right answer
    assert _standing(kinds_ws) == {} and review.answer.hasFocus() and "Type the right answer" in ignored[-1]
    qtbot.keyClicks(review.answer, "filming OS")
    key(Qt.Key_Return, review.answer)
    assert _standing(kinds_ws) == {one: ("wrong_answer", "filming OS")}
    assert "wrong reference → filming OS" in review.saved.text() and not review.answer.hasFocus()
    # R on the next one, the missing answer typed: references incomplete with it. Then R with nothing typed.
    _show(window, "open-mix", "2")
    review.setFocus()
    key(Qt.Key_R)
    qtbot.keyClicks(review.answer, "2 wheels")
    key(Qt.Key_Return, review.answer)
    assert _standing(kinds_ws)[vqa] == ("incomplete", "2 wheels")
    assert "references incomplete → 2 wheels" in review.saved.text()
    _show(window, "open-mix", "3")
    review.setFocus()
    key(Qt.Key_R)
    key(Qt.Key_Return, review.answer)
    assert _standing(kinds_ws)[captions] == ("incomplete", None)
    _show(window, "live-arena", "1")
    review.setFocus()
    key(Qt.Key_W)  # no reference to call wrong: said, nothing asked, nothing stored
    assert live not in _standing(kinds_ws) and "no reference answer" in ignored[-1] and not review.answer.isVisible()
    key(Qt.Key_U)
    assert _standing(kinds_ws)[live] == ("ambiguous", None)
    key(Qt.Key_S)
    assert _standing(kinds_ws)[live] == ("skip", None)
    # A multiple-choice item: R does not fit (said, nothing stored); 1 picks A, W stores the wrong key → A; O.
    _show(window, "demo", "1")
    review.setFocus()
    key(Qt.Key_R)
    assert mcq not in _standing(kinds_ws) and "open items" in ignored[-1]
    key(Qt.Key_1)
    key(Qt.Key_W)
    assert _standing(kinds_ws)[mcq] == ("wrong_answer", "A")
    key(Qt.Key_O)
    assert _standing(kinds_ws)[mcq] == ("ok", None)
    # The log holds every verdict given, each once.
    with open_workspace(kinds_ws) as ws:
        rows = ws.conn.execute("SELECT verdict FROM reviews WHERE annotator = 'ann' ORDER BY id").fetchall()
    assert [r[0] for r in rows] == [
        "wrong_answer",
        "incomplete",
        "incomplete",
        "ambiguous",
        "skip",
        "wrong_answer",
        "ok",
    ]
    # Browse words them for the kind, and its review filter finds the incomplete ones.
    window.select_benchmark("open-mix")
    window.show_view("browse")
    browse, model = window.view("browse"), window.ctx.model
    assert model.display_text(model.rows[model.row_of(one)], 4) == "wrong reference → filming OS"
    browse.select_combo(browse.review, "incomplete")
    assert browse.review.currentText() == "Verdict: references incomplete"
    assert sorted(r.id for r in model.rows) == sorted([vqa, captions])


def test_an_open_runs_predictions_and_browse_column_show_scores(qtbot, kinds_ws, make_window):
    window = make_window(kinds_ws)
    window.resize(1024, 700)
    _show(window, "open-mix", "2")
    review = window.view("review")
    texts = _texts(window)
    assert "VQA 100 %" in texts and "undecided" not in texts and "– unscored" not in texts
    assert any(t.startswith("Scores: VQA 100 % · exact 100 % · word 100 % · ANLS 100 %") for t in visible_texts(window))
    assert review.predictions.headerItem().text(3) == "Score" and review.predictions.isColumnHidden(1)
    # Browse's Run column: each item's primary score (none fits captions: answered), never "– unscored".
    window.show_view("browse")
    model = window.ctx.model
    assert model.open_run and model.filter.run_id is not None
    column = {str(model.rows[r].index): model.display_text(model.rows[r], 6) for r in range(len(model.rows))}
    assert column == {"1": "word 100 %", "2": "VQA 100 %", "3": "answered"}
    assert "answered" in _texts(window) and "VQA 100 %" in _texts(window)
    # A multiple-choice run's passes keep their choices and results.
    _show(window, "demo", "1")
    assert review.predictions.headerItem().text(3) == "Choice" and not review.predictions.isColumnHidden(1)


def test_blind_browse_hides_an_open_runs_scores_until_my_verdict(qtbot, kinds_ws, make_window):
    window = make_window(kinds_ws, blind=True, advance=False)
    _show(window, "open-mix", "2")
    window.show_view("browse")
    model = window.ctx.model
    row = next(r for r in model.rows if str(r.index) == "2")
    assert model.display_text(row, 6) == "" and "VQA 100 %" not in _texts(window)
    window.show_view("review")
    window.view("review").setFocus()
    qtbot.keyClick(window, Qt.Key_O)
    window.show_view("browse")
    assert model.display_text(row, 6) == "VQA 100 %"


def test_browse_pictures_of_every_kind_settle_at_1024x700(qtbot, kinds_ws, tmp_path):
    """Found rendering Browse on five captions at 1024×700 (`vlmdesk gui --screenshot`): refitting the panel as the
    outer scroll bar came and went brought the bar back and forth without end, then a crash. Each picture is taken,
    and says what it shows."""
    for bench, index, _, key_texts, _ in ITEMS:
        shot = Shot("browse", bench=bench, item=index, size=(1024, 700))
        texts = take(kinds_ws, tmp_path / f"{bench}-{index}.png", shot)
        assert all(t in texts for t in key_texts), (bench, index)


def test_the_help_says_which_verdicts_fit_each_kind_and_scrolls_at_large_text(qtbot, kinds_ws, make_window):
    window = make_window(kinds_ws)
    try:
        window.set_appearance(font_scale=1.25)
        window.resize(1024, 700)
        window.show_view("review")
        review = window.view("review")
        review.setFocus()
        qtbot.keyClick(window, Qt.Key_F1)
        help_ = review.help
        text = help_.card.text()
        assert "References incomplete" in text and "O W U R T I S" in text
        assert all(f"{kind}:" in text for kind in ("multiple-choice", "yes/no", "open"))
        # Taller than the view at 1024×700 with larger text: the card stays inside it and scrolls, by keys too.
        assert help_.rect().contains(help_.box.geometry())
        bar = help_.box.verticalScrollBar()
        assert bar.maximum() > 0 and bar.value() == 0
        qtbot.keyClick(help_, Qt.Key_PageDown)
        assert bar.value() > 0 and help_.isVisible()
        qtbot.keyClick(help_, Qt.Key_Escape)
        assert not help_.isVisible()
    finally:
        window.set_appearance(font_scale=1.0)


def test_a_long_saved_message_moves_no_verdict_button(qtbot, kinds_ws, make_window):
    # The walk at 1024x700, text x1.25: "✓ Saved #1: wrong reference → …" wrapped onto a second line and lifted the
    # verdict buttons above it by a line, under the pointer, as the next item showed.
    window = make_window(kinds_ws, blind=True, font_scale=1.25)
    window.resize(1024, 700)
    review = window.view("review")
    _show(window, "open-mix", "1")
    review.setFocus()
    qtbot.wait(50)

    def places():
        return {v: b.mapTo(window, b.rect().topLeft()) for v, b in review.verdict_buttons.items()}

    before = places()
    qtbot.keyClick(window, Qt.Key_W)
    qtbot.keyClicks(review.answer, "filming with a camera on a tripod in a park on a sunny afternoon, far from town")
    qtbot.keyClick(review.answer, Qt.Key_Return)
    qtbot.wait(50)
    assert "wrong reference → filming" in review.saved.text()
    assert review.saved.height() < 2 * review.saved.fontMetrics().height()  # one line, whole in its tooltip
    assert places() == before
    qtbot.keyClick(window, Qt.Key_Left)  # back to it: "Your verdict: …" and its Change my verdict link
    qtbot.wait(50)
    assert review.change.isVisible() and "Your verdict: wrong reference" in review.saved.text()
    assert places() == before
