"""Long content in the item panel and Browse: a long unbroken word wraps instead of scrolling the question sideways,
many options scroll inside their panel while the verdict buttons and the key note stay in sight, and a 1024×700
window still shows Browse's Question column and the "Review this item" button."""

import json

import pytest

from db import open_workspace
from evaluator.formats.importers import import_benchmark
from gui.screenshot import VIEWS, Shot, visible_texts
from vlmdesk.demo import demo_dir

WORD = "Pneumonoultramicroscopicsilicovolcanoconiosis" * 3


@pytest.fixture
def long_ws(tmp_path):
    (tmp_path / "cat.jpg").write_bytes((demo_dir() / "images" / "cat.jpg").read_bytes())
    image = "cat.jpg"  # next to the file: the importer reads no image outside its folder
    rows = [
        {
            "index": "1",
            "question": f"Which identifier appears in the caption? {WORD}",
            "options": ["x" * 140, "short", "Supercalifragilisticexpialidocious" * 4],
            "answer": "B",
            "image": image,
        },
        {
            "index": "2",
            "question": "Eleven options.",
            "options": [f"Option {i} in a few words" for i in range(11)],
            "answer": "K",
            "image": image,
        },
        {
            "index": "3",
            "question": "Twenty-five options.",
            "options": [f"Choice {i}" for i in range(25)],
            "answer": "Y",
            "image": image,
        },
    ]
    source = tmp_path / "long.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    path = tmp_path / "long.sqlite"
    with open_workspace(path) as ws:
        import_benchmark(ws, source, fmt="jsonl", name="long")
    return path


def _fully_visible(widget) -> bool:
    return widget.isVisible() and widget.visibleRegion().boundingRect() == widget.rect()


@pytest.mark.parametrize("size", [(1024, 700), (1280, 800)])
def test_long_words_wrap_and_many_options_scroll_inside_the_panel(qtbot, long_ws, make_window, size):
    window = make_window(long_ws)
    window.resize(*size)
    browse, review = window.view("browse"), window.view("review")
    VIEWS["browse"](window, Shot("browse", item="1"))
    qtbot.wait(50)
    scroll = browse.panel_scroll
    assert scroll.horizontalScrollBar().maximum() == 0  # never sideways
    assert browse.panel.question.width() <= scroll.viewport().width()
    assert WORD in " ".join(visible_texts(window))  # wrapped, not altered
    assert _fully_visible(browse.open_button)
    header, table = browse.table.horizontalHeader(), browse.table
    question_x = header.sectionViewportPosition(7)
    assert 0 <= question_x and question_x + 60 < table.viewport().width()  # the Question column is on screen

    for index, n_options in (("1", 3), ("2", 11), ("3", 25)):
        VIEWS["review"](window, Shot("review", item=index))
        qtbot.wait(50)
        panel = review.panel
        assert len(panel.rows) == n_options
        outer = panel.parentWidget().parentWidget()
        assert outer.horizontalScrollBar().maximum() == 0
        assert _fully_visible(panel.question)
        for button in review.offered_buttons():
            assert _fully_visible(button), (index, button.text())
        if n_options > 10:
            # The rows scroll inside the panel; the panel itself is not pushed taller than its pane.
            assert panel.options_area.verticalScrollBar().maximum() > 0
            assert outer.verticalScrollBar().maximum() == 0
            panel.options_area.ensureWidgetVisible(panel.rows[-1])
            assert panel.rows[-1].visibleRegion().boundingRect().height() > 0


def test_the_key_note_stays_in_sight_under_many_options(qtbot, long_ws, make_window):
    window = make_window(long_ws, blind=True)
    window.resize(1024, 700)
    VIEWS["review"](window, Shot("review", item="3"))
    qtbot.wait(50)
    note = window.view("review").panel.key_note
    assert note.text() == "Answer key hidden (blind mode)" and _fully_visible(note)


def test_a_question_of_many_lines_scrolls_inside_its_box_at_1024x700(qtbot, tmp_path, make_window):
    """Found walking the app: at 1024×700 a long question was cut off with no way to read its end."""
    (tmp_path / "cat.jpg").write_bytes((demo_dir() / "images" / "cat.jpg").read_bytes())
    question = "Which option is the long one? " + "some ordinary words to read, " * 60 + "THE END?"
    source = tmp_path / "q.jsonl"
    source.write_text(json.dumps({"question": question, "options": ["a", "b"], "image": "cat.jpg"}) + "\n")
    path = tmp_path / "q.sqlite"
    with open_workspace(path) as ws:
        import_benchmark(ws, source, fmt="jsonl", name="q")
    window = make_window(path)
    window.resize(1024, 700)
    VIEWS["review"](window, Shot("review", item="1"))
    qtbot.wait(50)
    panel, review = window.view("review").panel, window.view("review")
    area = panel.text_area
    assert area.verticalScrollBar().maximum() > 0  # the rest of the question is a scroll away...
    area.ensureWidgetVisible(panel.question, 0, 0)
    area.verticalScrollBar().setValue(area.verticalScrollBar().maximum())
    qtbot.wait(20)
    assert panel.question.visibleRegion().boundingRect().bottom() >= panel.question.height() - 2  # ...its end in view
    assert all(_fully_visible(r) for r in panel.rows)  # and the options stay in sight under it
    assert all(_fully_visible(b) for b in review.offered_buttons())
