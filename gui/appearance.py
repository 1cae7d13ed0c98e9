"""Appearance: light or dark theme (following the system by default) and font scaling, for the whole app and its
charts. The one stylesheet (gui/style.py) is written in light colours; the dark theme maps each of them (DARK), so
a colour added there needs its dark twin here. Widget-level style sheets go through `themed()` for the same map.

The chosen theme is kept on the QApplication (a dynamic property), not in a module variable: every window of the
process shares one palette anyway."""

from __future__ import annotations

import re

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QFont, QGuiApplication, QPalette
from PySide6.QtWidgets import QApplication

from gui.prefs import THEMES as THEMES  # system | light | dark: the preference's values

SCALES = (0.8, 0.9, 1.0, 1.1, 1.25, 1.5, 1.75)  # View › Larger / Smaller text steps through these
BASE_POINTS = 10
PROPERTY = "vlmdeskTheme"

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
        QPalette.ColorRole.PlaceholderText: "#80868b",
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
    from gui.style import STYLESHEET

    used = resolved(theme)
    app.setProperty(PROPERTY, used)
    app.setPalette(palette(used == "dark"))
    font = QFont(app.font())
    font.setPointSizeF(BASE_POINTS * scale)
    app.setFont(font)
    app.setStyleSheet(scaled(themed(STYLESHEET), scale))
    chart_style(used == "dark")
    return used


def next_scale(scale: float, step: int) -> float:
    """The next font scale up (step 1) or down (-1) from `scale`, within SCALES."""
    nearest = min(range(len(SCALES)), key=lambda i: abs(SCALES[i] - scale))
    return SCALES[max(0, min(len(SCALES) - 1, nearest + step))]
