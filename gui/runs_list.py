"""The runs of a workspace as a table: status, model, benchmark, overall figures, duration
(evaluator.analysis.report.run_summary — what `vlmdesk runs --scores` prints)."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QItemSelectionModel, QObject, Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHeaderView,
    QLabel,
    QStyle,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QVBoxLayout,
    QWidget,
)

from annotation.blind import HIDDEN_TEXT
from db import runs
from evaluator.analysis.labels import fit_model, model_variants
from evaluator.analysis.report import RunSummary, describe_tokens, describe_truncation, run_summary
from evaluator.engine.run_words import IMPORTED_ARROW, IMPORTED_MARK, describe_variants, origin_of, preset_words
from gui.appearance import ACCENT, MUTED, PENDING, RIGHT, TEXT, WRONG
from gui.background import COMPUTING, when_shown
from gui.tables import RowsModel, table_view

COLUMNS = ("Run", "Status", "Model", "Benchmark", "Strategy", "Vanilla", "Circular", "POPE F1", "Duration")
# The narrow lists of Results: the run's identity first (its model kept readable), its score last; the status is
# a mark beside the run's number (STATUS_MARKS, the word in its tooltip): a column of "finished" pushed the score out.
COMPACT = ("Run", "Model", "Benchmark", "Score %")
STATUS_MARKS = {"finished": "", "running": "▶", "interrupted": "■", "failed": "✗"}
MODEL_CHARS = 18  # the Model column is never narrower than this many characters (or its longest model, if shorter)
SCORE_COLUMNS = {"Vanilla", "Circular", "POPE F1", "Score %"}
PARTIAL_MARK = "(partial)"
TEXT_ONLY_MARK = "[text-only]"
STATUS_COLOURS = {"finished": RIGHT, "running": ACCENT, "interrupted": PENDING, "failed": WRONG}
# The widest figure each column can show, by kind of run (digits stand for the font's widest digit).
WIDEST = {
    "Vanilla": {"mcq": "100.0 %"},
    "Circular": {"mcq": "100.0 %"},
    "POPE F1": {"pope": "100.0 %"},
    "Score %": {"mcq": "C 100.0 · V 100.0", "pope": "F1 100.0", "open": "word 100.0 · ANLS 100.0"},
    "Duration": {"mcq": "99 h 59 min", "pope": "99 h 59 min", "open": "99 h 59 min"},
}


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


def _marks(text: str) -> tuple[str, str, str]:
    """A Model cell as (mark before, the model, marks after): the marks stay whole when the model is shortened."""
    before = f"{IMPORTED_ARROW} " if text.startswith(f"{IMPORTED_ARROW} ") else ""
    text, after = text[len(before) :], ""
    for mark in (f" {IMPORTED_MARK}", f" {TEXT_ONLY_MARK}"):  # the order _row appends them in, reversed
        if text.endswith(mark):
            text, after = text[: -len(mark)], mark + after
    return before, text, after


class ModelCell(QStyledItemDelegate):
    """Draws a Model cell as the longest form of its spec that fits the column (evaluator/analysis/labels.py: the
    server's address and options go before the model's name; what is still too long is elided in the middle), never
    "b…" or the end of a URL. The cell keeps the whole spec (its tooltip, the CSV export)."""

    def initStyleOption(self, option: QStyleOptionViewItem, index) -> None:  # noqa: N802 — Qt's name
        super().initStyleOption(option, index)
        widget = option.widget  # set for the view's delegates
        style = widget.style() if widget is not None else None
        margin = 2 * (style.pixelMetric(QStyle.PixelMetric.PM_FocusFrameHMargin, None, widget) + 1) if style else 6
        room = option.rect.width() - margin
        metrics = option.fontMetrics
        before, model, after = _marks(option.text)
        room -= metrics.horizontalAdvance(before + after)
        option.text = (
            before
            + fit_model(
                model,
                lambda form: metrics.horizontalAdvance(form) <= room,
                elide=lambda form: metrics.elidedText(form, Qt.TextElideMode.ElideMiddle, max(room, 0)),
            )
            + after
        )


def _figures(ws, run_ids: list[int]):
    """Each run's figures, token usage and cut-off passes (kept counts: a row each), newest run first: the worker's
    part."""
    for run_id in run_ids:
        yield run_id, run_summary(ws, run_id), runs.token_usage(ws, run_id), runs.truncation(ws, run_id)


class RunsList(QWidget):
    """The runs at once (one read of the runs table); their figures drawn as a worker computes them
    (gui/background.py), "computing…" until then. A list out of sight lists and computes nothing until shown."""

    selectionChanged = Signal()
    activated = Signal(int)  # run id (double click)
    listed = Signal()  # the runs were listed again (their figures may still be computing)

    def __init__(self, ctx, *, multi: bool = False, compact: bool = False, parent=None):
        super().__init__(parent)
        self.ctx = ctx
        self.compact = compact
        self.runs: dict[int, runs.Run] = {}  # listed, newest first
        self.summaries: dict[int, RunSummary] = {}
        # Figures kept across reloads while the run's row is unchanged (a run writing elsewhere redraws only itself).
        # run id -> (the figures' state, its summary, the model's tooltip lines, its passes the token budget cut off)
        self._known: dict[int, tuple[tuple, RunSummary | None, str | None, int]] = {}
        self._epoch = ctx.figures_epoch
        self.model = RowsModel(COMPACT if compact else COLUMNS, self)
        self.model.align_right = {0} if compact else {0, 5, 6, 7, 8}
        self.model_column = self.model.columns.index("Model")
        self.table = table_view(self.model)  # the Model column takes the free width (_fit_model_column)
        self.table.setSelectionMode(
            QAbstractItemView.SelectionMode.ExtendedSelection
            if multi
            else QAbstractItemView.SelectionMode.SingleSelection
        )
        header = self.table.horizontalHeader()
        # The Model column takes what the others leave, but never less than a readable model (a narrow pane then
        # scrolls sideways): stretched, it was squeezed to "b…" beside the figure columns. Its cells are drawn as
        # the longest form of the spec that fits (ModelCell), the whole spec in the tooltip.
        header.setSectionResizeMode(self.model_column, QHeaderView.ResizeMode.Fixed)
        header.setStretchLastSection(False)
        header.sectionResized.connect(self._section_resized)
        self.table.setItemDelegateForColumn(self.model_column, ModelCell(self.table))
        self.table.selectionModel().selectionChanged.connect(lambda *_: self.selectionChanged.emit())
        self.table.installEventFilter(self)  # a larger text: the figure columns are fitted again
        self.table.viewport().installEventFilter(self)  # a wider or narrower pane: the Model column follows
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

    @property
    def computing(self) -> bool:
        return self.ctx.background.busy(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self.table and event.type() == QEvent.Type.FontChange:
            self._fit_figures()
            self._fit_model_column()
        elif watched is self.table.viewport() and event.type() == QEvent.Type.Resize:
            self._fit_model_column()
        return False

    def model_floor(self) -> int:
        """The Model column's least width: the longest listed model whole, up to MODEL_CHARS characters."""
        metrics = self.table.fontMetrics()
        cap = metrics.averageCharWidth() * MODEL_CHARS
        shortest = (model_variants(_marks(row[self.model_column])[1])[-1] for row in self.model.rows)
        widest = max((metrics.horizontalAdvance(text) for text in shortest), default=0)
        margin = 2 * (self.table.style().pixelMetric(QStyle.PixelMetric.PM_FocusFrameHMargin, None, self.table) + 1)
        return max(min(widest, cap), metrics.horizontalAdvance(self.model.columns[self.model_column])) + 2 * margin

    def shown_model(self, row: int) -> str:
        """The Model cell of a row as it is drawn at the column's present width (ModelCell's choice)."""
        index = self.model.index(row, self.model_column)
        option = QStyleOptionViewItem()
        self.table.initViewItemOption(option)
        option.rect = self.table.visualRect(index)
        delegate = self.table.itemDelegateForColumn(self.model_column)
        assert isinstance(delegate, ModelCell)  # set in __init__
        delegate.initStyleOption(option, index)
        return option.text

    def _section_resized(self, section: int, _old: int, _new: int) -> None:
        if section != self.model_column:  # another column grew or shrank: the Model column takes up the rest
            self._fit_model_column()

    def _fit_model_column(self) -> None:
        header = self.table.horizontalHeader()
        shown = [n for n in range(header.count()) if n != self.model_column and not header.isSectionHidden(n)]
        others = sum(header.sectionSize(n) for n in shown)
        header.resizeSection(self.model_column, max(self.model_floor(), self.table.viewport().width() - others))

    def _fit_figures(self) -> None:
        """Give the figure columns the width of the widest text they can hold for the listed runs — "computing…"
        or a figure — so that nothing moves when a figure replaces "computing…" (sized to their contents, they did).
        Decided when the runs are listed, from what is known then: their kinds and whether they finished."""
        metrics = self.table.fontMetrics()
        digit = max("0123456789", key=metrics.horizontalAdvance)
        margin = 2 * (self.table.style().pixelMetric(QStyle.PixelMetric.PM_FocusFrameHMargin, None, self.table) + 1)
        header = self.table.horizontalHeader()
        for n, title in enumerate(self.model.columns):
            if title not in WIDEST:
                continue
            texts = [COMPUTING]
            for r in self.runs.values():
                kind = r.strategy if r.strategy in ("pope", "open") else "mcq"
                if (widest := WIDEST[title].get(kind)) is not None:
                    marked = title in SCORE_COLUMNS and r.status != "finished"
                    texts.append(f"{widest} {PARTIAL_MARK}" if marked else widest)
            width = max(metrics.horizontalAdvance("".join(digit if c.isdigit() else c for c in t)) for t in texts)
            header.setSectionResizeMode(n, QHeaderView.ResizeMode.Fixed)
            header.resizeSection(n, max(width + margin, header.sectionSizeHint(n)))

    def reload(self) -> None:
        if not when_shown(self, self.reload):
            self.ctx.background.cancel(self)
            return
        keep = self.selected_run_ids()
        if self._epoch != self.ctx.figures_epoch:  # something besides the runs' own rows changed: compute anew
            self._epoch, self._known = self.ctx.figures_epoch, {}
        self.runs = {r.id: r for r in reversed(runs.list_runs(self.ctx.ws))}
        self.summaries, due = {}, []
        for r in self.runs.values():
            known = self._known.get(r.id)
            if known is not None and known[0] == figures_state(r):
                if known[1] is not None:
                    self.summaries[r.id] = known[1]
            else:
                due.append(r.id)
        self._known = {i: k for i, k in self._known.items() if i in self.runs}
        rows, colours, tips = [], {}, {}
        for i, r in enumerate(self.runs.values()):
            cells, cell_colours, cell_tips = self._row(r, r.id in due)
            rows.append(cells)
            colours.update({(i, n): c for n, c in cell_colours.items()})
            tips.update({(i, n): t for n, t in cell_tips.items()})
        self.model.set_rows(rows, list(self.runs), colours=colours, tooltips=tips)
        self._fit_figures()
        self._fit_model_column()
        self.select(keep)
        self.listed.emit()
        if due:
            self.ctx.background.start(self, lambda ws: _figures(ws, due), self._computed)
        else:
            self.ctx.background.cancel(self)

    def _computed(self, part) -> None:
        run_id, summary, usage, cut = part
        run = self.runs.get(run_id)
        if run is None:
            return
        # The model's tooltip: what its passes cost and how many the token budget cut off (no score: blind-safe).
        lines = [describe_tokens(usage)] if usage.passes else []
        lines += [describe_truncation(cut)] if cut.truncated else []
        self._known[run_id] = (figures_state(run), summary, "\n".join(lines) or None, cut.truncated)
        if summary is not None:
            self.summaries[run_id] = summary
        else:
            self.summaries.pop(run_id, None)
        row = self.model.payloads.index(run_id)
        cells, colours, tips = self._row(run, False)
        self.model.set_row(row, cells, colours=colours, tooltips=tips)

    def _row(self, r: runs.Run, computing: bool) -> tuple[tuple[object, ...], dict[int, str], dict[int, str]]:
        """One run's cells, with their colours and tooltips by column: its figures as last computed, "computing…"
        where none is known yet."""
        known = self._known.get(r.id)
        s = known[1] if known is not None else None
        tokens = known[2] if known is not None else None
        truncated = known[3] if known is not None else 0
        pending = computing and known is None
        sample = f"sample {n}" if (n := runs.sample_number_of(r.config)) else ""  # of a sample group (run --samples)
        variants = " · ".join(filter(None, (describe_variants(r.config), preset_words(r.config), sample)))
        origin = origin_of(r)
        model = r.model_spec + (f" {TEXT_ONLY_MARK}" if r.config.get("text_only") is True else "")
        if origin is not None:  # the narrow list elides the model's end: the arrow goes first there
            model = f"{IMPORTED_ARROW} {model}" if self.compact else f"{model} {IMPORTED_MARK}"
        # Figures of an unfinished run cover the items asked so far: they say so, and are greyed.
        partial = r.status != "finished"

        def mark(text: str) -> str:
            return COMPUTING if pending else f"{text} {PARTIAL_MARK}" if text and partial else text

        status_mark = STATUS_MARKS.get(r.status, "?")
        values: dict[str, object] = {
            "Run": f"{r.id} {status_mark}" if "Status" not in self.model.columns and status_mark else r.id,
            # Cut-off passes said where the status is (no score: blind-safe), the line in the Status tooltip.
            "Status": r.status + (f" · ✂ {truncated:,}" if truncated else ""),
            "Model": model,
            "Benchmark": r.benchmark,
            "Strategy": " · ".join(filter(None, (r.strategy, variants))),
            "Vanilla": mark(pct(s.vanilla) if s else ""),
            "Circular": mark(pct(s.circular) if s else ""),
            "POPE F1": mark(pct(s.pope_f1) if s else ""),
            "Duration": COMPUTING if pending else duration(s.duration_s) if s else "",
            "Score %": mark(score(s) if s else ""),
        }
        at = {title: n for n, title in enumerate(self.model.columns)}
        cells = tuple(values[title] for title in self.model.columns)
        status = at.get("Status", at["Run"])  # the compact lists mark the status beside the run's number
        colours = {status: STATUS_COLOURS.get(r.status, TEXT)} if status != at["Run"] or status_mark else {}
        tips = {}
        if status == at["Run"]:
            tips[status] = f"run {r.id}: {r.status}" + (f"\n{r.error}" if r.error else "")
        elif r.error or truncated:
            cut = f"{truncated:,} passes cut off by the token budget (vlmdesk report {r.id})" if truncated else ""
            tips[status] = "\n".join(filter(None, (r.error, cut)))
        tips[at["Model"]] = (
            r.model_spec
            + ("\ntext-only: the model never saw the images" if TEXT_ONLY_MARK in model else "")
            + (f"\n{imported_from(origin)}" if origin is not None else "")
            + (f"\n{tokens}" if tokens else "")
        )
        if variants and "Strategy" in at:
            tips[at["Strategy"]] = f"Run variants: {variants}"
        for n, title in enumerate(self.model.columns):
            if pending and (title in SCORE_COLUMNS or title == "Duration"):
                colours[n] = MUTED
                tips[n] = "computing the run's figures (they show here when ready)"
            elif partial and title in SCORE_COLUMNS:
                colours[n] = MUTED
                tips[n] = f"partial: the run is {r.status}; figures over the {r.predictions:,} passes stored so far"
        return cells, colours, tips

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

    def run(self, run_id: int) -> runs.Run | None:
        """A listed run (status, model, benchmark: known at once, unlike its figures)."""
        return self.runs.get(run_id)

    def figures_key(self, run_ids: list[int]) -> tuple:
        """What the listing says of these runs' passes: while it is the same, figures computed from them are too."""
        states = (figures_state(r) if (r := self.runs.get(i)) is not None else None for i in run_ids)
        return (self.ctx.figures_epoch, tuple(run_ids), *states)


def figures_state(run: runs.Run) -> tuple:
    """What a run's row says of its passes: while it is the same, the figures computed from them are too."""
    return (run.status, run.predictions, run.updated_at, run.finished_at)
