"""The runs of a workspace as a table: status, model, benchmark, overall figures, duration
(evaluator.analysis.report.run_summary — what `vlmdesk runs --scores` prints)."""

from __future__ import annotations

from PySide6.QtCore import QItemSelectionModel, Signal
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QLabel, QVBoxLayout, QWidget

from annotation.blind import HIDDEN_TEXT
from db import runs
from evaluator.analysis.report import RunSummary, describe_tokens, run_summary
from evaluator.engine.prompt_presets import preset_words
from evaluator.engine.variants import describe as describe_variants
from evaluator.formats.prediction_import import IMPORTED_ARROW, IMPORTED_MARK, origin_of
from gui.appearance import ACCENT, MUTED, PENDING, RIGHT, TEXT, WRONG
from gui.tables import RowsModel, table_view

COLUMNS = ("Run", "Status", "Model", "Benchmark", "Strategy", "Vanilla", "Circular", "POPE F1", "Duration")
COMPACT = ("Run", "Status", "Model", "Benchmark", "Score %")
SCORE_COLUMNS = {"Vanilla", "Circular", "POPE F1", "Score %"}
PARTIAL_MARK = "(partial)"
TEXT_ONLY_MARK = "[text-only]"
STATUS_COLOURS = {"finished": RIGHT, "running": ACCENT, "interrupted": PENDING, "failed": WRONG}


def imported_from(origin: dict) -> str:
    sha = str(origin.get("sha256", ""))[:12]
    return f"Imported from {origin.get('file')} ({origin.get('format')} predictions, sha256 {sha}…); not run here"


def pct(value) -> str:
    return "" if value is None else f"{100 * value:.1f} %"


def duration(seconds) -> str:
    if seconds is None:
        return ""
    seconds = int(round(seconds))
    if seconds < 3600:
        return f"{seconds // 60}:{seconds % 60:02d}"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


OPEN_SHOWN = {"word_match": "word", "anls": "ANLS"}


def score(s: RunSummary) -> str:
    """The overall figures in one cell: CircularEval and VanillaEval, POPE's F1 (official parser), or an open
    run's word match and ANLS (evaluator/open_metrics)."""

    def num(v):
        return f"{100 * v:.1f}"

    if s.strategy == "pope":
        return f"F1 {num(s.pope_f1)}" if s.pope_f1 is not None else ""
    if s.open_metrics:  # an open run: its word match and ANLS where they apply, else its first metric
        shown = [m for m in OPEN_SHOWN if m in s.open_metrics] or list(s.open_metrics)[:1]
        return " · ".join(f"{OPEN_SHOWN.get(m, m)} {num(s.open_metrics[m])}" for m in shown)
    parts = [f"C {num(s.circular)}"] if s.circular is not None else []
    if s.vanilla is not None:
        parts.append(f"V {num(s.vanilla)}")
    return " · ".join(parts)


class RunsList(QWidget):
    selectionChanged = Signal()
    activated = Signal(int)  # run id (double click)

    def __init__(self, ctx, *, multi: bool = False, compact: bool = False, parent=None):
        super().__init__(parent)
        self.ctx = ctx
        self.compact = compact
        self.summaries: dict[int, RunSummary] = {}
        self.model = RowsModel(COMPACT if compact else COLUMNS, self)
        self.model.align_right = {0} if compact else {0, 5, 6, 7, 8}
        self.table = table_view(self.model, stretch=2)
        self.table.setSelectionMode(
            QAbstractItemView.SelectionMode.ExtendedSelection
            if multi
            else QAbstractItemView.SelectionMode.SingleSelection
        )
        header = self.table.horizontalHeader()
        if compact:  # a narrow pane: the model is elided (tooltip) so that the scores stay in view
            header.setSectionResizeMode(2, QHeaderView.ResizeMode.Stretch)
            header.setStretchLastSection(False)
        else:
            header.setSectionResizeMode(2, QHeaderView.ResizeMode.Stretch)
        self.table.selectionModel().selectionChanged.connect(lambda *_: self.selectionChanged.emit())
        self.table.doubleClicked.connect(lambda idx: self.activated.emit(self.model.payloads[idx.row()]))
        self.notice = QLabel(f"Scores {HIDDEN_TEXT}")
        self.notice.setObjectName("muted")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.notice)
        layout.addWidget(self.table)
        ctx.prefsChanged.connect(self._apply_blind)
        self._apply_blind()

    def _apply_blind(self) -> None:
        """A score is a figure over items the annotator may not have judged: its columns go in blind mode."""
        hide = self.ctx.prefs.blind
        for n, title in enumerate(self.model.columns):
            if title in SCORE_COLUMNS:
                self.table.setColumnHidden(n, hide)
        self.notice.setVisible(hide)

    def reload(self) -> None:
        keep = self.selected_run_ids()
        self.summaries = {}
        variants = {}
        origins = {}
        stored = {}
        tokens = {}
        for r in runs.list_runs(self.ctx.ws):
            variants[r.id] = " · ".join(filter(None, (describe_variants(r.config), preset_words(r.config))))
            s = run_summary(self.ctx.ws, r.id)
            if s is not None:
                self.summaries[r.id] = s
                stored[r.id] = r
            if (origin := origin_of(r)) is not None:
                origins[r.id] = origin
            if (usage := runs.token_usage(self.ctx.ws, r.id)).passes:  # what its server said the passes cost
                tokens[r.id] = describe_tokens(usage)
        ordered = sorted(self.summaries.values(), key=lambda s: -s.run_id)  # newest first
        rows: list[tuple[object, ...]] = []
        colours, tips = {}, {}
        for i, s in enumerate(ordered):
            run = stored[s.run_id]
            model = s.model + (f" {TEXT_ONLY_MARK}" if run.config.get("text_only") is True else "")
            if s.run_id in origins:  # the narrow list elides the model's end: the arrow goes first there
                model = f"{IMPORTED_ARROW} {model}" if self.compact else f"{model} {IMPORTED_MARK}"
            # Figures of an unfinished run cover the items asked so far: they say so, and are greyed.
            partial = s.status != "finished"

            def mark(text: str, partial: bool = partial) -> str:
                return f"{text} {PARTIAL_MARK}" if text and partial else text

            if self.compact:
                rows.append((s.run_id, s.status, model, s.benchmark, mark(score(s))))
            else:
                rows.append(
                    (
                        s.run_id,
                        s.status,
                        model,
                        s.benchmark,
                        " · ".join(filter(None, (s.strategy, variants.get(s.run_id)))),
                        mark(pct(s.vanilla)),
                        mark(pct(s.circular)),
                        mark(pct(s.pope_f1)),
                        duration(s.duration_s),
                    )
                )
            colours[(i, 1)] = STATUS_COLOURS.get(s.status, TEXT)
            if s.error:
                tips[(i, 1)] = s.error
            tips[(i, 2)] = (
                s.model
                + ("\ntext-only: the model never saw the images" if TEXT_ONLY_MARK in model else "")
                + (f"\n{imported_from(origins[s.run_id])}" if s.run_id in origins else "")
                + (f"\n{tokens[s.run_id]}" if s.run_id in tokens else "")
            )
            if variants.get(s.run_id) and not self.compact:
                tips[(i, 4)] = f"Run variants: {variants[s.run_id]}"
            for n, title in enumerate(self.model.columns):
                if partial and title in SCORE_COLUMNS:
                    colours[(i, n)] = MUTED
                    tips[(i, n)] = f"partial: the run is {s.status}; figures over the {s.passes:,} passes stored so far"
        self.model.set_rows(rows, [s.run_id for s in ordered], colours=colours, tooltips=tips)
        self.select(keep)

    def selected_run_ids(self) -> list[int]:
        rows = sorted({i.row() for i in self.table.selectionModel().selectedRows()})
        return [self.model.payloads[r] for r in rows if r < len(self.model.payloads)]

    def select(self, run_ids) -> None:
        sel = self.table.selectionModel()
        sel.clearSelection()
        for r, run_id in enumerate(self.model.payloads):
            if run_id in run_ids:
                sel.select(
                    self.model.index(r, 0),
                    QItemSelectionModel.SelectionFlag.Select | QItemSelectionModel.SelectionFlag.Rows,
                )
        self.selectionChanged.emit()

    def summary(self, run_id: int) -> RunSummary | None:
        return self.summaries.get(run_id)
