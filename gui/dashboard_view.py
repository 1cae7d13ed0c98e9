"""The Results tab: runs on the left (one or several), their report as charts (evaluator/analysis/plots.py Figures in a
FigureCanvasQTAgg), and the items behind a clicked bar (evaluator.analysis.report.group_items — `vlmdesk run-items`),
each opening in Review."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QStandardItemModel
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

from annotation import blind
from db.errors import InvalidInput
from evaluator.analysis import plots
from evaluator.analysis.report import NONE, RunReport, group_items, open_group_items, run_report
from evaluator.analysis.samples import sample_lines
from evaluator.formats.exporters import ExportError
from evaluator.formats.prediction_export import PredictionExport, default_file_name, export_predictions
from evaluator.scoring import open_metrics
from gui import file_dialogs
from gui.appearance import MUTED, RIGHT, WRONG
from gui.background import COMPUTING, when_shown
from gui.charts import BlindCover, ChartView, message_figure
from gui.compare_view import CompareView
from gui.desiderata_view import DesiderataView
from gui.empty_states import ADD_MODEL, START_RUN, EmptyState
from gui.fitting import compact_combo
from gui.groups_view import GroupsView
from gui.item_panel import ADJUDICATION_HIDDEN
from gui.runs_list import RunsList
from gui.tables import RowsModel, export_table, table_view

CHARTS = {  # name -> (title, kinds it draws)
    "l2": ("Per L2 ability", "mcq"),
    "category": ("Per leaf category", "mcq"),
    "drop": ("VanillaEval vs CircularEval", "mcq"),
    "pope": ("POPE per setting", "pope"),
    "open": ("Open answers", "open"),
}
ITEM_COLUMNS = ("Index", "Result", "Vanilla", "Circular", "L2", "Category", "Question")
MARK = {True: "✓", False: "✗", None: "–"}
CLICK_HINT = "Click a bar to list the items behind it; double-click an item to review it"
REVIEW_HINT = " — double-click an item to review it"
STRATEGY_TITLE = {"vanilla": "VanillaEval", "circular": "CircularEval"}
# An open run's items: the clicked metric's score (every metric's in its tooltip), the answer and the first reference
# shortened (whole in their tooltips); the question stretches in the same column as the multiple-choice list's.
OPEN_COLUMNS = ("Index", "Score", "Answer", "Reference", "Refs", "Category", "Question")
OPEN_TEXT = 32  # characters of an answer or a reference shown in a cell


def _reports(ws, run_ids: list[int]):
    """The worker's part: the runs' reports (one that reads every pass — a re-scoring, an open run — costs more than
    a frame), a run removed since it was chosen left out."""
    yield [r for r in (run_report(ws, i) for i in run_ids) if r is not None]


def _title(chart: str, run_ids: list[int]) -> str:
    return f"{CHARTS[chart][0]} · run{'s' if len(run_ids) > 1 else ''} {', '.join(map(str, run_ids))}"


def _short(text: str) -> str:
    return text if len(text) <= OPEN_TEXT else text[: OPEN_TEXT - 1] + "…"


def _score_text(value: float, metric: str, entries: dict) -> str:
    """A fraction as %, CIDEr (its own scale) with two decimals."""
    entry = entries.get(metric)
    return f"{value:.2f}" if entry is not None and entry.scale != "fraction" else f"{100 * value:.0f} %"


POPE_COLUMNS = ("Index", "Result", "Official", "Strict", "L2", "Category", "Question")


def _bar_figure(report: RunReport, target: dict) -> str | None:
    """A bar's figure with its 95 % interval, as its tooltip says it: "43.0 % (95 % interval 15.8–75.0, Wilson)";
    None for a bar the report has no such figure of."""
    group, metric = target.get("group"), target.get("metric")
    value = interval = None
    scale = 100.0
    if report.pope is not None and target.get("parser") in report.pope.pope and metric:
        parser = target["parser"]
        value = getattr(report.pope.pope[parser], metric, None)
        interval = getattr(report.pope.intervals.get(parser), metric, None)
    elif report.open is not None and metric:
        o = report.open
        value = o.metrics.get(metric) if group is None else o.by_category.get(group, {}).get("metrics", {}).get(metric)
        interval = (o.intervals if group is None else o.category_intervals.get(group, {})).get(metric)
        scale = 1.0 if o.scales.get(metric) == "cider" else 100.0
    elif report.mcq is not None and target.get("strategy") in ("vanilla", "circular"):
        level = {"l2": "by_l2", "category": "by_category", "split": "by_split"}.get(target.get("level", "all"))
        scores = report.mcq.overall if level is None else report.mcq.groups(level).get(group or "")
        if scores is not None:
            value = getattr(scores, target["strategy"])
            interval = getattr(scores, f"{target['strategy']}_ci")
    if not isinstance(value, float | int):
        return None
    digits, unit = (2, "") if scale == 1.0 else (1, " %")
    shown = f"{value * scale:.{digits}f}{unit}"
    if interval is None:
        return shown
    low, high = interval.low * scale, interval.high * scale
    return f"{shown} (95 % interval {low:.{digits}f}–{high:.{digits}f}, {interval.method})"


@dataclass(frozen=True)
class _Listing:
    """The items behind a bar, as the table shows them (computed in the worker)."""

    columns: tuple[str, ...]
    rows: list[tuple]
    payloads: list[int]
    colours: dict
    tips: dict
    title: str


def _open_bar(target: dict) -> bool:
    return target.get("level", "all") in ("all", "category") and bool(target.get("metric"))


def _item_columns(target: dict) -> tuple[str, ...]:
    return OPEN_COLUMNS if _open_bar(target) else POPE_COLUMNS if target.get("level") == "pope" else ITEM_COLUMNS


def _items_head(target: dict) -> str:
    """The items title's first part, known before they are read: "Run 2 · counting · word_match"."""
    level, group = target.get("level", "all"), target.get("group")
    if _open_bar(target):
        what, how = ("all items" if group is None else group if group != NONE else "(none)"), target["metric"]
    else:
        key = target.get("parser") or target.get("strategy") or "vanilla"
        what = "all items" if level in ("all", "pope") else (group if group != NONE else "(none)")
        how = STRATEGY_TITLE.get(key, f"{key} parser")
    return f"Run {int(target['run'])} · {what} · {how}"


def _items_listing(ws, target: dict, annotator: str, blind_on: bool, reveal_after_verdict: bool):
    """The worker's part: the items behind `target`, a run's verdict hidden where this annotator's blind label is
    awaited (the blind rule, annotation/blind.py); the bar's count above still includes them."""
    run_id, group = int(target["run"]), target.get("group")
    if _open_bar(target):
        found_open = open_group_items(ws, run_id, group=group)
        sight = blind.sight(
            ws,
            annotator,
            blind=blind_on,
            reveal_after_verdict=reveal_after_verdict,
            item_ids=[r.item_id for r in found_open],
        )
        yield _open_listing(target, found_open, sight)
        return
    level = target.get("level", "all")
    found = group_items(ws, run_id, level="all" if level == "pope" else level, group=group)
    sight = blind.sight(
        ws, annotator, blind=blind_on, reveal_after_verdict=reveal_after_verdict, item_ids=[r.item_id for r in found]
    )
    key = target.get("parser") or target.get("strategy") or "vanilla"
    rows, colours = [], {}
    for n, r in enumerate(found):
        verdict = getattr(r, key)
        if not sight.shows_run_result(run_id, r.item_id):
            rows.append(
                (
                    r.index,
                    ADJUDICATION_HIDDEN,
                    "",
                    "",
                    plots.SHORT_L2.get(r.l2_category or "", ""),
                    r.category or "",
                    " ".join(r.question.split()),
                )
            )
            colours[(n, 1)] = MUTED
            continue
        rows.append(
            (
                r.index,
                {True: "✓ right", False: "✗ wrong", None: "– unscored"}[verdict],
                MARK[r.vanilla] if r.official is None else MARK[r.official],
                MARK[r.circular] if r.official is None else MARK[r.strict],
                plots.SHORT_L2.get(r.l2_category or "", r.l2_category or ""),
                r.category or "",
                " ".join(r.question.split()),
            )
        )
        colours[(n, 1)] = {True: RIGHT, False: WRONG}.get(verdict, MUTED)
    tips = {(n, 4): r.l2_category for n, r in enumerate(found) if r.l2_category}
    right = sum(1 for r in found if getattr(r, key))
    yield _Listing(
        _item_columns(target),
        rows,
        [r.item_id for r in found],
        colours,
        tips,
        f"{_items_head(target)}: {right} of {len(found)} right{REVIEW_HINT}",
    )


def _open_listing(target: dict, found: list, sight) -> _Listing:
    """The answered items of an open run's bar, with the clicked metric's score first (as `vlmdesk run-items`)."""
    run_id, metric = int(target["run"]), target["metric"]
    entries = {e.name: e for e in open_metrics.REGISTRY.entries()}
    rows, colours, tips = [], {}, {}
    for n, r in enumerate(found):
        question = " ".join(r.question.split())
        reference = r.references[0] if r.references else ""
        shown = sight.shows_run_result(run_id, r.item_id)
        score = r.scores.get(metric)
        every = "\n".join(f"{m}: {_score_text(v, m, entries)}" for m, v in r.scores.items())
        rows.append(
            (
                r.index,
                (_score_text(score, metric, entries) if score is not None else "– left out")
                if shown
                else ADJUDICATION_HIDDEN,
                _short(" ".join(r.response.split())),
                _short(" ".join(reference.split())),
                len(r.references),
                r.category or "",
                question,
            )
        )
        fraction = entries[metric].scale == "fraction" if metric in entries else True
        colours[(n, 1)] = (
            MUTED
            if not shown or score is None or not fraction
            else RIGHT
            if score >= 1
            else WRONG
            if score <= 0
            else MUTED
        )
        if shown:
            tips[(n, 1)] = every
        tips[(n, 2)] = r.response[:2000]
        tips[(n, 3)] = "\n".join(f"• {ref[:500]}" for ref in r.references[:20])
    scored = [r.scores[metric] for r in found if metric in r.scores]
    mean = _score_text(sum(scored) / len(scored), metric, entries) if scored else "–"
    return _Listing(
        OPEN_COLUMNS,
        rows,
        [r.item_id for r in found],
        colours,
        tips,
        f"{_items_head(target)}: mean {mean} over {len(scored)} of {len(found)} answers{REVIEW_HINT}",
    )


class DashboardView(QWidget):
    openInReview = Signal(int)  # item id

    def __init__(self, ctx, parent=None):
        super().__init__(parent)
        self.ctx = ctx
        self.reports: list[RunReport] = []
        self._reports_key: tuple | None = None  # what the reports in hand were computed for (RunsList.figures_key)
        self.target: dict | None = None
        self.runs = RunsList(ctx, multi=True, compact=True)
        self.runs.selectionChanged.connect(self.redraw)
        self.runs.listed.connect(self._listed)
        export_csv = QPushButton("Export CSV…")
        export_csv.clicked.connect(lambda: export_table(self, self.runs.model, "runs.csv"))
        self.export_preds = QPushButton("Export predictions…")
        self.export_preds.setToolTip("The selected run in VLMEvalKit's prediction format (TSV or CSV)")
        self.export_preds.clicked.connect(self._export_predictions_dialog)
        left = QWidget()
        ll = QVBoxLayout(left)
        ll.setContentsMargins(0, 0, 0, 0)
        t = QLabel("Runs (Ctrl+click to compare)")
        t.setObjectName("sectionTitle")
        ll.addWidget(t)
        ll.addWidget(self.runs, 1)
        buttons = QHBoxLayout()
        buttons.addWidget(self.export_preds)
        buttons.addWidget(export_csv)
        buttons.addStretch(1)
        ll.addLayout(buttons)

        self.kind = compact_combo(QComboBox())
        for name, (title, _) in CHARTS.items():
            self.kind.addItem(title, name)
        self.kind.currentIndexChanged.connect(self.redraw)  # the reports in hand, drawn as another chart
        self.chart = ChartView()
        self.chart.barClicked.connect(self.show_items_of)
        self.chart.describe = self._describe_bar
        self.items_title = QLabel(CLICK_HINT)
        self.items_title.setObjectName("muted")
        self.items_title.setWordWrap(True)  # a long title must not widen the pane
        self.items = RowsModel(ITEM_COLUMNS, self)
        self.items_table = table_view(self.items, stretch=6)
        self.items_table.doubleClicked.connect(self._open_item)
        self.items_csv = QPushButton("Export CSV…")
        self.items_csv.clicked.connect(lambda: export_table(self, self.items, "items.csv"))
        chart_box = QWidget()
        cl = QVBoxLayout(chart_box)
        cl.setContentsMargins(0, 0, 0, 0)
        top = QHBoxLayout()
        lab = QLabel("Chart")
        lab.setObjectName("filterLabel")
        top.addWidget(lab)
        top.addWidget(self.kind)
        top.addStretch(1)
        cl.addLayout(top)
        cl.addWidget(self.chart, 1)
        # A sampled run's group (`run --samples K`): mean@K and pass@k with their intervals, as the report's text.
        self.samples_note = QLabel("")
        self.samples_note.setObjectName("muted")
        self.samples_note.setWordWrap(True)
        self.samples_note.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.samples_note.hide()
        cl.addWidget(self.samples_note)
        items_box = QWidget()
        il = QVBoxLayout(items_box)
        il.setContentsMargins(0, 0, 0, 0)
        head = QHBoxLayout()
        head.addWidget(self.items_title, 1)
        head.addWidget(self.items_csv)
        il.addLayout(head)
        il.addWidget(self.items_table, 1)
        right = QSplitter(Qt.Orientation.Vertical)
        right.addWidget(chart_box)
        right.addWidget(items_box)
        right.setSizes([470, 230])
        right.setChildrenCollapsible(False)
        split = QSplitter(Qt.Orientation.Horizontal)
        split.addWidget(left)
        split.addWidget(right)
        split.setSizes([470, 710])
        split.setChildrenCollapsible(False)
        # The Desiderata page (gui/desiderata_view.py) beside the charts, under the same blind cover.
        self.desiderata = DesiderataView(ctx)
        self.groups = GroupsView(ctx)  # LVLM-eHub's capability groups of each model (gui/groups_view.py)
        self.pages = QTabWidget()
        self.pages.addTab(split, "&Charts")
        self.pages.addTab(self.desiderata, "&Desiderata")
        self.pages.addTab(self.groups, "&Groups")
        self.compare = CompareView(ctx)  # two runs item by item (gui/compare_view.py), under the same blind cover
        self.compare.openInReview.connect(self.openInReview)
        self.pages.addTab(self.compare, "Co&mpare")
        self.cover = BlindCover(self.pages, "Results")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(10, 8, 10, 8)
        layout.addWidget(self.cover)
        self.empty = EmptyState(self, ctx, "results")
        ctx.runsChanged.connect(self.refresh)
        ctx.prefsChanged.connect(self._blind_changed)
        ctx.sightChanged.connect(self._sight_changed)
        self.cover.set_hidden(ctx.prefs.blind)
        self.refresh()

    def _blind_changed(self) -> None:
        was = self.cover.hidden
        self.cover.set_hidden(self.ctx.prefs.blind)
        if self.cover.hidden:
            self.ctx.background.cancel(self)  # nothing is computed behind the cover
            self.ctx.background.cancel(self.items_table)
        elif was:
            self.redraw()
            self.desiderata.redraw()
            self._ask_items()  # labels given behind the cover may show verdicts the listing hid (or it was cut short)

    def _sight_changed(self, _new_annotator: bool) -> None:
        # The items behind a bar hide the run results awaiting this annotator's blind label: ask again for whoever
        # signs now (another name may not have labelled what the previous one had).
        self._ask_items()

    def refresh(self) -> None:
        self.runs.reload()
        self.groups.refresh()

    def _listed(self) -> None:
        """The runs were listed (when the list came into sight, or again): the empty state, the first run chosen."""
        if self.runs.model.payloads:
            self.empty.hide()
        else:
            self.empty.show_state(
                "No run yet",
                "Results draws the scores of evaluation runs: CircularEval and VanillaEval per ability, POPE's "
                "metrics, and the items behind every bar. Start a run (a free baseline takes seconds), or add a "
                "model first.",
                (START_RUN, ADD_MODEL),
            )
        if not self.runs.selected_run_ids() and self.runs.model.payloads:
            self.show_runs([self.runs.model.payloads[0]])

    def show_runs(self, run_ids: list[int], chart: str | None = None) -> None:
        if chart is not None:
            self.kind.blockSignals(True)
            self.kind.setCurrentIndex(self.kind.findData(chart))
            self.kind.blockSignals(False)
        self.runs.select(run_ids)  # redraws

    # -- charts
    @property
    def computing(self) -> bool:
        """The chosen runs' reports are being computed off the GUI thread (the chart says "computing…")."""
        return self.ctx.background.busy(self)

    def redraw(self) -> None:
        """Draw the chosen runs' chart: from the reports in hand while the runs' rows are unchanged (another chart,
        a theme), else computed by the worker, "computing…" in the chart's place until they come."""
        if self.cover.hidden:  # blind mode: nothing to draw; drawn when it is turned off
            return
        if not when_shown(self, self.redraw):
            return
        ids = sorted(self.runs.selected_run_ids())
        if self.target is not None and int(self.target["run"]) not in ids:
            self.clear_items()  # the items of a bar of a run no longer shown would pass for the new run's
        self.export_preds.setEnabled(len(ids) == 1)
        key = self.runs.figures_key(ids)
        if not ids or key == self._reports_key:
            self.ctx.background.cancel(self)  # a reply for an earlier choice would draw over this one
            if not ids:
                self.reports, self._reports_key = [], None
            self._draw()
            return
        if self.computing or self._reports_key is None or self._reports_key[1] != tuple(ids):
            # Other runs: the chart shown is not theirs. The same runs computed again keep their chart meanwhile.
            self.chart.show_computing(_title(self.kind.currentData(), ids))
        self.ctx.background.start(
            self, lambda ws: _reports(ws, ids), lambda reports: self._computed(key, reports), lambda: self._done(key)
        )

    def _computed(self, key: tuple, reports: list[RunReport]) -> None:
        self.reports, self._reports_key = reports, key
        self._draw()

    def _done(self, key: tuple) -> None:
        if self._reports_key != key:  # a read failed (the message bar says why): not "computing…" forever
            self.reports, self._reports_key = [], None
            self.chart.set_figure(message_figure("The runs' reports could not be read"), clickable=False)

    def _draw(self) -> None:
        # Each sampled run's headline (its first figure) in a line; the report's whole sample lines in the tooltip.
        sampled = [(r.run_id, lines) for r in self.reports if (lines := sample_lines(r))]
        self.samples_note.setText("\n".join(f"Run {i} · {lines[1].strip() if len(lines) > 1 else lines[0]}"
                                             for i, lines in sampled))  # fmt: skip
        self.samples_note.setToolTip("\n\n".join(f"Run {i}\n" + "\n".join(lines) for i, lines in sampled))
        self.samples_note.setVisible(bool(sampled))
        if not self.reports:
            self.chart.set_figure(message_figure("Choose one or more runs on the left"), clickable=False)
            return
        kinds = {"pope" if r.pope is not None else "open" if r.open is not None else "mcq" for r in self.reports}
        if len(kinds) > 1:
            self.chart.set_figure(
                message_figure("POPE, open and multiple-choice runs cannot share a chart:\nchoose runs of one kind"),
                clickable=False,
            )
            return
        if kinds == {"open"} and not any(r.open and r.open.metrics for r in self.reports):
            self.chart.set_figure(
                message_figure(
                    "No answered item has reference answers to score against:\ncompare the answers in the Arena tab"
                ),
                clickable=False,
            )
            return
        kind = kinds.pop()
        chart = self.kind.currentData()
        if CHARTS[chart][1] != kind:
            chart = kind if kind in ("pope", "open") else "l2"
            self.kind.blockSignals(True)
            self.kind.setCurrentIndex(self.kind.findData(chart))
            self.kind.blockSignals(False)
        for i in range(self.kind.count()):  # only the charts that fit the runs can be chosen
            model = self.kind.model()
            assert isinstance(model, QStandardItemModel)  # a QComboBox's own model
            model.item(i).setEnabled(CHARTS[self.kind.itemData(i)][1] == kind)
        try:
            fig = {
                "l2": lambda r: plots.ability_figure(r, "by_l2"),
                "category": lambda r: plots.ability_figure(r, "by_category"),
                "drop": plots.drop_figure,
                "pope": plots.pope_figure,
                "open": plots.open_figure,
            }[chart](self.reports)
        except InvalidInput as exc:  # e.g. the drop chart of runs without CircularEval
            self.chart.set_figure(message_figure(str(exc)), clickable=False)
            return
        self.chart.set_figure(fig, _title(chart, [r.run_id for r in self.reports]))

    def _open_item(self, index) -> None:
        if (item_id := self.items.payloads[index.row()]) is not None:  # not the "computing…" row
            self.openInReview.emit(item_id)

    def _describe_bar(self, target: dict) -> str:
        report = next((r for r in self.reports if str(r.run_id) == target.get("run")), None)
        parts = [f"run {target.get('run')}" + (f" · {report.model}" if report else "")]
        parts += [target[k] for k in ("group", "strategy", "parser", "metric") if target.get(k)]
        figure = _bar_figure(report, target) if report is not None else None
        return " · ".join(parts) + (f"\n{figure}" if figure else "")

    # -- items behind a bar
    @property
    def items_computing(self) -> bool:
        """The items behind the clicked bar are being listed off the GUI thread (the table says "computing…")."""
        return self.ctx.background.busy(self.items_table)

    def clear_items(self) -> None:
        self.ctx.background.cancel(self.items_table)  # a listing of the bar no longer shown would come after this
        self.target = None
        self.items.columns = ITEM_COLUMNS
        self.items.set_rows([], [])
        self.items_title.setText(CLICK_HINT)

    def show_items_of(self, target: dict) -> None:
        self.target = target
        self.chart.highlight(target)
        self._ask_items()

    def _ask_items(self) -> None:
        """List the clicked bar's items in the worker (every pass of the run is read: seconds at a million), one
        "computing…" row in the table's place until they come; the table keeps its size."""
        target = self.target
        if target is None or self.cover.hidden or not when_shown(self, self._ask_items):
            return
        # Who signs now and what they may see, taken here: the worker reads the blind rule for them.
        seen = (self.ctx.annotator, self.ctx.prefs.blind, self.ctx.prefs.reveal_after_verdict)
        columns = _item_columns(target)
        self.items.columns = columns
        self.items.set_rows([("", COMPUTING) + ("",) * (len(columns) - 2)], [None])
        # Worded as the listing's title will be, so that it keeps its lines and the table below does not move.
        self.items_title.setText(f"{_items_head(target)}: {COMPUTING}{REVIEW_HINT}")
        self.items_csv.setEnabled(False)
        self.ctx.background.start(
            self.items_table, lambda ws: _items_listing(ws, target, *seen), self._listed_items, self._items_done
        )

    def _listed_items(self, listing: _Listing) -> None:
        self.items.columns = listing.columns
        self.items.set_rows(listing.rows, listing.payloads, colours=listing.colours, tooltips=listing.tips)
        self.items_title.setText(listing.title)
        self.items_csv.setEnabled(True)

    def _items_done(self) -> None:
        if not self.items_csv.isEnabled():  # a read failed (the message bar says why): not "computing…" forever
            self.items.set_rows([], [])
            self.items_title.setText("The items behind the bar could not be read")
            self.items_csv.setEnabled(True)

    # -- export
    def export_predictions(self, path: str | Path) -> PredictionExport:
        ids = self.runs.selected_run_ids()
        layout = "lmms-eval" if str(path).lower().endswith(".jsonl") else "vlmevalkit"  # lmms-eval's samples
        return export_predictions(self.ctx.ws, ids[0], path, layout=layout)

    def _export_predictions_dialog(self) -> None:
        ids = self.runs.selected_run_ids()
        if len(ids) != 1:
            return
        run = self.runs.run(ids[0])
        if run is None:
            return
        path = file_dialogs.save_file(
            self,
            "Export predictions (VLMEvalKit format)",
            default_file_name(run.model_spec, run.benchmark),
            "TSV (*.tsv);;CSV (*.csv);;Excel (*.xlsx);;lmms-eval samples (*.jsonl)",
        )
        if not path:
            return
        try:
            done = self.export_predictions(path)
        except (ExportError, OSError) as exc:
            self.ctx.error.emit(f"Could not export the predictions: {exc}", "")
            return
        self.ctx.info.emit(
            f"Wrote {done.path.name}: {done.rows} rows, {done.predicted} with a prediction "
            f"(vlmdesk export-predictions {done.run_id} --out {done.path.name})"
        )
