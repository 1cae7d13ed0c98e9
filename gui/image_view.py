"""The item image: fit to the view or actual pixels, zoom with Ctrl+wheel or +/-, pan by dragging."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor, QImage, QPainter, QPixmap
from PySide6.QtWidgets import QGraphicsPixmapItem, QGraphicsScene, QGraphicsView

from gui.appearance import IMAGE_BACKGROUND, IMAGE_TEXT


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
