"""File › Import a benchmark by name: pick one of the catalog's benchmarks (`vlmdesk fetch --list`), and the window
runs `vlmdesk import NAME --json-progress` in a child process — the download (resumable, checked, cached) and the
import are the command's, shown in the status bar's strip as they go."""

from __future__ import annotations

from typing import TypeVar

from PySide6.QtCore import QEvent, Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from evaluator.formats.importers.catalog import POPE_SETTINGS, CatalogEntry
from evaluator.formats.importers.fetch import hide_userinfo, target_path

COLUMNS = ("Name", "Layout", "Size", "Cached", "Benchmark")
W = TypeVar("W", bound=QWidget)


def _named(widget: W, name: str) -> W:
    widget.setObjectName(name)
    return widget


def size_text(n: int | None) -> str:
    if n is None:
        return "?"
    return f"{n / 1e6:.1f} MB" if n < 1e9 else f"{n / 1e9:.2f} GB"


def _cached(entry: CatalogEntry) -> bool:
    try:
        return target_path(entry).exists()
    except OSError:
        return False


class FetchDialog(QDialog):
    """The catalog as a table; `arguments()` is the `vlmdesk import` command line for the chosen row."""

    def __init__(self, entries: tuple[CatalogEntry, ...], mirror: str = "", parent: QWidget | None = None):
        """`mirror`: $VLMDESK_MIRROR, which the command it starts inherits."""
        super().__init__(parent)
        self.setWindowTitle("Import a benchmark by name")
        self.setObjectName("fetchDialog")
        self.entries = entries
        self.filter = _named(QLineEdit(placeholderText="Filter: MMBench, POPE, lmms-lab…"), "fetchFilter")
        self.filter.setClearButtonEnabled(True)
        self.table = _named(QTableWidget(len(entries), len(COLUMNS)), "fetchTable")
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().setVisible(False)
        for row, e in enumerate(entries):
            cells = (e.name, e.layout, size_text(e.size), "yes" if _cached(e) else "", e.title)
            for col, text in enumerate(cells):
                item = QTableWidgetItem(text)
                if col == 2:
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                self.table.setItem(row, col, item)
        header = self.table.horizontalHeader()
        for col in range(len(COLUMNS) - 1):
            header.setSectionResizeMode(col, QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(True)
        self.details = _named(QLabel(wordWrap=True), "fetchDetails")
        self.details.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.setting = _named(QComboBox(), "fetchSetting")
        self.setting.addItem("Every setting (a benchmark each)", None)
        for s in POPE_SETTINGS:
            self.setting.addItem(s, s)
        self.bench_name = _named(QLineEdit(), "fetchName")
        # $VLMDESK_MIRROR as the field shows it: its user and password hidden (fetch's own rule). The command reads
        # the real value from the environment it inherits, so it never appears in the app, nor on a command line.
        self._mirror_shown = hide_userinfo(mirror)
        self.mirror = _named(
            QLineEdit(self._mirror_shown, placeholderText="none (e.g. https://hf-mirror.com)"), "fetchMirror"
        )
        form = QFormLayout()
        form.addRow("Benchmark &name:", self.bench_name)
        form.addRow("POPE &setting:", self.setting)
        form.addRow("&Mirror:", self.mirror)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setText("Download and import")
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.filter)
        layout.addWidget(self.table, 1)
        layout.addWidget(self.details)
        layout.addLayout(form)
        layout.addWidget(self.buttons)
        self.filter.textChanged.connect(self._apply_filter)
        self.filter.installEventFilter(self)
        self.table.itemSelectionChanged.connect(self._update)
        self.table.doubleClicked.connect(lambda _index: self.accept() if self.current() else None)
        self.resize(860, 520)
        if entries:
            self.table.selectRow(0)
        self._update()

    def current(self) -> CatalogEntry | None:
        """The selected entry; never one the filter hides (Enter must not import what is not shown)."""
        rows = [r.row() for r in self.table.selectionModel().selectedRows() if not self.table.isRowHidden(r.row())]
        return self.entries[rows[0]] if rows else None

    def _visible_rows(self) -> list[int]:
        return [row for row in range(len(self.entries)) if not self.table.isRowHidden(row)]

    def eventFilter(self, watched, event) -> bool:
        # Up and Down in the filter move through the rows it shows, so typing then Enter is enough.
        if (
            watched is self.filter
            and event.type() == QEvent.Type.KeyPress
            and event.key() in (Qt.Key.Key_Down, Qt.Key.Key_Up)
        ):
            rows = self._visible_rows()
            if rows:
                entry = self.current()
                at = rows.index(self.entries.index(entry)) if entry is not None else -1
                step = 1 if event.key() == Qt.Key.Key_Down else -1
                self.table.selectRow(rows[max(0, min(len(rows) - 1, at + step))])
            return True
        return super().eventFilter(watched, event)

    def select(self, name: str) -> None:
        for row, e in enumerate(self.entries):
            if e.name == name:
                self.table.selectRow(row)
                return

    def _apply_filter(self, text: str) -> None:
        words = text.casefold().split()
        for row, e in enumerate(self.entries):
            haystack = f"{e.name} {e.layout} {e.title} {e.repo or ''}".casefold()
            self.table.setRowHidden(row, not all(w in haystack for w in words))
        rows = self._visible_rows()
        if self.current() is None:  # the selected row is filtered out: the first shown one, or none
            if rows:
                self.table.selectRow(rows[0])
            else:
                self.table.clearSelection()
        self._update()

    def _update(self) -> None:
        entry = self.current()
        ok = self.buttons.button(QDialogButtonBox.StandardButton.Ok)
        ok.setEnabled(entry is not None)
        if entry is None:
            self.details.setText("")
            return
        where = entry.url or f"{entry.repo} @ {entry.revision}: {entry.config}/{entry.split}-*.parquet"
        check = entry.checksum or "each shard's SHA-256 as the hub reports it"
        names = ", ".join(entry.benchmark_names().values())
        self.details.setText(
            f"<b>{entry.title}</b><br>From: {where}<br>Checked by: {check}<br>Licence: {entry.licence}"
            f"<br>Imported as: {names}"
        )
        self.bench_name.setPlaceholderText(entry.name)
        self.setting.setEnabled(bool(entry.settings))
        if not entry.settings:
            self.setting.setCurrentIndex(0)

    def arguments(self) -> list[str]:
        """`import NAME --json-progress [--name N] [--setting S] [--mirror URL]` for the chosen entry."""
        entry = self.current()
        assert entry is not None
        args = ["import", entry.name, "--json-progress"]
        if self.bench_name.text().strip():
            args += ["--name", self.bench_name.text().strip()]
        if entry.settings and self.setting.currentData():
            args += ["--setting", self.setting.currentData()]
        mirror = self.mirror.text().strip()
        if mirror and mirror != self._mirror_shown:  # unchanged: the environment's, which the command reads itself
            args += ["--mirror", mirror]
        return args
