"""The Desiderata page of Results: pick runs on the left; the report of ChEF's six desiderata of their models
(evaluator.analysis.desiderata — `vlmdesk desiderata RUN…`) with the runs each figure came from and the commands that
would
start the runs still missing, and its figures (radar, reliability diagram, robustness per corruption and severity).

It sits inside the Results tab, whose blind cover hides it in blind mode; it computes nothing while blind."""

from __future__ import annotations

from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QWidget,
)

from db.errors import InvalidInput
from evaluator.analysis import plots
from evaluator.analysis.desiderata import DesiderataReport, desiderata_report, format_report, run_reliability
from gui.background import when_shown
from gui.charts import ChartView, lay_out_chart_page, message_figure
from gui.fitting import compact_combo
from gui.runs_list import RunsList

FIGURES = {  # name -> title
    "radar": "Radar of the six desiderata",
    "reliability": "Reliability diagram (first likelihood run)",
    "robustness": "Robustness per corruption and severity",
}


class DesiderataView(QWidget):
    def __init__(self, ctx, parent=None):
        super().__init__(parent)
        self.ctx = ctx
        self.report: DesiderataReport | None = None
        self.runs = RunsList(ctx, multi=True, compact=True)
        self.runs.selectionChanged.connect(self.redraw)

        self.figure = compact_combo(QComboBox(), 16)
        for name, text in FIGURES.items():
            self.figure.addItem(text, name)
        self.figure.currentIndexChanged.connect(self.redraw)
        self.binning = compact_combo(QComboBox(), 14)
        self.binning.addItem("ECE: equal-count bins (ChEF)", "equal-count")
        self.binning.addItem("ECE: equal-width bins", "equal-width")
        self.binning.currentIndexChanged.connect(self.redraw)
        self.chart = ChartView()
        self.text = QPlainTextEdit()
        self.text.setReadOnly(True)
        self.text.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.text.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.text.setPlaceholderText("Choose runs on the left")
        top = QHBoxLayout()
        label = QLabel("Figure")
        label.setObjectName("filterLabel")
        label.setBuddy(self.figure)
        top.addWidget(label)
        top.addWidget(self.figure)
        top.addWidget(self.binning)
        top.addStretch(1)
        lay_out_chart_page(
            self,
            "Runs (Ctrl+click: every run of the models to compare)",
            self.runs,
            top,
            self.chart,
            self.text,
            left_width=420,
        )
        ctx.runsChanged.connect(self.refresh)
        ctx.prefsChanged.connect(self.redraw)
        self.refresh()

    def refresh(self) -> None:
        self.runs.reload()

    def show_runs(self, run_ids: list[int], figure: str | None = None) -> None:
        if figure is not None and self.figure.findData(figure) >= 0:
            self.figure.blockSignals(True)
            self.figure.setCurrentIndex(self.figure.findData(figure))
            self.figure.blockSignals(False)
        self.runs.select(run_ids)  # redraws

    def redraw(self) -> None:
        if self.ctx.prefs.blind:  # the Results cover hides this page; nothing is computed behind it
            self.report = None
            self.text.clear()
            return
        if not when_shown(self, self.redraw):
            return
        ids = self.runs.selected_run_ids()
        if not ids:
            self.report = None
            self.text.clear()
            self.chart.set_figure(message_figure("Choose runs on the left"), clickable=False)
            return
        binning = self.binning.currentData()
        self.report = desiderata_report(self.ctx.ws, sorted(ids), binning=binning)
        self.text.setPlainText(format_report(self.report))
        name = self.figure.currentData()
        try:
            if name == "radar":
                fig = plots.radar_figure(self.report)
            elif name == "robustness":
                fig = plots.robustness_figure(self.report)
            else:
                used = [r for m in self.report.models for r in m.dimensions["calibration"].runs]
                found = run_reliability(self.ctx.ws, used[0], binning=binning) if used else None
                if found is None:
                    raise InvalidInput("No likelihood run with stored option scores among these runs")
                fig = plots.reliability_figure(found, title=f"run {used[0]}")
        except InvalidInput as exc:
            self.chart.set_figure(message_figure(str(exc)), clickable=False)
            return
        self.chart.set_figure(fig, clickable=False)  # the figure carries its own title
