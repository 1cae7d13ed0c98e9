"""Guidelines beside Review and the Queues (edited in the app, a new version in SQLite, recorded on the next
verdict), the Annotators tab's statistics, progress bars per queue, and saved views shown as Review's filter."""

from PySide6.QtCore import Qt

from annotation import guidelines, reviews, saved_filters
from db import catalog, open_workspace


def _bench(ws):
    return catalog.benchmark_by_name(ws, "demo")


def test_guidelines_edited_in_review_are_versioned_and_recorded_on_verdicts(qtbot, demo_ws, make_window):
    window = make_window(demo_ws)
    review = window.view("review")
    window.show_view("review")
    panel = review.guidelines
    assert review.tabs.tabText(review.tabs.indexOf(panel)) == "Guidelines"
    assert "No guidelines for this benchmark yet" in panel.text.toPlainText() and panel.edit_button.isEnabled()
    assert panel.save("# Demo rules\n\n- **ok**: the key is right.").version == 1
    assert "version 1 · ann" in panel.title.text() and "Demo rules" in panel.text.toPlainText()
    qtbot.keyClick(review, Qt.Key_O)
    qtbot.waitUntil(lambda: "Saved" in review.saved.text())
    panel.save("# Demo rules\n\n- **ok**: the key is right.\n- **skip**: when unsure.")
    qtbot.keyClick(review, Qt.Key_O)
    qtbot.waitUntil(lambda: review.saved.text().count("Saved") == 1 and review.row == 2, timeout=5000)
    with open_workspace(demo_ws) as ws:
        assert [g.version for g in guidelines.versions(ws, _bench(ws).id)] == [1, 2]
        versions = [r[0] for r in ws.conn.execute("SELECT guideline_version FROM reviews ORDER BY id")]
    assert versions == [1, 2]
    # The Queues show the same guideline beside the queue, on demand.
    queues = window.view("queues")
    window.show_view("queues")
    assert queues.guidelines_button.text() == "Guidelines ✓" and not queues.guidelines.isVisible()
    qtbot.mouseClick(queues.guidelines_button, Qt.LeftButton)
    assert queues.guidelines.isVisible()
    assert "version 2" in queues.guidelines.title.text()


def test_annotators_tab_and_queue_progress_bars(qtbot, demo_ws, make_window):
    with open_workspace(demo_ws) as ws:
        items = catalog.list_items(ws, _bench(ws).id)
        for n, item in enumerate(items[:4]):
            reviews.add_review(ws, item.id, "ann", "ok", seconds=20)
            reviews.add_review(ws, item.id, "bob", "ok" if n else "ambiguous", seconds=40)
    window = make_window(demo_ws)
    view = window.view("annotators")
    window.show_view("annotators")
    rows = {row[0]: row for row in view.model.rows}
    assert sorted(rows) == ["ann", "bob"]
    ann = rows["ann"]
    assert (ann[1], ann[2], ann[-3], ann[-1]) == ("4", "4", "180.0", "1")
    assert "1 conflict(s) to discuss" in view.summary.text() and view.progress.value() == 4
    assert "κ with bob" in view.model.tooltips[(0, view.model.columns.index("Mean κ"))]
    # Blind mode hides every figure (agreement tells how others judged).
    window.ctx.update_prefs(blind=True)
    assert view.cover.hidden
    window.ctx.update_prefs(blind=False)
    queues = window.view("queues")
    window.show_view("queues")
    bar = queues.bars["conflicts"]
    assert (bar.value(), bar.maximum()) == (0, 1)  # one conflict, not settled by "ann" (a party to it)… yet
    queues.select("conflicts")
    page = queues.conflicts
    qtbot.waitUntil(lambda: page.item is not None)
    qtbot.keyClick(page, Qt.Key_O)
    qtbot.waitUntil(lambda: bar.value() == 1, timeout=5000)


def test_a_saved_view_sets_the_filters_and_review_shows_it(qtbot, demo_ws, make_window):
    window = make_window(demo_ws)
    browse = window.view("browse")
    window.show_view("browse")
    browse.select_combo(browse.review, "unreviewed")
    browse.select_combo(browse.l2, "coarse_perception")
    assert browse.save_view("CP to do")
    with open_workspace(demo_ws) as ws:
        saved = saved_filters.get(ws, "CP to do")
    assert saved.filters == {"l2_category": "coarse_perception", "review": "unreviewed"} and saved.author == "ann"
    total = window.ctx.model.total
    browse.clear_filters()
    assert window.ctx.model.total == 30 and browse.current_view is None
    browse.apply_saved("CP to do")
    assert window.ctx.model.total == total < 30
    review = window.view("review")
    window.show_view("review")
    assert review.filter_label.text() == "· filter: CP to do: L2 coarse_perception · review unreviewed"
