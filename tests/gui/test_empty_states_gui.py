"""Empty states that lead somewhere: an empty workspace says why each view is empty and its buttons do what they
offer (the demo is imported: benchmarks in SQLite; a run is started from the Runs tab)."""

from PySide6.QtCore import Qt

from db import catalog, open_workspace


def _empty(view):
    return view.empty if view.empty.isVisible() else None


def test_an_empty_workspace_offers_the_demo_and_the_next_steps(qtbot, tmp_path, make_window):
    window = make_window(tmp_path / "empty.sqlite")
    browse, review, results = (window.view(n) for n in ("browse", "review", "results"))
    window.show_view("browse")
    assert _empty(browse) and _empty(browse).title.text() == "No benchmark yet"
    assert [b.text() for b in browse.empty.buttons] == ["Import a benchmark…", "Load the demo benchmarks"]
    window.show_view("review")
    assert _empty(review) and not any(b.isEnabled() for b in review.verdict_buttons.values())
    assert "disabled: No benchmark chosen" in next(iter(review.verdict_buttons.values())).toolTip()
    window.show_view("runs")
    form = window.view("runs").form
    assert not form.start.isEnabled() and "Import a benchmark first" in form.start.toolTip()
    window.show_view("results")
    assert _empty(results) and [b.text() for b in results.empty.buttons] == ["Start a run", "Add a model"]
    window.show_view("alignment")
    assert _empty(window.view("alignment"))
    queues, annotators = window.view("queues"), window.view("annotators")
    # Queues and Annotators said "every flag has your decision" / "No benchmark chosen" with nothing to do.
    window.show_view("queues")
    assert _empty(queues.qc) and queues.qc.empty.title.text() == "No benchmark yet"
    window.show_view("annotators")
    assert _empty(annotators) and annotators.empty.buttons[1].text() == "Load the demo benchmarks"

    # The demo button imports the demo (the same `vlmdesk demo`, in a child process); the views fill.
    window.show_view("browse")
    qtbot.mouseClick(browse.empty.buttons[1], Qt.LeftButton)
    qtbot.waitUntil(lambda: window.ctx.benchmark is not None, timeout=120_000)
    with open_workspace(tmp_path / "empty.sqlite") as ws:
        assert {b.name for b in catalog.list_benchmarks(ws)} == {"demo", "demo-pope", "demo-open"}
    assert not browse.empty.isVisible() and not review.empty.isVisible() and annotators.empty.isHidden()
    assert window.ctx.model.total == 30
    window.show_view("queues")
    qc_page = queues.qc
    assert qc_page.empty.isVisible() and "No quality-control flags yet" == qc_page.empty.title.text()

    # "Start a run" leads to the Runs tab, whose form can now start one.
    window.show_view("results")
    qtbot.mouseClick(results.empty.buttons[0], Qt.LeftButton)
    assert window.tabs.currentWidget() is window.view("runs") and form.start.isEnabled()
