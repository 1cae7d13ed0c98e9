"""Errors shown in the window: a message floating over the window for problems the user can act on and notes, and a
guard for unexpected exceptions raised in slots (PySide6 routes those to sys.excepthook) so that they reach the
window, not a log."""

from __future__ import annotations

import sys
import traceback

from PySide6.QtCore import QEvent, QObject, Qt, QTimer
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import (
    QApplication,
    QFrame,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QTabWidget,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from db.errors import EnvironmentFault, UserError
from gui.appearance import set_style

INFO_MS = 6000  # how long a note stays (the pointer resting on it holds it)
MARGIN = 12  # between the message and the edges of what it floats over
WIDEST = 90  # characters: a longer message wraps


class MessageBar(QFrame):
    """A dismissable message floating over the bottom of `anchor` (a widget of `parent`, the window), above the status
    bar. It is in no layout: showing or dismissing it moves nothing, so a click meant for the page lands where it was
    aimed (a bar inserted above the tabs pushed every page down and the next click hit the moved layout). Errors stay
    until dismissed (✕ or Esc), their traceback behind Details; notes go after a while."""

    COLOURS = {"error": ("#fdecea", "#7f1d1d", "#f5b5ae"), "info": ("#e8f0fe", "#1a3d7c", "#b6cdfb")}  # bg, text, line

    def __init__(self, parent: QWidget, anchor: QWidget | None = None):
        super().__init__(parent)
        self.anchor = anchor or parent
        self.setObjectName("messageBar")
        self.setAttribute(Qt.WidgetAttribute.WA_StyledBackground, True)
        self.label = QLabel()
        self.label.setWordWrap(True)
        self.label.setTextInteractionFlags(
            Qt.TextInteractionFlag.TextSelectableByMouse | Qt.TextInteractionFlag.TextSelectableByKeyboard
        )
        self.details_button = QToolButton()
        self.details_button.setText("Details")
        self.details_button.setCheckable(True)
        self.details_button.setAutoRaise(True)
        self.details_button.setToolTip("Show or hide what went wrong in full")
        self.details_button.toggled.connect(self._show_details)
        close = QToolButton()
        close.setText("✕")
        close.setAutoRaise(True)
        close.setToolTip("Dismiss (Esc)")
        close.setAccessibleName("Dismiss")
        close.clicked.connect(self.hide)
        self.close_button = close
        self.details = QPlainTextEdit()
        self.details.setObjectName("messageDetails")
        self.details.setReadOnly(True)
        self.details.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.details.hide()
        row = QHBoxLayout()
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.label, 1)
        row.addWidget(self.details_button, 0, Qt.AlignmentFlag.AlignTop)
        row.addWidget(close, 0, Qt.AlignmentFlag.AlignTop)
        self.box = layout = QVBoxLayout(self)
        layout.setContentsMargins(12, 6, 6, 6)
        layout.addLayout(row)
        layout.addWidget(self.details)
        self.kind = ""
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.timeout.connect(self.hide)
        parent.installEventFilter(self)  # follow the window's size
        if self.anchor is not parent:
            self.anchor.installEventFilter(self)
        self.hide()

    def show_message(self, text: str, kind: str = "error", details: str | None = None) -> None:
        self.kind = kind
        background, text_colour, line = self.COLOURS[kind]
        # The text colour is the label's own: `color: inherit` left it the palette's (black on the dark red).
        set_style(
            self,
            f"#messageBar {{ background: {background}; border: 1px solid {line}; border-radius: 6px; }}"
            f"#messageBar QLabel, #messageBar QToolButton {{ color: {text_colour}; }}"
            f"#messageBar QPlainTextEdit {{ background: #ffffff; color: #202124; border: 1px solid {line}; }}",
        )
        self.label.setText(text)
        self.details.setPlainText(details or "")
        self.details_button.setVisible(bool(details))
        self.details_button.setChecked(False)
        self.place()
        self.show()
        self.raise_()
        if kind == "info":
            self._timer.start(INFO_MS)
        else:
            self._timer.stop()

    def hideEvent(self, event) -> None:
        super().hideEvent(event)
        self._timer.stop()
        focus = QApplication.focusWidget()
        if focus is not None and (focus is self or self.isAncestorOf(focus)):  # the keyboard goes back to the page
            page = self.anchor.currentWidget() if isinstance(self.anchor, QTabWidget) else None
            (page or self.anchor).setFocus()

    def _show_details(self, shown: bool) -> None:
        self.details.setVisible(shown)
        if shown:
            self._timer.stop()  # being read
        self.place()

    def place(self) -> None:
        """Over the bottom of the anchor, centred, as wide as the text up to WIDEST characters, never outside it."""
        parent = self.parentWidget()
        if parent is None:
            return
        area = self.anchor.rect().translated(self.anchor.mapTo(parent, self.anchor.rect().topLeft()))
        room = max(120, area.width() - 2 * MARGIN)
        metrics = self.label.fontMetrics()
        margins = self.box.contentsMargins()
        chrome = margins.left() + margins.right() + self.close_button.sizeHint().width() + 12
        if not self.details_button.isHidden():
            chrome += self.details_button.sizeHint().width() + 6
        widest = max(metrics.horizontalAdvance(line) for line in (self.label.text() or " ").splitlines())
        width = min(room, chrome + widest + 4, chrome + metrics.averageCharWidth() * WIDEST)
        if self.details_button.isChecked():  # wider, and as tall as the details up to 2/5 of the page
            width = max(width, min(room, 800))
            self._fit_details(width - margins.left() - margins.right(), max(80, area.height() * 2 // 5))
        height = self.box.totalHeightForWidth(width) if self.box.hasHeightForWidth() else 0
        height = min(max(height, self.box.totalMinimumSize().height()), max(40, area.height() - 2 * MARGIN))
        self.setGeometry(area.center().x() - width // 2, area.bottom() - MARGIN - height, width, height)

    def _fit_details(self, width: int, most: int) -> None:
        """The details' height: their lines as wrapped at `width`, at most `most` (they scroll beyond)."""
        details = self.details
        metrics = details.fontMetrics()
        frame = 2 * details.frameWidth() + 2 * int(details.document().documentMargin())
        room = max(1, width - frame - details.verticalScrollBar().sizeHint().width())
        lines = sum(-(-max(1, metrics.horizontalAdvance(line)) // room) for line in details.toPlainText().splitlines())
        details.setFixedHeight(min(most, max(2, lines) * metrics.lineSpacing() + frame + 4))

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() in (QEvent.Type.Resize, QEvent.Type.Move, QEvent.Type.LayoutRequest) and self.isVisible():
            self.place()
        return False

    def keyPressEvent(self, event) -> None:
        if event.key() == Qt.Key.Key_Escape:
            self.hide()
        else:
            super().keyPressEvent(event)

    def enterEvent(self, event) -> None:
        super().enterEvent(event)
        self._timer.stop()  # read at leisure: a note stays while the pointer rests on it

    def leaveEvent(self, event) -> None:
        super().leaveEvent(event)
        if self.kind == "info" and self.isVisible() and not self.details_button.isChecked():
            self._timer.start(INFO_MS // 2)


def install_error_guard(show) -> None:
    """Route uncaught exceptions (in slots, timers, event handlers) to `show(message, details)`."""
    previous = sys.excepthook

    def hook(exc_type, exc, tb):
        if issubclass(exc_type, KeyboardInterrupt):
            return previous(exc_type, exc, tb)
        details = "".join(traceback.format_exception(exc_type, exc, tb))
        print(details, file=sys.stderr)
        try:
            if issubclass(exc_type, (UserError, EnvironmentFault)):  # worded for people already (HoldLost, a full disk)
                show(f"Not done: {exc}", details)
            else:
                show(f"Something went wrong: {exc_type.__name__}: {exc}", details)
        except Exception:  # the window itself is broken: fall back to the default hook
            previous(exc_type, exc, tb)

    sys.excepthook = hook
