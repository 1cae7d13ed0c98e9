"""Image bytes from the workspace decoded to QImage off the GUI thread, with a small LRU cache for prefetching.

Each worker task opens its own SQLite connection (connections never cross threads); WAL lets it read while the
GUI or a run writes. QImage (unlike QPixmap) may be created in any thread.
"""

from __future__ import annotations

import sqlite3
from collections import OrderedDict

from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal
from PySide6.QtGui import QImage


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


class _Signals(QObject):
    done = Signal(str, QImage)


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

    def __init__(self, db_path: str, *, capacity: int = 12, threads: int = 2, parent=None):
        super().__init__(parent)
        self.db_path = db_path
        self.capacity = capacity
        self.pool = QThreadPool(self)
        self.pool.setMaxThreadCount(threads)
        self._cache: OrderedDict[str, QImage] = OrderedDict()
        self._pending: set[str] = set()
        self._signals = _Signals(self)
        self._signals.done.connect(self._on_done)

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
            self.pool.start(_Decode(self.db_path, sha256, self._signals))

    def prefetch(self, shas) -> None:
        for sha in shas:
            if sha and sha not in self._cache and sha not in self._pending:
                self._pending.add(sha)
                self.pool.start(_Decode(self.db_path, sha, self._signals))

    def load_now(self, sha256: str) -> QImage:
        """Synchronous decode on the calling thread (the bench's "no prefetch" way)."""
        image = read_image(self.db_path, sha256)
        self._store(sha256, image)
        return image

    def clear(self) -> None:
        self._cache.clear()

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
