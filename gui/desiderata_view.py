"""The Desiderata page of Results: pick runs on the left; the report of ChEF's six desiderata of their models
(evaluator.analysis.desiderata — `vlmdesk desiderata RUN…`) with the runs each figure came from and the commands that
would
start the runs still missing, and its figures (radar, reliability diagram, robustness per corruption and severity).

It sits inside the Results tab, whose blind cover hides it in blind mode; it computes nothing while blind. The report
reads the runs' passes (its cost grows with the runs): a worker computes it (gui/background.py), "computing…" in the
figure's and the text's place until it comes."""

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
from evaluator.analysis.desiderata_metrics import Calibration
from gui.background import COMPUTING, when_shown
from gui.charts import ChartView, lay_out_chart_page, message_figure
from gui.fitting import compact_combo
from gui.runs_list import RunsList

CHOOSE = "Choose runs on the left"

FIGURES = {  # name -> title
    "radar": "Radar of the six desiderata",
    "reliability": "Reliability diagram (first likelihood run)",
    "robustness": "Robustness per corruption and severity",
}


def _report(ws, run_ids: list[int], binning, figure: str):
    """The worker's part: the report, and the reliability of its first likelihood run when that figure is chosen."""
    report = desiderata_report(ws, run_ids, binning=binning)
    used = [r for m in report.models for r in m.dimensions["calibration"].runs]
    found = run_reliability(ws, used[0], binning=binning) if figure == "reliability" and used else None
    yield report, (used[0], found) if found is not None else None


class DesiderataView(QWidget):
    def __init__(self, ctx, parent=None):
        super().__init__(parent)
        self.ctx = ctx
        self.report: DesiderataReport | None = None
        self._reliability: tuple[int, Calibration] | None = None  # (run, its calibration) for the reliability figure
        self._key: tuple | None = None  # what the report in hand was computed for
        self.runs = RunsList(ctx, multi=True, compact=True)
        self.runs.selectionChanged.connect(self.redraw)

        self.figure = compact_combo(QComboBox(), 12)  # narrow: the runs list beside keeps its models readable
        for name, text in FIGURES.items():
            self.figure.addItem(text, name)
        self.figure.currentIndexChanged.connect(self.redraw)
        self.binning = compact_combo(QComboBox(), 10)
        self.binning.addItem("ECE: equal-count bins (ChEF)", "equal-count")
        self.binning.addItem("ECE: equal-width bins", "equal-width")
        self.binning.currentIndexChanged.connect(self.redraw)
        self.chart = ChartView()
        self.text = QPlainTextEdit()
        self.text.setReadOnly(True)
        self.text.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.text.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.text.setPlaceholderText(CHOOSE)
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
            left_width=470,
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

    @property
    def computing(self) -> bool:
        """The report is being computed off the GUI thread (the figure and the text say "computing…")."""
        return self.ctx.background.busy(self)

    def redraw(self) -> None:
        """Draw the chosen runs' report: the one in hand while the runs' rows and the choices are unchanged (another
        theme), else computed by the worker, "computing…" in its place until it comes."""
        if self.ctx.prefs.blind:  # the Results cover hides this page; nothing is computed behind it
            self.ctx.background.cancel(self)
            self.report, self._key = None, None
            self.text.clear()
            return
        if not when_shown(self, self.redraw):
            return
        ids = sorted(self.runs.selected_run_ids())
        if not ids:
            self.ctx.background.cancel(self)
            self.report, self._key = None, None
            self.text.setPlaceholderText(CHOOSE)
            self.text.clear()
            self.chart.set_figure(message_figure(CHOOSE), clickable=False)
            return
        binning, figure = self.binning.currentData(), self.figure.currentData()
        key = (self.runs.figures_key(ids), binning, figure == "reliability")  # radar and robustness share one
        if key == self._key:
            self.ctx.background.cancel(self)  # a reply for an earlier choice would draw over this one
            self._draw()
            return
        self.report, self._key = None, None
        self.text.setPlaceholderText(COMPUTING)
        self.text.clear()
        self.chart.show_computing()
        self.ctx.background.start(
            self,
            lambda ws: _report(ws, ids, binning, figure),
            lambda part: self._computed(key, *part),
            lambda: self._done(key),
        )

    def _computed(self, key: tuple, report: DesiderataReport, reliability: tuple[int, Calibration] | None) -> None:
        self.report, self._reliability, self._key = report, reliability, key
        self.text.setPlainText(format_report(report))
        self._draw()

    def _done(self, key: tuple) -> None:
        if self._key != key:  # a read failed (the message bar says why): not "computing…" forever
            self.text.setPlaceholderText(CHOOSE)
            self.chart.set_figure(message_figure("The runs' desiderata could not be read"), clickable=False)

    def _draw(self) -> None:
        assert self.report is not None  # drawn once computed
        name = self.figure.currentData()
        try:
            if name == "radar":
                fig = plots.radar_figure(self.report)
            elif name == "robustness":
                fig = plots.robustness_figure(self.report)
            else:
                if self._reliability is None:
                    raise InvalidInput("No likelihood run with stored option scores among these runs")
                run_id, found = self._reliability
                fig = plots.reliability_figure(found, title=f"run {run_id}")
        except InvalidInput as exc:
            self.chart.set_figure(message_figure(str(exc)), clickable=False)
            return
        self.chart.set_figure(fig, clickable=False)  # the figure carries its own title
