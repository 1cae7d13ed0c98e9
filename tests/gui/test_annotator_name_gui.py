"""The app's annotator prompt follows annotation/names.py, the rule every stored name follows: a name that could
not be stored is refused at the prompt (not at the first verdict), and a good one is stored as records store it."""

from __future__ import annotations


def test_the_annotator_prompt_refuses_what_a_record_could_not_store(qtbot, demo_ws, make_window, monkeypatch):
    import gui.main_window as main_window

    window = make_window(demo_ws)
    answers = iter([("ana\u202e", True), ("x" * 101, True), ("  Jose\u0301\u00a0Luis ", True)])
    monkeypatch.setattr(main_window.QInputDialog, "getText", lambda *a, **k: next(answers))
    window.change_annotator()
    assert window.ctx.prefs.annotator == "ann"
    assert window.message_bar.isVisible() and "U+202E" in window.message_bar.label.text()
    window.change_annotator()
    assert window.ctx.prefs.annotator == "ann" and "longer than 100" in window.message_bar.label.text()
    window.change_annotator()
    assert window.ctx.prefs.annotator == "Jos\u00e9\u00a0Luis"  # NFC, trimmed, the inner NBSP kept
