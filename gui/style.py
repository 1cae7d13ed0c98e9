"""One look for the whole app: Fusion, a font, and the stylesheet, written in light colours (gui/appearance.py maps
them to the dark theme's)."""

from __future__ import annotations

from PySide6.QtGui import QFont, QFontDatabase
from PySide6.QtWidgets import QApplication

from gui.appearance import ACCENT, IMAGE_BACKGROUND

FONT_FAMILIES = ("Inter", "Segoe UI", "Noto Sans", "Cantarell", "DejaVu Sans")

STYLESHEET = f"""
QMainWindow, QWidget {{ font-size: 10pt; }}
QLabel#itemHeader {{ color: #5f6368; font-size: 9.5pt; }}
QLabel#hint {{ background: #f1f3f4; color: #3c4043; border-left: 3px solid #9aa0a6; padding: 6px 10px;
               border-radius: 3px; }}
QToolButton#hintToggle {{ color: #5f6368; border: none; padding: 0; font-size: 9.5pt; }}
QLabel#question {{ font-size: 12.5pt; font-weight: 600; color: #202124; padding: 2px 0 4px 0; }}
QLabel#pageTitle {{ font-size: 13pt; font-weight: 600; color: #202124; }}
QLabel#sectionTitle {{ font-weight: 600; color: #3c4043; margin-top: 6px; }}
QLabel#muted, QLabel#keyNote, QLabel#filterLabel {{ color: #5f6368; }}
QLabel#keyHint {{ color: #5f6368; font-family: "DejaVu Sans Mono"; font-size: 9pt; }}
QLabel#saved {{ color: #1e7d32; font-weight: 600; }}
QLabel#armed {{ color: #8a4b00; background: #fff4e0; padding: 4px 8px; border-radius: 3px; }}
QLabel#flagNote {{ background: #fff4e0; color: #5c3a00; padding: 6px 10px; border-radius: 3px; }}
QLabel#response {{ background: #f8f9fa; border: 1px solid #dadce0; border-radius: 4px; padding: 10px 12px;
                   font-family: "DejaVu Sans Mono"; font-size: 10pt; }}
QLabel#optionsText {{ font-size: 10.5pt; }}
QFrame#revealBox {{ background: #f3f8ff; border: 1px solid #c6dafc; border-radius: 4px; }}
QFrame#optionRow {{ background: #ffffff; border: 1px solid #dadce0; border-radius: 5px; }}
QLabel#optionBadge {{ background: #f1f3f4; color: #3c4043; border-radius: 14px; font-weight: 700; }}
QLabel#optionTag {{ color: #1e7d32; font-weight: 600; font-size: 9pt; }}
QWidget#filterBar {{ background: #f8f9fa; border-bottom: 1px solid #dadce0; }}
QWidget#reviewSide {{ background: #ffffff; }}
QPushButton {{ padding: 5px 12px; border: 1px solid #dadce0; border-radius: 4px; background: #ffffff; }}
QPushButton:hover {{ background: #f1f3f4; }}
QPushButton:disabled {{ color: #9aa0a6; }}
QPushButton#verdict_ok, QPushButton#primary {{ background: {ACCENT}; color: white; border-color: {ACCENT};
                                              font-weight: 600; }}
QPushButton#verdict_ok:hover, QPushButton#primary:hover {{ background: #1765cc; }}
QPushButton#verdict_ok:disabled, QPushButton#primary:disabled {{ background: #c6dafc; border-color: #c6dafc; }}
QPushButton#link {{ border: none; background: transparent; color: #1a73e8; padding: 2px 8px; }}
QPushButton#link:hover {{ text-decoration: underline; }}
QTableView {{ gridline-color: #eceff1; selection-background-color: #d2e3fc; selection-color: #202124; }}
QHeaderView::section {{ background: #f8f9fa; border: none; border-bottom: 1px solid #dadce0; padding: 4px 6px;
                        font-weight: 600; color: #3c4043; }}
QTabWidget::pane {{ border: 1px solid #dadce0; border-radius: 3px; }}
QTabBar::tab {{ padding: 5px 10px; }}
QTabBar::tab:selected {{ font-weight: 600; }}
QListWidget#queueList, QListWidget#benchList {{ border: none; background: #f8f9fa; font-size: 10.5pt; }}
QListWidget#queueList::item, QListWidget#benchList::item {{ padding: 8px 10px; border-bottom: 1px solid #eceff1; }}
QListWidget#queueList::item:selected, QListWidget#benchList::item:selected {{ background: #d2e3fc;
                                                                            color: #174ea6; }}
QFrame#helpOverlay {{ background: rgba(32, 33, 36, 150); }}
QLabel#helpCard {{ background: #ffffff; border-radius: 8px; padding: 18px 24px; }}
QStatusBar QLabel {{ padding: 0 8px; color: #3c4043; }}
"""


def apply_style(app: QApplication) -> None:
    """Fusion and the first font family found; colours and sizes are gui/appearance.py's (light until the window
    applies the preferences)."""
    from gui.appearance import apply_appearance

    app.setStyle("Fusion")
    families = set(QFontDatabase.families())
    family = next((f for f in FONT_FAMILIES if f in families), None)
    if family:
        app.setFont(QFont(family, 10))
    apply_appearance(app, "light")


# The image area (its bar of zoom buttons) is dark in both themes, like an image viewer: never mapped to the dark theme.
IMAGE_AREA = f"""
QWidget#imageBar {{ background: {IMAGE_BACKGROUND}; }}
QLabel#imageBarText {{ color: #c4c7cc; }}
QPushButton#flat {{ border: none; background: transparent; color: #e8eaed; padding: 2px 8px; }}
QPushButton#flat:hover {{ background: #3c4043; }}
"""
