"""Image bytes from the workspace decoded to QImage off the GUI thread, with a small LRU cache for prefetching, and
the thumbnails of an item's images (the strip of an item of several, gui/image_view.py ItemImages).

Each worker task opens its own SQLite connection (connections never cross threads); WAL lets it read while the
GUI or a run writes. QImage (unlike QPixmap) may be created in any thread. An image shown large goes before the
thumbnails waiting in the pool (a higher priority), and thumbnails asked for an item left are dropped unread: moving
on through items of twenty images never leaves the pool a queue to work through before the image on screen.
"""

from __future__ import annotations

import sqlite3
from collections import OrderedDict

from PySide6.QtCore import QBuffer, QByteArray, QIODevice, QObject, QRunnable, QSize, Qt, QThreadPool, Signal
from PySide6.QtGui import QImage, QImageReader

FULL, THUMB = 1, 0  # pool priorities: the image on screen before the strip's thumbnails


def read_image(db_path: str, sha256: str) -> QImage:
    conn = sqlite3.connect(db_path, timeout=10)
    try:
        row = conn.execute("SELECT data FROM images WHERE sha256 = ?", (sha256,)).fetchone()
    finally:
        conn.close()
    image = QImage()
    if row is not None:
        image.loadFromData(row[0])
    return image


def read_thumbnail(db_path: str, sha256: str, height: int) -> QImage:
    """The image scaled to `height` pixels (never enlarged), decoded at that size where the format allows (JPEG's
    reduced decoding): a strip of twenty photographs costs twenty small images, not twenty full ones."""
    conn = sqlite3.connect(db_path, timeout=10)
    try:
        row = conn.execute("SELECT data FROM images WHERE sha256 = ?", (sha256,)).fetchone()
    finally:
        conn.close()
    if row is None:
        return QImage()
    buffer = QBuffer()
    buffer.setData(QByteArray(bytes(row[0])))
    buffer.open(QIODevice.OpenModeFlag.ReadOnly)
    reader = QImageReader(buffer)
    size = reader.size()
    if size.isValid() and size.height() > height:
        reader.setScaledSize(QSize(max(1, round(size.width() * height / size.height())), height))
    image = reader.read()
    if not image.isNull() and image.height() > height:  # formats that cannot decode scaled
        image = image.scaledToHeight(height, mode=Qt.TransformationMode.SmoothTransformation)
    return image


class _Signals(QObject):
    done = Signal(str, QImage)
    thumb = Signal(str, QImage, object)  # sha256, thumbnail (null when dropped unread), the task


class _Wanted:
    """The thumbnails of the item on screen: `shas` is replaced whole when another item's are asked for, and read by
    the workers before they read (a plain attribute, set and read whole)."""

    def __init__(self) -> None:
        self.shas: frozenset[str] = frozenset()


class _Thumb(QRunnable):
    def __init__(self, db_path: str, sha256: str, height: int, wanted: _Wanted, signals: _Signals):
        super().__init__()
        self.setAutoDelete(False)  # the signal carries it back to the GUI thread
        self.db_path, self.sha256, self.height, self.wanted, self.signals = db_path, sha256, height, wanted, signals
        self.dropped = False

    def run(self) -> None:
        self.dropped = self.sha256 not in self.wanted.shas  # asked for an item since left: not read
        image = QImage()
        if not self.dropped:
            try:
                image = read_thumbnail(self.db_path, self.sha256, self.height)
            except Exception:  # a broken blob shows as an empty thumbnail, it must not kill the worker
                pass
        self.signals.thumb.emit(self.sha256, image, self)


class _Decode(QRunnable):
    def __init__(self, db_path: str, sha256: str, signals: _Signals):
        super().__init__()
        self.db_path, self.sha256, self.signals = db_path, sha256, signals

    def run(self) -> None:
        try:
            image = read_image(self.db_path, self.sha256)
        except Exception:  # a broken blob shows as "image could not be decoded", it must not kill the worker
            image = QImage()
        self.signals.done.emit(self.sha256, image)


class ImageLoader(QObject):
    """`request(sha)` decodes in the pool and emits `loaded(sha, image)`; `cached(sha)` answers at once."""

    loaded = Signal(str, QImage)
    thumbLoaded = Signal(str, QImage)  # a thumbnail asked for by `thumbnails`

    def __init__(self, db_path: str, *, capacity: int = 12, threads: int = 2, thumb_capacity: int = 256, parent=None):
        super().__init__(parent)
        self.db_path = db_path
        self.capacity = capacity
        self.pool = QThreadPool(self)
        self.pool.setMaxThreadCount(threads)
        self._cache: OrderedDict[str, QImage] = OrderedDict()
        self._pending: set[str] = set()
        self._signals = _Signals(self)
        self._signals.done.connect(self._on_done)
        self._signals.thumb.connect(self._on_thumb)
        # Thumbnails: small (a strip's height), so many more are kept than full images; keyed by (sha256, height).
        self.thumb_capacity = thumb_capacity
        self._thumbs: OrderedDict[tuple[str, int], QImage] = OrderedDict()
        self._thumb_pending: dict[str, _Thumb] = {}  # the task that will answer for a sha256
        self._wanted = _Wanted()
        self._wanted_by: dict[int, frozenset[str]] = {}  # by id(owner): Review's strip and Browse's
        self._thumb_height = 0

    def cached(self, sha256: str) -> QImage | None:
        image = self._cache.get(sha256)
        if image is not None:
            self._cache.move_to_end(sha256)
        return image

    def request(self, sha256: str) -> None:
        if sha256 in self._cache:
            self.loaded.emit(sha256, self._cache[sha256])
        elif sha256 not in self._pending:
            self._pending.add(sha256)
            self.pool.start(_Decode(self.db_path, sha256, self._signals), FULL)

    def prefetch(self, shas) -> None:
        for sha in shas:
            if sha and sha not in self._cache and sha not in self._pending:
                self._pending.add(sha)
                self.pool.start(_Decode(self.db_path, sha, self._signals))

    def cached_thumbnail(self, sha256: str, height: int) -> QImage | None:
        image = self._thumbs.get((sha256, height))
        if image is not None:
            self._thumbs.move_to_end((sha256, height))
        return image

    def thumbnails(self, owner: object, shas, height: int) -> None:
        """Decode the thumbnails of the item that `owner` (a strip) shows that are not cached (each emits
        `thumbLoaded`); those still waiting for the item it showed before are dropped unread."""
        self._wanted_by[id(owner)] = frozenset(s for s in shas if s)
        self._wanted.shas = frozenset().union(*self._wanted_by.values())
        self._thumb_height = height
        for sha in dict.fromkeys(shas):
            if sha and (sha, height) not in self._thumbs and sha not in self._thumb_pending:
                self._start_thumb(sha, height)

    def _start_thumb(self, sha256: str, height: int) -> None:
        task = self._thumb_pending[sha256] = _Thumb(self.db_path, sha256, height, self._wanted, self._signals)
        self.pool.start(task, THUMB)

    def load_now(self, sha256: str) -> QImage:
        """Synchronous decode on the calling thread (the bench's "no prefetch" way)."""
        image = read_image(self.db_path, sha256)
        self._store(sha256, image)
        return image

    def clear(self) -> None:
        self._cache.clear()
        self._thumbs.clear()

    def shutdown(self) -> None:
        self.pool.clear()
        self.pool.waitForDone(5000)

    def _store(self, sha256: str, image: QImage) -> None:
        self._cache[sha256] = image
        self._cache.move_to_end(sha256)
        while len(self._cache) > self.capacity:
            self._cache.popitem(last=False)

    def _on_done(self, sha256: str, image: QImage) -> None:
        self._pending.discard(sha256)
        self._store(sha256, image)
        self.loaded.emit(sha256, image)

    def _on_thumb(self, sha256: str, image: QImage, task: _Thumb) -> None:
        if self._thumb_pending.get(sha256) is task:
            del self._thumb_pending[sha256]
        wanted = sha256 in self._wanted.shas
        if task.dropped or task.height != self._thumb_height:
            # Dropped as it started while its item was left, and that item (or another holding the image) is on
            # screen again; or the strip's height changed: read it again at the height now asked.
            if wanted and (sha256, self._thumb_height) not in self._thumbs and sha256 not in self._thumb_pending:
                self._start_thumb(sha256, self._thumb_height)
            if task.dropped:
                return
        key = (sha256, task.height)
        self._thumbs[key] = image
        self._thumbs.move_to_end(key)
        while len(self._thumbs) > self.thumb_capacity:
            self._thumbs.popitem(last=False)
        self.thumbLoaded.emit(sha256, image)
