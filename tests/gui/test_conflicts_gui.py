"""The Conflicts page works like Review: the verdicts and keys of the item's kind, no answer picked by default,
"wrong key" only with another option than the key (an open item's right answer typed after W), a note, Ctrl+Z; once
mine is saved the item stays, everyone's verdicts in sight, until Next conflict; in blind mode the others' verdicts
show only after mine. Checked in SQLite."""

import sqlite3

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QLabel

from annotation import reviews
from db import catalog, open_workspace
from gui.screenshot import visible_texts

LETTER_KEYS = {"A": Qt.Key_1, "B": Qt.Key_2, "C": Qt.Key_3, "D": Qt.Key_4}
COMMON = ("ok", "wrong_answer", "ambiguous", "text_answerable", "bad_image", "skip")


def _seed_conflicts(path, n=2, bench="demo"):
    """n items on which bob and eve disagree (eve's note is a marker); returns the items."""
    with open_workspace(path) as ws:
        items = catalog.list_items(ws, catalog.benchmark_by_name(ws, bench).id)[:n]
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


def _offered(page):
    return {v for v, b in page.buttons.items() if b.isVisibleTo(page)}


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
    assert page.item.id == first.id and f"wrong key → {other}" in page.saved_line.text()  # it stays, saved
    qtbot.keyClick(window, Qt.Key_Return)  # Next conflict
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
    assert not page.note.hasFocus() and page.item.id == first.id  # Enter leaves the note: no Next, no verdict
    qtbot.keyClick(window, Qt.Key_U)
    # Ctrl+Z undid "ok" in the field itself.
    assert _log(demo_ws, first.id) == [("ambiguous", None, "settles conflict: both fine")]
    assert page.item.id == first.id and page.note.text() == ""
    qtbot.keyClick(window, Qt.Key_Z, Qt.ControlModifier)  # undo: a withdrawal row, the item is back to settle
    log = _log(demo_ws, first.id)
    assert [v for v, _, _ in log] == ["ambiguous", "undo"]
    with open_workspace(demo_ws) as ws:
        assert not [r for r in reviews.standing_reviews(ws, annotator="ann")]
        (withdrawn,) = [r for r in reviews.history(ws, first.id) if r.annotator == "ann" and r.verdict != "undo"]
    assert page.item.id == first.id and "2 left for you" in page.left.text()
    assert queues.list.item(2).text().endswith("2 left")
    # What was withdrawn, by its verdict and time: never the undo row's stored "withdraws review N".
    when = withdrawn.created_at[:19].replace("T", " ")
    assert page.saved.text() == f"↶ Withdrawn: your ambiguous of {when} — settle it again"
    assert not any("withdraws review" in t for t in visible_texts(window))
    qtbot.mouseClick(page.buttons["ok"], Qt.LeftButton)  # settled again, differently: the log keeps all three
    assert [v for v, _, _ in _log(demo_ws, first.id)] == ["ambiguous", "undo", "ok"]
    assert not any("withdraws review" in t for t in visible_texts(window))


def test_blind_mode_hides_the_others_until_my_verdict_then_the_item_stays_until_next(qtbot, demo_ws, make_window):
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
    assert "bob" not in " ".join(visible_texts(window))  # nowhere in the window
    assert not page.next_button.isVisibleTo(page) and not page.change.isVisibleTo(page)
    qtbot.keyClick(window, Qt.Key_T)  # my verdict: the item stays, everyone's verdicts and the key now in sight
    assert _log(demo_ws, first.id) == [("text_answerable", None, "settles conflict")]
    assert page.item.id == first.id and page.panel.key_visible()
    text = _visible(page)
    assert "bob" in text and f"eve-note-{first.id}" in text and "(you)" in text and "text-answerable" in text
    assert page.next_button.isVisibleTo(page) and page.change.isVisibleTo(page)
    assert not any(b.isVisibleTo(page) for b in page.buttons.values())  # nothing to hit twice by mistake
    qtbot.keyClick(window, Qt.Key_O)  # a verdict key does nothing now: one verdict per visit
    assert len(_log(demo_ws, first.id)) == 1 and page.item.id == first.id
    qtbot.mouseClick(page.next_button, Qt.LeftButton)  # Next conflict: the second (mine stands there, shown whole)
    assert page.item.id == second.id
    text = _visible(page)
    assert "bob" in text and "eve-late" in text and page.panel.key_visible()


def test_after_a_skip_no_change_is_offered(qtbot, demo_ws, make_window):
    first, second, third = _seed_conflicts(demo_ws, n=3)
    window = make_window(demo_ws)
    queues, page = _open(window)
    assert not page.change.isVisibleTo(page)  # nothing of mine to change yet
    qtbot.keyClick(window, Qt.Key_O)
    assert page.change.isVisibleTo(page)  # my answer on this item: it can be changed
    qtbot.keyClick(window, Qt.Key_Return)
    assert page.item.id == second.id and not page.change.isVisibleTo(page)
    qtbot.keyClick(window, Qt.Key_S)  # a skip saves nothing: there is no answer of mine here to change
    assert page.item.id == third.id and "nothing saved" in page.saved.text()
    assert not page.change.isVisibleTo(page) and "Change my answer" not in " ".join(visible_texts(window))
    assert [r[0] for r in _log(demo_ws, second.id)] == []


def test_an_open_item_offers_its_kind_s_verdicts_and_takes_the_right_answer_typed(qtbot, demo_ws, make_window):
    _seed_conflicts(demo_ws, n=1)
    first, second = _seed_conflicts(demo_ws, bench="demo-open")
    window = make_window(demo_ws)
    queues, page = _open(window)
    assert _offered(page) == set(COMMON)  # a multiple-choice item: no "references incomplete"
    assert page.buttons["wrong_answer"].text() == "Wrong key   W"
    places = {v: page.buttons[v].geometry() for v in COMMON}
    height = page.steps.height()
    window.select_benchmark("demo-open")
    assert page.item.id == first.id
    assert _offered(page) == {*COMMON, "incomplete"}
    assert page.buttons["wrong_answer"].text() == "Wrong ref   W" and page.buttons["incomplete"].text().endswith("R")
    # The kind changed; the buttons did not move (a verdict that does not fit leaves its place empty).
    assert {v: page.buttons[v].geometry() for v in COMMON} == places and page.steps.height() == height
    qtbot.keyClick(window, Qt.Key_1)  # an open item has no options: a pick does nothing
    assert _log(demo_ws, first.id) == [] and page.panel.picked is None
    qtbot.keyClick(window, Qt.Key_W)  # W: the right answer is typed
    assert page.answer_text.hasFocus() and page.hint_label.isVisibleTo(page) and _log(demo_ws, first.id) == []
    qtbot.keyClicks(page.answer_text, "A tabby cat; its face is in focus. Ok? 1 S")  # keys type, nothing acts
    assert _log(demo_ws, first.id) == [] and page.item.id == first.id
    qtbot.keyClick(page.answer_text, Qt.Key_Return)  # Enter saves
    answer = "A tabby cat; its face is in focus. Ok? 1 S"
    assert _log(demo_ws, first.id) == [("wrong_answer", answer, "settles conflict")]
    assert page.item.id == first.id and f"wrong reference → {answer}" in page.saved_line.text()
    assert "wrong reference" in page.theirs.text() and "wrong key" not in page.theirs.text()
    qtbot.keyClick(window, Qt.Key_Return)
    assert page.item.id == second.id and page.answer_text.text() == ""
    qtbot.keyClick(window, Qt.Key_W)
    qtbot.keyClicks(page.answer_text, "oops")
    qtbot.keyClick(page.answer_text, Qt.Key_Escape)  # Esc cancels: nothing typed is kept, the keys act again
    assert page.answer_text.text() == "" and not page.hint_label.isVisibleTo(page)
    assert QApplication.focusWidget() is not page.answer_text and _log(demo_ws, second.id) == []
    qtbot.keyClick(window, Qt.Key_R)  # references incomplete: open items only
    assert _log(demo_ws, second.id) == [("incomplete", None, "settles conflict")]
    assert "references incomplete" in page.saved_line.text()


def test_a_yes_no_item_takes_yes_or_no(qtbot, demo_ws, make_window):
    first, second = _seed_conflicts(demo_ws, n=2, bench="demo-pope")
    window = make_window(demo_ws, blind=True)
    queues, page = _open(window)
    window.select_benchmark("demo-pope")
    assert page.item.id == first.id and _offered(page) == set(COMMON)
    assert [page.corrected.itemData(i) for i in range(page.corrected.count())] == [None, "yes", "no"]
    qtbot.keyClick(window, Qt.Key_R)  # not a verdict for a yes/no item: refused, nothing saved
    assert _log(demo_ws, first.id) == [] and page.item.id == first.id
    qtbot.keyClick(window, Qt.Key_W)  # blind: the key is hidden, so W waits for the answer (1 yes, 2 no)
    assert _log(demo_ws, first.id) == [] and page.hint_label.isVisibleTo(page)
    qtbot.keyClick(window, Qt.Key_2)
    assert _log(demo_ws, first.id) == [("wrong_answer", "no", "settles conflict")]
    qtbot.keyClick(window, Qt.Key_Return)
    window.ctx.update_prefs(blind=False)  # the key in sight: W alone says the other answer, as in Review
    queues.refresh()
    assert page.item.id == second.id
    qtbot.keyClick(window, Qt.Key_W)
    other = "no" if second.answer == "yes" else "yes"
    assert _log(demo_ws, second.id) == [("wrong_answer", other, "settles conflict")]


def test_an_empty_queue_says_what_to_do_next(qtbot, demo_ws, make_window):
    first, second = _seed_conflicts(demo_ws)
    _seed_conflicts(demo_ws, n=1, bench="demo-open")
    window = make_window(demo_ws)
    queues, page = _open(window)
    for _ in range(2):
        qtbot.keyClick(window, Qt.Key_O)
        qtbot.keyClick(window, Qt.Key_Return)
    assert page.item is None and page.empty.isVisible()  # the card covers the empty item and its buttons
    assert page.empty.title.text() == "No conflict left for you"
    assert "demo-open (1)" in page.empty.text.text()  # where conflicts wait
    assert [b.text() for b in page.empty.buttons] == ["Review items", "See the annotators' agreement"]
    # The queues' counts: done of all, and an empty queue reads so (it read "0 / 1").
    assert queues.bars["conflicts"].text() == "Conflicts 2 / 2"
    assert queues.bars["qc"].text() == "Quality: empty" and queues.list.item(0).text() == "Quality control\n0 left"
    qtbot.mouseClick(page.empty.buttons[0], Qt.LeftButton)
    assert window.tabs.currentWidget() is window.view("review")


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
