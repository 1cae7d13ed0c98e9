"""The Models tab: saved models (db.models — `vlmdesk models add|list|remove`) and a test that loads one (or
reaches its server) and answers one demo item, run as `vlmdesk models test NAME --json` in a child process so a
model that crashes or runs out of memory cannot take the window down."""
from __future__ import annotations

import json

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QComboBox, QFileDialog, QFormLayout, QGroupBox, QHBoxLayout, QLabel, QLineEdit, QPlainTextEdit, QPushButton,
    QStackedWidget, QVBoxLayout, QWidget,
)

from annotation.blind import HIDDEN_TEXT
from db import models
from db.errors import InvalidInput
from evaluator.model_check import validate_spec
from gui.processes import CommandProcess
from gui.tables import RowsModel, table_view


class AddModelForm(QGroupBox):
    """Builds a spec from a few fields (or takes one typed as is)."""

    def __init__(self, parent=None):
        super().__init__("Add a model", parent)
        self.name = QLineEdit()
        self.name.setPlaceholderText("a short name, e.g. llava-7b")
        self.kind = QComboBox()
        for label, kind in (("Local or hub model (hf:)", "hf"), ("OpenAI-compatible server (openai:)", "openai"),
                            ("Baseline (baseline:)", "baseline"), ("Spec, typed", "spec")):
            self.kind.addItem(label, kind)
        self.hf_path = QLineEdit()
        self.hf_path.setPlaceholderText("a folder or a hub id: llava-hf/llava-1.5-7b-hf")
        browse = QPushButton("Folder…")
        browse.clicked.connect(self._browse)
        hf = QWidget()
        hl = QHBoxLayout(hf)
        hl.setContentsMargins(0, 0, 0, 0)
        hl.addWidget(self.hf_path, 1)
        hl.addWidget(browse)
        self.oa_model = QLineEdit()
        self.oa_model.setPlaceholderText("model name, e.g. Qwen/Qwen2-VL-7B-Instruct")
        self.oa_url = QLineEdit()
        self.oa_url.setPlaceholderText("http://localhost:8000/v1")
        self.oa_key_env = QLineEdit()
        self.oa_key_env.setPlaceholderText("OPENAI_API_KEY")
        self.oa_key_env.setToolTip("The NAME of the environment variable that holds the key — never the key")
        oa = QWidget()
        ol = QFormLayout(oa)
        ol.setContentsMargins(0, 0, 0, 0)
        ol.addRow("Model", self.oa_model)
        ol.addRow("Base URL", self.oa_url)
        ol.addRow("Key variable", self.oa_key_env)
        self.baseline = QComboBox()
        self.baseline.addItems(["random", "first", "frequent"])
        self.spec_text = QLineEdit()
        self.spec_text.setPlaceholderText("hf:…?dtype=bfloat16 · openai:…@…?key_env=… · baseline:…")
        self.stack = QStackedWidget()
        for w in (hf, oa, self.baseline, self.spec_text):
            self.stack.addWidget(w)
        self.kind.currentIndexChanged.connect(self.stack.setCurrentIndex)
        self.preview = QLabel()
        self.preview.setObjectName("muted")
        self.preview.setWordWrap(True)
        self.add = QPushButton("Save model")
        self.add.setObjectName("primary")
        form = QFormLayout(self)
        form.addRow("Name", self.name)
        form.addRow("Kind", self.kind)
        form.addRow(self.stack)
        form.addRow(self.preview)
        form.addRow(self.add)
        for w in (self.hf_path, self.oa_model, self.oa_url, self.oa_key_env, self.spec_text):
            w.textChanged.connect(self._update_preview)
        self.kind.currentIndexChanged.connect(self._update_preview)
        self.baseline.currentIndexChanged.connect(self._update_preview)
        self._update_preview()

    def spec(self) -> str:
        kind = self.kind.currentData()
        if kind == "hf":
            return f"hf:{self.hf_path.text().strip()}" if self.hf_path.text().strip() else ""
        if kind == "openai":
            model, url, env = (w.text().strip() for w in (self.oa_model, self.oa_url, self.oa_key_env))
            if not model:
                return ""
            return f"openai:{model}" + (f"@{url}" if url else "") + (f"?key_env={env}" if env else "")
        if kind == "baseline":
            return f"baseline:{self.baseline.currentText()}"
        return self.spec_text.text().strip()

    def _update_preview(self) -> None:
        spec = self.spec()
        self.preview.setText(f"spec: {spec}" if spec else "")

    def _browse(self) -> None:
        path = QFileDialog.getExistingDirectory(self, "Model folder")
        if path:
            self.hf_path.setText(path)


class ModelsView(QWidget):
    def __init__(self, ctx, parent=None):
        super().__init__(parent)
        self.ctx = ctx
        self.process: CommandProcess | None = None
        self.tested: dict | None = None  # the last successful test's result (shown again when blind mode changes)
        self.model = RowsModel(("Name", "Spec", "Added"), self)
        self.table = table_view(self.model, stretch=1)
        self.table.selectionModel().selectionChanged.connect(lambda *_: self._selected())
        self.test_button = QPushButton("Test")
        self.test_button.setToolTip("Load the model (or reach its server) and answer one demo item, in a separate "
                                    "process (vlmdesk models test NAME)")
        self.test_button.clicked.connect(self.test_selected)
        self.remove_button = QPushButton("Remove")
        self.remove_button.clicked.connect(self.remove_selected)
        self.output = QPlainTextEdit()
        self.output.setReadOnly(True)
        self.output.setObjectName("log")
        self.output.setPlaceholderText("Test results and messages")
        self.form = AddModelForm()
        self.form.setMaximumWidth(440)
        self.form.add.clicked.connect(self._add_from_form)
        left = QVBoxLayout()
        head = QHBoxLayout()
        t = QLabel("Saved models")
        t.setObjectName("sectionTitle")
        head.addWidget(t)
        head.addStretch(1)
        head.addWidget(self.test_button)
        head.addWidget(self.remove_button)
        left.addLayout(head)
        left.addWidget(self.table, 2)
        t = QLabel("Test")
        t.setObjectName("sectionTitle")
        left.addWidget(t)
        left.addWidget(self.output, 1)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(10, 10, 10, 10)
        layout.addLayout(left, 1)
        layout.addWidget(self.form, 0, Qt.AlignTop)
        ctx.prefsChanged.connect(self._show_tested)
        self.reload()

    def reload(self) -> None:
        saved = models.list_models(self.ctx.ws)
        self.model.set_rows([(m.name, m.spec, m.created_at[:16].replace("T", " ")) for m in saved],
                            [m.name for m in saved])
        self._selected()

    def selected_name(self) -> str | None:
        rows = self.table.selectionModel().selectedRows()
        return self.model.payloads[rows[0].row()] if rows else None

    def select(self, name: str) -> None:
        if name in self.model.payloads:
            self.table.selectRow(self.model.payloads.index(name))

    def _selected(self) -> None:
        busy = self.process is not None and self.process.running()
        self.test_button.setEnabled(self.selected_name() is not None and not busy)
        self.remove_button.setEnabled(self.selected_name() is not None)

    def add_model(self, name: str, spec: str) -> bool:
        try:
            saved = models.add_model(self.ctx.ws, name, validate_spec(spec))
        except InvalidInput as exc:
            self.ctx.error.emit(f"Model not saved: {exc}", "")
            return False
        self.reload()
        self.select(saved.name)
        self.ctx.info.emit(f"Saved model {saved.name}: {saved.spec}")
        return True

    def _add_from_form(self) -> None:
        if self.add_model(self.form.name.text(), self.form.spec()):
            self.form.name.clear()

    def remove_selected(self) -> None:
        name = self.selected_name()
        if name and models.remove_model(self.ctx.ws, name):
            self.reload()

    def test_selected(self) -> None:
        name = self.selected_name()
        if name is None or (self.process is not None and self.process.running()):
            return
        self.tested = None
        self.process = CommandProcess(str(self.ctx.ws.path), ["models", "test", name, "--json"], self)
        self.process.done.connect(self._tested)
        self.process.stderrChanged.connect(self._show_output)
        self.output.setPlainText(f"$ {self.process.command_line()}\nloading {name}…")
        self.process.start()
        self._selected()

    def _show_output(self) -> None:
        p = self.process
        self.output.setPlainText(f"$ {p.command_line()}\n{p.stderr}")

    def _tested(self) -> None:
        p = self.process
        result = p.json_output() if p.exit_code == 0 else None
        self.tested = result if isinstance(result, dict) else None
        if self.tested is None:
            why = p.error or ("the process crashed" if p.crashed else f"exit code {p.exit_code}")
            self.output.setPlainText(f"$ {p.command_line()}\n✗ test failed ({why})\n\n{p.stderr.strip()}")
        else:
            self._show_tested()
        self._selected()

    def _show_tested(self) -> None:
        result = self.tested
        if result is None or self.process is None:
            return
        text = (f"✓ {result['spec']} loaded in {result['load_s']:.2f} s and answered in {result['answer_s']:.2f} s"
                f"\n\nItem {result['item_index']} of {result['benchmark']}:\n{result['prompt']}\n\n")
        if self.ctx.prefs.blind:  # the demo item's key and the model's answer to it: a benchmark item like any other
            text += f"Response, choice and key {HIDDEN_TEXT}."
        else:
            verdict = {True: "right", False: "wrong", None: "unscored"}[result["correct"]]
            text += (f"Response: {result['response']!r}\nChoice: {result['choice'] or 'undecided'} ({verdict}; key "
                     f"{result['answer']})")
        text += f"\n\nBackend: {json.dumps(result['backend'], ensure_ascii=False)}"
        self.output.setPlainText(f"$ {self.process.command_line()}\n{text}")

    def shutdown(self) -> None:
        if self.process is not None and self.process.running():
            self.process.kill()
            self.process.process.waitForFinished(2000)
