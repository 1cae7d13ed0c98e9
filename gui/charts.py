"""A matplotlib Figure in the window (FigureCanvasQTAgg). The Figures come from evaluator/analysis/plots.py, which knows
nothing of Qt; this widget only shows them, tells which bar was clicked, and saves them as PNG or SVG."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from matplotlib.backends.backend_qtagg import FigureCanvasQTAgg
from matplotlib.colors import to_rgb
from matplotlib.figure import Figure
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QLayout,
    QPushButton,
    QSizePolicy,
    QSplitter,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from annotation.blind import HIDDEN_TEXT
from db.errors import UserError
from evaluator.analysis.plots import bar_target, fit_legends, save_figure
from gui import file_dialogs
from gui.appearance import MUTED, tone
from gui.background import COMPUTING
from gui.fitting import ElidedLabel

HIGHLIGHT = {"light": "#202124", "dark": "#e8eaed"}  # the clicked bar's outline, against the figure's background


def relative_luminance(colour) -> float:
    r, g, b = to_rgb(colour)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def message_figure(text: str) -> Figure:
    fig = Figure(figsize=(6, 3))
    muted = tone(MUTED)
    fig.text(0.5, 0.5, text, ha="center", va="center", color=muted, fontsize=11, wrap=True)
    return fig


def lay_out_chart_page(
    page: QWidget, title: str, listing: QWidget, controls: QLayout, chart: QWidget, text: QWidget, left_width: int
) -> None:
    """The Results pages' layout: a titled list left; right, the controls over the chart above the report text."""
    left = QWidget()
    ll = QVBoxLayout(left)
    ll.setContentsMargins(0, 0, 0, 0)
    heading = ElidedLabel(title)  # one line over the list, whole in its tooltip (wrapped, it took three)
    heading.setObjectName("sectionTitle")
    ll.addWidget(heading)
    ll.addWidget(listing, 1)
    chart_box = QWidget()
    cl = QVBoxLayout(chart_box)
    cl.setContentsMargins(0, 0, 0, 0)
    cl.addLayout(controls)
    cl.addWidget(chart, 1)
    right = QSplitter(Qt.Orientation.Vertical)
    right.addWidget(chart_box)
    right.addWidget(text)
    right.setSizes([450, 250])
    right.setChildrenCollapsible(False)
    split = QSplitter(Qt.Orientation.Horizontal)
    split.addWidget(left)
    split.addWidget(right)
    split.setSizes([left_width, 1180 - left_width])
    split.setChildrenCollapsible(False)
    layout = QVBoxLayout(page)
    layout.setContentsMargins(0, 0, 0, 0)
    layout.addWidget(split)


class ChartView(QWidget):
    barClicked = Signal(dict)  # what the bar stands for (evaluator.analysis.plots.bar_target)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.figure: Figure | None = None
        self.canvas: FigureCanvasQTAgg | None = None
        self.describe: Callable[[dict], str] | None = None  # a bar's tooltip text, from what it stands for
        # One line that takes the bar's free room, elided (whole in its tooltip): wrapped, it stood in three
        # lines of a few words beside free space, and the canvas under it moved with every title.
        self.title = ElidedLabel()
        self.title.setObjectName("sectionTitle")
        self.hint = QLabel("Click a bar for its items")
        self.hint.setObjectName("muted")
        self.export_button = QPushButton("Export chart…")
        self.export_button.setToolTip("Save this chart as PNG or SVG")
        self.export_button.clicked.connect(self._export_dialog)
        self._clickable = True
        self._bar = bar = QHBoxLayout()
        bar.setContentsMargins(0, 0, 0, 0)
        bar.addWidget(self.title, 1)
        bar.addWidget(self.hint)
        bar.addWidget(self.export_button)
        self._layout = QVBoxLayout(self)
        self._layout.setContentsMargins(0, 0, 0, 0)
        self._layout.setSpacing(4)
        self._layout.addLayout(bar)
        self.set_figure(message_figure("Choose runs on the left"))

    def set_figure(self, figure: Figure, title: str = "", *, clickable: bool = True) -> None:
        if self.canvas is not None:
            # Hidden, not parentless: a canvas with the keyboard focus made a top-level window for a moment, and
            # the main window lost its activation (every shortcut dead until clicked), e.g. when Results reloaded.
            self._layout.removeWidget(self.canvas)
            self.canvas.hide()
            self.canvas.deleteLater()
        self.figure = figure
        self.canvas = FigureCanvasQTAgg(figure)
        self.canvas.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        self.canvas.setMinimumHeight(220)
        self.canvas.mpl_connect("button_press_event", self._pressed)
        self.canvas.mpl_connect("motion_notify_event", self._hovered)
        # The canvas gives the figure its own size: its legends laid out again to stay inside it.
        self.canvas.mpl_connect("resize_event", lambda _event: fit_legends(figure))
        self.canvas.setCursor(Qt.CursorShape.PointingHandCursor if clickable else Qt.CursorShape.ArrowCursor)
        self._layout.addWidget(self.canvas, 1)
        self.title.setText(title)
        self._clickable = clickable
        self._fit_bar()
        self.export_button.setEnabled(bool(figure.axes))

    def show_computing(self, title: str | None = None) -> None:
        """The figure is being computed (gui/background.py): "computing…" in the canvas's place, at its size, and
        the bar above left as it is (a title given, or the one shown), so that nothing moves when the figure comes."""
        clickable = self._clickable
        self.set_figure(message_figure(COMPUTING), self.title.text() if title is None else title, clickable=False)
        self._clickable = clickable
        self._fit_bar()

    def _fit_bar(self) -> None:
        """The click hint beside the title only while both fit whole: the title (what the chart shows) goes first."""
        spacing = max(self._bar.spacing(), 0)
        room = self.width() - self.export_button.sizeHint().width() - 2 * spacing
        need = self.title.sizeHint().width() + spacing + self.hint.sizeHint().width()
        self.hint.setVisible(self._clickable and need <= room)

    def resizeEvent(self, event) -> None:  # noqa: N802 — Qt's name
        super().resizeEvent(event)
        self._fit_bar()

    def highlight(self, target: dict | None) -> None:
        """Outline the bar standing for `target` (the one clicked), so the list below says which bar it is."""
        wanted = {k: str(v) for k, v in (target or {}).items()}
        dark = self.figure is not None and relative_luminance(self.figure.get_facecolor()) < 0.5
        for patch in self.bars():
            on = bar_target(patch) == wanted
            patch.set_edgecolor(HIGHLIGHT["dark" if dark else "light"] if on else "none")
            patch.set_linewidth(2.5 if on else 0)
        if self.canvas is not None:
            self.canvas.draw_idle()

    def _hovered(self, event) -> None:
        """A bar's tooltip: what it stands for in full (legends and ticks shorten model names) and its value."""
        assert self.canvas is not None  # the event comes from it
        for patch in self.bars():
            if patch.contains(event)[0]:
                target = bar_target(patch) or {}
                text = self.describe(target) if self.describe else ""
                self.canvas.setToolTip(f"{text}\n{patch.get_height():.1f}".strip())
                return
        self.canvas.setToolTip("")

    def bars(self) -> list:
        """Every tagged bar of the figure (its patches that stand for something)."""
        return [p for ax in (self.figure.axes if self.figure else []) for p in ax.patches if bar_target(p)]

    def _pressed(self, event) -> None:
        for patch in self.bars():
            if patch.contains(event)[0]:
                self.barClicked.emit(bar_target(patch))
                return

    def export(self, path: str | Path) -> Path:
        if self.figure is None:
            raise RuntimeError("no chart to export")  # the export action is offered with a chart only
        return save_figure(self.figure, path)

    def _export_dialog(self) -> None:
        path = file_dialogs.save_file(self, "Export chart", "chart.png", "PNG (*.png);;SVG (*.svg);;PDF (*.pdf)")
        if path:
            self.export_to(path)

    def export_to(self, path: str | Path) -> Path | None:
        """Save the chart and say where in the window's message bar, or why not in one line (a refused path —
        evaluator/formats/outfiles.py —, a folder that is not there, a full disk): it saved without a word before."""
        try:
            saved = self.export(path)
        except (UserError, OSError, ValueError) as exc:
            # UserError names the path (outfiles, save_figure); an OSError says only what failed.
            reason = f"{path}: {exc.strerror}" if isinstance(exc, OSError) and exc.strerror else str(exc)
            self._say(f"Chart not exported: {reason}".replace("\n", " "), "error")
            return None
        self._say(f"Chart saved to {saved.resolve()}", "info")
        return saved

    def _say(self, text: str, kind: str) -> None:
        bar = getattr(self.window(), "message_bar", None)  # the main window's (gui/errors.py); a bare chart: stderr
        if bar is not None:
            bar.show_message(text, kind)
        else:
            print(text, file=sys.stderr)


class BlindCover(QStackedWidget):
    """A tab that is only about scores (Results, Alignment): its content, or in blind mode a short placeholder —
    figures over many items would tell an annotator how items they have not judged went."""

    def __init__(self, content: QWidget, what: str, parent=None):
        super().__init__(parent)
        self.content = content
        self.placeholder = QLabel(f"{what} {HIDDEN_TEXT}.\nTurn blind mode off (View › Blind mode, or B) to see them.")
        self.placeholder.setObjectName("muted")
        self.placeholder.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.placeholder.setWordWrap(True)
        self.addWidget(content)
        self.addWidget(self.placeholder)

    def set_hidden(self, hidden: bool) -> None:
        self.setCurrentWidget(self.placeholder if hidden else self.content)

    @property
    def hidden(self) -> bool:
        return self.currentWidget() is self.placeholder
