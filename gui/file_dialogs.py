"""Every file dialog of the app: Qt's own (never the desktop's native one), with icons and types told from names.

Why (docs/adr/0023-the-hold-on-the-workspace.md): to draw a file's icon and type, Qt's default icon provider asks
QMimeDatabase, which opens each file in the folder and reads its first bytes. On POSIX, closing any descriptor of
a file drops every lock this process holds on it — SQLite's on the open workspace (the file and its -shm) included —
and the next process to close the workspace deletes the -wal under the app. A native dialog running in this process
(GTK's, through a platform theme) sniffs contents the same way. The dialogs here read folders and stat files, and
never open one; tests/gui/test_file_dialogs.py opens each of the app's dialogs beside a workspace to prove it.
"""

from __future__ import annotations

import functools

from PySide6.QtCore import QFileInfo
from PySide6.QtGui import QAbstractFileIconProvider, QIcon
from PySide6.QtWidgets import QApplication, QFileDialog, QStyle, QWidget


class NameOnlyIcons(QAbstractFileIconProvider):
    """Icons and type names from what a stat tells (folder, file, link) and the name's suffix; no file is opened."""

    def icon(self, what) -> QIcon:  # Qt overloads icon(IconType) and icon(QFileInfo)
        if not isinstance(what, QFileInfo):
            return super().icon(what)
        pixmap = QStyle.StandardPixmap
        kind = pixmap.SP_DirIcon if what.isDir() else pixmap.SP_FileLinkIcon if what.isSymLink() else pixmap.SP_FileIcon
        return QApplication.style().standardIcon(kind)

    def type(self, info: QFileInfo) -> str:
        if info.isDir():
            return "Folder"
        suffix = info.suffix()
        return f"{suffix.upper()} file" if suffix else "File"


@functools.cache
def _icons() -> NameOnlyIcons:
    # One for the app's lifetime: a dialog's file-system model may still ask it from its worker thread after exec.
    return NameOnlyIcons()


def _run(dialog: QFileDialog) -> str | None:
    dialog.setOption(QFileDialog.Option.DontUseNativeDialog, True)
    dialog.setIconProvider(_icons())
    dialog.setObjectName("vlmdeskFileDialog")  # tests check that every dialog shown came through here
    try:
        if dialog.exec() != QFileDialog.DialogCode.Accepted or not dialog.selectedFiles():
            return None
        return dialog.selectedFiles()[0]
    finally:
        dialog.deleteLater()


def open_file(parent: QWidget | None, title: str, start: str, filters: str = "") -> str | None:
    """An existing file chosen by the user, or None."""
    dialog = QFileDialog(parent, title, start, filters)
    dialog.setFileMode(QFileDialog.FileMode.ExistingFile)
    dialog.setAcceptMode(QFileDialog.AcceptMode.AcceptOpen)
    return _run(dialog)


def save_file(parent: QWidget | None, title: str, start: str, filters: str = "") -> str | None:
    """A file name to write (replacing an existing file is confirmed), or None."""
    dialog = QFileDialog(parent, title, start, filters)
    dialog.setFileMode(QFileDialog.FileMode.AnyFile)
    dialog.setAcceptMode(QFileDialog.AcceptMode.AcceptSave)
    return _run(dialog)


def folder(parent: QWidget | None, title: str, start: str = "") -> str | None:
    """An existing folder, or None."""
    dialog = QFileDialog(parent, title, start)
    dialog.setFileMode(QFileDialog.FileMode.Directory)
    dialog.setOption(QFileDialog.Option.ShowDirsOnly, True)
    return _run(dialog)
