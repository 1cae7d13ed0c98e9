"""The Models tab: saved models (db.models — `vlmdesk models add|list|remove`) and a test that loads one (or
reaches its server) and answers one demo item, run as `vlmdesk models test NAME --json` in a child process so a
model that crashes or runs out of memory cannot take the window down."""

from __future__ import annotations

import json

from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from annotation.blind import HIDDEN_TEXT
from db import models
from db.errors import InvalidInput
from evaluator.backends import REGISTRY as BACKENDS
from evaluator.backends.families import FAMILIES
from evaluator.engine.model_check import validate_spec
from gui import file_dialogs
from gui.fitting import ElidedLabel, compact_combo
from gui.processes import CommandProcess
from gui.runs_list import ModelCell
from gui.tables import RowsModel, table_view

FieldWidget = QComboBox | QCheckBox | QLineEdit
"""The input of one form field of a backend."""


class AddModelForm(QGroupBox):
    """Builds a spec from the fields each registered backend declares (or takes one typed as is). Enter in any of
    its fields saves (`submitted`). Its size never changes while it is used: every backend's page has the room of
    the tallest, and the spec line below them is always there, one line, so "Save model" stays under the mouse."""

    submitted = Signal()

    def __init__(self, parent=None):
        super().__init__("Add a model", parent)
        self.name = QLineEdit()
        self.name.setPlaceholderText("a short name, e.g. llava-7b")
        self.kind = compact_combo(QComboBox(), 14)
        self.stack = QStackedWidget()
        self.entries = {entry.name: entry for entry in BACKENDS.help_entries()}
        self.inputs: dict[str, dict[str, FieldWidget]] = {}  # backend -> field name -> its widget
        for entry in self.entries.values():
            self.kind.addItem(f"{entry.title or entry.name} ({entry.name}:)", entry.name)
            self.kind.setItemData(self.kind.count() - 1, f"{entry.syntax}\n{entry.help}", Qt.ItemDataRole.ToolTipRole)
            self.stack.addWidget(self._page(entry))
        self.kind.addItem("Spec, typed", "spec")
        self.spec_text = QLineEdit()
        self.spec_text.setPlaceholderText(" · ".join(f"{e.name}:…" for e in self.entries.values()))
        self.spec_text.textChanged.connect(self._update_preview)
        self.stack.addWidget(self.spec_text)
        self.kind.currentIndexChanged.connect(self.stack.setCurrentIndex)
        self.kind.currentIndexChanged.connect(lambda _: self._fit_page())
        # One line, always there (elided, whole in its tooltip) and asking no width: wrapped, it grew a line while
        # typing and widened the form, moving the button under the mouse.
        self.preview = ElidedLabel(mode=Qt.TextElideMode.ElideMiddle)
        self.preview.setObjectName("muted")
        self.preview.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        self.add = QPushButton("Save model")
        self.add.setObjectName("primary")
        self.add.setToolTip("Save the model (Enter in any field)")
        form = QFormLayout(self)
        form.addRow("Name", self.name)
        # "Backend", not "Kind": the baseline backend's own field is its kind (random, first, frequent).
        form.addRow("Backend", self.kind)
        # The pages scroll inside the form beyond MAX_ROWS fields (a backend with a dozen settings, hf: or vllm:), so
        # the form and "Save model" below it fit a 1024×700 window at any text size.
        self.pages = QScrollArea()
        self.pages.setWidget(self.stack)
        self.pages.setWidgetResizable(True)
        self.pages.setFrameShape(QScrollArea.Shape.NoFrame)
        self.pages.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        form.addRow(self.pages)
        form.addRow(self.preview)
        form.addRow(self.add)
        self.kind.currentIndexChanged.connect(self._update_preview)
        self._update_preview()
        self._fit_width()

    CHARS = 40  # the form's width in average characters of its font (the saved models beside get the rest)
    MAX_ROWS = 6  # fields shown at once; a page with more scrolls

    def _fit_width(self) -> None:
        """One size whatever backend is chosen and whatever is typed; a larger text widens it with the letters. The
        pages' height is the tallest page's at that width (a stacked layout asks the shown page only)."""
        width = self.fontMetrics().averageCharWidth() * self.CHARS
        self.setFixedWidth(width)
        layout = self.layout()
        assert layout is not None  # set in __init__
        frame, inner = self.contentsMargins(), layout.contentsMargins()
        room = width - frame.left() - frame.right() - inner.left() - inner.right()
        pages = [page for i in range(self.stack.count()) if (page := self.stack.widget(i)) is not None]
        scrollbar = self.pages.verticalScrollBar()
        inside = room - (scrollbar.sizeHint().width() if scrollbar is not None else 0)  # room beside a scroll bar
        self._heights = [p.heightForWidth(inside) if p.hasHeightForWidth() else p.sizeHint().height() for p in pages]
        row = QLineEdit().sizeHint().height() + max(layout.spacing(), 4)
        self.pages.setFixedHeight(min(max(self._heights), row * self.MAX_ROWS))
        self._fit_page()

    def _fit_page(self) -> None:
        """The shown page as tall as its own fields (the scroll area around it keeps the form's size)."""
        heights = getattr(self, "_heights", None)  # None while the form is being built
        if heights is not None:
            self.stack.setFixedHeight(heights[self.stack.currentIndex()])

    def changeEvent(self, event) -> None:  # noqa: N802 — Qt's name
        super().changeEvent(event)
        if event.type() == QEvent.Type.FontChange:
            self._fit_width()

    def keyPressEvent(self, event) -> None:  # noqa: N802 — Qt's name
        """Enter in a field (a line edit, a closed list, a box) saves; an open list takes its own Enter first."""
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
            self.submitted.emit()
            return
        super().keyPressEvent(event)

    def _page(self, entry) -> QWidget:
        page = QWidget()
        layout = QFormLayout(page)
        layout.setContentsMargins(0, 0, 0, 0)
        # A long label ("Model directory or hub id") goes above its field rather than widen the form.
        layout.setRowWrapPolicy(QFormLayout.RowWrapPolicy.WrapLongRows)
        widgets: dict[str, FieldWidget] = {}
        for field in entry.fields:
            w: FieldWidget
            if field.kind == "choice":
                w = combo = QComboBox()
                combo.addItems(list(field.choices))
                if field.default in field.choices:
                    combo.setCurrentText(field.default)
                combo.currentIndexChanged.connect(self._update_preview)
            elif field.kind == "flag":
                w = check = QCheckBox()
                check.toggled.connect(self._update_preview)
            else:
                w = line = QLineEdit()
                line.setPlaceholderText(field.placeholder)
                line.textChanged.connect(self._update_preview)
            if field.help:
                w.setToolTip(field.help)
            widgets[field.name] = w
            if field.kind == "path":
                browse = QPushButton("Folder…")
                browse.clicked.connect(lambda _=False, w=w: self._browse(w))
                row = QWidget()
                hl = QHBoxLayout(row)
                hl.setContentsMargins(0, 0, 0, 0)
                hl.addWidget(w, 1)
                hl.addWidget(browse)
                layout.addRow(field.label, row)
            else:
                layout.addRow(field.label, w)
        self.inputs[entry.name] = widgets
        return page

    def set_values(self, backend: str, values: dict) -> None:
        """Choose a backend and fill its fields (what a user would type)."""
        self.kind.setCurrentIndex(self.kind.findData(backend))
        for name, value in values.items():
            w = self.inputs[backend][name]
            if isinstance(w, QComboBox):
                w.setCurrentText(str(value))
            elif isinstance(w, QCheckBox):
                w.setChecked(bool(value))
            else:
                w.setText(str(value))

    def missing(self) -> str | None:
        """The label of the first required field left empty (the spec cannot be built), or None."""
        kind = self.kind.currentData()
        if kind == "spec":
            return None if self.spec_text.text().strip() else "Spec"
        values = self._values(kind)
        return next((f.label for f in self.entries[kind].fields if f.required and not values.get(f.name)), None)

    def _values(self, kind: str) -> dict[str, str | bool]:
        return {
            name: (
                w.currentText()
                if isinstance(w, QComboBox)
                else w.isChecked()
                if isinstance(w, QCheckBox)
                else w.text().strip()
            )
            for name, w in self.inputs[kind].items()
        }

    def spec(self) -> str:
        kind = self.kind.currentData()
        if kind == "spec":
            return self.spec_text.text().strip()
        if self.missing() is not None:
            return ""
        return self.entries[kind].compose(self._values(kind))

    def _update_preview(self) -> None:
        spec, missing = self.spec(), self.missing()
        self.preview.setText(f"spec: {spec}" if spec else f"spec: fill in {missing}" if missing else "spec:")

    def _browse(self, target: QLineEdit) -> None:
        path = file_dialogs.folder(self, "Model folder")
        if path:
            target.setText(path)


class ModelsView(QWidget):
    def __init__(self, ctx, parent=None):
        super().__init__(parent)
        self.ctx = ctx
        self.process: CommandProcess | None = None
        self.tested: dict | None = None  # the last successful test's result (shown again when blind mode changes)
        self.model = RowsModel(("Name", "Spec", "Added"), self)
        self.table = table_view(self.model, stretch=1)
        self.table.setItemDelegateForColumn(1, ModelCell(self.table))  # a long spec keeps its model's name in sight
        self.table.selectionModel().selectionChanged.connect(lambda *_: self._selected())
        self.test_button = QPushButton("Test")
        self.test_button.setToolTip(
            "Load the model (or reach its server) and answer one demo item, in a separate "
            "process (vlmdesk models test NAME)"
        )
        self.test_button.clicked.connect(self.test_selected)
        self.remove_button = QPushButton("Remove")
        self.remove_button.clicked.connect(self.remove_selected)
        self.output = QPlainTextEdit()
        self.output.setReadOnly(True)
        self.output.setObjectName("log")
        self.output.setPlaceholderText("Test results and messages")
        self.form = AddModelForm()
        self.form.add.clicked.connect(self._add_from_form)
        self.form.submitted.connect(self._add_from_form)
        left = QVBoxLayout()
        head = QHBoxLayout()
        t = QLabel("Saved models")
        t.setObjectName("sectionTitle")
        head.addWidget(t)
        head.addStretch(1)
        head.addWidget(self.test_button)
        head.addWidget(self.remove_button)
        left.addLayout(head)
        for small in (self.table, self.output):  # room for the families table below at 1024×700
            small.setMinimumHeight(72)
        left.addWidget(self.table, 2)
        t = QLabel("Test")
        t.setObjectName("sectionTitle")
        left.addWidget(t)
        left.addWidget(self.output, 1)
        top = QHBoxLayout()
        top.addLayout(left, 1)
        top.addWidget(self.form, 0, Qt.AlignmentFlag.AlignTop)
        # `vlmdesk models families`: what the hf: backend is proven on; a row fills the form with its checkpoint.
        t = QLabel("Verified model families (hf:)")
        t.setObjectName("sectionTitle")
        t.setToolTip("Each family is tested end to end on a tiny model of its architecture (vlmdesk models families)")
        families = QVBoxLayout()
        families.addWidget(t)
        self.families = RowsModel(("Family", "model_type", "Prefix sharing", "Try first"), self)
        self.families.set_rows(
            [(f.name, f.model_type, "on" if f.share_prefix else "off", f.checkpoint) for f in FAMILIES],
            list(FAMILIES),
            tooltips={(r, 2): f"off: {f.share_off}" for r, f in enumerate(FAMILIES) if f.share_off},
        )
        self.families_table = table_view(self.families, stretch=3)
        self.families_table.setToolTip("Enter or double-click: fill the form with the family's first checkpoint")
        self.families_table.activated.connect(lambda index: self.try_family(self.families.payloads[index.row()]))
        rows = self.families_table.verticalHeader().defaultSectionSize()
        self.families_table.setMinimumHeight(6 * rows + self.families_table.horizontalHeader().sizeHint().height())
        families.addWidget(self.families_table)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(10, 10, 10, 10)
        layout.addLayout(top, 1)
        layout.addLayout(families, 1)
        ctx.prefsChanged.connect(self._show_tested)
        self.reload()

    def reload(self) -> None:
        saved = models.list_models(self.ctx.ws)
        self.model.set_rows(
            [(m.name, m.spec, m.created_at[:16].replace("T", " ")) for m in saved], [m.name for m in saved]
        )
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

    def try_family(self, family) -> None:
        """Fill the add form with a family's smallest public checkpoint (named after it), ready to save."""
        self.form.set_values("hf", {"": family.checkpoint})
        self.form.name.setText(family.checkpoint.rpartition("/")[2].lower())
        self.form.name.setFocus()

    def _add_from_form(self) -> None:
        """Save what the form says, or say in one line why not (nothing is stored then)."""
        if not self.form.name.text().strip():
            self.ctx.error.emit("Model not saved: give it a name (e.g. llava-7b)", "")
            self.form.name.setFocus()
            return
        if (missing := self.form.missing()) is not None:
            self.ctx.error.emit(f"Model not saved: fill in {missing}", "")
            return
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
        assert p is not None  # connected to the signals of the process it shows
        self.output.setPlainText(f"$ {p.command_line()}\n{p.stderr}")

    def _tested(self) -> None:
        p = self.process
        assert p is not None  # connected to the signals of the process it shows
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
        text = (
            f"✓ {result['spec']} loaded in {result['load_s']:.2f} s and answered in {result['answer_s']:.2f} s"
            f"\n\nItem {result['item_index']} of {result['benchmark']}:\n{result['prompt']}\n\n"
        )
        if self.ctx.prefs.blind:  # the demo item's key and the model's answer to it: a benchmark item like any other
            text += f"Response, choice and key {HIDDEN_TEXT}."
        else:
            verdict = {True: "right", False: "wrong", None: "unscored"}[result["correct"]]
            text += (
                f"Response: {result['response']!r}\nChoice: {result['choice'] or 'undecided'} ({verdict}; key "
                f"{result['answer']})"
            )
        text += f"\n\nBackend: {json.dumps(result['backend'], ensure_ascii=False)}"
        self.output.setPlainText(f"$ {self.process.command_line()}\n{text}")

    def shutdown(self) -> None:
        if self.process is not None and self.process.running():
            self.process.kill()
            self.process.process.waitForFinished(2000)
