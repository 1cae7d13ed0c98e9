"""Errors shown in the window: a message bar for problems the user can act on, and a guard for unexpected
exceptions raised in slots (PySide6 routes those to sys.excepthook) so that they reach the window, not a log."""

from __future__ import annotations

import sys
import traceback

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QToolButton

from db.errors import EnvironmentFault, UserError
from gui.appearance import set_style


class MessageBar(QFrame):
    """A dismissable strip at the top of the window. Errors stay until dismissed; notes fade after a while."""

    COLOURS = {"error": ("#fdecea", "#7f1d1d", "#f5b5ae"), "info": ("#e8f0fe", "#1a3d7c", "#b6cdfb")}  # bg, text, line

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("messageBar")
        layout = QHBoxLayout(self)
        layout.setContentsMargins(12, 6, 6, 6)
        self.label = QLabel()
        self.label.setWordWrap(True)
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        close = QToolButton()
        close.setText("✕")
        close.setAutoRaise(True)
        close.setToolTip("Dismiss")
        close.clicked.connect(self.hide)
        layout.addWidget(self.label, 1)
        layout.addWidget(close)
        self.kind = ""
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.timeout.connect(self.hide)
        self.hide()

    def show_message(self, text: str, kind: str = "error", details: str | None = None) -> None:
        self.kind = kind
        background, text_colour, line = self.COLOURS[kind]
        # The text colour is the label's own: `color: inherit` left it the palette's (black on the dark red).
        set_style(
            self,
            f"#messageBar {{ background: {background}; border-bottom: 1px solid {line}; }}"
            f"#messageBar QLabel, #messageBar QToolButton {{ color: {text_colour}; }}",
        )
        self.label.setText(text)
        self.label.setToolTip(details or "")
        self.show()
        if kind == "info":
            self._timer.start(6000)
        else:
            self._timer.stop()


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
