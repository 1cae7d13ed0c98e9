"""Work queues: quality-control candidates, blind extractor adjudication, inter-annotator conflicts.

Each queue names how much is left. The adjudication queue is blind: the extractors' outputs are fetched (alignment
.reveal) only after the annotator's label is committed, and the widgets that show them stay hidden until then.
"""

from __future__ import annotations

import html
import time
from typing import cast

from PySide6.QtCore import QSize, Qt, QTimer, Signal
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QApplication,
    QComboBox,
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QProgressBar,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QSplitter,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from annotation import alignment, qc, reviews
from annotation.blind import HIDDEN_TEXT
from annotation.browse import is_open_conflict, next_open_conflict, open_conflict_count
from annotation.correction import wrong_key_problem
from annotation.item_kinds import INCOMPLETE, ItemKind, fits, kind_of, kind_words, verdict_label
from db import catalog, item_query
from db.catalog import Item
from db.errors import InvalidInput, UserError
from evaluator.scoring.choices import LETTERS, YES_NO, answer_keys, canonical_answer
from gui.appearance import MUTED, RIGHT, WRONG, set_rich_text
from gui.empty_states import BUILD_SET, CONSENSUS, NO_BENCHMARK, TEXT_ONLY, EmptyState
from gui.fitting import ElidedLabel, FlowLayout, compact_combo
from gui.guidelines_view import GuidelinesPanel
from gui.image_view import ImageView
from gui.item_panel import ItemPanel, item_kind
from gui.review_view import AnswerEdit, NoteEdit, typing_in
from gui.shortcuts import review_shortcuts, verdict_button, verdict_keys, verdict_places


def _show_done(page, lines: list[str], actions: list[tuple[str, object]]) -> None:
    """A page's "nothing left for you" side (its `area`'s second page): `lines` as paragraphs, then one button per
    action under them (the first the primary), in place of the buttons it showed before."""
    for button in page.done_buttons:
        page.done_layout.removeWidget(button)
        button.deleteLater()
    page.done_buttons = []
    set_rich_text(page.done_text, "<br><br>".join(lines))
    at = page.done_layout.indexOf(page.done_text) + 1
    for n, (text, slot) in enumerate(actions):
        button = QPushButton(text)
        if n == 0:
            button.setObjectName("primary")
        button.clicked.connect(slot)
        page.done_layout.insertWidget(at + n, button, 0, Qt.AlignmentFlag.AlignLeft)
        page.done_buttons.append(button)
    page.area.setCurrentIndex(1)


def _title(text: str) -> QLabel:
    label = QLabel(text)
    label.setObjectName("pageTitle")
    return label


def _shortcut(page: QWidget, key: str, slot) -> QShortcut:
    """A key of one queue page, window-wide while that page is the one shown (QueuesView enables it), so it works
    whatever was clicked last. A focused text field (the note) claims printable keys and Ctrl+Z itself, so keys are
    off while typing."""
    sc = QShortcut(QKeySequence(key), page)
    sc.setContext(Qt.ShortcutContext.WindowShortcut)
    sc.setEnabled(False)
    sc.activated.connect(slot)
    return sc


class _DecisionScroll(QScrollArea):
    """The decision side of an item page: scrolls up and down, never sideways, and is never narrower than its
    content's minimum (the splitter gives the image what is left). Sideways scrolling hid the right half of the
    verdict buttons and the queue's count at 1024×700 with larger text."""

    def __init__(self, widget: QWidget):
        super().__init__()
        self.setWidgetResizable(True)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setWidget(widget)

    def minimumSizeHint(self) -> QSize:
        inner = self.widget()
        hint = super().minimumSizeHint()
        if inner is None:
            return hint
        bar = self.verticalScrollBar().sizeHint().width()
        return QSize(inner.minimumSizeHint().width() + bar + 2 * self.frameWidth(), hint.height())


class _ItemPage(QWidget):
    """An item (image left, text right) above a page-specific action area. `scrolls`: the right side scrolls as a
    whole; else the item panel takes the height the action area leaves (its options scroll inside it), so the
    actions are always in sight."""

    def __init__(self, ctx, title: str, parent=None, *, scrolls: bool = True):
        super().__init__(parent)
        self.ctx = ctx
        self.item: Item | None = None
        self.image = ImageView()
        self.image.setMinimumWidth(160)  # the decision side first: at 1024 px the image takes what is left
        self.panel = ItemPanel()
        self.title = _title(title)
        self.left = QLabel()
        self.left.setObjectName("muted")
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)  # the page's keys need the focus inside it
        right = QWidget()
        self.right_layout = QVBoxLayout(right)
        self.right_layout.setContentsMargins(16, 12, 16, 12)
        self.right_layout.setSpacing(10)
        head = QHBoxLayout()
        head.addWidget(self.title)
        head.addStretch(1)
        head.addWidget(self.left)
        self.right_layout.addLayout(head)
        self.right_layout.addWidget(self.panel, 0 if scrolls else 1)
        split = QSplitter(Qt.Orientation.Horizontal)
        split.addWidget(self.image)
        split.addWidget(_DecisionScroll(right) if scrolls else right)
        # The decision side first: at 1024×700 its buttons and fields must fit; the image scales to what is left.
        split.setStretchFactor(0, 2)
        split.setStretchFactor(1, 3)
        split.setSizes([400, 600])
        split.setChildrenCollapsible(False)
        self.page_layout = QVBoxLayout(self)
        self.page_layout.setContentsMargins(0, 0, 0, 0)
        self.page_layout.setSpacing(0)
        self.page_layout.addWidget(split, 1)
        self.split = split
        ctx.loader.loaded.connect(self._on_image)

    def reveals(self, item_id: int) -> bool:
        """The blind rule (annotation/blind.py) for this annotator and item: key, others' verdicts, run results."""
        return self.ctx.sight(item_ids=[item_id]).reveals(item_id)

    def show_item(self, item_id: int | None) -> None:
        self.item = item_query.item_by_id(self.ctx.ws, item_id) if item_id is not None else None
        bench = self.ctx.benchmark
        reveal = self.item is not None and self.reveals(self.item.id)
        self.panel.show_item(
            self.item,
            bench_name=bench.name if bench else "",
            blind=self.ctx.prefs.blind,
            reveal=reveal,
            kind=item_kind(self.ctx.ws, bench, self.item) if self.item is not None else None,
            live_arena=bool(bench and bench.meta.get("live_arena")),
        )
        sha = self.item.image_sha256 if self.item else None
        image = self.ctx.loader.cached(sha) if sha else None
        if image is not None:
            self.image.set_image(image, key=sha)
        else:
            self.image.set_image(None, placeholder="Loading image…" if sha else "Nothing to show")
            if sha:
                self.ctx.loader.request(sha)

    def _on_image(self, sha, image) -> None:
        if self.item is not None and self.item.image_sha256 == sha:
            self.image.set_image(image, key=sha, placeholder="The image could not be decoded")


class QCPage(_ItemPage):
    changed = Signal()

    def __init__(self, ctx, parent=None):
        super().__init__(ctx, "Quality control", parent)
        self.candidate: qc.Candidate | None = None
        self.decided: list[tuple[int, str]] = []  # (item id, stage) decided on this page, newest last: Ctrl+Z
        self.empty = EmptyState(self, ctx, "qc")
        # The flag being decided, or, once every flag of the benchmark has my decision, what to do next: one stacked
        # area in the item's place, so the page keeps its layout and shows no empty item. (No flag computed at all is
        # the EmptyState above: a different thing to say.)
        self.area = QStackedWidget()
        self.page_layout.removeWidget(self.split)
        self.area.addWidget(self.split)
        done = QWidget()
        self.done_layout = QVBoxLayout(done)
        self.done_layout.setContentsMargins(24, 16, 24, 16)
        self.done_layout.setSpacing(10)
        done_head = QHBoxLayout()
        done_head.addWidget(_title("Quality control"))
        done_head.addStretch(1)
        self.done_left = QLabel("0 left for you")
        self.done_left.setObjectName("muted")
        done_head.addWidget(self.done_left)
        self.done_layout.addLayout(done_head)
        self.done_text = QLabel()
        self.done_text.setWordWrap(True)
        self.done_text.setTextFormat(Qt.TextFormat.RichText)
        self.done_layout.addWidget(self.done_text)
        self.done_buttons: list[QPushButton] = []
        self.done_layout.addStretch(1)
        self.area.addWidget(done)
        self.page_layout.insertWidget(0, self.area, 1)
        self.flag = QLabel()
        self.flag.setObjectName("flagNote")
        self.flag.setWordWrap(True)
        self.right_layout.insertWidget(1, self.flag)
        form = QGridLayout()
        self.reason = QComboBox()
        for r in qc.REASONS:
            self.reason.addItem(qc.REASON_TEXT[r], r)
        self.answer = QComboBox()
        self.note = NoteEdit()
        self.note.setPlaceholderText("Note (optional)")
        self.note.done.connect(self.setFocus)
        form.addWidget(QLabel("Reason"), 0, 0)
        form.addWidget(self.reason, 0, 1)
        form.addWidget(QLabel("Right answer"), 1, 0)
        form.addWidget(self.answer, 1, 1)
        form.addWidget(QLabel("Note"), 2, 0)
        form.addWidget(self.note, 2, 1)
        self.right_layout.addLayout(form)
        buttons = QHBoxLayout()
        self.confirm = QPushButton("Confirm flag")
        self.confirm.setObjectName("verdict_ok")
        self.reject = QPushButton("Reject flag (keep the item)")
        self.confirm.clicked.connect(lambda: self.decide("confirm"))
        self.reject.clicked.connect(lambda: self.decide("reject"))
        buttons.addWidget(self.confirm)
        buttons.addWidget(self.reject)
        buttons.addStretch(1)
        self.right_layout.addLayout(buttons)
        saved_row = QHBoxLayout()
        self.saved = QLabel()
        self.saved.setObjectName("saved")
        self.saved.setWordWrap(True)
        self.change = QPushButton("Change my decision  Ctrl+Z")
        self.change.setToolTip("Withdraw your last decision here (the log keeps it) and decide that flag again")
        self.change.clicked.connect(self.undo)
        self.change.hide()
        saved_row.addWidget(self.saved, 1)
        saved_row.addWidget(self.change)
        self.right_layout.addLayout(saved_row)
        self.right_layout.addStretch(1)
        self.reason.currentIndexChanged.connect(self._reason_changed)
        self.answer.currentIndexChanged.connect(self._update_confirm)
        _shortcut(self, "Ctrl+Z", self.undo)
        _shortcut(self, "E", self.note.setFocus)
        self._reason_changed()

    def _reason_changed(self) -> None:
        self.answer.setEnabled(self.reason.currentData() == "wrong_answer")
        self._update_confirm()

    def _update_confirm(self) -> None:
        # Confirming "wrong answer key" rewrites the key: only once the reviewer has picked the right answer.
        needs_answer = self.reason.currentData() == "wrong_answer"
        self.confirm.setEnabled(
            self.candidate is not None and (not needs_answer or self.answer.currentData() is not None)
        )

    def queue(self) -> list:
        """The benchmark's QC queue, read once per action (the page's and the list's counts come from it)."""
        bench = self.ctx.benchmark
        return qc.queue(self.ctx.ws, benchmark_id=bench.id) if bench is not None else []

    def remaining(self, queue: list | None = None) -> list:
        """THE list of flags left for this reviewer: the page's count and the queue list's count both come from it."""
        me = self.ctx.annotator
        return [
            c
            for c in (self.queue() if queue is None else queue)
            if c.status in ("pending", "disputed") and not any(v.annotator == me for v in c.resolution.votes)
        ]

    def reload(self) -> None:
        """After another process wrote: keep the flag being decided (and what was chosen for it) if still left."""
        left = self.remaining()
        shown = self.candidate
        keep = shown is not None and any((c.item_id, c.stage) == (shown.item_id, shown.stage) for c in left)
        if shown is None or not keep:
            self.refresh()
            return
        self.left.setText(f"{len(left)} left for you")
        self.candidate = next(c for c in left if (c.item_id, c.stage) == (shown.item_id, shown.stage))
        self._show_candidate(keep_pick=True)

    def forget_annotator(self) -> None:
        """Another name signs now: nothing of the previous annotator's session stays (their undo stack, saved line,
        unsaved note, the flag they were deciding)."""
        self.decided.clear()
        self.saved.setText("")
        self.note.clear()
        self.candidate = None

    def refresh(self, prefer: tuple[int, str] | None = None) -> None:
        """Show the first flag left for me (or `prefer`, a flag whose decision was just withdrawn)."""
        queue = self.queue()
        left = self.remaining(queue)
        self.left.setText(f"{len(left)} left for you")
        self.candidate = next((c for c in left if (c.item_id, c.stage) == prefer), left[0] if left else None)
        for w in (self.confirm, self.reject):
            w.setEnabled(self.candidate is not None)
        self.change.setVisible(bool(self.decided))
        bench = self.ctx.benchmark
        if bench is None:  # an empty workspace: "every flag has your decision" would mislead
            self.empty.show_state(*NO_BENCHMARK)
        elif self.candidate is None and not queue:
            self.empty.show_state(
                "No quality-control flags yet",
                f"Flags on {bench.name} come from two stages: language models answering without the image "
                "(text-answerable items) and VLM runs none of which gets an item right (possibly flawed items). "
                "People then confirm or reject every flag here.",
                (TEXT_ONLY, CONSENSUS),
            )
        else:
            self.empty.hide()
        if self.candidate is None:
            self.flag.setText("")
            self.show_item(None)
            if bench is not None and queue:
                self._show_next_steps(bench.name)
            return
        self.area.setCurrentIndex(0)
        c = self.candidate
        self._show_candidate(keep_pick=False)
        default = "text_answerable" if c.stage == "text-only" else "wrong_answer"
        self.reason.setCurrentIndex(self.reason.findData(default))
        self._update_confirm()
        self.setFocus()

    def flags_elsewhere(self) -> list[tuple[str, int]]:
        """(benchmark, flags left for me) of every other benchmark that has some: each benchmark's queue read by the
        flags' benchmark index and counted by `remaining`, the one rule of what is left for me (qc.resolve decides
        pending and disputed), so the count here is the count that benchmark's page will show."""
        ws, bench = self.ctx.ws, self.ctx.benchmark
        return [
            (b.name, n)
            for b in catalog.list_benchmarks(ws)
            if (bench is None or b.id != bench.id) and (n := len(self.remaining(qc.queue(ws, benchmark_id=b.id))))
        ]

    def _show_next_steps(self, name: str) -> None:
        """Flags were computed and every one left has my decision: say so, where flags wait for me (another
        benchmark), and how to get more (run a stage). Blind: counts of my own work only, no key, no one's decision."""
        lines = [f"<b>Every quality-control flag on {html.escape(name)} has your decision.</b>"]
        if self.saved.text():
            lines.append(html.escape(self.saved.text()) + " — Ctrl+Z withdraws it and shows that flag again.")
        waiting = self.flags_elsewhere()
        if waiting:
            lines.append(
                "Flags wait for you on "
                + ", ".join(f"{html.escape(other)} ({n} left)" for other, n in waiting)
                + ": choose it in the Benchmarks list."
            )
        lines.append(
            "More flags come from running a stage again, after new runs: the text-only stage (language models "
            "answering without the image) or the consensus stage (VLM runs none of which gets an item right)."
        )
        actions: list[tuple[str, object]] = [
            (text, lambda _=False, w=what: self.ctx.actionRequested.emit(w)) for text, what in (TEXT_ONLY, CONSENSUS)
        ]
        if self.decided:
            actions.append((self.change.text(), self.undo))
        _show_done(self, lines, actions)

    def _show_candidate(self, *, keep_pick: bool) -> None:
        """Everything of the flag shown that the blind rule decides — the item (its key), why it was flagged, the
        answers offered — asked again of the rule now: a reload after a change of annotator or of blind mode shows
        nothing the page drew for the previous sight."""
        c = self.candidate
        if c is None:
            return
        picked = self.answer.currentData() if keep_pick else None
        self.show_item(c.item_id)
        self._show_flag()
        reveal = self.item is not None and self.reveals(self.item.id)
        self.answer.blockSignals(True)
        self.answer.clear()
        self.answer.addItem("choose…", None)  # never a pre-filled key: a stray click must not rewrite it
        # Blind: every option is offered (leaving the key out would name it); the key is refused on confirm.
        key = (self.item.answer or "") if self.item is not None and reveal else None
        if self.item is not None:
            n = len(self.item.options)
            for a in answer_keys(n):
                if key is None or a != canonical_answer(n, key):
                    self.answer.addItem(a, a)
        self.answer.setCurrentIndex(max(0, self.answer.findData(picked)) if picked is not None else 0)
        self.answer.blockSignals(False)
        self._update_confirm()

    def _show_flag(self) -> None:
        c = self.candidate
        if c is None:
            return
        if not self.reveals(c.item_id):
            # "Possibly flawed · runs 1, 2" says that those runs all got the item wrong: a model result, which blind
            # mode keeps off the screen until the reviewer's own judgement (annotation/blind.py).
            self.flag.setText(f"<b>Quality-control flag</b> · why it was flagged is {HIDDEN_TEXT} · status {c.status}")
            return
        runs_text = ", ".join(str(r) for r in c.run_ids)
        right = ", ".join(str(r) for r in c.correct_run_ids) or "none"
        self.flag.setText(
            f"<b>{html.escape(qc.CATEGORY[c.stage])}</b> ({c.stage} stage) · runs {runs_text} · "
            f"answered right by: {html.escape(right)} · status {c.status}"
        )

    def decide(self, decision: str) -> None:
        c = self.candidate
        if c is None:
            return
        reason = self.reason.currentData() if decision == "confirm" else None
        answer = self.answer.currentData() if decision == "confirm" and reason == "wrong_answer" else None
        key = self.item.answer if self.item is not None else None
        if answer is not None and self.item is not None and not self.reveals(self.item.id):
            # Correcting a key needs the key in sight: refused whatever the pick, so the refusal tells nothing.
            self.ctx.error.emit("Not saved: a wrong-key correction needs the answer key in sight (blind mode: B).", "")
            return
        if answer is not None and (problem := wrong_key_problem(key, answer)):
            self.ctx.error.emit(f"Not saved: {problem}.", "")
            return
        try:
            qc.decide(
                self.ctx.ws,
                c.item_id,
                c.stage,
                self.ctx.annotator,
                decision,
                reason=reason,
                note=self.note.text().strip() or None,
                answer=answer,
            )
        except qc.QCError as exc:
            self.ctx.error.emit(str(exc), "")
            return
        self.decided.append((c.item_id, c.stage))
        self.saved.setText(f"✓ Saved: {decision} #{c.index}" + (f" ({qc.REASON_TEXT[reason]})" if reason else ""))
        self.note.clear()
        self.ctx.model.refresh_qc()
        self.refresh()
        self.changed.emit()

    def undo(self) -> None:
        """Withdraw my last decision on this page (appended; the log keeps both) and show that flag again."""
        while self.decided:
            item_id, stage = self.decided.pop()
            withdrawn = qc.undo_decision(self.ctx.ws, item_id, stage, self.ctx.annotator)
            if withdrawn is not None:
                break
        else:
            self.ctx.info.emit("Nothing to undo: no decision of yours from this page stands.")
            self.change.hide()
            return
        self.ctx.model.refresh_qc()
        self.refresh(prefer=(item_id, stage))
        self.saved.setText(f"↶ Withdrawn: your {withdrawn.decision} — decide again")
        self.changed.emit()


class AdjudicationPage(QWidget):
    """Blind labelling of free-form responses: which option does the response choose?"""

    changed = Signal()
    labelled = Signal(int)  # adjudication item id

    def __init__(self, ctx, parent=None):
        super().__init__(parent)
        self.empty = EmptyState(self, ctx, "adjudication")
        self.ctx = ctx
        self.task = None
        self.shown_at = time.monotonic()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(24, 16, 24, 16)
        layout.setSpacing(10)
        # The title and the count on one row, as on the other queues' pages, the set below: in one flow the title
        # stood alone on its line, free space beside it, the set and the count wrapped under it.
        head = QHBoxLayout()
        head.addWidget(_title("Extractor adjudication"))
        head.addStretch(1)
        self.left = QLabel()
        self.left.setObjectName("muted")
        head.addWidget(self.left)
        layout.addLayout(head)
        chooser = QHBoxLayout()
        chooser.addWidget(QLabel("Set"))
        self.set_combo = compact_combo(QComboBox(), 16)
        self.set_combo.currentIndexChanged.connect(lambda _: self.refresh())
        chooser.addWidget(self.set_combo, 1)
        chooser.addStretch(1)
        layout.addLayout(chooser)
        explain = QLabel(
            "Read the model's response and say which option it chooses, by its literal content. "
            "The extractors' readings appear only after your label is saved."
        )
        explain.setObjectName("muted")
        explain.setWordWrap(True)
        layout.addWidget(explain)
        # What a set with work shows (the response and its labels), or, once nothing is left for me, what to do next:
        # one stacked area, so the page keeps its layout and shows no empty response box.
        self.area = QStackedWidget()
        task = QWidget()
        tl = QVBoxLayout(task)
        tl.setContentsMargins(0, 0, 0, 0)
        tl.setSpacing(10)
        self.question = QLabel()
        self.question.setObjectName("question")
        self.question.setWordWrap(True)
        tl.addWidget(self.question)
        self.options = QLabel()
        self.options.setWordWrap(True)
        self.options.setObjectName("optionsText")
        tl.addWidget(self.options)
        resp_title = QLabel("Response")
        resp_title.setObjectName("sectionTitle")
        tl.addWidget(resp_title)
        self.response = QLabel()
        self.response.setObjectName("response")
        self.response.setWordWrap(True)
        self.response.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        tl.addWidget(self.response)
        self.buttons_box = FlowLayout()  # up to 25 options and two more: rows that wrap
        tl.addLayout(self.buttons_box)
        self.label_buttons: list[QPushButton] = []
        self.revealed = QFrame()
        self.revealed.setObjectName("revealBox")
        rl = QVBoxLayout(self.revealed)
        self.reveal_text = QLabel()
        self.reveal_text.setWordWrap(True)
        self.reveal_text.setTextFormat(Qt.TextFormat.RichText)
        rl.addWidget(self.reveal_text)
        reveal_buttons = QHBoxLayout()
        self.next_button = QPushButton("Next response  ⏎")
        self.next_button.setObjectName("primary")
        self.next_button.clicked.connect(self.refresh)
        self.change = QPushButton("Change my answer  Ctrl+Z")
        self.change.setToolTip("Withdraw this label (the log keeps it), hide the extractors again and label anew")
        self.change.clicked.connect(self.undo)
        reveal_buttons.addWidget(self.next_button)
        reveal_buttons.addWidget(self.change)
        reveal_buttons.addStretch(1)
        rl.addLayout(reveal_buttons)
        self.revealed.hide()
        tl.addWidget(self.revealed)
        tl.addStretch(1)
        # A long question or response scrolls, under the set chooser: it made the page taller than the window.
        self.task_scroll = QScrollArea()
        self.task_scroll.setWidgetResizable(True)
        self.task_scroll.setFrameShape(QFrame.Shape.NoFrame)
        self.task_scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.task_scroll.setWidget(task)
        self.area.addWidget(self.task_scroll)
        done = QWidget()
        self.done_layout = QVBoxLayout(done)
        self.done_layout.setContentsMargins(0, 0, 0, 0)
        self.done_layout.setSpacing(10)
        self.done_text = QLabel()
        self.done_text.setWordWrap(True)
        self.done_text.setTextFormat(Qt.TextFormat.RichText)
        self.done_text.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)  # the command
        self.done_layout.addWidget(self.done_text)
        self.done_buttons: list[QPushButton] = []
        self.done_layout.addStretch(1)
        self.area.addWidget(done)
        layout.addWidget(self.area, 1)
        self.labelled_here: list[int] = []  # adjudication items labelled on this page, newest last: Ctrl+Z
        for key, action in (
            ("Return", self._next_if_revealed),
            ("Z", lambda: self.label("Z")),
            ("?", lambda: self.label(alignment.UNCLEAR)),
            ("Ctrl+Z", self.undo),
        ):
            _shortcut(self, key, action)
        for n in range(9):
            _shortcut(self, str(n + 1), lambda n=n: self._label_index(n))

    def reload_sets(self) -> None:
        current = self.set_combo.currentData()
        self.set_combo.blockSignals(True)
        self.set_combo.clear()
        for s in alignment.list_sets(self.ctx.ws):
            self.set_combo.addItem(f"{s.name} ({s.items})", s.name)
        if current is not None and self.set_combo.findData(current) >= 0:
            self.set_combo.setCurrentIndex(self.set_combo.findData(current))
        self.set_combo.blockSignals(False)

    def remaining(self) -> int:
        """THE count of responses left for this annotator (alignment.remaining_for): page and list agree."""
        name = self.set_combo.currentData()
        # No annotator yet (the first start, before the name is asked): nothing is anybody's to label.
        return alignment.remaining_for(self.ctx.ws, name, self.ctx.annotator) if name and self.ctx.annotator else 0

    def reload(self) -> None:
        """After another process wrote: keep the response being labelled (or the reveal being read)."""
        self.reload_sets()
        name = self.set_combo.currentData()
        if self.task is not None and self.task.set_name == name:
            if self.revealed.isVisible():
                self.left.setText(f"{self.remaining()} left for you")
                return
            upcoming = alignment.next_for(self.ctx.ws, name, self.ctx.annotator)
            if upcoming is not None and upcoming.item_id == self.task.item_id:
                self.left.setText(f"{self.remaining()} left for you")
                return
        self.refresh()

    def forget_annotator(self) -> None:
        """Another name signs now: the previous annotator's reveal (the extractors' readings after their label) and
        undo stack go; the next reload shows the new annotator's next response."""
        self.labelled_here.clear()
        self.task = None
        self.revealed.hide()
        self.reveal_text.setText("")

    def refresh(self) -> None:
        self.revealed.hide()
        self.reveal_text.setText("")
        name = self.set_combo.currentData()
        self.task = alignment.next_for(self.ctx.ws, name, self.ctx.annotator) if name and self.ctx.annotator else None
        while self.buttons_box.count():
            entry = self.buttons_box.takeAt(0)
            widget = entry.widget() if entry is not None else None
            if widget is not None:
                widget.deleteLater()
        self.label_buttons = []
        if name is None:
            self.empty.show_state(
                "No adjudication set yet",
                "An adjudication set gathers model responses for blind human labelling — those the rules could "
                "not read, those extractors disagree on, and a seeded sample — to measure each extractor's "
                "alignment with people.",
                (BUILD_SET,),
            )
        else:
            self.empty.hide()
        if self.task is None:
            self.left.setText("0 left for you" if name else "")
            self.question.setText("")
            self.options.setText("")
            self.response.setText("")
            if name:
                self._show_next_steps(name)
            self.changed.emit()
            return
        self.area.setCurrentIndex(0)
        t = self.task
        self.left.setText(f"{self.remaining()} left for you")
        self.question.setText(t.question)
        self.options.setText("<br>".join(f"<b>{html.escape(k)}.</b> {html.escape(v)}" for k, v in t.options.items()))
        self.response.setText(t.response)
        for n, letter in enumerate(t.options):
            b = QPushButton(f"{letter}   {n + 1}" if n < 9 else letter)
            b.clicked.connect(lambda _=False, c=letter: self.label(c))
            self.buttons_box.addWidget(b)
            self.label_buttons.append(b)
        for text, choice in (("None of them   Z", "Z"), ("Unclear   ?", alignment.UNCLEAR)):
            b = QPushButton(text)
            b.clicked.connect(lambda _=False, c=choice: self.label(c))
            self.buttons_box.addWidget(b)
            self.label_buttons.append(b)
        self.shown_at = time.monotonic()
        self.setFocus()
        self.changed.emit()

    def _show_next_steps(self, name: str) -> None:
        """Nothing of `name` is left for me: say so, and where there is work (another set), or how to make more."""
        ws, me = self.ctx.ws, self.ctx.annotator
        # The other sets by the names the chooser holds (reload_sets read them): list_sets would count every set's
        # items again, this one's (however many I labelled) among them.
        others = [self.set_combo.itemData(i) for i in range(self.set_combo.count())]
        waiting = [(o, n) for o in others if o != name and (n := alignment.remaining_for(ws, o, me))]
        lines = [f"<b>Every response in set {html.escape(name)} has your label.</b>"]
        actions: list[tuple[str, object]] = []
        if waiting:
            lines.append(
                "Responses wait for you in "
                + ", ".join(f"set {html.escape(other)} ({n} left)" for other, n in waiting)
                + "."
            )
            actions += [(f"Label set {other}", lambda _=False, o=other: self.choose_set(o)) for other, _ in waiting[:3]]
        else:
            lines.append(
                "To label more, build another set from finished runs: Workspace › Build an adjudication set…, or "
                "<code>vlmdesk align sample --run RUN --size 50 --name NAME</code>."
            )
            actions.append(("Build an adjudication set…", lambda: self.ctx.actionRequested.emit(BUILD_SET[1])))
        lines.append(
            "The Alignment tab measures each extractor against the labels; Ctrl+Z withdraws your last label here."
        )
        actions.append(("See the alignment figures", lambda: self.ctx.actionRequested.emit("tab:alignment")))
        _show_done(self, lines, actions)

    def choose_set(self, name: str) -> None:
        index = self.set_combo.findData(name)
        if index >= 0:
            self.set_combo.setCurrentIndex(index)  # refreshes (currentIndexChanged)

    def _label_index(self, n: int) -> None:
        if self.task is not None and n < len(self.task.options):
            self.label(list(self.task.options)[n])

    def _next_if_revealed(self) -> None:
        if self.revealed.isVisible():
            self.refresh()

    def label(self, choice: str) -> None:
        t = self.task
        if t is None or self.revealed.isVisible():
            return
        try:
            alignment.add_label(
                self.ctx.ws, t.item_id, self.ctx.annotator, choice, seconds=round(time.monotonic() - self.shown_at, 2)
            )
            outputs = alignment.reveal(self.ctx.ws, t.item_id, self.ctx.annotator)
        except UserError as exc:  # a label that is not one, an item gone
            self.ctx.error.emit(str(exc), "")
            return
        # An unclear label is compared with no reading: the alignment figures leave such items out
        # (alignment.alignment_report), so a ✓ or ✗ here would count what the report does not.
        compared = choice != alignment.UNCLEAR
        rows = []
        for name, ext in outputs.items():
            said = ext.choice or alignment.UNDECIDED
            agree = ""
            if compared:
                same = ext.choice == choice
                agree = (
                    f"<td style='color:{RIGHT if same else WRONG}; padding-right:16px'>"
                    f"{'✓ agrees' if same else '✗ differs'}</td>"
                )
            rows.append(
                f"<tr><td style='padding-right:16px'><b>{html.escape(name)}</b></td>"
                f"<td style='padding-right:16px'>{html.escape(said)}</td>{agree}"
                f"<td style='color:{MUTED}'>{html.escape(ext.reason or '')}</td></tr>"
            )
        said_label = (
            f"<b>{html.escape(choice)}</b>" if compared else "<b>unclear</b> — left out of the alignment figures"
        )
        set_rich_text(
            self.reveal_text,
            f"✓ Saved your label {said_label}. The extractors read:"
            f"<table style='margin-top:6px'>{''.join(rows)}</table>",
        )
        self.revealed.show()
        # The readings and Next in sight (the label buttons above are disabled: nothing to hit by mistake).
        QTimer.singleShot(0, lambda: self.task_scroll.ensureWidgetVisible(self.revealed))
        for b in self.label_buttons:
            b.setEnabled(False)
        self.labelled_here.append(t.item_id)
        self.left.setText(f"{self.remaining()} left for you")
        self.labelled.emit(t.item_id)
        self.changed.emit()

    def undo(self) -> None:
        """Take my last label on this page back (a withdrawal row), hide the extractors' readings and let me label
        that response again."""
        while self.labelled_here:
            item_id = self.labelled_here.pop()
            if alignment.undo_label(self.ctx.ws, item_id, self.ctx.annotator) is not None:
                break
        else:
            # Nothing labelled in this session: my newest standing label in the set (an earlier session's).
            name = self.set_combo.currentData()
            latest = alignment.latest_label_item(self.ctx.ws, name, self.ctx.annotator) if name else None
            if latest is None or alignment.undo_label(self.ctx.ws, latest, self.ctx.annotator) is None:
                self.ctx.info.emit("Nothing to undo: you have no label in this set.")
                return
            item_id = latest
        if self.task is not None and self.task.item_id == item_id:
            # The same response again, as before the label: readings hidden, buttons live, the clock restarted.
            self.revealed.hide()
            self.reveal_text.setText("")
            for b in self.label_buttons:
                b.setEnabled(True)
            self.shown_at = time.monotonic()
            self.left.setText(f"{self.remaining()} left for you")
            self.setFocus()
            self.changed.emit()
        else:
            self.refresh()  # labels go in set order, so the withdrawn response is the first one left
        self.ctx.info.emit("Label withdrawn: label this response again.")


def _one_line() -> ElidedLabel:
    """A one-line message that never widens or heightens the page: elided to its width, whole in its tooltip."""
    label = ElidedLabel()
    label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
    return label


_TYPE_ANSWER = "Type the right answer: Enter saves, Esc cancels"


class ConflictsPage(_ItemPage):
    """Settle a disagreement by giving my own verdict, as in Review: the keys of the item's kind (gui/shortcuts.py),
    no answer picked until I pick one (an open item's right answer is typed), a note, Ctrl+Z. Once mine is saved the
    item stays, the others' verdicts in sight, until Next conflict."""

    changed = Signal()

    def __init__(self, ctx, parent=None):
        super().__init__(ctx, "Conflicts", parent, scrolls=False)
        self.settled: list[int] = []  # items settled on this page, newest last: Ctrl+Z withdraws
        self.saved_item: int | None = None  # settled just now: it stays, theirs revealed, until Next conflict
        self.armed_wrong = False
        self.kind: ItemKind = "mcq"
        self.shown_at = time.monotonic()
        self.empty = EmptyState(self, ctx, "conflicts")
        # Under the item, the page's whole width: deciding (the others' verdicts as blind mode allows, the verdict
        # buttons, the answer and the note), then saved (mine and theirs, Next, Change). One stacked area, as tall
        # either way, whatever the item's kind: nothing moves under the pointer.
        self.steps = QStackedWidget()
        self.steps.setContentsMargins(16, 4, 16, 10)
        self.page_layout.addWidget(self.steps)
        decide = QWidget()
        dl = QVBoxLayout(decide)
        dl.setContentsMargins(0, 0, 0, 0)
        dl.setSpacing(6)
        self.verdicts = QLabel()
        self.verdicts.setWordWrap(True)
        self.verdicts.setTextFormat(Qt.TextFormat.RichText)
        self.verdicts.setToolTip(
            "Settle by giving your verdict (Review's keys); it is added to the log next to the others'."
        )
        dl.addWidget(self.verdicts)
        grid = QGridLayout()
        grid.setSpacing(6)
        self.buttons: dict[str, QPushButton] = {}
        for n, verdict in enumerate(verdict_places()):
            b = QPushButton()
            b.setObjectName("verdict_ok" if verdict == "ok" else "verdict")
            b.setFocusPolicy(Qt.FocusPolicy.NoFocus)
            policy = b.sizePolicy()
            policy.setRetainSizeWhenHidden(True)
            b.setSizePolicy(policy)
            b.clicked.connect(lambda _=False, v=verdict: self.settle(v))
            grid.addWidget(b, n // 3, n % 3)  # three columns, as Review's verdict bar
            self.buttons[verdict] = b
        dl.addLayout(grid)
        row = QHBoxLayout()
        self.answer_title = QLabel("Right answer")
        row.addWidget(self.answer_title)
        # The right answer: an option (or yes / no) picked from a list, or, on an open item, typed.
        self.answer_stack = QStackedWidget()
        self.corrected = QComboBox()
        self.corrected.currentIndexChanged.connect(self._combo_picked)
        self.answer_text = AnswerEdit()
        self.answer_text.setPlaceholderText("W, type it, Enter")
        self.answer_text.submitted.connect(self._submit_typed)
        self.answer_text.cancelled.connect(self._cancel_typed)
        self.answer_stack.addWidget(self.corrected)
        self.answer_stack.addWidget(self.answer_text)
        row.addWidget(self.answer_stack, 1)
        self.note = NoteEdit()
        self.note.setPlaceholderText("Note (E)")
        self.note.setToolTip("A note with your verdict: E to write, Enter or Esc to leave")
        self.note.done.connect(self.setFocus)
        row.addWidget(self.note, 1)
        dl.addLayout(row)
        # One line for what the page has to say (W waiting for the answer, a skip, a withdrawal): always there, so
        # a message never pushes the buttons.
        self.hint_label = _one_line()
        self.hint_label.setObjectName("armed")
        self.saved = _one_line()
        self.saved.setObjectName("saved")
        status = QStackedWidget()
        status.addWidget(self.saved)
        status.addWidget(self.hint_label)
        self.status = status
        dl.addWidget(status)
        self.steps.addWidget(decide)
        done = QWidget()
        sl = QVBoxLayout(done)
        sl.setContentsMargins(0, 0, 0, 0)
        sl.setSpacing(6)
        self.saved_line = QLabel()
        self.saved_line.setObjectName("saved")
        self.saved_line.setWordWrap(True)
        sl.addWidget(self.saved_line)
        self.theirs = QLabel()
        self.theirs.setWordWrap(True)
        self.theirs.setTextFormat(Qt.TextFormat.RichText)
        self.theirs.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        theirs_area = QScrollArea()  # many annotators scroll inside the area the deciding step had
        theirs_area.setWidgetResizable(True)
        theirs_area.setFrameShape(QFrame.Shape.NoFrame)
        theirs_area.setWidget(self.theirs)
        theirs_area.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Ignored)
        sl.addWidget(theirs_area, 1)
        buttons = QHBoxLayout()
        self.next_button = QPushButton("Next conflict →  ⏎")
        self.next_button.setObjectName("primary")
        self.next_button.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.next_button.clicked.connect(self.next_conflict)
        self.change = QPushButton("Change my answer  Ctrl+Z")
        self.change.setToolTip("Withdraw your verdict on this item (the log keeps it) and settle it again")
        self.change.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.change.clicked.connect(self.undo)
        buttons.addWidget(self.next_button)
        buttons.addWidget(self.change)
        buttons.addStretch(1)
        sl.addLayout(buttons)
        self.steps.addWidget(done)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        for s in review_shortcuts():
            if s.action.startswith(("verdict:", "pick:")) or s.action in ("undo", "note", "next"):
                for key in s.keys:
                    _shortcut(self, key, lambda a=s.action: self.on_action(a))
        # Enter: the next conflict once mine is saved. A window shortcut, it reaches a focused line edit first (a
        # line edit claims printable keys, not Enter): there it saves the typed answer or leaves the note.
        _shortcut(self, "Return", self._enter)
        self._show_kind("mcq")

    # -- the item's kind

    def _show_kind(self, kind: ItemKind) -> None:
        """The verdict buttons, the answer field and the hints of this kind of item (annotation/item_kinds.py)."""
        self.kind = kind
        offered = {v: (key, text) for v, key, text in verdict_keys(kind)}
        for verdict, b in self.buttons.items():
            fit = verdict in offered
            if fit:
                key, text = offered[verdict]
                b.setText(f"{verdict_button(verdict, kind)}   {key}")
                b.setToolTip(f"{text}  [{key}]")
            b.setVisible(fit)
        self.answer_stack.setCurrentWidget(self.answer_text if kind == "open" else self.corrected)
        self.answer_title.setToolTip(
            "For a wrong reference: W, then type the right answer (Enter saves it, Esc cancels)"
            if kind == "open"
            else "For a wrong key: pick the right answer first (1–9 or Shift+letter, or the list), or W and then it"
        )

    def _item_kind(self) -> ItemKind:
        bench = self.ctx.benchmark
        return kind_of(bench.kind) if bench is not None else "mcq"

    # -- keys

    def on_action(self, action: str) -> None:
        if typing_in(QApplication.focusWidget()):
            return  # a line edit claims printable keys; anything else it leaves is not the page's while typing
        if action == "undo":
            self.undo()
        elif action == "next":
            self.next_conflict()
        elif self.saved_item is not None:
            self.ctx.info.emit("Your verdict is saved: Enter goes to the next conflict, Ctrl+Z changes it.")
        elif action.startswith("verdict:"):
            verdict = action.split(":", 1)[1]
            if self.item is not None and not fits(self.kind, verdict):
                self.ctx.info.emit(
                    f"{verdict_label(verdict)}: not a verdict for a {kind_words(self.kind)} item "
                    f"({', '.join(verdict_label(v, self.kind) for v, _, _ in verdict_keys(self.kind))})"
                )
                return
            self.settle(verdict)
        elif action.startswith("pick:"):
            self.pick(int(action.split(":", 1)[1]))
        elif action == "note":
            self.note.setFocus()

    def _enter(self) -> None:
        focus = QApplication.focusWidget()
        if focus is self.answer_text:
            self._submit_typed()
        elif focus is self.note:
            self.setFocus()
        elif self.saved_item is not None:
            self.next_conflict()

    # -- the queue

    def remaining(self) -> int:
        """THE count of conflicts left for this annotator (annotation.browse.open_conflict_count): page and list
        agree."""
        bench = self.ctx.benchmark
        return open_conflict_count(self.ctx.ws, bench.id, self.ctx.annotator) if bench else 0

    def reload(self) -> None:
        """After another process wrote: keep the item being settled (its pick, typed answer and note) while it is
        open, or the item just settled (theirs as they stand now) while my verdict on it stands."""
        bench = self.ctx.benchmark
        current = self.item.id if self.item is not None else None
        if bench is None or current is None:
            self.refresh()
            return
        still_open = is_open_conflict(self.ctx.ws, bench.id, self.ctx.annotator, current)
        if self.saved_item == current and not still_open:
            self.left.setText(f"{self.remaining()} left for you")
            self._show_saved()
            return
        if not still_open:
            self.refresh()
            return
        self.saved_item = None
        self.steps.setCurrentIndex(0)
        self.left.setText(f"{self.remaining()} left for you")
        self.show_item(current)  # the key in the panel follows the blind rule now, not when it was first drawn
        self._combo_picked()
        self._show_verdicts()

    def forget_annotator(self) -> None:
        """Another name signs now: the previous annotator's undo stack, saved lines, typed answer and note go."""
        self.settled.clear()
        self.saved_item = None
        self.saved.setText("")
        self.saved_line.setText("")
        self.theirs.setText("")
        self.note.clear()
        self.answer_text.clear()
        self.steps.setCurrentIndex(0)
        self.item = None

    def refresh(self, prefer: int | None = None, *, after: int | None = None) -> None:
        """Show `prefer` (an item whose settlement was just withdrawn) when it is open, else the next open conflict
        after `after` (in item order, from the first again past the last): each found by index, one at a time."""
        bench, ws, me = self.ctx.benchmark, self.ctx.ws, self.ctx.annotator
        item_id = None
        if bench is not None:
            if prefer is not None and is_open_conflict(ws, bench.id, me, prefer):
                item_id = prefer
            else:
                item_id = next_open_conflict(ws, bench.id, me, after=after)
        left = self.remaining()
        self.left.setText(f"{left} left for you")
        self._show_kind(self._item_kind())
        self.saved_item = None
        self.steps.setCurrentIndex(0)
        self.theirs.setText("")  # the previous item's verdicts: gone, not merely out of sight
        self._disarm()
        self.note.clear()
        for b in self.buttons.values():
            b.setEnabled(item_id is not None)
        if item_id is None:
            self.saved.setText("")
            self.verdicts.setText("")
            self.show_item(None)
            self._fill_answers()
            self._show_empty(bench)
            return
        self.empty.hide()
        self._show_conflict(item_id)
        self.setFocus()

    def _show_empty(self, bench) -> None:
        """No conflict waits for me: say why, and where there is work (another benchmark's conflicts) or how to make
        some (verdicts in Review: a conflict is two annotators' verdicts that differ)."""
        if bench is None:
            self.empty.show_state(*NO_BENCHMARK)
            return
        ws, me = self.ctx.ws, self.ctx.annotator
        elsewhere = [
            f"{b.name} ({n})"
            for b in catalog.list_benchmarks(ws)
            if b.id != bench.id and (n := open_conflict_count(ws, b.id, me))
        ]
        where = (
            f"Conflicts wait for you in {', '.join(elsewhere)}: choose it in the Benchmarks list. " if elsewhere else ""
        )
        self.empty.show_state(
            "No conflict left for you",
            f"Every item of {bench.name} on which annotators' verdicts differ has your verdict. {where}"
            "A conflict appears here when two annotators judge an item differently in Review.",
            (("Review items", "tab:review"), ("See the annotators' agreement", "tab:annotators")),
        )

    def _show_conflict(self, item_id: int) -> None:
        self.show_item(item_id)
        self._show_verdicts()
        self._fill_answers()
        self.shown_at = time.monotonic()

    def _standing(self, item_id: int) -> list[reviews.Review]:
        """The item's standing opinions (no skips), in time order."""
        return [r for r in reviews.standing_reviews(self.ctx.ws, item_id=item_id) if r.verdict != "skip"]

    def _table(self, standing: list[reviews.Review]) -> str:
        me = self.ctx.annotator
        rows = "".join(
            f"<tr><td style='padding-right:16px'><b>{html.escape(r.annotator)}</b>"
            f"{' (you)' if r.annotator == me else ''}</td>"
            f"<td style='padding-right:16px'>{html.escape(verdict_label(r.verdict, self.kind))}"
            f"{' → ' + html.escape(r.corrected_answer) if r.corrected_answer else ''}</td>"
            f"<td style='color:{MUTED}'>{html.escape(r.note or '')}</td></tr>"
            for r in standing
        )
        return f"<table style='margin-top:4px'>{rows}</table>"

    def _show_verdicts(self) -> None:
        item_id = self.item.id if self.item is not None else None
        if item_id is None:
            return
        standing = self._standing(item_id)
        if not self.reveals(item_id):
            # Blind: others' verdicts, corrections and notes only once my own verdict on the item stands.
            others = len({r.annotator for r in standing if r.annotator != self.ctx.annotator})
            self.verdicts.setText(
                f"<b>{others} annotators disagree</b> — give your verdict first; theirs show once yours is saved."
            )
            return
        set_rich_text(self.verdicts, f"<b>Standing verdicts</b>{self._table(standing)}")

    def _show_saved(self) -> None:
        """Mine saved on the item on screen: the key and the others' verdicts as the blind rule now allows."""
        item = self.item
        if item is None:
            return
        self.show_item(item.id)
        if self.reveals(item.id):
            set_rich_text(self.theirs, f"<b>Everyone's verdicts now</b>{self._table(self._standing(item.id))}")
        else:  # blind mode with View › Reveal after my verdict off
            self.theirs.setText("The others' verdicts stay hidden: View › Reveal after my verdict is off.")
        self.steps.setCurrentIndex(1)

    def _fill_answers(self) -> None:
        """Nothing picked until the user picks: every item starts at "choose…" (an empty field), never the previous
        item's pick."""
        self.corrected.blockSignals(True)
        self.corrected.clear()
        self.corrected.addItem("choose…", None)
        item = self.item
        if item is not None and self.kind != "open":
            answers = answer_keys(len(item.options)) if self.kind == "mcq" else YES_NO
            for answer in answers:
                self.corrected.addItem(answer, answer)
        self.corrected.setCurrentIndex(0)
        self.corrected.blockSignals(False)
        self.answer_text.clear()
        self.panel.set_picked(None)

    def _combo_picked(self) -> None:
        if self.item is not None and self.kind != "open":
            self.panel.set_picked(self.corrected.currentData())

    def _disarm(self) -> None:
        self.armed_wrong = False
        self.status.setCurrentWidget(self.saved)

    def _arm(self, text: str) -> None:
        self.armed_wrong = True
        self.hint_label.setText(text)
        self.status.setCurrentWidget(self.hint_label)

    def pick(self, n: int) -> None:
        """An option (1–9, Shift+letter), or yes / no (1, 2); an open item has none to pick."""
        item = self.item
        if item is None or self.kind == "open":
            return
        answers = [LETTERS[i] for i in range(len(item.options))] if self.kind == "mcq" else list(YES_NO)
        if n >= len(answers):
            return
        answer = answers[n]
        if self.armed_wrong:
            self.settle("wrong_answer", corrected=answer)
            return
        chosen = None if self.corrected.currentData() == answer else answer
        self.corrected.setCurrentIndex(max(0, self.corrected.findData(chosen)) if chosen else 0)

    def _submit_typed(self) -> None:
        if self.answer_text.text().strip():
            self.settle("wrong_answer")
        else:
            self._arm(_TYPE_ANSWER)

    def _cancel_typed(self) -> None:
        self.answer_text.clear()
        self._disarm()
        self.setFocus()

    def settle(self, verdict: str, corrected: str | None = None) -> None:
        bench = self.ctx.benchmark
        if self.item is None or bench is None or self.saved_item is not None:
            return
        item = self.item
        if verdict == "skip":
            # A skip is no opinion, so it could never settle the conflict: the walk goes on to the next one (this one
            # comes back after the others), and nothing is saved.
            following = next_open_conflict(self.ctx.ws, bench.id, self.ctx.annotator, after=item.id)
            if following is not None and following != item.id:
                self._disarm()
                self.note.clear()
                self._show_conflict(following)
            self.saved.setText("Skipped for now: nothing saved, the conflict stays in the queue")
            return
        if verdict == "wrong_answer":
            if self.kind == "open":
                corrected = corrected or self.answer_text.text().strip() or None
                if corrected is None:  # W: the right answer is typed next
                    self._arm(_TYPE_ANSWER)
                    self.answer_text.setFocus()
                    return
            else:
                corrected = corrected or self.corrected.currentData()
                if corrected is None and self.kind == "yesno" and self.reveals(item.id):
                    # As in Review: with the key in sight, a yes/no item's wrong key is the other answer.
                    corrected = {"yes": "no", "no": "yes"}.get((item.answer or "").lower())
                if corrected is None:
                    self._arm(
                        "Wrong key: pick the right option (1–9 or Shift+letter, or the list)"
                        if self.kind == "mcq"
                        else "Wrong key: pick the right answer (1 yes, 2 no, or the list)"
                    )
                    return
            if problem := wrong_key_problem(item.answer, corrected, key_shown=self.reveals(item.id)):
                self._disarm()
                self.ctx.error.emit(f"Not saved: {problem}.", "")
                return
        elif verdict == INCOMPLETE:
            corrected = self.answer_text.text().strip() or None  # the missing answer, when one was typed
        else:
            corrected = None
        text = self.note.text().strip()
        try:
            reviews.add_review(
                self.ctx.ws,
                item.id,
                self.ctx.annotator,
                cast(reviews.Verdict, verdict),  # gui/shortcuts.py names verdicts only
                corrected_answer=corrected,
                note="settles conflict" + (f": {text}" if text else ""),
                seconds=round(time.monotonic() - self.shown_at, 2),
            )
        except InvalidInput as exc:
            self.ctx.error.emit(str(exc), "")
            return
        self.settled.append(item.id)
        self.saved_item = item.id
        self._disarm()
        self.note.clear()
        self.answer_text.clear()
        self.ctx.model.refresh_item(item.id)
        self.ctx.reviewsChanged.emit(item.id)
        self.left.setText(f"{self.remaining()} left for you")
        self.saved.setText("")
        self.saved_line.setText(
            f"✓ Saved on #{item.index}: {verdict_label(verdict, self.kind)}" + (f" → {corrected}" if corrected else "")
        )
        self._show_saved()
        self.setFocus()
        self.changed.emit()

    def next_conflict(self) -> None:
        """From the item just settled to the next open conflict (Enter, → or J, the button)."""
        if self.saved_item is None:
            self.ctx.info.emit("Give your verdict first, or S to skip this conflict.")
            return
        self.saved_line.setText("")
        self.refresh(after=self.saved_item)

    def undo(self) -> None:
        """Withdraw my last settlement on this page (an undo row; the log keeps both) and show that item again."""
        while self.settled:
            item_id = self.settled.pop()
            withdrawn = reviews.undo_last(self.ctx.ws, self.ctx.annotator, item_id=item_id)
            if withdrawn is not None:
                break
        else:
            self.ctx.info.emit("Nothing to undo: no settlement of yours from this page stands.")
            return
        self.ctx.model.refresh_item(item_id)
        self.ctx.reviewsChanged.emit(item_id)
        self.refresh(prefer=item_id)
        what, when = verdict_label(withdrawn.verdict, self.kind), withdrawn.created_at[:19].replace("T", " ")
        self.saved.setText(f"↶ Withdrawn: your {what} of {when} — settle it again")  # as the history says it
        self.changed.emit()


class QueuesView(QWidget):
    """A list of queues (with what is left) beside the selected queue's page."""

    def __init__(self, ctx, parent=None):
        super().__init__(parent)
        self.ctx = ctx
        self.list = QListWidget()
        self.list.setObjectName("queueList")
        self.list.setFixedWidth(190)
        self.list.setWordWrap(True)  # "Extractor adjudication" on two lines at a large text size, not cut
        self.list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.stack = QStackedWidget()
        self.qc = QCPage(ctx)
        self.adjudication = AdjudicationPage(ctx)
        self.conflicts = ConflictsPage(ctx)
        from gui.verdicts_view import OpenAnswersPage  # it builds on _ItemPage, defined here

        self.open_answers = OpenAnswersPage(ctx)
        self.pages = (
            ("qc", "Quality control", self.qc),
            ("adjudication", "Extractor adjudication", self.adjudication),
            ("conflicts", "Conflicts", self.conflicts),
            ("open", "Open answers", self.open_answers),
        )
        for _, title, page in self.pages:
            self.list.addItem(QListWidgetItem(title))
            self.stack.addWidget(page)
            page.changed.connect(self.update_counts)
        self.list.currentRowChanged.connect(self._select)
        # Under the list: a progress bar per queue (done of all, for me), and the guidelines' switch.
        self.bars: dict[str, QProgressBar] = {}
        side = QWidget()
        side.setFixedWidth(190)
        sl = QVBoxLayout(side)
        sl.setContentsMargins(0, 0, 0, 6)
        sl.addWidget(self.list, 1)
        for name, _, _ in self.pages:
            bar = QProgressBar()
            bar.setObjectName(f"progress_{name}")
            bar.setMaximumHeight(16)
            sl.addWidget(bar)
            self.bars[name] = bar
        self.guidelines = GuidelinesPanel(ctx)
        self.guidelines.setMinimumWidth(200)
        self.guidelines_button = QPushButton("Guidelines")
        self.guidelines_button.setCheckable(True)
        self.guidelines_button.setToolTip("Show this benchmark's annotation guidelines beside the queue")
        self.guidelines_button.toggled.connect(self.guidelines.setVisible)
        sl.addWidget(self.guidelines_button)
        self.guidelines.hide()  # shown on demand: beside a page, it would make 1024 px too narrow for the window
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addWidget(side)
        layout.addWidget(self.stack, 1)
        layout.addWidget(self.guidelines)
        # Hidden, the tab reads nothing: a verdict in Review must not recount every queue (issue 27). What changed
        # meanwhile is read when the tab is shown (showEvent; the window's tab switch recounts).
        self._pending_refresh = False
        ctx.benchmarkChanged.connect(self._on_benchmark)
        ctx.reviewsChanged.connect(lambda _: self.update_counts() if self.isVisible() else None)
        ctx.sightChanged.connect(self._sight_changed)

    def _sight_changed(self, new_annotator: bool) -> None:
        # The window reloads the visible tab (or this one when next shown); a new name first drops the old one's.
        if new_annotator:
            for _, _, page in self.pages:
                page.forget_annotator()

    def page(self, name: str) -> QWidget:
        return next(p for n, _, p in self.pages if n == name)

    def select(self, name: str) -> None:
        self.list.setCurrentRow([n for n, _, _ in self.pages].index(name))

    def _select(self, row: int) -> None:
        self.stack.setCurrentIndex(row)
        self._enable_keys()
        self.pages[row][2].refresh()
        self.pages[row][2].setFocus()

    def _enable_keys(self) -> None:
        """Only the shown page's keys, only while the Queues tab is visible: pages share keys (1–9, Ctrl+Z)."""
        current = self.stack.currentWidget() if self.isVisible() else None
        for _, _, page in self.pages:
            for sc in page.findChildren(QShortcut):
                sc.setEnabled(page is current)

    def _on_benchmark(self) -> None:
        if self.isVisible():
            self.refresh()
        else:
            self._pending_refresh = True

    def showEvent(self, event) -> None:
        super().showEvent(event)
        if self._pending_refresh:
            self._pending_refresh = False
            self.refresh()
        self._enable_keys()

    def hideEvent(self, event) -> None:
        super().hideEvent(event)
        self._enable_keys()

    def refresh(self) -> None:
        self.adjudication.reload_sets()
        self.open_answers.reload_runs()
        for _, _, page in self.pages:
            page.refresh()
        if self.list.currentRow() < 0:
            self.list.setCurrentRow(0)
        self.update_counts()

    def reload(self) -> None:
        """Another process wrote: every page keeps its current item where it is still waiting, counts follow."""
        for _, _, page in self.pages:
            page.reload()
        if self.list.currentRow() < 0:
            self.list.setCurrentRow(0)
        self.update_counts()

    def update_counts(self) -> None:
        has = self.guidelines.current() is not None
        self.guidelines_button.setText("Guidelines" + (" ✓" if has else ""))
        qc_queue = self.qc.queue()
        counts = (
            len(self.qc.remaining(qc_queue)),
            self.adjudication.remaining(),
            self.conflicts.remaining(),
            self.open_answers.remaining(),
        )
        for row, ((_, title, _), n) in enumerate(zip(self.pages, counts)):
            self.list.item(row).setText(f"{title}\n{n} left")
        for (name, title, _), left, total in zip(self.pages, counts, self._totals(len(qc_queue))):
            bar = self.bars[name]
            word = title.split()[0]
            # A range of 0 would make the bar a busy indicator: an empty queue gets 0 of 1, and says "empty".
            bar.setRange(0, max(total, 1))
            bar.setValue(max(0, total - left))
            bar.setFormat(f"{word} %v / %m" if total else f"{word}: empty")
            bar.setToolTip(f"{total - left} of {total} done by you, {left} left" if total else "Nothing in this queue")

    def _totals(self, flags: int) -> tuple[int, int, int, int]:
        """Everything each queue holds (for the progress bars): flags, the set's responses, conflicts, answers."""
        bench, ws = self.ctx.benchmark, self.ctx.ws
        if bench is None:
            return 0, 0, 0, 0
        name = self.adjudication.set_combo.currentData()
        sets = {s.name: s.items for s in alignment.list_sets(ws)}
        return (
            flags,
            sets.get(name, 0),
            reviews.conflict_count(ws, bench.id),
            self.open_answers.total(),
        )
