"""The window fits 1024×700 with the text two steps larger (View › Larger text twice: ×1.25), whichever tab is
shown (issue 22 §4: it grew to 1058 px, the benchmark list read "de… 30…", Browse's headers were cut, and a long
question sat below its hint in a four-line box)."""

from __future__ import annotations

import json

from PIL import Image
from PySide6.QtWidgets import QApplication

from vlmdesk.cli import main as cli_main

TWO_STEPS = 1.25  # 1.0 → 1.1 → 1.25 (gui/appearance.SCALES)


def _settle():
    app = QApplication.instance()
    for _ in range(3):
        app.processEvents()


def test_the_window_fits_1024x700_with_text_two_steps_larger_on_every_tab(qtbot, demo_ws, make_window):
    window = make_window(demo_ws)
    try:
        window.scale_text(1)
        window.scale_text(1)
        assert window.prefs.font_scale == TWO_STEPS
        window.resize(1024, 700)
        for name in window.views:
            window.show_view(name)
            _settle()
            hint = window.minimumSizeHint()
            assert hint.width() <= 1024 and hint.height() <= 700, (name, hint.toTuple())
            assert window.width() <= 1024, (name, window.width())
        # The benchmark list: each benchmark's name whole, not "de…".
        dock = window.docks["benchmarks"].widget()
        metrics = dock.fontMetrics()
        for row in range(dock.count()):
            name = dock.item(row).text().splitlines()[0]
            assert metrics.horizontalAdvance(name) + 20 <= dock.viewport().width(), (name, dock.viewport().width())
    finally:
        window.set_appearance(theme="light", font_scale=1.0)


def test_browse_headers_are_whole_and_the_question_has_room_at_1024(qtbot, demo_ws, make_window):
    window = make_window(demo_ws)
    try:
        window.set_appearance(font_scale=TWO_STEPS)
        window.resize(1024, 700)
        window.show_view("browse")
        _settle()
        browse = window.view("browse")
        table, header = browse.table, browse.table.horizontalHeader()
        metrics = browse._header_metrics()
        model = table.model()
        for col in range(model.columnCount()):
            if table.isColumnHidden(col):
                continue
            title = model.headerData(col, header.orientation())
            assert header.sectionSize(col) >= metrics.horizontalAdvance(title) + 12, (title, header.sectionSize(col))
            start = header.sectionViewportPosition(col)
            assert 0 <= start and start + header.sectionSize(col) <= table.viewport().width() + 1, title
        question = header.sectionSize(7)
        assert question >= 0.3 * table.viewport().width(), (question, table.viewport().width())
    finally:
        window.set_appearance(theme="light", font_scale=1.0)


def test_a_long_question_comes_before_its_long_hint_in_review_at_1024(qtbot, tmp_path, make_window):
    folder = tmp_path / "long"
    folder.mkdir()
    Image.new("RGB", (64, 48), (120, 160, 200)).save(folder / "img.jpg")
    hint = "Read the passage first. " + "The expedition left the harbour at dawn and sailed along the coast. " * 12
    question = "According to the passage, which statement about the route is best supported? " * 3
    row = {"question": question, "hint": hint, "options": ["north", "south", "east", "west"], "image": "img.jpg"}
    (folder / "long.jsonl").write_text(json.dumps(row) + "\n")
    ws = tmp_path / "w.sqlite"
    assert cli_main(["--workspace", str(ws), "import", str(folder / "long.jsonl"), "--name", "long"]) == 0
    window = make_window(ws)
    try:
        window.set_appearance(font_scale=TWO_STEPS)
        window.resize(1024, 700)
        window.show_view("review")
        review = window.view("review")
        review.show_row(0)
        _settle()
        panel = review.panel
        area = panel.text_area
        assert area.verticalScrollBar().value() == 0
        # The question's first lines are in view at the top of the box; the hint is below it, not above.
        seen = panel.question.visibleRegion().boundingRect()
        assert seen.top() == 0 and seen.height() >= 2 * panel.question.fontMetrics().lineSpacing()
        assert panel.hint.isVisible() and panel.hint.y() > panel.question.y()
        # The hint folds away under its toggle and stays folded for the next item.
        panel.hint_toggle.click()
        _settle()
        assert not panel.hint.isVisible() and panel.hint_toggle.isVisible()
        review.show_row(0)
        _settle()
        assert not panel.hint.isVisible()
        panel.hint_toggle.click()
        assert panel.hint.isVisible()
    finally:
        window.set_appearance(theme="light", font_scale=1.0)


def test_the_live_arena_fits_1024_while_a_battle_says_its_state(qtbot, demo_ws, make_window):
    """The live page's pane titles carry the battle's state ("answered · shown when done (no streaming)"): found
    walking the app at 1024×700, they widened the window past the screen until they wrapped."""
    window = make_window(demo_ws)
    try:
        window.set_appearance(font_scale=TWO_STEPS)
        window.resize(1024, 700)
        window.show_view("arena")
        live = window.view("arena").live
        window.view("arena").inner.setCurrentWidget(live)
        for pane in (live.left, live.right):
            pane.title.setText(f"{pane.title.text()} · answered · shown when done (no streaming) · " + "x" * 40)
        _settle()
        assert window.minimumSizeHint().width() <= 1024, window.minimumSizeHint().toTuple()
        assert window.width() <= 1024
    finally:
        window.set_appearance(theme="light", font_scale=1.0)
