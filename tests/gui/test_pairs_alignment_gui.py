"""Alignment › Pairs (gui/pairs_alignment_view.py): `vlmdesk align pairs` in the app — the figures and each model's two
ratings side by side, chosen by benchmark and judge from the keyboard, whole at 1024×700 with text ×1.25, and hidden
(nothing computed) in blind mode, where a judge's verdict on a pair the annotator has not voted must not show."""

from __future__ import annotations

import json
import os
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from annotation.pair_alignment import pair_alignment
from db import catalog
from db.workspace import open_workspace
from gui.pairs_alignment_view import APP_BOOTSTRAP
from tests.annotation.test_pair_alignment import cli, fair_judge, first_judge, make_pairs_ws

SHOTS = Path(os.environ.get("VLMDESK_SHOTS", "/tmp/i39/G"))


def _settle():
    for _ in range(3):
        QApplication.instance().processEvents()


def _judged(tmp_path, serve, capsys):
    ws_path = make_pairs_ws(tmp_path, serve, capsys, items=6, per_item=3)
    keys = []
    for name, respond, extra in (("fair", fair_judge, ["--both-orders"]), ("first", first_judge, [])):
        server = serve(respond=respond)
        code, out, err = cli(
            capsys, ws_path, "judge-pairs", "--bench", "o", "--judge", f"openai:{name}@{server.url}?retries=0", *extra,
            "--json",
        )  # fmt: skip
        assert code == 0, err
        keys.append(json.loads(out)["set"])
    return ws_path, keys


def test_the_pairs_page_shows_align_pairs_and_each_models_two_ratings(qtbot, tmp_path, serve, capsys, make_window):
    ws_path, (fair, first) = _judged(tmp_path, serve, capsys)
    window = make_window(ws_path)
    window.select_benchmark("o")
    window.show_view("alignment")
    view = window.view("alignment")
    view.inner.setCurrentWidget(view.pairs)
    panel = view.pairs
    _settle()
    assert panel.isVisible() and panel.bench.currentData() == "o"
    assert [panel.judge.itemData(i) for i in range(panel.judge.count())] == [first, fair]  # the latest first
    # Chosen from the keyboard: Alt+J reaches the judge list, a Down key picks the fair judge.
    qtbot.keyClick(window, Qt.Key_J, Qt.KeyboardModifier.AltModifier)
    assert panel.judge.hasFocus()
    qtbot.keyClick(panel.judge, Qt.Key_Down)
    assert panel.judge.currentData() == fair
    with open_workspace(ws_path) as ws:
        want = pair_alignment(ws, catalog.benchmark_by_name(ws, "o"), fair, resamples=APP_BOOTSTRAP)
    assert panel.report == want
    rows = {r[0]: r for r in panel.figures.rows}
    assert rows["Accuracy (left / right / tie / both bad)"][1:] == (
        f"{100 * want.accuracy.value:.1f} %",
        f"{100 * want.accuracy.wilson_95[0]:.1f}–{100 * want.accuracy.wilson_95[1]:.1f} % (Wilson)",
        f"{want.accuracy.k} of {want.accuracy.n}",
    )
    assert rows["Cohen's κ, four verdicts"][1] == f"{want.kappa:.3f}"
    assert rows["Same verdict in both orders"][3] == f"{want.consistency.k} of {want.consistency.n}"
    assert rows["Spearman ρ of the ratings"][1:] == (f"{want.spearman:.3f}", "none", "4")
    models = [(r[0], r[1], r[2], r[3], r[4]) for r in panel.models.rows]
    assert models == [
        (m.model, f"{m.judge:.1f}", str(m.judge_rank), f"{m.votes:.1f}", str(m.votes_rank)) for m in want.models
    ]
    assert [m[0].split("@")[0] for m in models] == [f"openai:m{i}" for i in range(1, 5)]  # by the votes' rating
    assert "both orders" in panel.summary.text() and "6 undecided" not in panel.summary.text()
    # Judging is offered where its figures are: the page's button is Workspace › Judge arena pairs… itself.
    from PySide6.QtWidgets import QPushButton

    action = window.menu_action("Judge arena pairs…")
    action.triggered.disconnect()  # its dialog is modal: here only that the button reaches the action
    asked = []
    action.triggered.connect(lambda *_: asked.append(True))
    next(b for b in panel.findChildren(QPushButton) if b.text() == "Judge pairs…").click()
    assert asked == [True]

    # Fits 1024×700 with text two steps larger; every figure's title and value whole. Looked at: the PNGs.
    try:
        window.set_appearance(font_scale=1.25)
        window.resize(1024, 700)
        _settle()
        hint = window.minimumSizeHint()
        assert hint.width() <= 1024 and hint.height() <= 700 and window.width() <= 1024
        table = panel.figures_view
        table.resizeColumnsToContents()
        assert (
            sum(table.columnWidth(c) for c in range(4)) <= table.viewport().width() + 2 or table.horizontalScrollBar()
        )
        SHOTS.mkdir(parents=True, exist_ok=True)
        window.grab().save(str(SHOTS / "pairs-fair-1024x700.png"))
        panel.judge.setCurrentIndex(panel.judge.findData(first))
        _settle()
        assert panel.report.consistency is None and panel.report.first_choices.value == 1.0
        window.grab().save(str(SHOTS / "pairs-first-1024x700.png"))
    finally:
        window.set_appearance(font_scale=1.0)


def test_blind_mode_hides_the_pairs_page_and_computes_nothing(qtbot, tmp_path, serve, capsys, make_window, monkeypatch):
    ws_path, _ = _judged(tmp_path, serve, capsys)
    import gui.pairs_alignment_view as page

    computed = []
    real = page.PairsPanel.redraw
    monkeypatch.setattr(page.PairsPanel, "redraw", lambda self: (computed.append(1), real(self)))
    window = make_window(ws_path, blind=True)
    window.select_benchmark("o")
    window.show_view("alignment")
    view = window.view("alignment")
    view.inner.setCurrentWidget(view.pairs)
    _settle()
    # The annotator "ann" has voted nothing here: no verdict of the judge, no vote, no rating may show.
    assert view.cover.hidden and not view.pairs.isVisible()
    assert computed == [] and view.pairs.report is None and view.pairs.figures.rows == []
    texts = " ".join(w.text() for w in window.findChildren(type(view.pairs.summary)) if w.isVisible())
    assert "openai:m1" not in texts and "Accuracy" not in texts
    window.grab().save(str(SHOTS / "pairs-blind.png"))
    window.blind_action.setChecked(False)  # blind off: drawn
    _settle()
    assert view.pairs.isVisible() and view.pairs.report is not None and computed
