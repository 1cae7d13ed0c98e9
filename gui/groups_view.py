"""Capability groups in the app: the dialog that tags a benchmark (`vlmdesk benchmarks tag`, from the Benchmarks
dock's context menu or File › Capability groups of the benchmark…) and the Groups page of Results — each model's
figure per group as a radar and as text (evaluator.analysis.groups — `vlmdesk report --groups`).

The page sits inside the Results tab, whose blind cover hides it in blind mode; it computes nothing while blind. The
report reads every counted run (an open run's answers, each of them): a worker computes it (gui/background.py),
"computing…" in the radar's place until it comes."""

from __future__ import annotations

import dataclasses

from PySide6.QtCore import Qt
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPlainTextEdit,
    QVBoxLayout,
    QWidget,
)

from db.catalog import Benchmark
from db.errors import InvalidInput, UserError
from evaluator.analysis import plots
from evaluator.analysis.groups import (
    DEFAULT_OPEN_FIGURE,
    GROUPS,
    GroupsReport,
    benchmark_groups,
    format_groups,
    groups_report,
    open_figure_problem,
    tag_benchmark,
)
from evaluator.scoring import open_metrics
from gui.background import when_shown
from gui.charts import ChartView, lay_out_chart_page, message_figure
from gui.fitting import compact_combo


def _report(ws, mcq_figure, pope_figure, open_figure: str):
    """The worker's part: every model's figure per group."""
    yield groups_report(ws, mcq_figure=mcq_figure, pope_figure=pope_figure, open_figure=open_figure)


class GroupsDialog(QDialog):
    """A checkbox per capability group, the benchmark's own checked; OK stores exactly the checked ones."""

    def __init__(self, bench: Benchmark, parent=None):
        super().__init__(parent)
        self.bench = bench
        self.setWindowTitle(f"Capability groups of {bench.name}")
        layout = QVBoxLayout(self)
        intro = QLabel(
            "LVLM-eHub's six capability groups. Report › Groups averages a model's figures over the benchmarks "
            "of each group (vlmdesk report --groups)."
        )
        intro.setWordWrap(True)
        layout.addWidget(intro)
        current = benchmark_groups(bench)
        self.boxes: dict[str, QCheckBox] = {}
        for key, title in GROUPS.items():
            box = QCheckBox(f"{title} ({key})")
            box.setChecked(key in current)
            self.boxes[key] = box
            layout.addWidget(box)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        layout.addWidget(self.buttons)

    def chosen(self) -> list[str]:
        return [key for key, box in self.boxes.items() if box.isChecked()]


def edit_groups(parent: QWidget, ctx, bench: Benchmark) -> GroupsDialog:
    """Open the dialog (not modal-blocking); on OK the groups are stored at once and every view shows them."""
    dialog = GroupsDialog(bench, parent)

    def save() -> None:
        try:
            stored = tag_benchmark(ctx.ws, bench.name, dialog.chosen())
        except UserError as exc:  # a read-only workspace, the benchmark removed by another process
            ctx.error.emit(f"Could not store the capability groups of {bench.name}: {exc}", "")
            return
        ctx.workspaceChanged.emit()  # the dock, the benchmark in use and the Groups page read them again
        ctx.info.emit(
            f"{bench.name}: {', '.join(stored) or 'no capability group'} "
            f"(vlmdesk benchmarks tag {bench.name} {' '.join(f'--group {g}' for g in stored) or '--clear'})"
        )

    dialog.accepted.connect(save)
    dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    dialog.open()
    return dialog


class GroupsView(QWidget):
    """Models on the left (those with a counted run on a tagged benchmark); their radar and report on the right."""

    def __init__(self, ctx, parent=None):
        super().__init__(parent)
        self.ctx = ctx
        self.report: GroupsReport | None = None
        self._answered = False  # the latest report asked of the worker came
        self.models = QListWidget()
        self.models.setObjectName("groupModels")
        self.models.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.models.setTextElideMode(Qt.TextElideMode.ElideMiddle)  # a long spec keeps its start and its end
        self.models.itemSelectionChanged.connect(self.redraw)
        # Narrow choices: the models' list beside them keeps its width at 1024x700 with a larger text.
        self.mcq = compact_combo(QComboBox(), 12)
        self.mcq.setToolTip("A multiple-choice benchmark's figure (vlmdesk report --groups --mcq-figure)")
        self.mcq.addItem("MCQ: CircularEval", "circular")
        self.mcq.addItem("MCQ: VanillaEval", "vanilla")
        self.mcq.currentIndexChanged.connect(self.refresh)
        self.pope = compact_combo(QComboBox(), 10)
        self.pope.setToolTip("A POPE benchmark's figure, official parser (vlmdesk report --groups --pope-figure)")
        self.pope.addItem("POPE: F1", "f1")
        self.pope.addItem("POPE: accuracy", "accuracy")
        self.pope.currentIndexChanged.connect(self.refresh)
        self.open = compact_combo(QComboBox(), 10)
        self.open.setToolTip("An open benchmark's figure, an open metric (vlmdesk report --groups --open-figure)")
        for entry in open_metrics.REGISTRY.entries():
            if open_figure_problem(entry.name) is None:
                self.open.addItem(f"Open: {entry.name}", entry.name)
        self.open.setCurrentIndex(max(0, self.open.findData(DEFAULT_OPEN_FIGURE)))
        self.open.currentIndexChanged.connect(self.refresh)
        self.chart = ChartView()
        self.text = QPlainTextEdit()
        self.text.setReadOnly(True)
        self.text.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.text.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        top = QHBoxLayout()
        top.addWidget(self.mcq)
        top.addWidget(self.pope)
        top.addWidget(self.open)
        top.addStretch(1)
        lay_out_chart_page(
            self, "Models (Ctrl+click to overlay)", self.models, top, self.chart, self.text, left_width=360
        )
        ctx.prefsChanged.connect(self.refresh)  # blind mode, the theme; Results' refresh calls it for runs and tags
        self.refresh()

    @property
    def computing(self) -> bool:
        """The report is being computed off the GUI thread (the radar says "computing…")."""
        return self.ctx.background.busy(self)

    def refresh(self) -> None:
        """Read the report again (runs, tags or the chosen figures changed), keeping the models chosen: in the worker;
        the radar of the figures asked before stays until the new report comes, other figures say "computing…"."""
        if self.ctx.prefs.blind:  # the Results cover hides this page; nothing is computed behind it
            self.ctx.background.cancel(self)
            self.report = None
            self.text.clear()
            return
        if not when_shown(self, self.refresh):
            return
        asked = (self.mcq.currentData(), self.pope.currentData(), self.open.currentData())
        if self.report is None or (self.report.mcq_figure, self.report.pope_figure, self.report.open_figure) != asked:
            self.chart.show_computing()
        self._answered = False
        self.ctx.background.start(self, lambda ws: _report(ws, *asked), self._computed, self._done)

    def _computed(self, report: GroupsReport) -> None:
        self.report, self._answered = report, True
        chosen = set(self.selected_models())
        self.models.blockSignals(True)
        self.models.clear()
        for m in self.report.models:
            item = QListWidgetItem(m.model)
            item.setToolTip(m.model)
            self.models.addItem(item)
            item.setSelected(m.model in chosen)
        if not self.models.selectedItems() and self.models.count():
            self.models.item(0).setSelected(True)
        self.models.blockSignals(False)
        self.redraw()

    def _done(self) -> None:
        if not self._answered:  # a read failed (the message bar says why): not "computing…" forever
            self.chart.set_figure(message_figure("The capability groups could not be read"), clickable=False)

    def selected_models(self) -> list[str]:
        return [item.text() for item in self.models.selectedItems()]

    def show_models(self, models: list[str]) -> None:
        for row in range(self.models.count()):
            self.models.item(row).setSelected(self.models.item(row).text() in models)

    def redraw(self) -> None:
        if self.report is None:
            return
        chosen = set(self.selected_models())
        if self.report.models and not chosen:
            self.text.setPlainText(format_groups(self.report))
            self.chart.set_figure(message_figure("Choose models on the left"), clickable=False)
            return
        shown = dataclasses.replace(self.report, models=tuple(m for m in self.report.models if m.model in chosen))
        self.text.setPlainText(format_groups(shown))
        try:
            fig = plots.groups_radar_figure(shown)
        except InvalidInput as exc:
            hint = "\nTag benchmarks: right-click one in the Benchmarks list" if not self.report.models else ""
            self.chart.set_figure(message_figure(f"{exc}{hint}"), clickable=False)
            return
        self.chart.set_figure(fig, clickable=False)  # the figure carries its own title
