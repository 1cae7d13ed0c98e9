"""Dark mode and font scaling from the View menu (remembered in preferences.json, charts drawn in the theme's
colours), and F1 on every tab showing that tab's keys."""

import json

from matplotlib.colors import to_hex
from PySide6.QtCore import Qt
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QApplication

from gui.help_overlay import HelpOverlay


def test_dark_mode_and_text_size_are_applied_and_remembered(qtbot, demo_ws, make_window, tmp_path):
    window = make_window(demo_ws)
    app = QApplication.instance()
    assert window.prefs.theme == "system" and window.theme_actions["system"].isChecked()
    base = app.font().pointSizeF()
    try:
        window.theme_actions["dark"].trigger()
        assert app.palette().color(QPalette.ColorRole.Window).lightness() < 60
        assert "#202124" in app.styleSheet() and window.theme_actions["dark"].isChecked()
        window.show_results([1])
        qtbot.waitUntil(lambda: not window.view("results").computing, timeout=10_000)  # reports come from the worker
        figure = window.view("results").chart.figure
        assert to_hex(figure.get_facecolor()) == "#202124"  # the chart was drawn again, dark
        assert to_hex(figure.axes[0].title.get_color()) == "#e8eaed"
        window.scale_text(1)
        assert app.font().pointSizeF() > base and "11.0pt" in app.styleSheet()  # 10pt × 1.1
        saved = json.loads((tmp_path / "config" / "preferences.json").read_text())
        assert saved["theme"] == "dark" and saved["font_scale"] == 1.1
    finally:
        window.set_appearance(theme="light", font_scale=1.0)
    assert app.palette().color(QPalette.ColorRole.Window).lightness() > 200 and app.font().pointSizeF() == base


def test_f1_shows_each_tabs_keys(qtbot, demo_ws, make_window):
    from gui.tab_help import TAB_HELP

    window = make_window(demo_ws)
    # Every tab but Review (its own fuller list, checked below) has its own rows: a new tab must bring its keys.
    assert set(window.views) - {"review"} <= set(TAB_HELP), set(window.views) - set(TAB_HELP)
    for name, expected in (
        ("browse", "Open the item in Review"),
        ("queues", "Settle with your own verdict"),
        ("runs", "Run again (--new)"),
        ("results", "Click a bar"),
        ("annotators", "κ"),
        ("arena", "Take back my last vote"),
        ("alignment", "Build an adjudication set"),
        ("models", "Load the model and ask it"),
    ):
        window.show_view(name)
        qtbot.keyClick(window.tabs.currentWidget(), Qt.Key_F1)
        overlays = [o for o in window.view(name).findChildren(HelpOverlay) if o.property("tabHelp")]
        assert len(overlays) == 1 and overlays[0].isVisible(), name
        assert expected in overlays[0].card.text() and "Ctrl+1" in overlays[0].card.text()
        qtbot.keyClick(overlays[0], Qt.Key_Escape)
        assert not overlays[0].isVisible()
    window.show_view("review")
    qtbot.keyClick(window.view("review"), Qt.Key_F1)
    assert window.view("review").help.isVisible()
    text = window.view("review").help.card.text()
    assert text.count(">Verdicts<") == 1


def test_the_clicked_bar_is_outlined_visibly_in_dark_mode(qtbot, demo_ws, make_window):
    # The outline was #202124 in both themes: invisible on the dark chart background.
    window = make_window(demo_ws)
    try:
        window.set_appearance(theme="dark", font_scale=1.0)
        window.show_results([1])
        results = window.view("results")
        qtbot.waitUntil(lambda: not results.computing, timeout=10_000)
        results.show_items_of({"run": "1", "level": "all", "strategy": "circular"})
        outlined = [b for b in results.chart.bars() if b.get_linewidth() > 0]
        background = to_hex(results.chart.figure.get_facecolor())
        assert len(outlined) == 1 and background == "#202124"
        assert to_hex(outlined[0].get_edgecolor()) == "#e8eaed"
    finally:
        window.set_appearance(theme="light", font_scale=1.0)
