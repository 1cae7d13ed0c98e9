"""Results › Compare: two runs of one benchmark item by item (evaluator.analysis.compare — `vlmdesk compare`).

Two run pickers (run B: the runs of run A's benchmark that share a figure with it), the figures as a small table (A,
B, A−B with its 95 % interval, McNemar's p), and the items that flipped as two lists — right in A only, right in B
only — each opening in Review (double-click or Enter), where the blind rules apply. The page sits inside the Results
tab, whose blind cover hides it in blind mode; it computes nothing while blind. The runs are listed and the
comparison computed by the worker (gui/background.py), "computing…" in the table's place until it comes."""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import Qt, Signal, SignalInstance
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from db import runs
from evaluator.analysis.compare import (
    POPE_F1,
    Comparison,
    Figure,
    comparable_kind,
    comparable_runs,
    compare_runs,
    format_interval,
    format_p,
)
from evaluator.analysis.intervals import BOOTSTRAP, MCNEMAR, NEWCOMBE
from evaluator.analysis.labels import short_model
from gui.appearance import MUTED, RIGHT, WRONG
from gui.background import COMPUTING, when_shown
from gui.fitting import compact_combo
from gui.tables import RowsModel, table_view

FIGURE_COLUMNS = ("Figure", "A", "B", "A−B", "95 % interval", "p", "A only", "B only", "Items")
ITEM_COLUMNS = ("Index", "Question")
CHOOSE = "Choose two runs of one benchmark"
SHORT_METHODS = (
    "95 % intervals of A−B: Newcombe's for right/wrong figures, a paired bootstrap over items for graded ones "
    "(open metrics, POPE F1: no p). p: McNemar's exact test."
)
METHODS = (
    f"Right/wrong figures: {NEWCOMBE} and {MCNEMAR} on the items that flipped; graded ones (open metrics, POPE F1): "
    f"{BOOTSTRAP}, no p-value. Units: the items both runs asked that have a key. (vlmdesk compare A B)"
)


@dataclass(frozen=True)
class _Listed:
    """The runs that can be compared (each has another run of its benchmark sharing a figure), newest first."""

    runs: list[runs.Run]


def _list_runs(ws):
    every = runs.list_runs(ws)
    # A run is listed when another of its benchmark shares a figure with it (comparable_runs' rule, by groups).
    groups: dict[tuple[int, str], int] = {}
    for r in every:
        key = (r.benchmark_id, comparable_kind(r.strategy))
        groups[key] = groups.get(key, 0) + 1
    yield _Listed([r for r in reversed(every) if groups[(r.benchmark_id, comparable_kind(r.strategy))] > 1])


def _compare(ws, a: int, b: int):
    yield compare_runs(ws, a, b)


def _run_label(run: runs.Run, *, benchmark: bool) -> str:
    where = f" · {run.benchmark}" if benchmark else ""
    return f"{run.id}{where} · {short_model(run.model_spec, 32)} · {run.strategy}"


def _value(v: float | None, scale: float, *, sign: bool = False) -> str:
    if v is None:
        return "–"
    digits = 1 if scale == 100 else 3
    return f"{v * scale:+.{digits}f}" if sign else f"{v * scale:.{digits}f}"


def _figure_row(f: Figure) -> tuple:
    right_wrong = f.kind == "right/wrong"
    return (
        f.name,
        _value(f.a, f.scale),
        _value(f.b, f.scale),
        _value(f.difference, f.scale, sign=True),
        format_interval(f),
        format_p(f.p).removeprefix("p = ") if f.p is not None else "–",
        f"{len(f.a_better):,}" if f.name != POPE_F1 else "",
        f"{len(f.b_better):,}" if f.name != POPE_F1 else "",
        f"{f.items:,}" + (f" (+{f.left_out:,} undecided)" if f.left_out else "") if right_wrong or f.items else "0",
    )


class _ItemList(QWidget):
    """A titled list of items (index, question) whose rows open in Review."""

    def __init__(self, opened: SignalInstance, parent=None):
        super().__init__(parent)
        self.title = QLabel()
        self.title.setObjectName("sectionTitle")
        self.model = RowsModel(ITEM_COLUMNS, self)
        self.table = table_view(self.model, stretch=1)
        self.table.setToolTip("Double-click or Enter: open the item in Review")
        self.table.activated.connect(self._open)  # Enter, and a double-click
        self._opened = opened
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.title)
        layout.addWidget(self.table, 1)

    def _open(self, index) -> None:
        if (item_id := self.model.payloads[index.row()]) is not None:
            self._opened.emit(item_id)


class CompareView(QWidget):
    openInReview = Signal(int)  # item id

    def __init__(self, ctx, parent=None):
        super().__init__(parent)
        self.ctx = ctx
        self.listed: list[runs.Run] = []
        self.comparison: Comparison | None = None
        self._asked: tuple[int, int] | None = None  # the pair the worker computes or computed
        self.run_a = compact_combo(QComboBox(), 14)
        self.run_a.setToolTip("Run A: differences read A − B")
        self.run_b = compact_combo(QComboBox(), 14)
        self.run_b.setToolTip("Run B: a run of run A's benchmark that shares a figure with it")
        self.swap = QPushButton("Swa&p")
        self.swap.setToolTip("Make run B run A and run A run B")
        self.swap.clicked.connect(self._swap)
        self.run_a.currentIndexChanged.connect(self._chose_a)
        self.run_b.currentIndexChanged.connect(self.recompute)
        top = QHBoxLayout()
        for text, combo in (("&Run A", self.run_a), ("Run &B", self.run_b)):
            label = QLabel(text)
            label.setObjectName("filterLabel")
            label.setBuddy(combo)
            top.addWidget(label)
            top.addWidget(combo, 1)
        top.addWidget(self.swap)
        self.summary = QLabel(CHOOSE)
        self.summary.setWordWrap(True)
        self.figures = RowsModel(FIGURE_COLUMNS, self)
        self.figures.align_right = set(range(1, len(FIGURE_COLUMNS)))
        self.figures_table = table_view(self.figures, stretch=0)
        self.figures_table.setMinimumHeight(24 * 3 + 28)  # a title and three figures (CircularEval, VanillaEval…)
        self.methods = QLabel(SHORT_METHODS)
        self.methods.setToolTip(METHODS)
        self.methods.setObjectName("muted")
        self.methods.setWordWrap(True)
        self.flip_figure = compact_combo(QComboBox(), 12)
        self.flip_figure.setToolTip("The figure whose flipped items the lists show")
        self.flip_figure.currentIndexChanged.connect(self._show_flips)
        flip_label = QLabel("F&lipped under")
        flip_label.setObjectName("filterLabel")
        flip_label.setBuddy(self.flip_figure)
        flips = QHBoxLayout()
        flips.addWidget(flip_label)
        flips.addWidget(self.flip_figure)
        flips.addStretch(1)
        self.a_only = _ItemList(self.openInReview)
        self.b_only = _ItemList(self.openInReview)
        lists = QSplitter(Qt.Orientation.Horizontal)
        lists.addWidget(self.a_only)
        lists.addWidget(self.b_only)
        lists.setChildrenCollapsible(False)
        upper = QWidget()
        ul = QVBoxLayout(upper)
        ul.setContentsMargins(0, 0, 0, 0)
        ul.addLayout(top)
        ul.addWidget(self.summary)
        ul.addWidget(self.figures_table, 1)
        ul.addWidget(self.methods)
        lower = QWidget()
        ll = QVBoxLayout(lower)
        ll.setContentsMargins(0, 0, 0, 0)
        ll.addLayout(flips)
        ll.addWidget(lists, 1)
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(upper)
        split.addWidget(lower)
        split.setSizes([600, 400])  # room for an open run's five metrics at text x1.25; the lists scroll
        split.setChildrenCollapsible(False)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(split)
        self._clear_lists()
        ctx.runsChanged.connect(self.refresh)
        ctx.prefsChanged.connect(self.refresh)  # blind mode: nothing is computed behind the Results cover
        self.refresh()

    # -- the runs
    @property
    def computing(self) -> bool:
        """The runs are being listed or the comparison computed off the GUI thread."""
        return self.ctx.background.busy(self) or self.ctx.background.busy(self.figures_table)

    def refresh(self) -> None:
        """List the runs again (keeping the two chosen), then compare them."""
        if self.ctx.prefs.blind:
            self.ctx.background.cancel(self)
            self.ctx.background.cancel(self.figures_table)
            self._asked, self.comparison = None, None
            self.figures.set_rows([], [])
            self._clear_lists()
            return
        if not when_shown(self, self.refresh):
            return
        self.ctx.background.start(self, _list_runs, self._listed)

    def _listed(self, listed: _Listed) -> None:
        a, b = self.run_a.currentData(), self.run_b.currentData()
        self.listed = listed.runs
        self.run_a.blockSignals(True)
        self.run_a.clear()
        for run in self.listed:
            self.run_a.addItem(_run_label(run, benchmark=True), run.id)
            self.run_a.setItemData(
                self.run_a.count() - 1, f"{run.model_spec} on {run.benchmark}", Qt.ItemDataRole.ToolTipRole
            )
        self.run_a.setCurrentIndex(max(0, self.run_a.findData(a)))
        self.run_a.blockSignals(False)
        self._fill_b(b)
        self._asked = None  # a run may have more passes now: compare again
        self.recompute()

    def _fill_b(self, keep: int | None = None) -> None:
        a = next((r for r in self.listed if r.id == self.run_a.currentData()), None)
        self.run_b.blockSignals(True)
        self.run_b.clear()
        for run in comparable_runs(self.listed, a) if a is not None else []:
            self.run_b.addItem(_run_label(run, benchmark=False), run.id)
            self.run_b.setItemData(self.run_b.count() - 1, run.model_spec, Qt.ItemDataRole.ToolTipRole)
        self.run_b.setCurrentIndex(max(0, self.run_b.findData(keep)) if self.run_b.count() else -1)
        self.run_b.blockSignals(False)

    def _chose_a(self) -> None:
        self._fill_b(self.run_b.currentData())
        self.recompute()

    def _swap(self) -> None:
        a, b = self.run_a.currentData(), self.run_b.currentData()
        if a is None or b is None:
            return
        self.choose(b, a)

    def choose(self, a: int, b: int) -> None:
        """Compare run `a` (A) with run `b` (B), both among the listed runs."""
        self.run_a.blockSignals(True)
        self.run_a.setCurrentIndex(self.run_a.findData(a))
        self.run_a.blockSignals(False)
        self._fill_b(b)
        self.recompute()

    # -- the comparison
    def recompute(self) -> None:
        a, b = self.run_a.currentData(), self.run_b.currentData()
        if a is None or b is None:
            self.ctx.background.cancel(self.figures_table)
            self._asked, self.comparison = None, None
            self.summary.setText(CHOOSE if self.listed else "No two runs of one benchmark to compare yet")
            self.figures.set_rows([], [])
            self._clear_lists()
            return
        if self._asked == (a, b) and self.comparison is not None:
            return
        self._asked = (a, b)
        self.summary.setText(f"Run {a} vs run {b}: {COMPUTING}")
        self.figures.set_rows([(COMPUTING,) + ("",) * (len(FIGURE_COLUMNS) - 1)], [None])
        self._clear_lists()
        self.ctx.background.start(
            self.figures_table, lambda ws: _compare(ws, a, b), self._computed, lambda: self._done((a, b))
        )

    def _computed(self, comparison: Comparison) -> None:
        self.comparison = comparison
        c = comparison
        self.summary.setText(
            f"{c.benchmark}: {c.both:,} items both asked (only in {c.a.run_id}: {len(c.only_in_a):,}, only in "
            f"{c.b.run_id}: {len(c.only_in_b):,}). A: run {c.a.run_id} {short_model(c.a.model, 40)}; "
            f"B: run {c.b.run_id} {short_model(c.b.model, 40)}."
        )
        colours = {}
        for n, f in enumerate(c.figures):
            if f.interval is not None and (f.interval.low > 0 or f.interval.high < 0):
                colours[(n, 3)] = RIGHT if f.interval.low > 0 else WRONG  # the interval leaves out 0
        tips = {(n, 4): f.interval.method for n, f in enumerate(c.figures) if f.interval is not None}
        self.figures.set_rows(
            [_figure_row(f) for f in c.figures], [f.name for f in c.figures], colours=colours, tooltips=tips
        )
        self.flip_figure.blockSignals(True)
        chosen = self.flip_figure.currentData()
        self.flip_figure.clear()
        for f in c.figures:
            if f.name != POPE_F1:
                self.flip_figure.addItem(f.name, f.name)
        self.flip_figure.setCurrentIndex(max(0, self.flip_figure.findData(chosen)))
        self.flip_figure.blockSignals(False)
        self._show_flips()

    def _done(self, pair: tuple[int, int]) -> None:
        if self.comparison is None or (self.comparison.a.run_id, self.comparison.b.run_id) != pair:
            # A read failed (the message bar says why): not "computing…" forever.
            self._asked = None
            self.summary.setText(f"Run {pair[0]} and run {pair[1]} could not be compared")
            self.figures.set_rows([], [])

    def _clear_lists(self) -> None:
        for box, title in ((self.a_only, "Right in A only"), (self.b_only, "Right in B only")):
            box.title.setText(title)
            box.model.set_rows([], [])

    def _show_flips(self) -> None:
        figure = self.comparison.figure(self.flip_figure.currentData() or "") if self.comparison else None
        if figure is None:
            self._clear_lists()
            return
        words = "Right in" if figure.kind == "right/wrong" else "Scored higher in"
        for box, side, refs in ((self.a_only, "A", figure.a_better), (self.b_only, "B", figure.b_better)):
            box.title.setText(f"{words} {side}{' only' if figure.kind == 'right/wrong' else ''} ({len(refs):,})")
            box.model.set_rows(
                [(r.index, r.question) for r in refs],
                [r.item_id for r in refs],
                colours={(n, 0): MUTED for n in range(len(refs))},
                tooltips={(n, 1): r.question for n, r in enumerate(refs)},
            )
