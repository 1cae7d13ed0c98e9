"""The Queues tab's "Open answers" page: people judge runs' free answers right / partly / wrong, blind.

annotation/open_verdicts.py does the work. The page shows the image, the question, the reference answers and one
answer of the chosen runs — never the model, a metric's score or another annotator's verdict. Keys: 1 right,
2 partly, 3 wrong (committed at once), S skip (nothing stored; it comes again after the others), E note, Ctrl+Z
undo (withdraws my latest verdict and shows that answer again: a new verdict is the correction), Enter next. Only
once my verdict is saved does the page say which model answered and what the open metrics scored
(evaluator/scoring/open_metrics.py): the reveal box. Keys are off while the note has the focus. A (Adjudicate
disagreements)
switches to the answers whose annotators' verdicts differ and no adjudication settles: everyone's verdicts and notes
are shown there (settling is not blind), and keys 1-3 record the final word (role 'adjudication').
"""

from __future__ import annotations

import html
import time

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QApplication,
    QFrame,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from annotation import open_verdicts as ov
from annotation.open_alignment import stored_scores
from db.errors import UserError
from gui.appearance import MUTED, set_rich_text
from gui.fitting import FlowLayout
from gui.queues_view import _ItemPage, _shortcut
from gui.review_view import NoteEdit, typing_in

VERDICT_KEYS = (("right", "1", "1  Right"), ("partly", "2", "2  Partly"), ("wrong", "3", "3  Wrong"))


class OpenAnswersPage(_ItemPage):
    """Judge open answers of the chosen runs: the image left, the question, references and answer right."""

    changed = Signal()
    judged = Signal(object)  # ov.OpenVerdict

    def __init__(self, ctx, parent=None):
        super().__init__(ctx, "Open answers", parent)
        self.task: ov.Task | None = None
        self.skipped: list[ov.Unit] = []
        self.judged_here: list[tuple[ov.Unit, ov.Role]] = []  # newest last: what Ctrl+Z takes back first
        self.shown_at = time.monotonic()
        self.panel.hide()  # an open answer is shown by this page, not as a multiple-choice item
        lay = self.right_layout
        self.runs = QListWidget()
        self.runs.setObjectName("openRuns")
        self.runs.setToolTip(
            "The runs whose answers you judge (all by default, by id: the Runs tab names their "
            "models); their answers come mixed"
        )
        self.runs.itemChanged.connect(lambda _: self.refresh())
        lay.addWidget(self.runs)
        # Adjudication: the answers whose annotators disagree, everyone's verdicts and notes shown (settling them
        # is not blind), the key commits the final word (role 'adjudication').
        self.mode = QPushButton("Adjudicate disagreements  A")
        self.mode.setCheckable(True)
        self.mode.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.mode.setToolTip("Settle answers whose annotators' verdicts differ; off: judge answers blind")
        self.mode.toggled.connect(self._mode_changed)
        lay.addWidget(self.mode, 0, Qt.AlignmentFlag.AlignLeft)
        self.question = QLabel()
        self.question.setObjectName("question")
        self.question.setWordWrap(True)
        lay.addWidget(self.question)
        self.references = QLabel()
        self.references.setWordWrap(True)
        self.references.setTextFormat(Qt.TextFormat.RichText)
        lay.addWidget(self.references)
        title = QLabel("Answer")
        title.setObjectName("sectionTitle")
        lay.addWidget(title)
        self.answer = QLabel()
        self.answer.setObjectName("response")
        self.answer.setWordWrap(True)
        self.answer.setTextFormat(Qt.TextFormat.PlainText)  # shown as written, never rendered
        self.answer.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        lay.addWidget(self.answer)
        self.others = QLabel()  # adjudication only: everyone's verdicts on the answer
        self.others.setWordWrap(True)
        self.others.setTextFormat(Qt.TextFormat.RichText)
        self.others.hide()
        lay.addWidget(self.others)
        row = FlowLayout()
        self.buttons: dict[str, QPushButton] = {}
        for verdict, _, caption in VERDICT_KEYS:
            b = QPushButton(caption)
            b.setFocusPolicy(Qt.FocusPolicy.NoFocus)
            b.clicked.connect(lambda _=False, v=verdict: self.judge(v))
            self.buttons[verdict] = b
            row.addWidget(b)
        for caption, slot in (("S  Skip", self.skip), ("Ctrl+Z  Undo", self.undo)):
            b = QPushButton(caption)
            b.setFocusPolicy(Qt.FocusPolicy.NoFocus)
            b.clicked.connect(slot)
            row.addWidget(b)
        lay.addLayout(row)
        self.note = NoteEdit()
        self.note.setPlaceholderText("Note for the next verdict (E to write, Enter/Esc to leave)")
        self.note.done.connect(self.setFocus)
        lay.addWidget(self.note)
        self.revealed = QFrame()
        self.revealed.setObjectName("revealBox")
        box = QVBoxLayout(self.revealed)
        self.reveal_text = QLabel()
        self.reveal_text.setWordWrap(True)
        self.reveal_text.setTextFormat(Qt.TextFormat.RichText)
        box.addWidget(self.reveal_text, 1)
        self.next_button = QPushButton("Next answer  ⏎")
        self.next_button.setObjectName("primary")
        self.next_button.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.next_button.clicked.connect(self.refresh)
        box.addWidget(self.next_button, 0, Qt.AlignmentFlag.AlignLeft)
        self.revealed.hide()
        lay.addWidget(self.revealed)
        lay.addStretch(1)
        keys = [(key, verdict) for verdict, key, _ in VERDICT_KEYS]
        keys += [("S", "skip"), ("E", "note"), ("Ctrl+Z", "undo"), ("Return", "next"), ("A", "mode")]
        for key, action in keys:
            _shortcut(self, key, lambda a=action: self.on_key(a))

    # -- the runs
    def bench(self):
        bench = self.ctx.benchmark
        return bench if bench is not None and bench.kind == "open" else None

    def reload_runs(self) -> None:
        """The open benchmark's runs, checked as they were (new ones checked)."""
        bench = self.bench()
        unchecked = {
            self.runs.item(i).data(Qt.ItemDataRole.UserRole)
            for i in range(self.runs.count())
            if self.runs.item(i).checkState() != Qt.CheckState.Checked
        }
        self.runs.blockSignals(True)
        self.runs.clear()
        for run in ov.judgeable_runs(self.ctx.ws, bench.id) if bench is not None else []:
            entry = QListWidgetItem(f"run {run.id}")  # by id only: no model is named on this page before a verdict
            entry.setData(Qt.ItemDataRole.UserRole, run.id)
            entry.setFlags(entry.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            entry.setCheckState(Qt.CheckState.Unchecked if run.id in unchecked else Qt.CheckState.Checked)
            self.runs.addItem(entry)
        self.runs.blockSignals(False)
        self.runs.setVisible(self.runs.count() > 0)
        rows = max(1, min(self.runs.count(), 4))
        self.runs.setMaximumHeight(rows * max(self.runs.sizeHintForRow(0), 16) + 2 * self.runs.frameWidth() + 4)

    def run_ids(self) -> list[int]:
        return [
            self.runs.item(i).data(Qt.ItemDataRole.UserRole)
            for i in range(self.runs.count())
            if self.runs.item(i).checkState() == Qt.CheckState.Checked
        ]

    def role(self) -> ov.Role:
        return "adjudication" if self.mode.isChecked() else "verdict"

    def _mode_changed(self) -> None:
        self.task = None
        self.skipped = []
        self.refresh()  # emits changed: the Queues list and progress bar follow the mode

    def remaining(self) -> int:
        ids = self.run_ids()
        if not ids or not self.ctx.annotator:
            return 0
        return len(self._left_units(ids))

    def _left_units(self, ids: list[int]) -> list[ov.Unit]:
        """What this page has left: answers I have not judged, or (adjudicating) disagreements nobody settled."""
        if self.role() == "adjudication":
            return ov.to_adjudicate(self.ctx.ws, ids)
        return ov.left_for(self.ctx.ws, ids, self.ctx.annotator)

    def total(self) -> int:
        """Everything the page holds: the runs' answers, or (adjudicating) the answers whose verdicts differ."""
        ids = self.run_ids()
        if not ids:
            return 0
        if self.role() == "adjudication":
            return sum(len(set(v.values())) > 1 for v in ov.standing_verdicts(self.ctx.ws, ids).values())
        return len(ov.queue(self.ctx.ws, ids))

    # -- showing
    def refresh(self, unit: ov.Unit | None = None) -> None:
        """Show `unit`, or the next answer left for this annotator (skipped ones last, never the same item twice in
        a row while others are left)."""
        self.revealed.hide()
        self.reveal_text.setText("")
        ids, who = self.run_ids(), self.ctx.annotator
        after = self.task.item.id if self.task is not None else None
        try:
            if unit is not None:
                self.task = ov.task(self.ctx.ws, ids, unit, who)
            elif self.role() == "adjudication":
                left = self._left_units(ids) if ids and who else []
                ahead = [u for u in left if u not in self.skipped] + [u for u in left if u in self.skipped]
                pick = next((u for u in ahead if u[1] != after), ahead[0] if ahead else None)
                self.task = ov.task(self.ctx.ws, ids, pick, who) if pick is not None else None
            else:
                self.task = (
                    ov.next_task(self.ctx.ws, ids, who, after_item=after, skip=self.skipped) if ids and who else None
                )
        except UserError as exc:
            self.ctx.error.emit(str(exc), "")
            self.task = None
        for b in self.buttons.values():
            b.setEnabled(self.task is not None)
        self._show_others()
        if self.task is None:
            self.left.setText(f"{self.remaining()} left" if ids else "")
            self.question.setText(self._why_empty(ids))
            self.references.setText("")
            self.answer.setText("")
            self.image.set_image(None, placeholder="Nothing to show")
            self.item = None
            self.changed.emit()
            return
        t = self.task
        self.left.setText(self._left_text())
        item = t.item
        self.question.setText(item.question if not item.hint else f"{item.hint}\n\n{item.question}")
        refs = item.references
        set_rich_text(
            self.references,
            f"<span style='color:{MUTED}'>Reference answer{'s' if len(refs) != 1 else ''}:</span> "
            + (" · ".join(f"<b>{html.escape(r)}</b>" for r in refs) if refs else "<i>none stored</i>"),
        )
        self.answer.setText(t.answer or "(empty answer)")
        self._show_image(item)
        self.shown_at = time.monotonic()
        self.setFocus()
        self.changed.emit()

    def _left_text(self) -> str:
        n = self.remaining()
        return f"{n} to adjudicate" if self.role() == "adjudication" else f"{n} left for you"

    def _show_others(self) -> None:
        """Adjudicating: each annotator's standing verdict and note on the answer. Judging: nothing (blind)."""
        if self.role() != "adjudication" or self.task is None:
            self.others.hide()
            self.others.setText("")
            return
        parts = [
            f"<b>{html.escape(v.annotator)}</b>: {html.escape(v.verdict)}"
            + (f" <span style='color:{MUTED}'>({html.escape(v.note)})</span>" if v.note else "")
            for v in ov.verdicts_on(self.ctx.ws, self.task.unit)
        ]
        set_rich_text(self.others, "The annotators said: " + " · ".join(parts))
        self.others.show()

    def _why_empty(self, ids: list[int]) -> str:
        if self.bench() is None:
            return "Choose an open benchmark (the demo's is demo-open) to judge its runs' answers."
        if self.runs.count() == 0:
            return "No run on this benchmark yet: run a model on it, then judge its answers here."
        if not ids:
            return "Tick the runs whose answers you judge."
        if not self.ctx.annotator:
            return "Set your annotator name first (File › Annotator…)."
        if self.role() == "adjudication":
            return "No disagreement left to adjudicate on these runs' answers."
        return "Nothing left to judge here: every answer of these runs has your verdict."

    def _show_image(self, item) -> None:
        self.item = item
        sha = item.image_sha256
        cached = self.ctx.loader.cached(sha) if sha else None
        if cached is not None:
            self.image.set_image(cached, key=sha)
        else:
            self.image.set_image(None, placeholder="Loading image…" if sha else "No image")
            if sha:
                self.ctx.loader.request(sha)

    def reload(self) -> None:
        """Another process wrote: keep the answer being judged (or the reveal being read)."""
        self.reload_runs()
        ids = self.run_ids()
        left = set(self._left_units(ids)) if ids and self.ctx.annotator else set()
        if self.task is not None and (self.revealed.isVisible() or self.task.unit in left):
            self.left.setText(self._left_text())
            self._show_others()
            return
        self.refresh()

    def forget_annotator(self) -> None:
        """Another name signs now: the previous annotator's reveal, skips and undo stack go."""
        self.judged_here.clear()
        self.skipped = []
        self.task = None
        self.revealed.hide()
        self.reveal_text.setText("")

    # -- acting
    def on_key(self, action: str) -> None:
        focus = QApplication.focusWidget()
        if action == "next" and focus is self.note:
            self.setFocus()  # the window's Enter reaches the note first: it leaves the note, as NoteEdit's does
            return
        if typing_in(focus):
            self.ctx.info.emit("Keys are off while the note has the focus (Enter or Esc leaves it)")
            return
        if action == "skip":
            self.skip()
        elif action == "undo":
            self.undo()
        elif action == "note":
            self.note.setFocus()
        elif action == "mode":
            self.mode.toggle()
        elif action == "next":
            if self.revealed.isVisible():
                self.refresh()
        else:
            self.judge(action)

    def judge(self, verdict: str) -> None:
        t, who = self.task, self.ctx.annotator
        if t is None or self.revealed.isVisible():
            return  # after the reveal a verdict would be made with the scores in view: Ctrl+Z first
        if not who:
            self.ctx.info.emit("Set your annotator name first (File › Annotator…)")
            return
        try:
            saved = ov.add_verdict(
                self.ctx.ws,
                *t.unit,
                who,
                verdict,
                note=self.note.text().strip() or None,
                seconds=round(time.monotonic() - self.shown_at, 1),
                role=self.role(),
            )
        except UserError as exc:
            self.ctx.error.emit(str(exc), "")
            return
        self.note.clear()
        self.judged_here.append((t.unit, self.role()))
        if t.unit in self.skipped:
            self.skipped.remove(t.unit)
        self._reveal(t, verdict)
        for b in self.buttons.values():
            b.setEnabled(False)
        self.left.setText(self._left_text())
        self.judged.emit(saved)
        self.changed.emit()

    def _reveal(self, t: ov.Task, verdict: str) -> None:
        """Now that my verdict stands: who answered and what each open metric scored."""
        model = ov.reveal_model(self.ctx.ws, *t.unit, self.ctx.annotator, role=self.role())
        try:
            scores = {name: per_item.get(t.item.id) for name, per_item in stored_scores(self.ctx.ws, t.run_id).items()}
        except UserError:
            scores = {}
        # One wrapping line of "name score" pairs (a table would not wrap: at 1024 px it would widen the page).
        found = " · ".join(
            f"{html.escape(name)}&nbsp;<b>{'–' if v is None else f'{v:.2f}'}</b>" for name, v in scores.items()
        )
        set_rich_text(
            self.reveal_text,
            f"✓ Saved{' the adjudication' if self.role() == 'adjudication' else ''}: <b>{html.escape(verdict)}</b>. "
            f"The answer was {html.escape(model)}'s. "
            + (f"The metrics scored it: {found}." if scores else "No metric applies to it.")
            + f"<br><span style='color:{MUTED}'>Ctrl+Z withdraws the verdict; Enter goes on.</span>",
        )
        self.revealed.show()
        # At 1024×700 with large text the box lies under the fold: scroll it into view once it is laid out.
        area = self.revealed.parentWidget()
        while area is not None and not isinstance(area, QScrollArea):
            area = area.parentWidget()
        if area is not None:
            QTimer.singleShot(0, lambda: area.ensureWidgetVisible(self.revealed))

    def skip(self) -> None:
        if self.task is not None and not self.revealed.isVisible():
            self.skipped = [u for u in self.skipped if u != self.task.unit] + [self.task.unit]
            self.ctx.info.emit("Skipped (nothing stored); it comes again after the others.")
            self.refresh()

    def undo(self) -> None:
        """Withdraw my latest verdict here (this session's, else my newest standing one on these runs) and show that
        answer again, scores hidden: a new verdict is the correction."""
        who, ids, role = self.ctx.annotator, self.run_ids(), self.role()
        mine = [k for k, (_, made_as) in enumerate(self.judged_here) if made_as == role]
        while mine:
            unit, _ = self.judged_here.pop(mine.pop())
            if ov.undo_verdict(self.ctx.ws, *unit, who, role=role) is not None:
                break
        else:
            latest = ov.latest_judged(self.ctx.ws, ids, who, role=role) if ids and who else None
            if latest is None or ov.undo_verdict(self.ctx.ws, *latest, who, role=role) is None:
                self.ctx.info.emit(f"Nothing to undo: you have no {role} on these runs' answers.")
                return
            unit = latest
        self.refresh(unit)
        self.ctx.info.emit("Verdict withdrawn: judge this answer again.")


METRIC_COLUMNS = ("Metric", "n", "Threshold", "Accuracy (95 %)", "κ (95 %)", "Spearman ρ")
APP_BOOTSTRAP = 1000  # resamples in the app (`vlmdesk align open --bootstrap` goes further)


def _fmt(v: float | None, digits: int = 3) -> str:
    return "–" if v is None else f"{v:.{digits}f}"


def _interval(ci: tuple[float, float] | None, scale: float = 1, digits: int = 3) -> str:
    return "" if ci is None else f" ({scale * ci[0]:.{digits}f}–{scale * ci[1]:.{digits}f})"


class OpenMetricsPanel(QWidget):
    """The Alignment tab's Open metrics page: `vlmdesk align open` for the chosen open benchmark's runs — each open
    metric held against people's verdicts (annotation/open_alignment.py). It mixes everyone's verdicts, so the
    Alignment tab's blind cover hides it like every figure."""

    def __init__(self, ctx, parent=None):
        super().__init__(parent)
        from gui.tables import RowsModel, export_table, table_view

        self.ctx = ctx
        self.report = None
        self.summary = QLabel()
        self.summary.setObjectName("muted")
        self.summary.setWordWrap(True)
        self.summary.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.table = RowsModel(METRIC_COLUMNS, self)
        self.table.align_right = set(range(1, len(METRIC_COLUMNS)))
        export = QPushButton("Export CSV…")
        export.clicked.connect(lambda: export_table(self, self.table, "open-metrics.csv"))
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 4, 0, 0)
        layout.addWidget(self.summary)
        layout.addWidget(table_view(self.table), 1)  # every column to its contents: at 1024 px all six fit
        layout.addWidget(export, 0, Qt.AlignmentFlag.AlignRight)

    def refresh(self) -> None:
        from annotation.open_alignment import open_alignment

        bench = self.ctx.benchmark
        run_ids = [r.id for r in ov.judgeable_runs(self.ctx.ws, bench.id)] if bench and bench.kind == "open" else []
        if not run_ids:
            self.report = None
            self.table.set_rows([])
            self.summary.setText(
                "Choose an open benchmark with runs: people judge their answers in Queues › Open answers, and this "
                "page holds every open metric against those verdicts (vlmdesk align open)."
            )
            return
        try:
            r = self.report = open_alignment(self.ctx.ws, bench, run_ids, stored_scores, resamples=APP_BOOTSTRAP)
        except UserError as exc:
            self.report = None
            self.table.set_rows([])
            self.summary.setText(str(exc))
            return
        self.table.set_rows(
            [
                (
                    name,
                    m.n,
                    "none" if m.n and m.threshold is None else _fmt(m.threshold),
                    "–" if m.accuracy is None else f"{100 * m.accuracy:.1f} %{_interval(m.wilson_95, 100, 1)}",
                    _fmt(m.cohen_kappa) + ("" if m.cohen_kappa is None else _interval(m.kappa_95)),
                    _fmt(m.spearman),
                )
                for name, m in r.metrics.items()
            ]
        )
        a, lab = r.annotators, r.labels
        self.summary.setText(
            f"{bench.name}, runs {', '.join(map(str, r.runs))}: {r.judged} of {r.answers} answers judged "
            f"(right {lab['right']}, partly {lab['partly']}, wrong {lab['wrong']}; {r.ties} ties left out, "
            f"{r.adjudicated} adjudicated). Annotators {', '.join(a.names) or '–'}: κ {_fmt(a.cohen_kappa)}, "
            f"α {_fmt(a.krippendorff_alpha)}. Right vs partly-or-wrong; the threshold maximises accuracy on "
            f"these answers; 95 % intervals: Wilson for accuracy; for Cohen's κ a percentile bootstrap, "
            f"{APP_BOOTSTRAP} resamples, seed {r.seed}."
        )
