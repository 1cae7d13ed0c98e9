"""The Alignment tab. Extractors: an adjudication set's study (annotation.alignment.alignment_report — `vlmdesk
align report`): per extractor the alignment with the final human labels and its Wilson interval, a confusion
matrix, and inter-annotator agreement. Open metrics: each open metric against people's verdicts on the chosen open
benchmark's answers (gui/verdicts_view.OpenMetricsPanel — `vlmdesk align open`). Pairs: a judge's verdicts on the
arena's pairs against people's votes (gui/pairs_alignment_view.PairsPanel — `vlmdesk align pairs`). In blind mode the
whole tab is covered and computes nothing: every page mixes everyone's labels or votes."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSplitter,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from annotation import alignment
from evaluator.analysis.plots import alignment_figure
from gui.charts import BlindCover, ChartView, message_figure
from gui.empty_states import BUILD_SET, EmptyState
from gui.fitting import compact_combo
from gui.pairs_alignment_view import PairsPanel
from gui.tables import RowsModel, export_table, table_view
from gui.verdicts_view import OpenMetricsPanel

COLUMNS = (
    "Extractor",
    "n",
    "Agreed",
    "Alignment",
    "Wilson 95 %",
    "Cohen's κ",
    "Undecided cases",
    "Disagreements",
    "Sample",
)


def _pct(v) -> str:
    return "–" if v is None else f"{100 * v:.1f} %"


class AlignmentView(QWidget):
    def __init__(self, ctx, parent=None):
        super().__init__(parent)
        self.page = QWidget()  # the extractors' study; its empty state covers it only, not the Open metrics page
        self.empty = EmptyState(self.page, ctx, "alignment")
        self.ctx = ctx
        self.report: alignment.AlignmentReport | None = None
        self.set_combo = compact_combo(QComboBox(), 16)
        self.set_combo.setMinimumWidth(160)
        self.set_combo.currentIndexChanged.connect(self.redraw)
        self.extractor = compact_combo(QComboBox(), 14)
        self.extractor.setMinimumWidth(200)
        self.extractor.currentIndexChanged.connect(self._draw)
        refresh = QPushButton("Refresh")
        refresh.clicked.connect(self.refresh)
        self.summary = QLabel()
        self.summary.setObjectName("muted")
        self.summary.setWordWrap(True)
        self.chart = ChartView()
        self.table = RowsModel(COLUMNS, self)
        self.table.align_right = set(range(1, len(COLUMNS)))
        table = table_view(self.table, stretch=0)
        export = QPushButton("Export CSV…")
        export.clicked.connect(lambda: export_table(self, self.table, "alignment.csv"))
        top = QHBoxLayout()
        for text, w in (("Adjudication set", self.set_combo), ("Confusion matrix of", self.extractor)):
            lab = QLabel(text)
            lab.setObjectName("filterLabel")
            top.addWidget(lab)
            top.addWidget(w)
        top.addStretch(1)
        top.addWidget(refresh)
        lower = QWidget()
        ll = QVBoxLayout(lower)
        ll.setContentsMargins(0, 0, 0, 0)
        head = QHBoxLayout()
        head.addWidget(self.summary, 1)
        head.addWidget(export, 0, Qt.AlignmentFlag.AlignTop)
        ll.addLayout(head)
        ll.addWidget(table, 1)
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(self.chart)
        split.addWidget(lower)
        split.setSizes([470, 200])
        split.setChildrenCollapsible(False)
        cl = QVBoxLayout(self.page)
        cl.setContentsMargins(0, 0, 0, 0)
        cl.addLayout(top)
        cl.addWidget(split, 1)
        self.open_metrics = OpenMetricsPanel(ctx)
        self.inner = QTabWidget()
        self.inner.addTab(self.page, "Extractors")
        self.inner.addTab(self.open_metrics, "Open metrics")
        self.pairs = PairsPanel(ctx)
        self.inner.addTab(self.pairs, "Pairs")
        self.inner.currentChanged.connect(lambda _: self.redraw())
        ctx.benchmarkChanged.connect(lambda: self.redraw() if self.isVisible() else None)
        self.cover = BlindCover(self.inner, "Alignment figures")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(10, 8, 10, 8)
        layout.addWidget(self.cover)
        ctx.prefsChanged.connect(self._blind_changed)
        self.cover.set_hidden(ctx.prefs.blind)
        self.refresh()

    def _blind_changed(self) -> None:
        self.cover.set_hidden(self.ctx.prefs.blind)
        self.refresh()

    def refresh(self) -> None:
        current = self.set_combo.currentData()
        self.set_combo.blockSignals(True)
        self.set_combo.clear()
        for s in alignment.list_sets(self.ctx.ws):
            self.set_combo.addItem(f"{s.name} ({s.items} responses)", s.name)
        if current and (i := self.set_combo.findData(current)) >= 0:
            self.set_combo.setCurrentIndex(i)
        self.set_combo.blockSignals(False)
        self.redraw()

    def on_shown(self) -> None:
        self.refresh()

    def redraw(self) -> None:
        if self.cover.hidden:  # blind mode: nothing to draw (nor an empty state over the cover); drawn when it is off
            self.empty.hide()
            return
        if self.inner.currentWidget() is self.open_metrics:
            self.open_metrics.refresh()
            return
        if self.inner.currentWidget() is self.pairs:
            self.pairs.refresh()
            return
        name = self.set_combo.currentData()
        self.report = alignment.alignment_report(self.ctx.ws, name) if name else None
        self.extractor.blockSignals(True)
        self.extractor.clear()
        for ext in self.report.extractors if self.report else {}:
            self.extractor.addItem(ext, ext)
        self.extractor.blockSignals(False)
        self._fill_table()
        self._draw()

    def _draw(self) -> None:
        if self.set_combo.count() == 0:
            self.empty.show_state(
                "No adjudication set yet",
                "Alignment measures how often each answer extractor agrees with people's blind reading of the same "
                "responses. Build an adjudication set from finished runs, then label it in Queues.",
                (BUILD_SET, ("Label in Queues", "tab:queues")),
            )
        else:
            self.empty.hide()
        if self.report is None:
            self.chart.set_figure(
                message_figure(
                    "No adjudication set yet: Workspace › Build an adjudication set…, "
                    "then label it in Queues › Extractor adjudication"
                ),
                clickable=False,
            )
            return
        self.chart.set_figure(
            alignment_figure(self.report, self.extractor.currentData()),
            f"Extractor–human alignment · set {self.report.set_name}",
            clickable=False,
        )

    def _fill_table(self) -> None:
        r = self.report
        if r is None:
            self.table.set_rows([])
            self.summary.setText("")
            return
        rows = []
        for name, e in r.extractors.items():
            ci = e.overall.wilson_95
            rows.append(
                (
                    name,
                    e.overall.n,
                    e.overall.agreed,
                    _pct(e.overall.rate),
                    f"{100 * ci[0]:.1f}–{100 * ci[1]:.1f} %" if ci else "–",
                    "–" if e.cohen_kappa is None else f"{e.cohen_kappa:.3f}",
                    *(f"{w.agreed}/{w.n}" for w in (e.by_why[k] for k in alignment.WHY)),
                )
            )
        self.table.set_rows(rows)
        inter = r.inter_annotator
        final = r.final
        parts = [
            f"{r.labelled} of {r.items} responses labelled",
            f"{final.decided} final labels ({final.adjudicated} adjudicated, {final.ties} ties, "
            f"{final.unclear} unclear)",
            f"annotators: {', '.join(inter.annotators) or '–'}",
        ]
        if inter.items_with_two_or_more:
            alpha = inter.krippendorff_alpha
            parts.append(
                f"agreement {_pct(inter.percent_agreement)} on {inter.items_with_two_or_more} items"
                + (f", α = {alpha:.3f}" if alpha is not None else "")
            )
        self.summary.setText("  ·  ".join(parts))
