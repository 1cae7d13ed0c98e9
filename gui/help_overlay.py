"""The keyboard help shown over the review view (F1 or ?), and over any tab (gui/tab_help.py). A card taller than
the view (large text at 1024×700) scrolls inside itself: the wheel, ↑ ↓ and Page Up / Down move it."""

from __future__ import annotations

import html

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFrame, QLabel, QScrollArea, QVBoxLayout

from gui.appearance import MUTED, set_rich_text
from gui.shortcuts import help_rows


class HelpOverlay(QFrame):
    def __init__(self, parent, rows_of=None, title: str = "Keyboard"):
        """`rows_of`: (group, keys, text) rows (default: Review's, gui/shortcuts.help_rows)."""
        super().__init__(parent)
        self.setObjectName("helpOverlay")
        layout = QVBoxLayout(self)
        layout.setAlignment(Qt.AlignmentFlag.AlignCenter)
        card = QLabel()
        card.setObjectName("helpCard")
        card.setTextFormat(Qt.TextFormat.RichText)
        rows, group = [], None
        for g, keys, text in rows_of if rows_of is not None else help_rows():
            if g != group:
                rows.append(f"<tr><td colspan=2 style='padding-top:10px'><b>{html.escape(g)}</b></td></tr>")
                group = g
            rows.append(
                f"<tr><td style='padding-right:24px'><code>{html.escape(keys)}</code></td>"
                f"<td>{html.escape(text)}</td></tr>"
            )
        set_rich_text(
            card,
            f"<h3>{html.escape(title)}</h3><table>" + "".join(rows) + "</table>"
            f"<p style='color:{MUTED}'>Keys are off while you type in a text field. Esc or F1 closes.</p>",
        )
        box = QScrollArea()  # opaque, the card's size at most the view's: the dimming around it stays
        box.setWidget(card)
        box.setWidgetResizable(True)
        box.setFrameShape(QFrame.Shape.NoFrame)
        box.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        layout.addWidget(box)
        self.box = box
        self.card = card
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.hide()

    def hideEvent(self, event) -> None:
        super().hideEvent(event)
        parent = self.parentWidget()
        if parent is not None:
            parent.setFocus()

    def toggle(self) -> None:
        if self.isVisible():
            self.hide()
        else:
            parent = self.parentWidget()
            if parent is not None:
                self.setGeometry(parent.rect())
            self.raise_()
            self.show()
            self.setFocus()

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._fit_box()

    def _fit_box(self) -> None:
        hint = self.card.sizeHint()
        room = self.contentsRect().adjusted(12, 12, -12, -12)
        tall = hint.height() > room.height()
        bar = self.box.verticalScrollBar().sizeHint().width() if tall else 0
        self.box.setFixedSize(min(hint.width() + bar, room.width()), min(hint.height(), room.height()))

    def mousePressEvent(self, event) -> None:
        self.hide()

    def keyPressEvent(self, event) -> None:
        bar = self.box.verticalScrollBar()
        steps = {Qt.Key.Key_Down: bar.singleStep(), Qt.Key.Key_Up: -bar.singleStep()}
        steps |= {Qt.Key.Key_PageDown: bar.pageStep(), Qt.Key.Key_PageUp: -bar.pageStep()}
        if event.key() in (Qt.Key.Key_Escape, Qt.Key.Key_F1, Qt.Key.Key_Question):
            self.hide()
        elif event.key() in steps:
            bar.setValue(bar.value() + steps[event.key()])
        else:
            super().keyPressEvent(event)
