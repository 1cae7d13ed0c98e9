"""The Annotators tab: per annotator of the chosen benchmark, verdicts by kind, items per hour, agreement with the
others (Cohen's κ per pair, its mean; Krippendorff's α for the benchmark) and the conflicts to discuss
(annotation.annotator_stats — `vlmdesk annotators BENCH`). Hidden in blind mode: agreement figures tell how others
judged items.

Under a standing assignment plan (annotation/team_plans.py — `vlmdesk team progress`), a Plan table per person:
planned, done, left, accuracy on gold items with its Wilson interval, flagged below the threshold; agreement is then
on the planned overlap. In blind mode the annotator sees only their own line of it (their own progress and gold
accuracy: what the feedback after each of their gold verdicts told them), never another person's."""

from __future__ import annotations

from PySide6.QtWidgets import QHBoxLayout, QLabel, QProgressBar, QPushButton, QSizePolicy, QVBoxLayout, QWidget

from annotation import annotator_stats, team_plans
from gui.appearance import WRONG
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
PLAN_COLUMNS = ("Annotator", "Planned", "Done", "Left", "Done %", "Gold", "Gold acc.", "95 % CI", "Flag")


def _num(value, digits: int = 2) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _gold_text(p: team_plans.PersonProgress) -> str:
    if p.interval is None or p.accuracy is None:
        return "no gold item judged yet"
    low, high = p.interval
    return f"gold {p.gold_matched}/{p.gold} matched ({p.accuracy:.2f}, 95 % {low:.2f}–{high:.2f})"


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
        # The standing plan: each person's progress and gold accuracy (the lead's view), or in blind mode my own line.
        self.plan_progress: team_plans.PlanProgress | None = None
        self.mine = QWidget()
        ml = QHBoxLayout(self.mine)
        ml.setContentsMargins(0, 0, 0, 4)
        self.mine_label = ElidedLabel()
        self.mine_bar = QProgressBar()
        self.mine_bar.setObjectName("reviewProgress")
        self.mine_bar.setFormat("%p %")
        self.mine_bar.setFixedWidth(self.mine_bar.fontMetrics().horizontalAdvance("0000 %") * 3)
        ml.addWidget(self.mine_label, 1)
        ml.addWidget(self.mine_bar)
        self.mine.hide()
        self.plan_title = ElidedLabel()
        self.plan_model = RowsModel(PLAN_COLUMNS, self)
        self.plan_model.align_right = set(range(1, len(PLAN_COLUMNS) - 1))
        self.plan_table = table_view(self.plan_model)
        self.plan_table.horizontalHeader().setStretchLastSection(True)
        self.plan_box = QWidget()
        pl = QVBoxLayout(self.plan_box)
        pl.setContentsMargins(0, 0, 0, 0)
        pl.addWidget(self.plan_title)
        pl.addWidget(self.plan_table)
        self.plan_box.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Maximum)
        self.plan_box.hide()
        self.model = RowsModel(COLUMNS, self)
        self.model.align_right = set(range(1, len(COLUMNS)))
        # Every column as wide as its title and figures (the table scrolls sideways when narrower): the names'
        # column stretched was squeezed under "Annotator" beside eleven figure columns.
        self.table = table_view(self.model)
        self.table.horizontalHeader().setStretchLastSection(True)
        note = QLabel(
            "From the standing verdicts (a withdrawn or corrected verdict no longer counts). κ: Cohen's kappa with "
            "each other annotator over the items both judged, skips left out (the cell's tooltip lists the pairs); "
            "α: Krippendorff's alpha over everyone. Items/h: from the time stored with each verdict. Under an "
            "assignment plan, agreement counts only the verdicts the plan asked for (each pair's κ over the items it "
            "gave both); gold accuracy counts each person's first verdict on a gold item, flagged below "
            f"{team_plans.GOLD_THRESHOLD:g}."
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
        cl.addWidget(self.plan_box)
        cl.addWidget(self.table, 1)
        cl.addWidget(note)
        self.cover = BlindCover(content, "Annotator statistics")
        self.empty = EmptyState(content, ctx, "annotators")
        self.empty.show_state(*NO_BENCHMARK)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(10, 8, 10, 8)
        layout.addWidget(self.mine)
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
        if bench is None or not self.isVisible():
            if bench is None:
                self.summary.setText("No benchmark chosen")
                self.model.set_rows([], [])
                self.mine.hide()
            return
        self.plan_progress = team_plans.progress(self.ctx.ws, bench.id)
        self._show_mine()
        if self.cover.hidden:
            return
        self._show_plan()
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
        if s.planned:
            self.summary.setText(
                f"{bench.name} (agreement on the planned overlap): Krippendorff's α {_num(s.alpha)} · "
                f"{len(s.annotators)} annotator(s) · {s.conflicts} conflict(s) to discuss"
            )

    def _show_mine(self) -> None:
        """Blind mode under a plan that names me: my own progress and gold accuracy, nobody else's."""
        found = self.plan_progress
        me = found.person(self.ctx.annotator) if found is not None and self.ctx.prefs.blind else None
        self.mine.setVisible(me is not None)
        if me is None:
            return
        self.mine_label.setText(
            f"Your plan: {me.done}/{me.planned} done, {me.left} left · {_gold_text(me)}"
            + (" · below the threshold" if me.flagged else "")
        )
        self.mine_bar.setRange(0, max(1, me.planned))
        self.mine_bar.setValue(me.done)

    def _show_plan(self) -> None:
        """The lead's view of the standing plan: per person planned, done, left, gold accuracy (Wilson), flags."""
        found = self.plan_progress
        self.plan_box.setVisible(found is not None)
        if found is None:
            self.plan_model.set_rows([], [])
            return
        plan = found.plan
        when = plan.created_at[:16].replace("T", " ")
        self.plan_title.setText(
            f"Plan by {plan.author} ({when} UTC): overlap {plan.overlap}, {found.gold_items} gold, "
            f"⚑ gold accuracy below {found.threshold:g}"
        )
        rows, colours, tips = [], {}, {}
        for n, p in enumerate(found.people):
            rows.append(
                (
                    p.annotator,
                    p.planned,
                    p.done,
                    p.left,
                    f"{100 * p.done / p.planned:.0f} %" if p.planned else "–",
                    p.gold,
                    _num(p.accuracy),
                    "–" if p.interval is None else f"{p.interval[0]:.2f}–{p.interval[1]:.2f}",
                    "⚑" if p.flagged else "",
                )
            )
            tips[(n, 6)] = f"{p.gold_matched} of {p.gold} first verdicts on gold items matched the confirmed key"
            if p.flagged:
                tips[(n, len(PLAN_COLUMNS) - 1)] = f"gold accuracy below {found.threshold:g}"
            if p.flagged:
                colours[(n, 6)] = colours[(n, len(PLAN_COLUMNS) - 1)] = WRONG
        self.plan_model.set_rows(rows, [p.annotator for p in found.people], colours=colours, tooltips=tips)
        # As tall as its rows (up to 8, then it scrolls): the agreement table below keeps the rest.
        table = self.plan_table
        shown = min(len(rows), 8)
        table.setFixedHeight(
            table.horizontalHeader().sizeHint().height()
            + shown * table.verticalHeader().defaultSectionSize()
            + table.horizontalScrollBar().sizeHint().height()
            + 2 * table.frameWidth()
        )
