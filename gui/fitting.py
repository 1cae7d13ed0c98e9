"""What lets the window fit 1024×700 at a larger text size: a layout whose rows wrap (FlowLayout: a bar of
filters whose minimum width is its widest item, not the sum of them) and combo boxes whose minimum width is a few
characters, not their longest entry (compact_combo); a title that elides rather than wraps (ElidedLabel)."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QMargins, QPoint, QRect, QSize, Qt
from PySide6.QtGui import QPainter
from PySide6.QtWidgets import QComboBox, QLabel, QLayout, QLayoutItem, QSizePolicy, QWidget


class FlowLayout(QLayout):
    def __init__(self, parent: QWidget | None = None, spacing: int = 6):
        super().__init__(parent)
        self._items: list[QLayoutItem] = []
        self._gap = spacing
        self.setContentsMargins(0, 0, 0, 0)

    # -- QLayout's item list
    def addItem(self, item: QLayoutItem) -> None:  # noqa: N802 — Qt's name
        self._items.append(item)

    def count(self) -> int:
        return len(self._items)

    def itemAt(self, index: int) -> QLayoutItem | None:  # noqa: N802
        return self._items[index] if 0 <= index < len(self._items) else None

    def takeAt(self, index: int) -> QLayoutItem | None:  # noqa: N802
        return self._items.pop(index) if 0 <= index < len(self._items) else None

    # -- sizes
    def expandingDirections(self) -> Qt.Orientation:  # noqa: N802
        return Qt.Orientation(0)

    def hasHeightForWidth(self) -> bool:  # noqa: N802
        return True

    def heightForWidth(self, width: int) -> int:  # noqa: N802
        return self._place(QRect(0, 0, width, 0), move=False)

    def setGeometry(self, rect: QRect) -> None:  # noqa: N802
        super().setGeometry(rect)
        self._place(rect, move=True)

    def sizeHint(self) -> QSize:  # noqa: N802
        """Everything on one row."""
        width = sum(i.sizeHint().width() for i in self._items) + self._gap * max(0, len(self._items) - 1)
        height = max((i.sizeHint().height() for i in self._items), default=0)
        return QSize(width, height).grownBy(self.contentsMargins())

    def minimumSize(self) -> QSize:  # noqa: N802
        """The widest item: the rows wrap below it."""
        size = QSize()
        for item in self._items:
            size = size.expandedTo(item.minimumSize())
        return size.grownBy(self.contentsMargins())

    def _place(self, rect: QRect, *, move: bool) -> int:
        """Lay the items out in rows within `rect` (moving them when `move`); returns the height used. An item
        that grows horizontally (a search field) takes what is left of its row."""
        m: QMargins = self.contentsMargins()
        area = rect.marginsRemoved(m)
        rows: list[list[QLayoutItem]] = [[]]
        used = 0
        for item in self._items:
            if item.isEmpty():
                continue
            w = _packed_width(item)
            if rows[-1] and used + self._gap + w > area.width():
                rows.append([])
                used = 0
            used += (self._gap if rows[-1] else 0) + w
            rows[-1].append(item)
        y = area.y()
        for row in rows:
            if not row:
                continue
            height = max(i.sizeHint().height() for i in row)
            spare = area.width() - sum(_packed_width(i) for i in row) - self._gap * (len(row) - 1)
            growing = [i for i in row if _grows(i)]
            x = area.x()
            for item in row:
                w = _packed_width(item)
                if spare > 0 and item in growing:
                    w += spare // len(growing)
                w = max(min(w, area.width()), item.minimumSize().width())
                if move:
                    item.setGeometry(QRect(QPoint(x, y), QSize(w, height)))
                x += w + self._gap
            y += height + self._gap
        return y - self._gap - rect.y() + m.bottom() if y > area.y() else m.top() + m.bottom()


def _grows(item: QLayoutItem) -> bool:
    return bool(item.expandingDirections() & Qt.Orientation.Horizontal)


def _packed_width(item: QLayoutItem) -> int:
    """What an item takes on its row before the row's spare width is shared: a growing item (a search field) its
    minimum, so it does not push the next filters onto a row of their own; the others what they ask for."""
    return item.minimumSize().width() if _grows(item) else item.sizeHint().width()


def flow_item(*widgets: QWidget, grow: bool = False) -> QWidget:
    """Widgets kept together on one row of a FlowLayout (a label and its combo box)."""
    from PySide6.QtWidgets import QHBoxLayout

    box = QWidget()
    layout = QHBoxLayout(box)
    layout.setContentsMargins(0, 0, 0, 0)
    layout.setSpacing(6)
    for w in widgets:
        layout.addWidget(w, 1 if grow and w is widgets[0] else 0)
    box.setSizePolicy(QSizePolicy.Policy.Expanding if grow else QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)
    return box


def compact_combo(combo: QComboBox, chars: int = 12) -> QComboBox:
    """A combo box that may narrow to `chars` characters (its current entry elided; the list still shows every
    entry whole): by default a combo box is never narrower than its longest entry, which set the window's width."""
    combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
    combo.setMinimumContentsLength(chars)
    return combo


class ElidedLabel(QLabel):
    """A one-line label that takes the room its row has and elides what does not fit ("…", the whole text in its
    tooltip), instead of wrapping onto lines of a few words beside free space or widening the window. It asks for its
    whole text's width; it may shrink to a few characters."""

    def __init__(self, text: str = "", parent: QWidget | None = None, *, mode=Qt.TextElideMode.ElideRight):
        super().__init__(text, parent)
        self._mode = mode
        self.setWordWrap(False)
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)
        self._tip()

    def minimumSizeHint(self) -> QSize:  # noqa: N802 — Qt's name
        metrics = self.fontMetrics()
        margins = self.contentsMargins()
        return QSize(metrics.horizontalAdvance("x" * 6) + margins.left() + margins.right(), self.sizeHint().height())

    def sizeHint(self) -> QSize:  # noqa: N802
        metrics = self.fontMetrics()
        margins = self.contentsMargins()
        return QSize(
            metrics.horizontalAdvance(self.text()) + margins.left() + margins.right() + 2,
            metrics.height() + margins.top() + margins.bottom(),
        )

    def elided(self) -> bool:
        """Whether the text shown is shortened (its tooltip then says it whole)."""
        return self.fontMetrics().horizontalAdvance(self.text()) > self.contentsRect().width()

    def shown_text(self) -> str:
        return self.fontMetrics().elidedText(self.text(), self._mode, self.contentsRect().width())

    def paintEvent(self, event) -> None:  # noqa: N802
        painter = QPainter(self)
        self.style().drawItemText(
            painter,
            self.contentsRect(),
            int(self.alignment()),
            self.palette(),
            self.isEnabled(),
            self.shown_text(),
            self.foregroundRole(),
        )

    def setText(self, text: str) -> None:  # noqa: N802
        super().setText(text)
        self.updateGeometry()
        self._tip()

    def resizeEvent(self, event) -> None:  # noqa: N802
        super().resizeEvent(event)
        self._tip()

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802
        super().changeEvent(event)
        if event.type() == QEvent.Type.FontChange:  # a larger text: another width, maybe elided now
            self.updateGeometry()
            self._tip()

    def _tip(self) -> None:
        self.setToolTip(self.text() if self.elided() else "")
