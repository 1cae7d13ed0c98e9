"""Appearance: light or dark theme (following the system by default) and font scaling, for the whole app and its
charts. This module is the one home of the app's colours: every colour is written once, in its light form (the
named colours below, the stylesheet in gui/style.py), and the dark theme maps each of them (DARK), so a colour added
anywhere needs its dark twin here.

A colour set in code must follow a live theme switch, so it is never applied as a finished value:
- a widget's own style sheet goes through `set_style`, a label's rich text with colours through `set_rich_text`, a
  tree item's text colour through `set_foreground` — each keeps the light original, and `apply_appearance` applies
  it again in the new theme;
- an item model answers ForegroundRole with `colour(light)`, read when the cell is painted;
- charts are drawn again (the views' `redraw`) with `chart_style`'s colours.

The chosen theme is kept on the QApplication (a dynamic property), not in a module variable: every window of the
process shares one palette anyway."""

from __future__ import annotations

import re

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QFont, QGuiApplication, QPalette
from PySide6.QtWidgets import QApplication, QLabel, QTreeWidget, QTreeWidgetItem, QTreeWidgetItemIterator, QWidget

from gui.prefs import THEMES as THEMES  # system | light | dark: the preference's values

SCALES = (0.8, 0.9, 1.0, 1.1, 1.25, 1.5, 1.75)  # View › Larger / Smaller text steps through these
BASE_POINTS = 10
PROPERTY = "vlmdeskTheme"
LIGHT_STYLE = "vlmdeskLightStyle"  # widget property: its own style sheet, in light colours
LIGHT_TEXT = "vlmdeskLightText"  # label property: its rich text, in light colours…
SHOWN_TEXT = "vlmdeskShownText"  # …and as shown (a plain setText since then means the light text is gone)
LIGHT_FOREGROUND = int(Qt.ItemDataRole.UserRole) + 0x7E00  # tree item data, per column: its text colour, light

# Named colours (light; DARK has their twins). Text colours are at least 4.5:1 on the backgrounds they are used on,
# in both themes (tests/gui/test_theme_contrast_gui.py measures the painted pixels).
TEXT = "#202124"
MUTED = "#5f6368"  # secondary text (#80868b was 3.7:1 on white)
ACCENT = "#1a73e8"
RIGHT = "#1e7d32"
WRONG = "#b3261e"
PENDING = "#8a6d00"
KEY_BORDER, KEY_BACKGROUND, KEY_BADGE = "#34a853", "#e6f4ea", "#1e7d32"  # the answer key's option row
IMAGE_BACKGROUND, IMAGE_TEXT = "#2b2d31", "#a0a4ab"  # the image area is dark in both themes, like a viewer

# Light colour → dark colour. Backgrounds become dark greys, text light greys, accents lighter tints.
DARK = {
    "#ffffff": "#202124",
    "#f8f9fa": "#27292d",
    "#f1f3f4": "#303134",
    "#eceff1": "#3c4043",
    "#dadce0": "#5f6368",
    "#202124": "#e8eaed",
    "#3c4043": "#dadce0",
    "#5f6368": "#bdc1c6",
    "#80868b": "#9aa0a6",
    "#9aa0a6": "#80868b",
    "#1a73e8": "#8ab4f8",
    "#1765cc": "#aecbfa",
    "#174ea6": "#d2e3fc",
    "#d2e3fc": "#394457",
    "#c6dafc": "#394457",
    "#e8f0fe": "#1e2a3d",
    "#b6cdfb": "#394457",
    "#1a3d7c": "#d2e3fc",
    "#f3f8ff": "#1e2a3d",
    "#e6f4ea": "#1e3a2a",
    "#1e7d32": "#81c995",
    "#34a853": "#5bb974",
    "#fff4e0": "#3d2e12",
    "#5c3a00": "#fdd663",
    "#8a4b00": "#fcad70",
    "#fdecea": "#3c1f1d",
    "#7f1d1d": "#f6aea9",
    "#f5b5ae": "#8c3a33",
    "#b3261e": "#f28b82",
    "#8a6d00": "#fdd663",
}
_HEX = re.compile(r"#[0-9a-fA-F]{6}\b")
_POINTS = re.compile(r"(\d+(?:\.\d+)?)pt\b")


def resolved(theme: str) -> str:
    """ "light" or "dark": `theme`, or for "system" what the desktop asks for (light when it says nothing)."""
    if theme in ("light", "dark"):
        return theme
    hints = QGuiApplication.styleHints()
    return "dark" if hints is not None and hints.colorScheme() == Qt.ColorScheme.Dark else "light"


def is_dark() -> bool:
    app = QApplication.instance()
    return app is not None and app.property(PROPERTY) == "dark"


def tone(light: str) -> str:
    """The current theme's colour for a colour written in its light form."""
    return DARK.get(light.lower(), light) if is_dark() else light


def colour(light: str) -> QColor:
    return QColor(tone(light))


def set_style(widget: QWidget, css: str) -> None:
    """`widget`'s own style sheet, written in light colours: applied in the current theme, and again at a switch."""
    widget.setProperty(LIGHT_STYLE, css)
    widget.setStyleSheet(themed(css))


def set_rich_text(label: QLabel, text: str) -> None:
    """A label's rich text with colours in it (light), applied in the current theme, and again at a switch."""
    label.setProperty(LIGHT_TEXT, text)
    label.setProperty(SHOWN_TEXT, themed(text))
    label.setText(themed(text))


def set_foreground(item: QTreeWidgetItem, column: int, light: str) -> None:
    """A tree item's text colour (light), in the current theme, and again at a switch."""
    item.setData(column, LIGHT_FOREGROUND, light)
    item.setForeground(column, colour(light))


def retheme() -> None:
    """Apply every colour set through this module again, in the theme now chosen."""
    for widget in QApplication.allWidgets():
        css = widget.property(LIGHT_STYLE)
        if isinstance(css, str):
            widget.setStyleSheet(themed(css))
        text = widget.property(LIGHT_TEXT)
        if isinstance(text, str) and isinstance(widget, QLabel) and widget.text() == widget.property(SHOWN_TEXT):
            set_rich_text(widget, text)
        if isinstance(widget, QTreeWidget):
            it = QTreeWidgetItemIterator(widget)
            while (item := it.value()) is not None:
                for column in range(item.columnCount()):
                    light = item.data(column, LIGHT_FOREGROUND)
                    if isinstance(light, str):
                        item.setForeground(column, colour(light))
                it += 1


def themed(css: str) -> str:
    """A style sheet written in light colours, in the current theme's."""
    if not is_dark():
        return css
    css = _HEX.sub(lambda m: DARK.get(m.group(0).lower(), m.group(0)), css)
    return css.replace("color: white", "color: #202124")  # on the accents, now light tints


def scaled(css: str, scale: float) -> str:
    """Every point size of a style sheet times `scale`."""
    if scale == 1.0:
        return css
    return _POINTS.sub(lambda m: f"{float(m.group(1)) * scale:.1f}pt", css)


def palette(dark: bool) -> QPalette:
    p = QPalette()
    light = {
        QPalette.ColorRole.Window: "#ffffff",
        QPalette.ColorRole.Base: "#ffffff",
        QPalette.ColorRole.AlternateBase: "#f8f9fa",
        QPalette.ColorRole.Text: "#202124",
        QPalette.ColorRole.WindowText: "#202124",
        QPalette.ColorRole.Button: "#ffffff",
        QPalette.ColorRole.ButtonText: "#202124",
        QPalette.ColorRole.Highlight: "#d2e3fc",
        QPalette.ColorRole.HighlightedText: "#202124",
        QPalette.ColorRole.ToolTipBase: "#202124",
        QPalette.ColorRole.ToolTipText: "#ffffff",
        QPalette.ColorRole.PlaceholderText: MUTED,
        QPalette.ColorRole.Link: "#1a73e8",
    }
    for role, colour in light.items():
        if dark and role in (QPalette.ColorRole.ToolTipBase, QPalette.ColorRole.ToolTipText):
            colour = {"#202124": "#e8eaed", "#ffffff": "#202124"}[colour]  # tooltips: light on dark → the reverse
        elif dark:
            colour = DARK.get(colour, colour)
        p.setColor(role, QColor(colour))
    return p


def chart_style(dark: bool) -> None:
    """matplotlib's defaults for the charts drawn in this process (the GUI's; the CLI draws with its own)."""
    import matplotlib

    fg, bg, grid = ("#e8eaed", "#202124", "#5f6368") if dark else ("#202124", "#ffffff", "#b0b0b0")
    matplotlib.rcParams.update(
        {
            "figure.facecolor": bg,
            "axes.facecolor": bg,
            "savefig.facecolor": bg,
            "text.color": fg,
            "axes.labelcolor": fg,
            "axes.edgecolor": grid if dark else "#000000",
            "xtick.color": fg,
            "ytick.color": fg,
            "grid.color": grid,
            "legend.facecolor": bg,
            "legend.edgecolor": grid,
        }
    )


def apply_appearance(app: QApplication, theme: str = "system", scale: float = 1.0) -> str:
    """Palette, stylesheet, font size and chart colours for `theme` at `scale`; returns the theme used."""
    from gui.style import IMAGE_AREA, STYLESHEET

    used = resolved(theme)
    app.setProperty(PROPERTY, used)
    app.setPalette(palette(used == "dark"))
    font = QFont(app.font())
    font.setPointSizeF(BASE_POINTS * scale)
    app.setFont(font)
    app.setStyleSheet(scaled(themed(STYLESHEET) + IMAGE_AREA, scale))
    retheme()
    chart_style(used == "dark")
    return used


def next_scale(scale: float, step: int) -> float:
    """The next font scale up (step 1) or down (-1) from `scale`, within SCALES."""
    nearest = min(range(len(SCALES)), key=lambda i: abs(SCALES[i] - scale))
    return SCALES[max(0, min(len(SCALES) - 1, nearest + step))]
