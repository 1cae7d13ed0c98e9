"""Reads that cost more than a frame (a run's figures, its report), done off the GUI thread and drawn when ready.

A task reads the workspace through a read-only connection of its own, opened in its worker thread (connections never
cross threads; WAL lets it read while the app or a run writes), through SQLite alone: opening the file any other way
would drop the process's locks (docs/adr/0023). Each task has an owner (the widget that shows its results) and only
the owner's latest task is heard: a reload, a cancel or a closed workspace makes older results stale, and they are
dropped, never drawn over newer ones.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from PySide6.QtCore import QEvent, QObject, QRunnable, QThreadPool, Signal
from PySide6.QtWidgets import QWidget
from sqlite_utils import Database

from db.errors import EnvironmentFault, UserError
from db.workspace import Workspace, database_error, read_only_connection

Work = Callable[[Workspace], Iterator[Any]]
COMPUTING = "computing…"  # what a view shows, in the place of a figure, until the worker has computed it


class _Signals(QObject):
    part = Signal(object, object)  # task, what it yielded
    failed = Signal(object, object)  # task, exception
    finished = Signal(object)  # task


class Task(QRunnable):
    def __init__(self, owner: object, path: Path, read_only: bool, work: Work, signals: _Signals):
        super().__init__()
        self.setAutoDelete(False)  # Background._running keeps it
        self.owner, self.path, self.read_only, self.work, self.signals = owner, path, read_only, work, signals
        self.cancelled = False
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    def cancel(self) -> None:
        """Stop at the next SQLite step (interrupt may be called from any thread) or the next part yielded."""
        with self._lock:
            self.cancelled = True
            if self._conn is not None:
                self._conn.interrupt()

    def run(self) -> None:
        try:
            with self._lock:
                if self.cancelled:
                    return
                # A workspace nobody can write may be read immutable, as the app's own connection reads it.
                self._conn = read_only_connection(self.path, allow_immutable=self.read_only)
            # No sqlite-utils plugin scan, as every workspace connection opens (db/workspace.py): it read every
            # installed package's metadata on each task, and no plugin may act on a workspace's connection.
            ws = Workspace(self.path, Database(self._conn, execute_plugins=False), read_only=True)
            try:
                for part in self.work(ws):
                    if self.cancelled:
                        return
                    self.signals.part.emit(self, part)
            finally:
                with self._lock:
                    self._conn = None
                ws.close()
        except Exception as exc:  # noqa: BLE001 — handed to the GUI thread, which says it (or raises a bug there)
            if not self.cancelled:
                self.signals.failed.emit(self, exc)
        finally:
            self.signals.finished.emit(self)


class Background(QObject):
    """`start(owner, work, on_part, on_done)`: `work(ws)` runs in the pool and each value it yields reaches
    `on_part` on the GUI thread, then `on_done()` — while this task is still the owner's latest one."""

    error = Signal(str, str)  # a read failed for the workspace's sake (damaged, gone): message, details

    def __init__(self, path: str | Path, read_only: bool, parent=None):
        super().__init__(parent)
        self.path, self.read_only = Path(path), read_only
        self.pool = QThreadPool(self)
        self.pool.setMaxThreadCount(2)
        self._latest: dict[object, tuple[Task, Callable[[Any], None], Callable[[], None] | None]] = {}
        self._running: set[Task] = set()  # Python keeps every started task until its last signal is handled
        self._signals = _Signals(self)
        self._signals.part.connect(self._part)
        self._signals.failed.connect(self._failed)
        self._signals.finished.connect(self._finished)

    def start(
        self, owner: object, work: Work, on_part: Callable[[Any], None], on_done: Callable[[], None] | None = None
    ) -> None:
        self.cancel(owner)
        task = Task(owner, self.path, self.read_only, work, self._signals)
        self._latest[owner] = (task, on_part, on_done)
        self._running.add(task)
        self.pool.start(task)

    def busy(self, owner: object) -> bool:
        return owner in self._latest

    def idle(self) -> bool:
        """Nothing is being computed for anyone (a page drawn in full: what tests wait for before measuring it)."""
        return not self._latest

    def cancel(self, owner: object) -> None:
        entry = self._latest.pop(owner, None)
        if entry is not None:
            entry[0].cancel()

    def stop(self, timeout_ms: int = 2000) -> None:
        """Cancel every task and wait for the workers: before the connection is opened again (their connections
        share SQLite's locks of this process, ADR 0023) and before the workspace closes."""
        for owner in list(self._latest):
            self.cancel(owner)
        self.pool.clear()
        self.pool.waitForDone(timeout_ms)

    def _heard(self, task: Task) -> tuple | None:
        entry = self._latest.get(task.owner)
        return entry if entry is not None and entry[0] is task else None

    def _part(self, task: Task, part: object) -> None:
        if (entry := self._heard(task)) is not None:
            entry[1](part)

    def _finished(self, task: Task) -> None:
        self._running.discard(task)
        if (entry := self._heard(task)) is not None:
            del self._latest[task.owner]
            if entry[2] is not None:
                entry[2]()

    def _failed(self, task: Task, exc: BaseException) -> None:
        if self._heard(task) is None:
            return
        if isinstance(exc, sqlite3.DatabaseError):
            worded = database_error(self.path, exc)
            if worded is None:
                raise exc
            self.error.emit(str(worded), "")
        elif isinstance(exc, (UserError, EnvironmentFault)):
            self.error.emit(str(exc), "")
        else:
            raise exc  # a bug: the app's exception guard shows it (tests fail on it)


class _OnShow(QObject):
    """What a hidden widget was asked to do, done when it is next shown (each once)."""

    def __init__(self, widget: QWidget):
        super().__init__(widget)
        self.pending: dict[Callable[[], object], None] = {}
        widget.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Show and self.pending:
            due, self.pending = list(self.pending), {}
            for fn in due:
                fn()
        return False


def when_shown(widget: QWidget, fn: Callable[[], object]) -> bool:
    """True when `widget` is in sight (the caller goes on); else `fn` is noted to run when it is shown, and False:
    a tab or page out of sight computes nothing."""
    if widget.isVisible():
        return True
    on_show = widget.findChild(_OnShow) or _OnShow(widget)
    on_show.pending[fn] = None
    return False
