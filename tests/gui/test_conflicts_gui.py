"""The Conflicts page works like Review: no answer picked by default, "wrong key" only with another option than the
key, the verdict keys, a note, Ctrl+Z; in blind mode the others' verdicts show only after mine. Checked in SQLite."""

import sqlite3

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel

from annotation import reviews
from db import catalog, open_workspace

LETTER_KEYS = {"A": Qt.Key_1, "B": Qt.Key_2, "C": Qt.Key_3, "D": Qt.Key_4}


def _seed_conflicts(path, n=2):
    """n items on which bob and eve disagree (eve's note is a marker); returns the items."""
    with open_workspace(path) as ws:
        items = catalog.list_items(ws, catalog.benchmark_by_name(ws, "demo").id)[:n]
        for item in items:
            reviews.add_review(ws, item.id, "bob", "ok")
            reviews.add_review(ws, item.id, "eve", "ambiguous", note=f"eve-note-{item.id}")
    return items


def _log(path, item_id, annotator="ann"):
    with sqlite3.connect(path) as conn:
        return conn.execute(
            "SELECT verdict, corrected_answer, note FROM reviews WHERE item_id = ? AND annotator = ? ORDER BY id",
            (item_id, annotator),
        ).fetchall()


def _open(window):
    window.show_view("queues")
    queues = window.view("queues")
    queues.select("conflicts")
    return queues, queues.conflicts


def _visible(widget):
    return " ".join(w.text() for w in widget.findChildren(QLabel) if w.isVisibleTo(widget))


def test_wrong_key_needs_another_option_and_no_pick_is_kept(qtbot, demo_ws, make_window):
    first, second = _seed_conflicts(demo_ws)
    window = make_window(demo_ws)
    queues, page = _open(window)
    assert page.item.id == first.id and page.corrected.currentData() is None  # nothing picked
    assert "2 left for you" in page.left.text() and "Conflicts\n2 left" == queues.list.item(2).text()
    qtbot.keyClick(window, Qt.Key_W)  # W with no pick arms, writes nothing
    assert page.hint_label.isVisibleTo(page) and _log(demo_ws, first.id) == []
    qtbot.keyClick(window, LETTER_KEYS[first.answer])  # ... and the key itself is refused
    assert _log(demo_ws, first.id) == []
    assert "already the answer key" in window.message_bar.label.text()
    other = next(letter for letter in "ABCD" if letter != first.answer)
    qtbot.keyClick(window, LETTER_KEYS[other])  # a pick, then W: wrong key → that option
    assert page.corrected.currentData() == other and page.panel.picked == other
    qtbot.keyClick(window, Qt.Key_W)
    assert _log(demo_ws, first.id) == [("wrong_answer", other, "settles conflict")]
    # The next item starts with nothing picked: the previous item's pick is never carried over.
    assert page.item.id == second.id and page.corrected.currentData() is None and page.panel.picked is None
    assert "1 left for you" in page.left.text() and queues.list.item(2).text().endswith("1 left")


def test_verdict_keys_note_and_undo(qtbot, demo_ws, make_window):
    first, second = _seed_conflicts(demo_ws)
    window = make_window(demo_ws)
    queues, page = _open(window)
    qtbot.keyClick(window, Qt.Key_E)  # E: the note; keys type there instead of acting
    assert page.note.hasFocus()
    for key in (Qt.Key_O, Qt.Key_K):
        qtbot.keyClick(page.note, key)
    qtbot.keyClick(page.note, Qt.Key_Z, Qt.ControlModifier)  # the field's own undo, not a withdrawal
    qtbot.keyClicks(page.note, "both fine")
    assert _log(demo_ws, first.id) == []
    qtbot.keyClick(page.note, Qt.Key_Return)
    qtbot.keyClick(window, Qt.Key_U)
    # Ctrl+Z undid "ok" in the field itself.
    assert _log(demo_ws, first.id) == [("ambiguous", None, "settles conflict: both fine")]
    assert page.item.id == second.id and page.note.text() == ""
    qtbot.keyClick(window, Qt.Key_Z, Qt.ControlModifier)  # undo: a withdrawal row, the item is back
    log = _log(demo_ws, first.id)
    assert [v for v, _, _ in log] == ["ambiguous", "undo"]
    with open_workspace(demo_ws) as ws:
        assert not [r for r in reviews.standing_reviews(ws, annotator="ann")]
    assert page.item.id == first.id and "2 left for you" in page.left.text()
    assert queues.list.item(2).text().endswith("2 left") and "Withdrawn" in page.saved.text()
    qtbot.mouseClick(page.buttons["ok"], Qt.LeftButton)  # settled again, differently: the log keeps all three
    assert [v for v, _, _ in _log(demo_ws, first.id)] == ["ambiguous", "undo", "ok"]


def test_blind_mode_hides_the_others_until_my_verdict_stands(qtbot, demo_ws, make_window):
    first, second = _seed_conflicts(demo_ws)
    with open_workspace(demo_ws) as ws:  # ann judged the second item before the others disagreed on it
        reviews.add_review(ws, second.id, "ann", "ok")
        reviews.add_review(ws, second.id, "eve", "bad_image", note="eve-late")
    window = make_window(demo_ws, blind=True)
    queues, page = _open(window)
    assert page.item.id == first.id
    text = _visible(page)
    assert "2 annotators disagree" in text and "give your verdict first" in text
    assert "bob" not in text and f"eve-note-{first.id}" not in text and not page.panel.key_visible()
    qtbot.keyClick(window, Qt.Key_T)  # my verdict on the first; the second (mine stands there) shows everything
    assert _log(demo_ws, first.id) == [("text_answerable", None, "settles conflict")]
    assert page.item.id == second.id
    text = _visible(page)
    assert "bob" in text and "eve-late" in text and page.panel.key_visible()


def test_counts_agree_between_page_and_list_for_every_queue(qtbot, demo_ws, make_window):
    _seed_conflicts(demo_ws, n=3)
    window = make_window(demo_ws)
    queues, page = _open(window)
    for row, (_, _, p) in enumerate(queues.pages):
        queues.select(queues.pages[row][0])
        n = p.remaining() if isinstance(p.remaining(), int) else len(p.remaining())
        assert queues.list.item(row).text().endswith(f"{n} left")
        assert p.left.text() == "" or p.left.text().startswith(f"{n} left")


def test_keys_work_after_clicking_the_queue_list(qtbot, demo_ws, make_window):
    first, _ = _seed_conflicts(demo_ws)
    window = make_window(demo_ws)
    queues, page = _open(window)
    rect = queues.list.visualItemRect(queues.list.item(2))
    qtbot.mouseClick(queues.list.viewport(), Qt.LeftButton, pos=rect.center())
    assert queues.list.hasFocus()
    qtbot.keyClick(window, Qt.Key_I)
    assert _log(demo_ws, first.id) == [("bad_image", None, "settles conflict")]
    window.show_view("browse")  # hidden: the page's keys are off
    qtbot.keyClick(window, Qt.Key_O)
    assert len(_log(demo_ws, first.id)) == 1
