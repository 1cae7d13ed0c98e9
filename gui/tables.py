"""Small table helpers the result views share: a read-only table model over rows of values, and CSV export of
any table model as it is shown."""

from __future__ import annotations

import csv
from pathlib import Path

from PySide6.QtCore import QAbstractTableModel, QModelIndex, Qt
from PySide6.QtGui import QBrush
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableView

from evaluator.formats.outfiles import AtomicOutput, csv_cell
from gui import file_dialogs
from gui.appearance import colour


class RowsModel(QAbstractTableModel):
    """Rows of display texts (plus, per row, a payload and optional colour / tooltip per cell)."""

    def __init__(self, columns: tuple[str, ...], parent=None):
        super().__init__(parent)
        self.columns = columns
        self.rows: list[tuple] = []
        self.payloads: list = []
        self.colours: dict[tuple[int, int], str] = {}
        self.tooltips: dict[tuple[int, int], str] = {}
        self.align_right: set[int] = set()

    def set_rows(self, rows: list[tuple], payloads: list | None = None, *, colours=None, tooltips=None) -> None:
        self.beginResetModel()
        self.rows = [tuple("" if v is None else str(v) for v in r) for r in rows]
        self.payloads = list(payloads) if payloads is not None else [None] * len(rows)
        self.colours, self.tooltips = dict(colours or {}), dict(tooltips or {})
        self.endResetModel()

    def set_row(self, row: int, values: tuple, *, colours=None, tooltips=None) -> None:
        """One row's cells again, and its colours and tooltips by column (a figure computed after the listing)."""
        self.rows[row] = tuple("" if v is None else str(v) for v in values)
        for store, new in ((self.colours, colours or {}), (self.tooltips, tooltips or {})):
            for key in [k for k in store if k[0] == row]:
                del store[key]
            store.update({(row, c): v for c, v in new.items()})
        self.dataChanged.emit(self.index(row, 0), self.index(row, len(self.columns) - 1))

    def rowCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self.columns)

    def headerData(self, section, orientation, role=Qt.ItemDataRole.DisplayRole):
        shown = role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.ToolTipRole)
        if orientation == Qt.Orientation.Horizontal and shown:
            return self.columns[section]  # the tooltip: the whole title of a header elided in a narrow column
        return None

    def data(self, index, role=Qt.ItemDataRole.DisplayRole):
        if not index.isValid():
            return None
        r, c = index.row(), index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            return self.rows[r][c]
        if role == Qt.ItemDataRole.ForegroundRole and (r, c) in self.colours:
            return QBrush(colour(self.colours[(r, c)]))  # read when painted: follows a theme switch
        if role == Qt.ItemDataRole.ToolTipRole:
            return self.tooltips.get((r, c)) or (self.rows[r][c] if len(self.rows[r][c]) > 30 else None)
        if role == Qt.ItemDataRole.TextAlignmentRole and c in self.align_right:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if role == Qt.ItemDataRole.UserRole:
            return self.payloads[r]
        return None


def table_view(model, *, stretch: int | None = None) -> QTableView:
    view = QTableView()
    view.setModel(model)
    view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    view.verticalHeader().hide()
    view.verticalHeader().setDefaultSectionSize(24)
    view.setAlternatingRowColors(True)
    view.setShowGrid(False)
    view.setWordWrap(False)
    view.setTextElideMode(Qt.TextElideMode.ElideRight)
    view.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    header = one_line_header(view)
    header.setHighlightSections(False)
    header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
    if stretch is not None:
        header.setSectionResizeMode(stretch, QHeaderView.ResizeMode.Stretch)
    return view


def one_line_header(view: QTableView) -> QHeaderView:
    """A table's column titles on one line each: elided ("…") when their column is narrower, never wrapped onto a
    second line (a style may wrap them: the alignment is set here without Qt.TextWordWrap)."""
    header = view.horizontalHeader()
    header.setTextElideMode(Qt.TextElideMode.ElideRight)
    header.setDefaultAlignment(Qt.AlignmentFlag.AlignCenter)
    return header


def write_csv(model, path: str | Path) -> int:
    """Every row of a table model as its cells read, headers first; returns the number of rows written."""
    path = Path(path)
    columns = range(model.columnCount())
    with AtomicOutput(path, newline="") as f:  # evaluator/formats/outfiles.py's rule
        out = csv.writer(f)
        header = [model.headerData(c, Qt.Orientation.Horizontal, Qt.ItemDataRole.DisplayRole) for c in columns]
        out.writerow([csv_cell(str(h or "")) for h in header])
        for r in range(model.rowCount()):
            cells = [model.data(model.index(r, c), Qt.ItemDataRole.DisplayRole) or "" for c in columns]
            out.writerow([csv_cell(str(v)) for v in cells])
    return model.rowCount()


def export_table(parent, model, default_name: str) -> Path | None:
    path = file_dialogs.save_file(parent, "Export table as CSV", default_name, "CSV (*.csv)")
    if not path:
        return None
    write_csv(model, path)
    return Path(path)
