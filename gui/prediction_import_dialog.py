"""File › Import predictions: which file, for which benchmark, under which model name — what
`vlmdesk import-predictions` asks, which the window then runs in a child process."""

from __future__ import annotations

from pathlib import Path
from typing import TypeVar

from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QWidget,
)

from gui import file_dialogs

W = TypeVar("W", bound=QWidget)

FORMATS = (
    ("Detect from the file name", None),
    ("VLMEvalKit (.xlsx, .tsv, .csv)", "vlmevalkit"),
    ("lmms-eval samples (.jsonl)", "lmms-eval"),
)


def model_from_file_name(path: str) -> str:
    """VLMEvalKit names files {model}_{dataset}, its datasets starting with a capital (MMBench_DEV_EN, POPE…): the
    parts before the first later part that does. Empty for other names (lmms-eval's samples_{task}.jsonl)."""
    if not path.lower().endswith((".xlsx", ".tsv", ".csv")):
        return ""
    parts = Path(path).stem.split("_")
    cut = next((n for n in range(1, len(parts)) if parts[n][:1].isupper()), None)
    return "_".join(parts[:cut]) if cut else ""


def _named(widget: W, name: str) -> W:
    widget.setObjectName(name)
    return widget


class PredictionImportDialog(QDialog):
    def __init__(self, benchmarks: list[str], folder: str, current: str | None = None, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Import predictions made elsewhere")
        self.setObjectName("predictionImportDialog")
        self.folder = folder
        self.path = _named(QLineEdit(placeholderText="llava_v1.5_7b_MMBench_DEV_EN.xlsx"), "predictionFile")
        browse = _named(QPushButton("Choose…"), "predictionBrowse")
        browse.clicked.connect(self._choose)
        row = QHBoxLayout()
        row.addWidget(self.path, 1)
        row.addWidget(browse)
        self.bench = _named(QComboBox(), "predictionBench")
        self.bench.addItems(benchmarks)
        if current in benchmarks:
            self.bench.setCurrentText(current)
        self.model = _named(QLineEdit(placeholderText="the model's name, e.g. llava-v1.5-7b"), "predictionModel")
        self.format = _named(QComboBox(), "predictionFormat")
        for title, value in FORMATS:
            self.format.addItem(title, value)
        form = QFormLayout(self)
        file_label = QLabel("&File:")
        file_label.setBuddy(self.path)
        form.addRow(file_label, row)
        form.addRow("&Benchmark:", self.bench)
        form.addRow("&Model name:", self.model)
        form.addRow("F&ormat:", self.format)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setText("Import")
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        form.addRow(self.buttons)
        for edit in (self.path, self.model):
            edit.textChanged.connect(self._update)
        self._update()

    def _choose(self) -> None:
        path = file_dialogs.open_file(
            self, "Prediction file", self.folder, "Predictions (*.xlsx *.tsv *.csv *.jsonl);;All files (*)"
        )
        if path:
            self.path.setText(path)
            if not self.model.text().strip():
                self.model.setText(model_from_file_name(path))

    def _update(self) -> None:
        ok = bool(self.path.text().strip() and self.model.text().strip() and self.bench.count())
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setEnabled(ok)

    def values(self) -> tuple[str, str, str, str | None]:
        """(path, benchmark, model name, format or None)."""
        return self.path.text().strip(), self.bench.currentText(), self.model.text().strip(), self.format.currentData()
