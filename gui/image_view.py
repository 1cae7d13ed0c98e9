"""The item image: fit to the view or actual pixels, zoom with Ctrl+wheel or +/-, pan by dragging; and an item's
images (ItemImages): the current one large, and for an item of several a strip of numbered thumbnails to move
between them (Review, Browse)."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QPoint, QRect, QSize, Qt, Signal
from PySide6.QtGui import QColor, QImage, QPainter, QPen, QPixmap
from PySide6.QtWidgets import (
    QAbstractButton,
    QFrame,
    QGraphicsPixmapItem,
    QGraphicsScene,
    QGraphicsView,
    QHBoxLayout,
    QLabel,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from gui.appearance import ACCENT, DARK, IMAGE_BACKGROUND, IMAGE_TEXT
from gui.shortcuts import image_keys_text

# The image area is dark in both themes (gui/appearance.py): its strip takes the dark theme's twins of the colours.
CURRENT_MARK = DARK[ACCENT]  # the image shown, framed
IMAGE_BAR_TEXT = DARK["#3c4043"]  # a number on its badge, a thumbnail under the pointer
THUMB_EDGE = DARK["#80868b"]
THUMB_BACKGROUND = DARK["#ffffff"]


class ImageView(QGraphicsView):
    zoomChanged = Signal(str)  # "fit" or a percentage like "150 %"

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setScene(QGraphicsScene(self))
        self._item = QGraphicsPixmapItem()
        self._item.setTransformationMode(Qt.TransformationMode.SmoothTransformation)
        self.scene().addItem(self._item)
        self.setRenderHints(QPainter.RenderHint.Antialiasing | QPainter.RenderHint.SmoothPixmapTransform)
        self.setDragMode(QGraphicsView.DragMode.ScrollHandDrag)
        self.setTransformationAnchor(QGraphicsView.ViewportAnchor.AnchorUnderMouse)
        self.setBackgroundBrush(QColor(IMAGE_BACKGROUND))
        self.setFrameShape(QGraphicsView.Shape.NoFrame)
        self.setMinimumSize(240, 200)
        self.fit = True
        self.placeholder = "No image"
        self.image_key: str | None = None  # what is shown (sha256), for tests and the bench
        self._has_image = False

    def set_image(self, image: QImage | None, key: str | None = None, placeholder: str = "No image") -> None:
        self.image_key = key if image is not None and not image.isNull() else None
        self.placeholder = placeholder
        self._has_image = image is not None and not image.isNull()
        if image is None or image.isNull():
            self._item.setPixmap(QPixmap())
            self.scene().setSceneRect(0, 0, 1, 1)
        else:
            self._item.setPixmap(QPixmap.fromImage(image))
            self.scene().setSceneRect(self._item.boundingRect())
        self._apply_zoom()
        self.viewport().update()

    def has_image(self) -> bool:
        return self._has_image

    def set_fit(self, fit: bool) -> None:
        self.fit = fit
        self._apply_zoom()

    def actual_size(self) -> None:
        self.fit = False
        self.resetTransform()
        self.zoomChanged.emit("100 %")

    def zoom_by(self, factor: float) -> None:
        self.fit = False
        scale = self.transform().m11() * factor
        if 0.05 <= scale <= 20:
            self.scale(factor, factor)
        self.zoomChanged.emit(f"{round(self.transform().m11() * 100)} %")

    def _apply_zoom(self) -> None:
        if not self.has_image():
            return
        if self.fit:
            self.resetTransform()
            self.fitInView(self._item, Qt.AspectRatioMode.KeepAspectRatio)
            self.zoomChanged.emit("fit")
        else:
            self.resetTransform()
            self.zoomChanged.emit("100 %")

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        if self.fit:
            self._apply_zoom()

    def wheelEvent(self, event) -> None:
        if event.modifiers() & Qt.KeyboardModifier.ControlModifier:
            self.zoom_by(1.25 if event.angleDelta().y() > 0 else 0.8)
        else:
            super().wheelEvent(event)

    def drawForeground(self, painter: QPainter, rect) -> None:
        if self.has_image():
            return
        painter.save()
        painter.resetTransform()
        painter.setPen(QColor(IMAGE_TEXT))
        painter.drawText(self.viewport().rect(), Qt.AlignmentFlag.AlignCenter, self.placeholder)
        painter.restore()


def thumb_height(metrics) -> int:
    """A thumbnail's side: two lines of text and a little, so its number stays readable at every text size."""
    return max(30, round(metrics.height() * 1.9))


class ThumbButton(QAbstractButton):
    """One image of the strip: its thumbnail, its number, a frame in the accent when it is the image shown."""

    def __init__(self, number: int, total: int, parent=None):
        super().__init__(parent)
        self.number = number
        self.setCheckable(True)
        self.setFocusPolicy(Qt.FocusPolicy.NoFocus)  # the window's keys stay where they were (Review's, Browse's)
        self.setCursor(Qt.CursorShape.PointingHandCursor)
        self.setToolTip(f"Image {number} of {total} — {image_keys_text()}")
        self.setAccessibleName(f"image {number} of {total}")
        self.thumbnail: QImage | None = None  # None until decoded; null when it could not be

    def thumb_height(self) -> int:
        return thumb_height(self.fontMetrics())

    def sizeHint(self) -> QSize:
        h = self.thumb_height()
        return QSize(h, h)  # square: a strip of ten fits the narrow image column of Browse at 1024 px

    def minimumSizeHint(self) -> QSize:
        return self.sizeHint()

    def set_thumbnail(self, image: QImage) -> None:
        self.thumbnail = image
        self.update()

    def paintEvent(self, event) -> None:
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.SmoothPixmapTransform)
        r = self.rect()
        painter.fillRect(r, QColor(THUMB_BACKGROUND))
        inner = r.adjusted(2, 2, -2, -2)
        if self.thumbnail is not None and not self.thumbnail.isNull():
            # Filling the square (its middle): a thumbnail is for telling the images apart, the image is above.
            scaled = self.thumbnail.size().scaled(inner.size(), Qt.AspectRatioMode.KeepAspectRatioByExpanding)
            target = QRect(QPoint(0, 0), scaled)
            target.moveCenter(inner.center())
            painter.save()
            painter.setClipRect(inner)
            painter.drawImage(target, self.thumbnail)
            painter.restore()
        elif self.thumbnail is not None:
            painter.setPen(QColor(IMAGE_TEXT))
            painter.drawText(inner, Qt.AlignmentFlag.AlignCenter, "?")  # could not be decoded
        # The number, on a small badge in the corner, readable on any picture.
        font = self.font()
        if font.pointSizeF() > 0:
            font.setPointSizeF(font.pointSizeF() * 0.85)
        else:
            font.setPixelSize(max(8, round(font.pixelSize() * 0.85)))
        font.setBold(True)
        painter.setFont(font)
        metrics = painter.fontMetrics()
        text = str(self.number)
        width, height = metrics.horizontalAdvance(text) + 6, metrics.height()
        badge = QRect(r.left(), r.bottom() - height + 1, width, height)
        painter.fillRect(badge, QColor(CURRENT_MARK) if self.isChecked() else QColor(IMAGE_BACKGROUND))
        painter.setPen(QColor(IMAGE_BACKGROUND) if self.isChecked() else QColor(IMAGE_BAR_TEXT))
        painter.drawText(badge, Qt.AlignmentFlag.AlignCenter, text)
        pen = QPen(QColor(CURRENT_MARK if self.isChecked() else (IMAGE_BAR_TEXT if self.underMouse() else THUMB_EDGE)))
        pen.setWidth(3 if self.isChecked() else 1)
        painter.setPen(pen)
        painter.setBrush(Qt.BrushStyle.NoBrush)
        half = pen.width() // 2
        painter.drawRect(r.adjusted(half, half, -half - 1 + pen.width() % 2, -half - 1 + pen.width() % 2))
        painter.end()

    def enterEvent(self, event) -> None:
        super().enterEvent(event)
        self.update()

    def leaveEvent(self, event) -> None:
        super().leaveEvent(event)
        self.update()


class _Row(QScrollArea):
    """The thumbnails in a row that scrolls sideways with the wheel (no scroll bar: the strip's height is fixed)."""

    def wheelEvent(self, event) -> None:
        delta = event.angleDelta().y() or event.angleDelta().x()
        bar = self.horizontalScrollBar()
        bar.setValue(bar.value() - delta)
        event.accept()


class ImageStrip(QWidget):
    """An item's images as numbered thumbnails (1…N, the one shown marked) with "image 2 of 5"; a click chooses."""

    chosen = Signal(int)  # index of the image clicked

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("imageBar")  # the image area's dark bar (gui/style.py)
        self.setAttribute(Qt.WidgetAttribute.WA_StyledBackground, True)
        layout = self._layout = QHBoxLayout(self)
        layout.setContentsMargins(8, 3, 4, 3)
        layout.setSpacing(6)
        self.label = QLabel()
        self.label.setObjectName("imageBarText")
        layout.addWidget(self.label)
        self.row = _Row()
        self.row.setFrameShape(QFrame.Shape.NoFrame)
        self.row.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.row.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.row.setWidgetResizable(False)
        self.row.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.row.setStyleSheet("background: transparent;")  # the bar's own dark colour shows through
        self.holder = QWidget()
        self.thumbs_layout = QHBoxLayout(self.holder)
        self.thumbs_layout.setContentsMargins(0, 0, 0, 0)
        self.thumbs_layout.setSpacing(3)
        self.row.setWidget(self.holder)
        layout.addWidget(self.row, 1)
        self.buttons: list[ThumbButton] = []
        self.shas: tuple[str, ...] = ()
        self.current = -1
        self.count_text = ""  # "image 2 of 5" (the label says "2 of 5" where the strip is narrow)
        self._fix_height()

    def thumb_height(self) -> int:
        return thumb_height(self.fontMetrics())

    def _fix_height(self) -> None:
        m = self._layout.contentsMargins()
        self.setFixedHeight(max(self.thumb_height(), self.label.sizeHint().height()) + m.top() + m.bottom())

    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        if event.type() in (QEvent.Type.FontChange, QEvent.Type.StyleChange):
            self._fix_height()
            self.holder.adjustSize()
            self._fit_label()

    def set_images(self, shas: tuple[str, ...]) -> None:
        if shas == self.shas:
            return
        for b in self.buttons:
            b.setParent(None)
            b.deleteLater()
        self.shas = shas
        self.buttons = []
        for n in range(len(shas)):
            b = ThumbButton(n + 1, len(shas), self.holder)
            b.clicked.connect(lambda _=False, i=n: self.chosen.emit(i))
            self.thumbs_layout.addWidget(b)
            self.buttons.append(b)
        self.holder.adjustSize()
        self.current = -1
        self._fix_height()

    def set_current(self, index: int) -> None:
        self.current = index
        for n, b in enumerate(self.buttons):
            b.setChecked(n == index)
        self.count_text = f"image {index + 1} of {len(self.shas)}" if self.shas else ""
        self.label.setToolTip(self.count_text)
        self._fit_label()
        if 0 <= index < len(self.buttons):
            # The neighbours too: clicking the last thumbnail in sight brings the next one into sight.
            self.row.ensureWidgetVisible(self.buttons[index], self.buttons[index].width() + 8, 0)

    def _fit_label(self) -> None:
        """The label says "image 2 of 5" where the strip has room for it and every thumbnail, else "2 of 5" (the
        whole in its tooltip): the thumbnails first, Browse's image column is some 250 px wide at 1024 px."""
        if not self.shas:
            self.label.setText("")
            return
        layout = self._layout
        m = layout.contentsMargins()
        thumbs = len(self.buttons) * (self.thumb_height() + self.thumbs_layout.spacing())
        room = self.width() - m.left() - m.right() - layout.spacing() - thumbs
        full = self.count_text
        fits = room >= self.label.fontMetrics().horizontalAdvance(full)
        self.label.setText(full if fits else full.removeprefix("image "))

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._fit_label()

    def set_thumbnail(self, sha: str, image: QImage) -> None:
        for s, b in zip(self.shas, self.buttons, strict=True):
            if s == sha:
                b.set_thumbnail(image)

    def missing(self) -> list[str]:
        """The images whose thumbnail has not come yet."""
        return [s for s, b in zip(self.shas, self.buttons, strict=True) if b.thumbnail is None]


class ItemImages(QWidget):
    """Every image of an item: the current one large (`view`, an ImageView), and — only for an item of several — the
    strip under it. The strip takes its room from the image alone: the area keeps its place and size in its splitter,
    so nothing beside it (the question, the verdict buttons) moves when an item of several images follows one of one.
    Images are decoded by the loader (gui/images.py) off the GUI thread: the one shown first, its next prefetched,
    the strip's thumbnails after them."""

    painted = Signal(str)  # the sha256 now shown (or found undecodable)
    currentChanged = Signal(int)

    def __init__(self, loader, parent=None):
        super().__init__(parent)
        self.loader = loader
        self.view = ImageView()
        self.strip = ImageStrip()
        self.strip.hide()
        self.strip.chosen.connect(self.go)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addWidget(self.view, 1)
        layout.addWidget(self.strip, 0)
        self.view_minimum = self.view.minimumHeight()  # the area's, with or without the strip (_fit_minimum)
        self.shas: tuple[str, ...] = ()
        self.current = 0
        self.load_now = False  # decode on the GUI thread (the bench's "no prefetch" way)
        loader.loaded.connect(self._on_loaded)
        loader.thumbLoaded.connect(self.strip.set_thumbnail)

    @property
    def current_sha(self) -> str | None:
        return self.shas[self.current] if self.shas else None

    def show_images(self, shas: tuple[str, ...], *, empty: str = "This item has no image", keep: bool = False) -> None:
        """Show these images from the first (`keep`: the one shown stays when they are the same, as on a reload);
        none: the placeholder `empty`."""
        same = keep and shas == self.shas
        self.shas = tuple(shas)
        if not same:
            self.current = 0
        several = len(self.shas) > 1
        self.strip.set_images(self.shas if several else ())
        self.strip.setVisible(several)
        self._fit_minimum()
        if several:
            self.strip.set_current(self.current)
            self._ask_thumbnails()
        else:
            self.loader.thumbnails(self, (), self.strip.thumb_height())  # the earlier item's need not be read
        if not self.shas:
            self.view.set_image(None, placeholder=empty)
            return
        if not same or self.view.image_key != self.current_sha:
            self._show_current()

    def _fit_minimum(self) -> None:
        """The strip's height comes off the image's minimum: the area asks its splitter for no more room with the
        strip than without it (a bigger minimum would push the question below it down)."""
        strip = self.strip.height() if self.strip.isVisibleTo(self) else 0
        self.view.setMinimumHeight(max(0, self.view_minimum - strip))

    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        if event.type() in (QEvent.Type.FontChange, QEvent.Type.StyleChange):
            self._fit_minimum()  # the strip's height follows the text size

    def go(self, index: int) -> bool:
        """Show the item's image `index` (0-based); False when there is none such."""
        if not 0 <= index < len(self.shas) or index == self.current:
            return False
        self.current = index
        self.strip.set_current(index)
        self._show_current()
        self.currentChanged.emit(index)
        return True

    def next_image(self) -> bool:
        return self.go(self.current + 1)

    def previous_image(self) -> bool:
        return self.go(self.current - 1)

    def _ask_thumbnails(self) -> None:
        height = self.strip.thumb_height()
        for sha in self.strip.missing():
            image = self.loader.cached_thumbnail(sha, height)
            if image is not None:
                self.strip.set_thumbnail(sha, image)
        self.loader.thumbnails(self, self.shas, height)

    def _show_current(self) -> None:
        sha = self.shas[self.current]
        image = self.loader.cached(sha)
        if image is None and self.load_now:
            image = self.loader.load_now(sha)
        if image is not None:
            self._paint(sha, image)
        else:
            self.view.set_image(None, placeholder="Loading image…")
            self.loader.request(sha)
        if not self.load_now and self.current + 1 < len(self.shas):
            self.loader.prefetch([self.shas[self.current + 1]])  # ] shows it at once

    def _on_loaded(self, sha: str, image: QImage) -> None:
        if self.shas and self.current_sha == sha and self.view.image_key != sha:
            self._paint(sha, image)

    def _paint(self, sha: str, image: QImage) -> None:
        if image.isNull():
            self.view.set_image(None, placeholder="The image could not be decoded")
        else:
            self.view.set_image(image, key=sha)
        self.painted.emit(sha)

    def showEvent(self, event) -> None:
        super().showEvent(event)
        if self.strip.isVisibleTo(self) and self.strip.missing():
            self._ask_thumbnails()  # the other view's item may have had the loader drop them meanwhile
