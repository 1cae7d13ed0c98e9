"""Review under an assignment plan (issue 39), driven by the keys in the real window: → and N walk my own items in plan
order, gold items among them unmarked; an item outside my plan says so without moving anything; after a verdict on a
gold item (never before) a line says whether it matched the confirmed key. The Annotators tab shows each person's
progress and gold accuracy (blind: my own line only). PNGs at 1024×700, text ×1.25, dark, in $VLMDESK_SHOTS or tmp."""

import os
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from annotation import reviews, team_plans
from db import catalog, open_workspace
from vlmdesk.cli import main as cli_main

REJECTED = ("2", "3", "4", "5", "6", "7")


def cli(path, *args) -> int:
    return cli_main(["--workspace", str(path), *args])


@pytest.fixture
def planned(demo_ws):
    """The demo (one baseline run), seven keys the lead confirmed in QC, a plan: ann, ben, cara, overlap 2, 5 gold."""
    assert cli(demo_ws, "qc", "consensus", "--bench", "demo", "--run", "1") == 0
    for index in REJECTED:
        assert cli(demo_ws, "qc", "decide", "demo", index, "--reject", "--annotator", "lead") == 0
    assert cli(demo_ws, "qc", "decide", "demo", "8", "--confirm", "--answer", "A", "--annotator", "lead") == 0
    assert cli(demo_ws, "team", "plan", "--bench", "demo", "--annotators", "ann,ben,cara", "--overlap", "2",
               "--gold", "5", "--seed", "1", "--author", "lead") == 0  # fmt: skip
    with open_workspace(demo_ws) as ws:
        bench = catalog.benchmark_by_name(ws, "demo")
        plan = team_plans.standing_plan(ws, bench.id)
        mine = team_plans.queue(ws, plan.id, "ann")
        keys = team_plans.gold_keys(ws, plan.id)
        items = {i.id: i for i in catalog.list_items(ws, bench.id)}
    return demo_ws, plan, mine, keys, items


def shots() -> Path:
    folder = Path(os.environ.get("VLMDESK_SHOTS", "") or Path(os.environ.get("TMPDIR", "/tmp")) / "vlmdesk-shots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def at_1024(window) -> None:
    window.set_appearance(theme="dark", font_scale=1.25)
    window.resize(1024, 700)
    for _ in range(3):
        QApplication.processEvents()


def test_review_walks_only_my_items_and_tells_gold_after_the_verdict(qtbot, planned, make_window):
    path, plan, mine, keys, items = planned
    window = make_window(path, blind=True)
    at_1024(window)
    qtbot.keyClick(window, Qt.Key_2, Qt.ControlModifier)  # View › Review
    review = window.view("review")
    assert window.tabs.currentWidget() is review
    review.setFocus()
    assert review.item.id == mine[0].item_id  # Review starts at my first item
    assert review.position_label.text() == f"plan 1/{len(mine)}"
    bar_before = review.verdict_bar.geometry()

    said_before: list[str] = []
    seen = [review.item.id]
    first_gold = next(s for s in mine if s.gold)
    # → walks my queue in plan order, the gold items among them; before each verdict nothing says which is gold.
    while review.item.id != first_gold.item_id:
        said_before.append(review.gold_line.text() + review.position_label.text())
        qtbot.keyClick(window, Qt.Key_Right)
        seen.append(review.item.id)
    assert seen == [s.item_id for s in mine[: first_gold.position + 1]]
    assert not any("gold" in t.lower() for t in said_before)
    assert review.gold_line.text() == ""

    # A verdict that misses the gold key: O says the stored key is right; the confirmed key may be another.
    item = items[first_gold.item_id]
    key = keys[item.id]
    qtbot.keyClick(window, Qt.Key_O)
    matched = item.answer == key
    assert review.gold_line.isVisible()
    if matched:
        assert review.gold_line.text() == f"✓ Gold item #{item.index}: matched the key"
    else:
        assert review.gold_line.text() == f"✗ Gold item #{item.index}: the key is {key}"
    # Advanced to my next item in plan order; the buttons did not move.
    assert review.item.id == mine[first_gold.position + 1].item_id
    assert review.verdict_bar.geometry() == bar_before
    qtbot.waitUntil(review.image.has_image, timeout=10_000)
    review.grab().save(str(shots() / "review_after_gold_verdict.png"))

    # A gold item judged right: the other kind of line (go back to it and correct: a newer verdict).
    second = next(s for s in mine if s.gold and s.position > first_gold.position)
    while review.item.id != second.item_id:
        qtbot.keyClick(window, Qt.Key_Right)
    item2 = items[second.item_id]
    if item2.answer == keys[item2.id]:
        qtbot.keyClick(window, Qt.Key_O)
    else:
        qtbot.keyClick(window, Qt.Key_W)
        qtbot.keyClick(window, getattr(Qt, f"Key_{'ABCD'.index(keys[item2.id]) + 1}"))
    assert review.gold_line.text() == f"✓ Gold item #{item2.index}: matched the key"

    # An item outside my plan, reached through Browse: marked in the image bar, the layout unmoved.
    # (Measured once the window has settled: its first resizes move the splitter on their own.)
    others = [i for i in items if i not in {s.item_id for s in mine}]
    assert others

    def settled():  # the layout once no event moves it any more (a window's first resizes arrive late)
        seen = None
        for _ in range(40):
            qtbot.wait(25)
            now = (review.verdict_bar.geometry(), review.splitter.sizes(), window.size())
            if now == seen:
                return now
            seen = now
        return seen

    places = []
    for item_id in (others[1], mine[0].item_id, others[0]):
        review.show_item_id(item_id)
        places.append(settled())
        outside = review.position_label.text().endswith(" · outside your plan")
        assert outside == (item_id != mine[0].item_id)
    assert places[0] == places[1] == places[2]
    # N from there: back to my first item without my verdict.
    qtbot.keyClick(window, Qt.Key_N)
    with open_workspace(path) as ws:
        judged = {r.item_id for r in reviews.standing_reviews(ws, annotator="ann")}
    assert review.item.id == next(s.item_id for s in mine if s.item_id not in judged)
    assert review.position_label.text().startswith("plan ")


def test_annotators_tab_shows_progress_and_gold_accuracy(qtbot, planned, make_window):
    path, plan, mine, keys, items = planned
    with open_workspace(path) as ws:
        for who in ("ann", "ben"):
            queue = team_plans.queue(ws, plan.id, who)
            for n, slot in enumerate(queue[: 8 if who == "ann" else 12]):
                item = items[slot.item_id]
                right = slot.gold and (who == "ann" or n % 2)
                if slot.gold and right and item.answer != keys[item.id]:
                    reviews.add_review(ws, item.id, who, "wrong_answer", corrected_answer=keys[item.id])
                elif slot.gold and not right:
                    reviews.add_review(ws, item.id, who, "ambiguous")
                else:
                    reviews.add_review(ws, item.id, who, "ok")
        expected = team_plans.progress(ws, plan.benchmark_id)
    # The lead's view (not blind): every person's line.
    window = make_window(path)
    at_1024(window)
    window.show_view("annotators")
    view = window.view("annotators")
    view.refresh()
    rows = {r[0]: r for r in view.plan_model.rows}
    assert set(rows) == {"ann", "ben", "cara"}
    for p in expected.people:
        row = rows[p.annotator]
        assert row[1:4] == (str(p.planned), str(p.done), str(p.left))
        assert row[5] == str(p.gold)
        if p.interval is not None:
            assert row[6] == f"{p.accuracy:.2f}" and row[7] == f"{p.interval[0]:.2f}–{p.interval[1]:.2f}"
        assert (row[8] != "") == p.flagged
    assert "planned overlap" in view.summary.text()
    view.grab().save(str(shots() / "annotators_lead.png"))

    # Blind mode: the statistics stay covered; only my own progress and gold accuracy show.
    window.ctx.update_prefs(blind=True)
    view.refresh()
    assert view.cover.hidden and view.mine.isVisible()
    me = expected.person("ann")
    assert view.mine_label.text().startswith(f"Your plan: {me.done}/{me.planned} done, {me.left} left · gold")
    assert "ben" not in view.mine_label.text()
    view.grab().save(str(shots() / "annotators_blind.png"))
