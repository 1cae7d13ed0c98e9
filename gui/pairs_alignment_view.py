"""The Alignment tab's Pairs page: `vlmdesk align pairs` — a judge's verdicts on the arena's pairs held against people's
votes (annotation/pair_alignment.py): accuracy and κ with intervals, the decisive pairs, position bias, and each
model's Bradley–Terry rating from the judge beside the one from the votes.

It shows every annotator's votes and a judge's verdict on pairs the viewer may not have voted, so, like every figure
of the Alignment tab, it is under the tab's blind cover in blind mode and computes nothing there."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QPushButton, QSplitter, QVBoxLayout, QWidget

from annotation import arena
from db import catalog
from db import pair_judgements as store
from db.errors import UserError
from gui.fitting import compact_combo
from gui.tables import RowsModel, export_table, table_view

APP_BOOTSTRAP = 1000  # resamples in the app (`vlmdesk align pairs --bootstrap` goes further)
FIGURE_COLUMNS = ("Figure", "Value", "95 % interval", "n")
MODEL_COLUMNS = ("Model", "Judge's rating", "Rank", "Votes' rating", "Rank")


def _num(v: float | None, digits: int = 3) -> str:
    return "–" if v is None else f"{v:.{digits}f}"


def _share(f) -> tuple[str, str, str]:
    """(value, interval, n) of a pair_alignment.Figure, as percentages."""
    if f is None or f.value is None:
        return "–", "–", str(f.n if f is not None else 0)
    low, high = f.wilson_95 or (f.value, f.value)
    return f"{100 * f.value:.1f} %", f"{100 * low:.1f}–{100 * high:.1f} % (Wilson)", f"{f.k} of {f.n}"


class PairsPanel(QWidget):
    def __init__(self, ctx, parent=None):
        super().__init__(parent)
        self.ctx = ctx
        self.report = None
        self.bench = compact_combo(QComboBox(), 16)
        self.bench.setMinimumWidth(150)
        self.bench.setAccessibleName("Benchmark")
        self.judge = compact_combo(QComboBox(), 30)
        self.judge.setMinimumWidth(260)
        self.judge.setAccessibleName("Judge")
        self.bench.currentIndexChanged.connect(self._bench_changed)
        self.judge.currentIndexChanged.connect(lambda _: self.redraw())
        top = QHBoxLayout()
        for text, w in (("&Benchmark", self.bench), ("&Judge", self.judge)):
            lab = QLabel(text)
            lab.setObjectName("filterLabel")
            lab.setBuddy(w)
            top.addWidget(lab)
            top.addWidget(w)
        top.addStretch(1)
        self.summary = QLabel()
        self.summary.setObjectName("muted")
        self.summary.setWordWrap(True)
        self.summary.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.figures = RowsModel(FIGURE_COLUMNS, self)
        self.figures.align_right = {1, 2, 3}
        self.models = RowsModel(MODEL_COLUMNS, self)
        self.models.align_right = {1, 2, 3, 4}
        # Stacked, each the page's width: the figures' titles and the models' specs (a URL, often) need it.
        self.figures_view = table_view(self.figures, stretch=0)
        self.models_view = table_view(self.models, stretch=0)
        self.models_view.setTextElideMode(Qt.TextElideMode.ElideMiddle)  # a spec's model name and its URL's end
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(self.figures_view)
        split.addWidget(self.models_view)
        split.setChildrenCollapsible(False)
        split.setSizes([330, 170])
        export = QPushButton("Export ratings CSV…")
        export.clicked.connect(lambda: export_table(self, self.models, "pair-ratings.csv"))
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 4, 0, 0)
        layout.addLayout(top)
        layout.addWidget(self.summary)
        layout.addWidget(split, 1)
        # Judging is a command of its own (Workspace › Judge arena pairs…); offered here too, where its figures are.
        judge = QPushButton("Judge pairs…")
        judge.setToolTip("Ask a judge model which answer of each pair is better (vlmdesk judge-pairs)")
        judge.clicked.connect(lambda: self.ctx.actionRequested.emit("Judge arena pairs…"))
        bottom = QHBoxLayout()
        bottom.addWidget(judge)
        bottom.addStretch(1)
        bottom.addWidget(export)
        layout.addLayout(bottom)

    # ----------------------------------------------------------------------------------------------- choosing
    def refresh(self) -> None:
        """The open benchmarks with pairs (the current one first chosen), then the page."""
        ws = self.ctx.ws
        current = self.bench.currentData()
        if current is None and self.ctx.benchmark is not None:
            current = self.ctx.benchmark.name
        self.bench.blockSignals(True)
        self.bench.clear()
        for b in catalog.list_benchmarks(ws):
            if b.kind == "open" and arena.pair_count(ws, b.id):
                self.bench.addItem(b.name, b.name)
        if current and (i := self.bench.findData(current)) >= 0:
            self.bench.setCurrentIndex(i)
        self.bench.blockSignals(False)
        self._fill_judges()
        self.redraw()

    def _bench_changed(self) -> None:
        self._fill_judges()
        self.redraw()

    def _fill_judges(self) -> None:
        current = self.judge.currentData()
        self.judge.blockSignals(True)
        self.judge.clear()
        bench = self._benchmark()
        for s in store.sets_of(self.ctx.ws, bench.id) if bench else []:
            sight = ", shown the image" if s.with_image else ""
            self.judge.addItem(f"{s.judge} ({s.pairs} pairs{sight}; set {s.key[:8]})", s.key)
            self.judge.setItemData(self.judge.count() - 1, s.judge, Qt.ItemDataRole.ToolTipRole)
        if current and (i := self.judge.findData(current)) >= 0:
            self.judge.setCurrentIndex(i)
        self.judge.blockSignals(False)

    def _benchmark(self) -> catalog.Benchmark | None:
        name = self.bench.currentData()
        return catalog.benchmark_by_name(self.ctx.ws, name) if name else None

    # ----------------------------------------------------------------------------------------------- drawing
    def _clear(self, message: str) -> None:
        self.report = None
        self.figures.set_rows([])
        self.models.set_rows([])
        self.summary.setText(message)

    def redraw(self) -> None:
        from annotation.pair_alignment import pair_alignment

        bench, key = self._benchmark(), self.judge.currentData()
        if bench is None:
            self._clear(
                "No arena pairs yet: Workspace › Draw arena pairs… on an open benchmark, people vote in the Arena tab, "
                "and Workspace › Judge arena pairs… asks a judge the same question; this page holds the judge against "
                "the votes (vlmdesk align pairs)."
            )
            return
        if key is None:
            self._clear(f"No judge has judged the pairs of {bench.name} yet: Workspace › Judge arena pairs….")
            return
        try:
            r = self.report = pair_alignment(self.ctx.ws, bench, key, resamples=APP_BOOTSTRAP)
        except UserError as exc:
            self._clear(str(exc))
            return
        rows: list[tuple[object, ...]] = [
            ("Accuracy (left / right / tie / both bad)", *_share(r.accuracy)),
            ("Cohen's κ, four verdicts", _num(r.kappa), self._kappa(r.kappa_95), str(r.n)),
            ("Agreement on decisive pairs", *_share(r.decisive)),
            ("Cohen's κ, decisive pairs", _num(r.decisive_kappa), self._kappa(r.decisive_kappa_95), str(r.decisive.n)),
            ("Chose the answer shown first", *_share(r.first_choices)),
            (
                "  binomial test against 0.5",
                "–" if r.first_binomial_p is None else f"p = {r.first_binomial_p:.3g}",
                "",
                str(r.first_choices.n),
            ),
        ]
        if r.consistency is not None:
            rows.append(("Same verdict in both orders", *_share(r.consistency)))
            rows.append(("  inconsistent: chose the first shown twice", *_share(r.inconsistent_first)))
        rows.append(("Spearman ρ of the ratings", _num(r.spearman), "none", str(r.rated_models)))
        self.figures.set_rows(rows)
        self.models.set_rows(
            [(m.model, _num(m.judge, 1), m.judge_rank or "–", _num(m.votes, 1), m.votes_rank or "–") for m in r.models]
        )
        s, hl = r.judge_set, r.human_labels
        self.summary.setText(
            f"{r.pairs} pairs · {r.voted} voted ({r.votes} votes; {r.human_ties} tied, left out) · {r.judged} judged "
            f"({r.judge_undecided} undecided) · {r.n} compared · people: left {hl['left']}, right {hl['right']}, "
            f"tie {hl['tie']}, both bad {hl['bothbad']} · judge {'shown' if s.with_image else 'without'} the image, "
            f"{'both orders' if r.both_orders else 'one order'}"
        )
        self.summary.setToolTip(
            f"Judge {s.judge}, prompt {s.prompt_version}, set {s.key}. A pair's people label is the majority of its "
            "votes (tied votes: none); with both orders the judge names a side only when both orders chose it, "
            f"else a tie. κ intervals: percentile bootstrap over pairs, {APP_BOOTSTRAP} resamples, seed {r.seed}; "
            f"shares: Wilson 95 %. Ratings: Bradley–Terry of the judge's judgements and of the votes; "
            f"{r.spearman_note}. The same as: vlmdesk align pairs --bench {r.benchmark} --set {s.key}"
        )

    @staticmethod
    def _kappa(ci: tuple[float, float] | None) -> str:
        return "–" if ci is None else f"{ci[0]:.3f}–{ci[1]:.3f} (bootstrap)"
