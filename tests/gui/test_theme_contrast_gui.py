"""Every colour the app sets follows a live theme switch (issue 22 §4): light → dark → light while the window runs,
each tab and the coloured states (the answer key, a pick, the message bar, the blind badge, charts) checked on the
pixels actually painted, with WCAG's contrast ratio of at least 4.5 for text."""

from __future__ import annotations

import re

import numpy as np
import pytest
from matplotlib.backends.backend_qtagg import FigureCanvasQTAgg
from matplotlib.colors import to_rgb
from matplotlib.text import Text
from PySide6.QtCore import QRect, Qt
from PySide6.QtGui import QImage
from PySide6.QtWidgets import (
    QAbstractButton,
    QAbstractItemView,
    QApplication,
    QComboBox,
    QHeaderView,
    QLabel,
    QLineEdit,
    QTabBar,
    QWidget,
)

from gui.item_panel import OptionRow

TEXT_RATIO = 4.5  # WCAG 2.1 AA, normal text
_INLINE = re.compile(r"color:\s*(#[0-9a-fA-F]{6})")


def luminance(rgb) -> float:
    """WCAG 2.1 relative luminance of an (r, g, b) in 0–255."""
    channels = [c / 255 for c in rgb]
    r, g, b = (c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a, b) -> float:
    la, lb = sorted((luminance(a), luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def _hex_rgb(text: str):
    return tuple(round(c * 255) for c in to_rgb(text))


def _pixels(window) -> np.ndarray:
    image = window.grab().toImage().convertToFormat(QImage.Format.Format_RGB32)
    raw = np.frombuffer(image.constBits(), np.uint8).reshape(image.height(), image.bytesPerLine() // 4, 4)
    return raw[:, : image.width(), 2::-1].copy()  # BGRA in memory → RGB, copied before the image goes


def _painted(pixels: np.ndarray, rect: QRect):
    """The background (the most frequent colour) and the text (the pixel farthest from it in luminance) painted in
    `rect`, or None when nothing but one colour is there. Hinted glyphs reach the full text colour in their stems."""
    crop = pixels[max(rect.top(), 0) : rect.bottom() + 1, max(rect.left(), 0) : rect.right() + 1].reshape(-1, 3)
    if len(crop) == 0:
        return None
    colours, counts = np.unique(crop, axis=0, return_counts=True)
    if len(colours) < 2:
        return None
    background = colours[counts.argmax()]
    linear = colours / 255.0
    linear = np.where(linear <= 0.04045, linear / 12.92, ((linear + 0.055) / 1.055) ** 2.4)
    lum = linear @ np.array([0.2126, 0.7152, 0.0722])
    text = colours[np.abs(lum - luminance(background)).argmax()]
    return tuple(int(v) for v in background), tuple(int(v) for v in text)


def _in_window(window, widget: QWidget, rect: QRect | None = None) -> QRect:
    rect = rect if rect is not None else widget.visibleRegion().boundingRect()
    return QRect(widget.mapTo(window, rect.topLeft()), rect.size())


def _hex(rgb) -> str:
    return "#" + "".join(f"{v:02x}" for v in rgb)


def _text_rects(window, w: QWidget):
    """(what, rect in the window, rich text or "") for every text `w` paints."""
    name = f"{type(w).__name__}#{w.objectName()}"
    if isinstance(w, QLabel):
        if w.text().strip() and w.pixmap().isNull():
            yield f"{name} {w.text()[:40]!r}", _in_window(window, w), w.text()
    elif isinstance(w, QTabBar):
        for i in range(w.count()):
            yield f"tab {w.tabText(i)!r}", _in_window(window, w, w.tabRect(i)), ""
    elif isinstance(w, (QAbstractButton, QLineEdit, QComboBox)):
        text = w.currentText() if isinstance(w, QComboBox) else w.text()
        if isinstance(w, QLineEdit) and not text:
            text = w.placeholderText()
        if text.strip():
            yield f"{name} {text[:40]!r}", _in_window(window, w), ""
    elif isinstance(w, QHeaderView) and w.model() is not None:
        area = w.viewport().rect()
        for s in range(min(w.count(), 30)):
            pos, size = w.sectionViewportPosition(s), w.sectionSize(s)
            across = w.orientation() == Qt.Orientation.Horizontal
            rect = (QRect(pos, 0, size, w.height()) if across else QRect(0, pos, w.width(), size)) & area
            if not w.isSectionHidden(s) and not rect.isEmpty():
                yield f"{name} section {s}", _in_window(window, w.viewport(), rect), ""
    elif isinstance(w, QAbstractItemView) and w.model() is not None:
        model, area = w.model(), w.viewport().rect()
        try:
            columns = model.columnCount()
        except TypeError:  # list models keep columnCount private: one column
            columns = 1
        for r in range(min(model.rowCount(), 40)):
            for c in range(columns):
                rect = w.visualRect(model.index(r, c)) & area
                if not rect.isEmpty():
                    yield (
                        f"{name} cell {r},{c} {model.index(r, c).data()!r:.40}",
                        _in_window(window, w.viewport(), rect),
                        "",
                    )
    elif isinstance(w, FigureCanvasQTAgg):
        w.figure.canvas.draw()
        height = w.height()
        for t in w.figure.findobj(Text):
            if t.get_visible() and t.get_text().strip():
                box = t.get_window_extent()  # display pixels, from the bottom left
                rect = QRect(int(box.x0), int(height - box.y1), int(box.width) + 1, int(box.height) + 1) & w.rect()
                if not rect.isEmpty():
                    yield f"chart text {t.get_text()[:30]!r}", _in_window(window, w, rect), ""


def low_contrast(window) -> list[str]:
    """Every text on screen whose painted contrast is below TEXT_RATIO, described."""
    pixels = _pixels(window)
    found: list[str] = []
    for w in window.findChildren(QWidget):
        if not w.isVisible() or w.visibleRegion().isEmpty() or not w.isEnabled():
            continue  # WCAG exempts inactive controls: a disabled button may be faint
        for what, rect, rich in _text_rects(window, w):
            painted = _painted(pixels, rect)
            if painted is None:
                continue
            background, text = painted
            for colour in [text, *(_hex_rgb(c) for c in _INLINE.findall(rich))]:
                ratio = contrast(colour, background)
                if ratio < TEXT_RATIO:
                    found.append(f"{what}: {ratio:.2f} ({_hex(colour)} on {_hex(background)})")
    return found


def _states(window, qtbot):
    """Yield (description) after putting the window in each state worth a look."""
    app = QApplication.instance()
    for name in window.views:
        window.show_view(name)
        app.processEvents()
        yield f"tab {name}"
    review = window.view("review")
    window.show_view("review")
    review.show_row(0)
    app.processEvents()
    yield "review: the answer key"
    window.show_results([1])
    results = window.view("results")
    qtbot.waitUntil(lambda: not results.computing, timeout=10_000)  # the chart, not "computing…"
    app.processEvents()
    yield "results: run 1's chart"
    results.pages.setCurrentWidget(results.desiderata)
    results.desiderata.show_runs([1])
    qtbot.waitUntil(lambda: not results.desiderata.computing, timeout=10_000)
    app.processEvents()
    yield "results: desiderata"
    results.pages.setCurrentIndex(0)
    window.ctx.update_prefs(blind=True)
    app.processEvents()
    yield "blind mode: the badge"
    window.ctx.update_prefs(blind=False)
    window.message_bar.show_message("Something to act on", "error")
    app.processEvents()
    yield "message bar: error"
    window.message_bar.show_message("Something to know", "info")
    app.processEvents()
    yield "message bar: info"
    window.message_bar.hide()


@pytest.mark.parametrize("order", [("light", "dark", "light")])
def test_every_text_keeps_its_contrast_through_live_theme_switches(qtbot, demo_ws, make_window, order):
    window = make_window(demo_ws, theme=order[0])
    problems: list[str] = []
    try:
        for theme in order:
            window.set_appearance(theme=theme)  # live: the window, its views and their widgets stay
            for state in _states(window, qtbot):
                problems += [f"{theme}, {state}: {p}" for p in low_contrast(window)]
    finally:
        window.set_appearance(theme="light", font_scale=1.0)
    assert not problems, "\n".join(dict.fromkeys(problems))


def test_the_key_option_after_a_live_switch_to_dark(qtbot, demo_ws, make_window):
    # The reported case: the key's row kept its light green background, the text turned near-white.
    window = make_window(demo_ws, theme="light")
    try:
        window.show_view("review")
        review = window.view("review")
        review.show_row(0)
        QApplication.instance().processEvents()
        rows = [r for r in review.panel.findChildren(OptionRow) if r.is_key]  # not the (hidden) references card
        assert len(rows) == 1
        window.set_appearance(theme="dark")
        QApplication.instance().processEvents()
        painted = _painted(_pixels(window), _in_window(window, rows[0].text))
        assert painted is not None
        background, text = painted
        assert luminance(background) < 0.2, background  # the dark theme's key green, not the light one
        assert contrast(background, text) >= TEXT_RATIO
    finally:
        window.set_appearance(theme="light", font_scale=1.0)


def test_every_colour_written_in_gui_has_its_dark_twin():
    # A light colour without a twin in appearance.DARK would stay light in the dark theme. The image area and the
    # charts' outline are the same in both themes on purpose.
    from pathlib import Path

    import gui
    from gui.appearance import DARK, IMAGE_BACKGROUND, IMAGE_TEXT
    from gui.charts import HIGHLIGHT
    from gui.style import IMAGE_AREA

    same_in_both = {IMAGE_BACKGROUND, IMAGE_TEXT, *HIGHLIGHT.values(), *re.findall(r"#[0-9a-f]{6}", IMAGE_AREA)}
    folder = Path(gui.__file__).parent
    missing = {
        f"{path.name}: {hex_}"
        for path in folder.glob("*.py")
        if path.name != "appearance.py"
        for hex_ in re.findall(r"#[0-9a-fA-F]{6}\b", path.read_text(encoding="utf-8").replace(IMAGE_AREA, ""))
        if hex_.lower() not in DARK and hex_.lower() not in same_in_both
    }
    assert not missing, sorted(missing)
