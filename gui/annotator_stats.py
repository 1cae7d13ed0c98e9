"""The Annotators tab: per annotator of the chosen benchmark, verdicts by kind, items per hour, agreement with the
others (Cohen's κ per pair, its mean; Krippendorff's α for the benchmark) and the conflicts to discuss
(annotation.annotator_stats — `vlmdesk annotators BENCH`). Hidden in blind mode: agreement figures tell how others
judged items."""

from __future__ import annotations

from PySide6.QtWidgets import QHBoxLayout, QLabel, QProgressBar, QPushButton, QVBoxLayout, QWidget

from annotation import annotator_stats
from gui.charts import BlindCover
from gui.empty_states import NO_BENCHMARK, EmptyState
from gui.fitting import ElidedLabel
from gui.tables import RowsModel, export_table, table_view

VERDICT_COLUMNS = (
    ("ok", "ok"),
    ("wrong_answer", "wrong key"),
    ("ambiguous", "ambiguous"),
    ("text_answerable", "text-ans."),
    ("bad_image", "bad image"),
    ("skip", "skip"),
)
COLUMNS = ("Annotator", "Items", *(t for _, t in VERDICT_COLUMNS), "Items/h", "Mean κ", "To discuss")


def _num(value, digits: int = 2) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


class AnnotatorsView(QWidget):
    def __init__(self, ctx, parent=None):
        super().__init__(parent)
        self.ctx = ctx
        self.stats: annotator_stats.BenchmarkAgreement | None = None
        # One line beside the buttons, elided (whole in its tooltip), the figure first: wrapped, it took two lines.
        self.summary = ElidedLabel()
        self.summary.setObjectName("sectionTitle")
        self.progress = QProgressBar()
        self.progress.setObjectName("reviewProgress")
        self.progress.setFormat("%v of %m items judged by someone")
        self.model = RowsModel(COLUMNS, self)
        self.model.align_right = set(range(1, len(COLUMNS)))
        # Every column as wide as its title and figures (the table scrolls sideways when narrower): the names'
        # column stretched was squeezed under "Annotator" beside eleven figure columns.
        self.table = table_view(self.model)
        self.table.horizontalHeader().setStretchLastSection(True)
        note = QLabel(
            "From the standing verdicts (a withdrawn or corrected verdict no longer counts). κ: Cohen's kappa with "
            "each other annotator over the items both judged, skips left out (the cell's tooltip lists the pairs); "
            "α: Krippendorff's alpha over everyone. Items/h: from the time stored with each verdict."
        )
        note.setObjectName("muted")
        note.setWordWrap(True)
        discuss = QPushButton("Discuss conflicts")
        discuss.setToolTip("Open the Conflicts queue")
        discuss.clicked.connect(lambda: ctx.actionRequested.emit("tab:queues"))
        export = QPushButton("Export CSV…")
        export.clicked.connect(lambda: export_table(self, self.model, "annotators.csv"))
        head = QHBoxLayout()
        head.addWidget(self.summary, 1)
        head.addWidget(discuss)
        head.addWidget(export)
        content = QWidget()
        cl = QVBoxLayout(content)
        cl.setContentsMargins(0, 0, 0, 0)
        cl.addLayout(head)
        cl.addWidget(self.progress)
        cl.addWidget(self.table, 1)
        cl.addWidget(note)
        self.cover = BlindCover(content, "Annotator statistics")
        self.empty = EmptyState(content, ctx, "annotators")
        self.empty.show_state(*NO_BENCHMARK)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(10, 8, 10, 8)
        layout.addWidget(self.cover)
        ctx.benchmarkChanged.connect(self.refresh)
        ctx.reviewsChanged.connect(lambda _: self.refresh())
        ctx.prefsChanged.connect(self.refresh)
        self.refresh()

    def on_shown(self) -> None:
        self.refresh()

    def reload(self) -> None:
        self.refresh()

    def refresh(self) -> None:
        self.cover.set_hidden(self.ctx.prefs.blind)
        bench = self.ctx.benchmark
        self.empty.setVisible(bench is None)
        # Computed when shown (on_shown), never for a hidden tab: the figures read every standing verdict.
        if self.cover.hidden or bench is None or not self.isVisible():
            if bench is None:
                self.summary.setText("No benchmark chosen")
                self.model.set_rows([], [])
            return
        self.stats = s = annotator_stats.benchmark_stats(self.ctx.ws, bench.id)
        self.summary.setText(
            f"{bench.name}: Krippendorff's α {_num(s.alpha)} · {len(s.annotators)} annotator(s) · "
            f"{s.conflicts} conflict(s) to discuss"
        )
        self.progress.setRange(0, max(1, s.total_items))
        self.progress.setValue(s.reviewed_items)
        rows, tips = [], {}
        for n, a in enumerate(s.annotators):
            rows.append(
                (
                    a.annotator,
                    a.items,
                    *(a.verdicts.get(k, 0) for k, _ in VERDICT_COLUMNS),
                    _num(a.items_per_hour, 1),
                    _num(a.mean_kappa),
                    a.disagreements,
                )
            )
            tips[(n, COLUMNS.index("Mean κ"))] = (
                "\n".join(f"κ with {o}: {_num(k)} over {a.shared[o]} shared item(s)" for o, k in a.kappa.items())
                or "no other annotator"
            )
        self.model.set_rows(rows, [a.annotator for a in s.annotators], tooltips=tips)
