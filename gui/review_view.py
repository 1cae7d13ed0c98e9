"""Verify items one by one, keyboard first. Each verdict is committed to SQLite the moment it is given.

The verdicts offered follow the item's kind (annotation/item_kinds.py, gui/shortcuts.py's verdict_keys): a
multiple-choice or yes/no item's wrong key names the right option (1–9 / Shift+letter, or 1 yes 2 no); an open item
has no options, its wrong reference is corrected by typing the right answer (W, type, Enter), and R says its
references miss an answer (R, optionally the missing answer, Enter)."""

from __future__ import annotations

import time
from typing import cast

from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QAbstractSpinBox,
    QApplication,
    QComboBox,
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QSplitter,
    QStackedWidget,
    QTabWidget,
    QTextEdit,
    QVBoxLayout,
    QWidget,
)

from annotation import reviews, team_plans
from annotation.correction import names_the_key, wrong_key_problem
from annotation.item_kinds import (
    INCOMPLETE,
    KINDS,
    MAX_ANSWER_CHARS,
    WRONG,
    ItemKind,
    fits,
    kind_words,
    verdict_label,
)
from db import item_query
from db.catalog import Item
from db.errors import InvalidInput
from evaluator.scoring.choices import LETTERS, YES_NO
from gui.empty_states import NO_BENCHMARK, EmptyState
from gui.fitting import ElidedLabel
from gui.guidelines_view import GuidelinesPanel
from gui.help_overlay import HelpOverlay
from gui.image_view import ItemImages
from gui.item_panel import HistoryView, ItemPanel, PredictionsView, show_item_details
from gui.shortcuts import VERDICT_KEYS, review_shortcuts, verdict_button, verdict_keys, verdict_places

_OF = "\u00a0/\u00a0"  # "16 / 30" never breaks in the middle when the progress line wraps at 1024 px


def typing_in(widget) -> bool:
    """True when keyboard focus is in a text field: the review keys must then type, not act."""
    if isinstance(widget, (QLineEdit, QTextEdit, QPlainTextEdit, QAbstractSpinBox)):
        return True
    return isinstance(widget, QComboBox) and widget.isEditable()


class NoteEdit(QLineEdit):
    done = Signal()

    def keyPressEvent(self, event) -> None:
        if event.key() in (Qt.Key.Key_Escape, Qt.Key.Key_Return, Qt.Key.Key_Enter):
            self.done.emit()
            return
        super().keyPressEvent(event)


class AnswerEdit(QLineEdit):
    """The right answer of an open item's wrong reference, or the answer its references miss: Enter saves the
    verdict, Esc cancels it (the review keys are off while it has the focus)."""

    submitted = Signal()
    cancelled = Signal()

    def keyPressEvent(self, event) -> None:
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
            self.submitted.emit()
            return
        if event.key() == Qt.Key.Key_Escape:
            self.cancelled.emit()
            return
        super().keyPressEvent(event)


class VerdictButton(QPushButton):
    """A verdict's button, as wide as its widest caption over the kinds of items ("Wrong key", "Wrong ref"): the
    verdict bar keeps its width, and the splitter beside it its place, from item to item."""

    def __init__(self, captions: set[str], parent=None):
        super().__init__(parent)
        self.captions = captions

    def _wider(self, hint: QSize) -> QSize:
        metrics = self.fontMetrics()
        widest = max(metrics.horizontalAdvance(c) for c in self.captions)
        return QSize(hint.width() + max(0, widest - metrics.horizontalAdvance(self.text())), hint.height())

    def sizeHint(self) -> QSize:
        return self._wider(super().sizeHint())

    def minimumSizeHint(self) -> QSize:
        return self.sizeHint()  # as QPushButton's own: a caption is never cut


_ASKS = {
    WRONG: "Wrong reference: type the right answer, Enter saves, Esc cancels",
    INCOMPLETE: "References incomplete: type the missing answer (optional), Enter saves, Esc cancels",
}
"""What the answer field asks for, by the verdict it completes (open items)."""


class ReviewView(QWidget):
    itemShown = Signal(int)  # item id
    imageShown = Signal(str)  # sha256 now painted
    verdictSaved = Signal(object)  # reviews.Review
    keyIgnored = Signal(str)  # why a key did nothing (the window's status bar says it)

    def __init__(self, ctx, parent=None):
        super().__init__(parent)
        self.ctx = ctx
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.row: int | None = None
        self.item: Item | None = None
        self.shown_at = time.monotonic()
        self.armed_wrong = False  # W pressed without a pick: the next option pick commits "wrong key"
        self.prefetch_enabled = True
        self.holding = False  # True while the window reloads the listing in place (keep the item shown)
        self.shortcuts: dict[str, list[QShortcut]] = {}

        self.images = ItemImages(ctx.loader)  # the item's images: the one shown large, a strip for several
        self.images.painted.connect(self._painted)
        self.image = self.images.view
        self.image.zoomChanged.connect(self._show_zoom)
        image_box = QWidget()
        il = QVBoxLayout(image_box)
        il.setContentsMargins(0, 0, 0, 0)
        il.setSpacing(0)
        bar_widget = QWidget()
        bar_widget.setObjectName("imageBar")
        bar = QHBoxLayout(bar_widget)
        bar.setContentsMargins(10, 4, 10, 4)
        # Where the item is — "plan 4/22" in my queue, "12 of 30 · outside your plan" reached by Browse — in one eliding
        # label: a longer text beside the zoom buttons made the window 1064 px at text x1.25, a mark of its own moved
        # the splitter as it came and went.
        self.position_label = ElidedLabel()
        self.position_label.setObjectName("imageBarText")
        fit = QPushButton("Fit")
        actual = QPushButton("100 %")
        for b in (fit, actual):
            b.setObjectName("flat")
            b.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        fit.clicked.connect(lambda: self.image.set_fit(True))
        actual.clicked.connect(self.image.actual_size)
        self.zoom_label = QLabel("")
        self.zoom_label.setObjectName("imageBarText")
        bar.addWidget(self.position_label)
        self.filter_label = QLabel("")
        self.filter_label.setObjectName("activeFilter")
        self.filter_label.setToolTip("Review goes through the items of Browse's filters (change them in Browse)")
        bar.addWidget(self.filter_label)
        bar.addStretch(1)
        bar.addWidget(self.zoom_label)
        bar.addWidget(fit)
        bar.addWidget(actual)
        il.addWidget(bar_widget)
        il.addWidget(self.images, 1)

        side = QWidget()
        side.setObjectName("reviewSide")
        sl = QVBoxLayout(side)
        sl.setContentsMargins(16, 12, 16, 12)
        sl.setSpacing(8)
        # The item (question, options) and the runs/history tabs share what is left above the verdict bar, each
        # scrolling inside itself; the verdict bar stays at the bottom, visible at 1024×700 whatever the item.
        self.panel = ItemPanel(show_key_hints=True)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setHorizontalScrollBarPolicy(
            Qt.ScrollBarPolicy.ScrollBarAlwaysOff
        )  # the item wraps to the column, never sideways
        scroll.setWidget(self.panel)
        self.panel.fit_in(scroll)  # options scroll inside the panel, or with it: never both
        self.panel_scroll = scroll
        self.tabs = QTabWidget()
        self.predictions = PredictionsView()
        self.history = HistoryView()
        self.tabs.addTab(self.predictions, "Predictions")
        self.tabs.addTab(self.history, "Review history")
        self.guidelines = GuidelinesPanel(ctx)
        self.tabs.addTab(self.guidelines, "Guidelines")
        self.tabs.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.tabs.setMinimumHeight(90)
        upper = QSplitter(Qt.Orientation.Vertical)
        upper.addWidget(scroll)
        upper.addWidget(self.tabs)
        upper.setStretchFactor(0, 3)
        upper.setStretchFactor(1, 1)
        upper.setSizes([3000, 1000])  # proportions: the item first, the runs and history below
        upper.setChildrenCollapsible(False)
        sl.addWidget(upper, 1)

        self.verdict_bar = QWidget()
        self.verdict_bar.setObjectName("verdictBar")
        vb = QVBoxLayout(self.verdict_bar)
        vb.setContentsMargins(0, 0, 0, 0)
        vb.setSpacing(6)
        verdicts = QGridLayout()
        verdicts.setSpacing(6)
        self.verdict_buttons: dict[str, VerdictButton] = {}
        self.kind: ItemKind = "mcq"
        self.has_references = True  # an open item without references has no reference to call wrong
        self.verdicts_why = "No benchmark chosen"  # why the buttons are off ("" while an item is shown)
        # Every verdict has its place, those of every kind first: a kind's own (R, open items) is hidden keeping its
        # size, so moving between kinds moves no button under the pointer.
        for n, verdict in enumerate(verdict_places()):
            keys = {k for v, k, _ in VERDICT_KEYS if v == verdict}
            b = VerdictButton({f"{verdict_button(verdict, kind)}   {k}" for kind in KINDS for k in keys})
            b.setObjectName("verdict_ok" if verdict == "ok" else "verdict")
            b.setFocusPolicy(Qt.FocusPolicy.NoFocus)
            b.setMinimumWidth(0)
            policy = b.sizePolicy()
            policy.setRetainSizeWhenHidden(True)
            b.setSizePolicy(policy)
            b.clicked.connect(lambda _=False, v=verdict: self.verdict(v))
            verdicts.addWidget(b, n // 3, n % 3)
            self.verdict_buttons[verdict] = b
        vb.addLayout(verdicts)
        self._show_buttons()  # once they have a parent: a parentless widget made visible is a window of its own
        self.hint_label = QLabel()
        self.hint_label.setObjectName("armed")
        self.hint_label.setWordWrap(True)
        self.hint_label.hide()
        vb.addWidget(self.hint_label)
        self.contradiction = QLabel()  # my wrong-key verdict names the key: said once the key is in sight
        self.contradiction.setObjectName("armed")
        self.contradiction.setWordWrap(True)
        self.contradiction.hide()
        vb.addWidget(self.contradiction)
        self.note = NoteEdit()
        self.note.setPlaceholderText("Note for the next verdict (E to write, Enter/Esc to leave)")
        self.note.done.connect(self.setFocus)
        # An open item's typed answer takes the note's place while it is asked for: nothing below it moves.
        self.answer = AnswerEdit()
        self.answer.setObjectName("answerEdit")
        self.answer.setMaxLength(MAX_ANSWER_CHARS)  # what the log takes (item_kinds.corrected_answer)
        self.answer.submitted.connect(self._answer_submitted)
        self.answer.cancelled.connect(self._answer_cancelled)
        self.asking: str | None = None  # the verdict the answer field completes (open items), else None
        self.note_slot = QStackedWidget()
        self.note_slot.addWidget(self.note)
        self.note_slot.addWidget(self.answer)
        self.note_slot.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)
        vb.addWidget(self.note_slot)

        status = QHBoxLayout()
        # One line, elided (whole in its tooltip): a message that wrapped onto a second line moved the verdict buttons
        # above it under the pointer.
        self.saved = ElidedLabel()
        self.saved.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        self.saved.setObjectName("saved")
        self.change = QPushButton("Change my verdict")
        self.change.setObjectName("link")  # "flat" is the dark image bar's style: unreadable on white
        self.change.setToolTip("Withdraw your verdict on this item (kept in the log) and give another one")
        self.change.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.change.clicked.connect(self.change_verdict)
        keep = self.change.sizePolicy()
        keep.setRetainSizeWhenHidden(True)  # the row as tall with it as without: the buttons above never move
        self.change.setSizePolicy(keep)
        self.change.hide()
        status.addWidget(self.saved, 1)
        status.addWidget(self.change)
        vb.addLayout(status)
        # After a verdict on a gold item of my plan: whether it matched the confirmed key (never before the verdict).
        # One line, shown while a plan names me on this benchmark (empty until then), so a message never moves the
        # buttons above it.
        self.gold_line = ElidedLabel()
        self.gold_line.setObjectName("saved")
        self.gold_line.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        self.gold_line.hide()
        vb.addWidget(self.gold_line)
        self.plan: team_plans.Plan | None = None  # the standing plan of the benchmark, when it names me
        self.plan_length = 0
        self.progress = QLabel()
        self.progress.setObjectName("muted")
        self.progress.setWordWrap(True)  # "Reviewed 4 / 30 · mine 0" on two lines rather than a wider window (_OF)

        nav = QHBoxLayout()
        for text, tip, slot in (
            ("◀", "Previous item  [← / K]", self.previous),
            ("▶", "Next item  [→ / J]", self.next),
            ("Next unreviewed  N", "The next item nobody has reviewed  [N]", self.next_unreviewed),
            ("Undo  Ctrl+Z", "Withdraw my last verdict  [Ctrl+Z]", self.undo),
        ):
            b = QPushButton(text)
            b.setToolTip(tip)
            b.setFocusPolicy(Qt.FocusPolicy.NoFocus)
            b.clicked.connect(slot)
            nav.addWidget(b)
        nav.addStretch(1)
        nav.addWidget(self.progress)
        vb.addLayout(nav)
        sl.addWidget(self.verdict_bar, 0)

        split = QSplitter(Qt.Orientation.Horizontal)
        split.addWidget(image_box)
        split.addWidget(side)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 2)
        split.setSizes([700, 520])
        split.setChildrenCollapsible(False)
        self.splitter = split
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(split)
        self.help = HelpOverlay(self)

        self._make_shortcuts()
        ctx.benchmarkChanged.connect(self._on_benchmark)
        ctx.filterChanged.connect(lambda text: self.filter_label.setText(f"· filter: {text}" if text else ""))
        self.empty = EmptyState(self, ctx, "review")
        self.empty.show_state(*NO_BENCHMARK)
        self._enable_verdicts(False)  # until an item shows
        ctx.model.modelReset.connect(self._on_model_reset)
        ctx.prefsChanged.connect(self._apply_prefs)
        ctx.workspaceChanged.connect(self._load_plan)  # a plan made or merged by another process

    # -- keyboard
    def _make_shortcuts(self) -> None:
        # Window-wide while Review is the visible tab (enabled in showEvent): the keys work whatever widget was
        # clicked last (the Benchmarks dock, a splitter, the image). Text fields still get their typing: a line
        # edit claims printable keys before any shortcut (ShortcutOverride), and on_action checks again.
        for s in review_shortcuts():
            for key in s.keys:
                sc = QShortcut(QKeySequence(key), self)
                sc.setContext(Qt.ShortcutContext.WindowShortcut)
                sc.setEnabled(False)
                sc.activated.connect(lambda a=s.action: self.on_action(a))
                self.shortcuts.setdefault(s.action, []).append(sc)

    def _enable_shortcuts(self, on: bool) -> None:
        for group in self.shortcuts.values():
            for sc in group:
                sc.setEnabled(on)

    def showEvent(self, event) -> None:
        super().showEvent(event)
        self._enable_shortcuts(True)

    def hideEvent(self, event) -> None:
        super().hideEvent(event)
        self._enable_shortcuts(False)

    def _ignored(self, why: str) -> None:
        self.keyIgnored.emit(why)

    def on_action(self, action: str) -> None:
        if typing_in(QApplication.focusWidget()):
            self._ignored("Keys are off while a text field has the focus (Esc or click the item to leave it)")
            return
        if self.help.isVisible() and action != "help":
            self._ignored("The keyboard help is open: Esc or F1 closes it")
            return
        needs_item = action.startswith(("verdict:", "pick:")) or action == "note"
        if needs_item and self.item is None:
            self._ignored("No item to judge here (choose a benchmark, or clear the filters)")
            return
        if action.startswith("verdict:"):
            self.verdict(cast(reviews.Verdict, action.split(":", 1)[1]))  # gui/shortcuts.py names verdicts only
        elif action.startswith("pick:"):
            self.pick(int(action.split(":", 1)[1]))
        elif action == "note":
            self.note.setFocus()
        elif action == "fit":
            if self.image.fit:
                self.image.actual_size()
            else:
                self.image.set_fit(True)
        elif action == "zoom_in":
            self.image.zoom_by(1.25)
        elif action == "zoom_out":
            self.image.zoom_by(0.8)
        elif action in ("next_image", "previous_image"):
            self.move_image(action == "next_image")
        elif action == "blind":
            self.ctx.update_prefs(blind=not self.ctx.prefs.blind)
        elif action == "help":
            self.help.toggle()
        else:
            getattr(self, action)()

    # -- moving
    def _on_benchmark(self) -> None:
        self.empty.setVisible(self.ctx.benchmark is None)
        self._load_plan()
        first = self._plan_first()
        self.show_row(first if first is not None else 0)

    # -- the standing assignment plan (annotation/team_plans.py): "next" walks my queue
    def _load_plan(self) -> None:
        bench, me = self.ctx.benchmark, self.ctx.annotator
        plan = team_plans.standing_plan(self.ctx.ws, bench.id) if bench is not None and me else None
        if plan is not None and me not in plan.annotators:
            plan = None
        if (plan and plan.id) != (self.plan and self.plan.id):
            self.gold_line.setText("")
        self.plan = plan
        self.plan_length = team_plans.queue_length(self.ctx.ws, plan.id, me) if plan else 0
        self.gold_line.setVisible(plan is not None and bench is not None and bench.kind != "open")
        self._show_place()

    def _my_slot(self) -> team_plans.Slot | None:
        if self.plan is None or self.item is None:
            return None
        return team_plans.slot_of(self.ctx.ws, self.plan.id, self.ctx.annotator, self.item.id)

    def _plan_row(self, slot: team_plans.Slot | None, forward: bool = True) -> int | None:
        """The listing's row of `slot`'s item, or of the next (previous) one of my queue that Browse's filters list."""
        while slot is not None and self.plan is not None:
            row = self.ctx.model.row_of_item(slot.item_id)
            if row is not None:
                return row
            slot = team_plans.step(self.ctx.ws, self.plan.id, self.ctx.annotator, slot.position, forward)
        return None

    def _plan_first(self) -> int | None:
        """Where Review starts under a plan: my first item without my verdict (else my first)."""
        if self.plan is None:
            return None
        ws, me = self.ctx.ws, self.ctx.annotator
        slot = team_plans.next_unjudged(ws, self.plan.id, me, -1) or team_plans.step(ws, self.plan.id, me, -1)
        return self._plan_row(slot)

    def _show_place(self) -> None:
        """Where the item is: in my queue ("plan 4/22"), or in the listing and outside my plan."""
        model, slot = self.ctx.model, self._my_slot()
        if self.row is None or self.item is None:
            self.position_label.setText("")
        elif slot is not None:
            self.position_label.setText(f"plan {slot.position + 1}/{self.plan_length}")
        else:  # reached by Browse or search; one label, so the mark appearing moves nothing
            outside = " · outside your plan" if self.plan is not None else ""
            self.position_label.setText(f"{self.row + 1} of {model.total}{outside}")

    def _gold_feedback(self, item: Item, review: reviews.Review) -> None:
        """After my verdict: on a gold item of my plan, whether it matched the confirmed key — with the key where the
        blind rule now lets me see it. Nothing on any other item, and nothing before the verdict."""
        if self.plan is None or not self.gold_line.isVisible():
            return
        key = team_plans.gold_key(self.ctx.ws, self.plan.id, item.id)
        matched = (
            None if key is None else team_plans.gold_match(review.verdict, review.corrected_answer, item.answer, key)
        )
        if key is None or matched is None:
            self.gold_line.setText("")
        elif matched:
            self.gold_line.setText(f"✓ Gold item #{item.index}: matched the key")
            self.gold_line.setToolTip(f"Gold item #{item.index}: your verdict matched the key the lead confirmed")
        else:
            shown = self.ctx.sight(item_ids=[item.id]).reveals(item.id)
            said = f"the key is {key}" if shown else "not matched (key hidden)"
            self.gold_line.setText(f"✗ Gold item #{item.index}: {said}")
            self.gold_line.setToolTip(
                f"Gold item #{item.index}: your verdict did not match the key the lead confirmed"
                + (f" ({key})" if shown else " (blind mode keeps the key hidden)")
            )

    def _on_model_reset(self) -> None:
        if self.item is not None and (r := self.ctx.model.row_of(self.item.id)) is not None:
            self.row = r
        elif self.item is not None and self.holding:
            # A refresh after another process wrote may drop the item from a filtered listing: it stays on screen
            # (the annotator is reading it); Next goes on from about where it was.
            self.row = min(self.row or 0, max(0, len(self.ctx.model.rows) - 1))
        elif self.ctx.model.rows:
            self.show_row(0)
        else:
            self.show_row(None)

    def show_row(self, row: int | None) -> None:
        model = self.ctx.model
        self._close_answer()  # an answer typed for the item left is not saved on the next one
        if row is None or not model.ensure_row(row):
            self.row, self.item = None, None
            self.panel.show_item(None)
            self.images.show_images((), empty="No items match the filters" if model.benchmark else "No benchmark")
            self.predictions.show_predictions(None, [])
            self.history.show_history([])
            self.position_label.setText("")
            self._update_progress()
            self._enable_verdicts(False)
            return
        self._enable_verdicts(True)
        self.row = row
        self.item = item = item_query.item_by_id(self.ctx.ws, model.rows[row].id)
        if item is None:  # removed since the listing was read
            return
        self.shown_at = time.monotonic()
        self.armed_wrong = False
        self.hint_label.hide()
        self._show_image()
        self._show_text()
        self._show_place()
        self._prefetch()
        self.itemShown.emit(item.id)

    def _enable_verdicts(self, on: bool) -> None:
        """No item, nothing to judge: the buttons say so instead of doing nothing."""
        self.verdicts_why = (
            "" if on else ("No item matches the Browse filters" if self.ctx.benchmark else "No benchmark chosen")
        )
        self._show_buttons()

    def _show_buttons(self) -> None:
        """The verdict buttons of the item's kind (gui/shortcuts.py verdict_keys), captioned for it, enabled while an
        item is shown; the others hidden in their place."""
        offered = {v: (key, text) for v, key, text in self._offered()}
        why = self.verdicts_why
        for verdict, button in self.verdict_buttons.items():
            button.setVisible(verdict in offered)
            button.setEnabled(not why)
            if verdict not in offered:  # hidden in its place: as wide as when shown
                button.setText(max(button.captions, key=len))
                continue
            key, text = offered[verdict]
            button.setText(f"{verdict_button(verdict, self.kind)}   {key}")
            button.setToolTip(f"{text}  [{key}]" + (f"\n(disabled: {why})" if why else ""))

    def offered_buttons(self) -> list[VerdictButton]:
        """The verdict buttons of the item's kind, in their order (the others are hidden in their place)."""
        return [self.verdict_buttons[v] for v, _, _ in self._offered()]

    def _offered(self) -> tuple[tuple[str, str, str], ...]:
        """(verdict, key, text) offered on the item: its kind's (verdict_keys), less a wrong reference where the
        item has none (a live-arena question: R gives the answer it lacks)."""
        keys = verdict_keys(self.kind)
        return keys if self.has_references else tuple(k for k in keys if k[0] != WRONG)

    def _set_kind(self, kind: ItemKind, has_references: bool) -> None:
        if (kind, has_references) != (self.kind, self.has_references):
            self.kind, self.has_references = kind, has_references
            self._show_buttons()

    def show_item_id(self, item_id: int) -> None:
        row = self.ctx.model.row_of(item_id)
        if row is not None:
            self.show_row(row)

    def _show_text(self) -> None:
        item, ctx = self.item, self.ctx
        mine = self._mine()
        sight = show_item_details(
            ctx, item, panel=self.panel, predictions=self.predictions, history=self.history, tabs=self.tabs
        )
        if item is not None:
            self._set_kind(self.panel.kind, self.panel.kind != "open" or bool(item.references))
        self._show_contradiction(mine, sight is not None and item is not None and sight.reveals(item.id))
        self._update_progress()
        self.change.setVisible(mine is not None)
        if mine is not None and not self.saved.property("fresh"):
            verdict, corrected = mine
            self.saved.setText(
                f"Your verdict: {verdict_label(verdict, self.kind)}" + (f" → {corrected}" if corrected else "")
            )
        elif not self.saved.property("fresh"):
            self.saved.setText("")
        self.saved.setProperty("fresh", False)

    def _show_contradiction(self, mine, key_shown: bool) -> None:
        """A wrong-key verdict given blind whose right answer is the key itself: once the key shows, say so and offer
        the correction (a newer verdict, appended: the log keeps both)."""
        verdict, corrected = mine or (None, None)
        item = self.item
        if item is None or verdict != WRONG or not key_shown or not names_the_key(item.answer, corrected):
            self.contradiction.hide()  # an open item has no key to name: its references are several answers
            return
        self.contradiction.setText(
            f"Your “wrong key → {corrected}” names the key itself: O says the key is right "
            "(appended; the log keeps both)"
        )
        self.contradiction.show()

    def _mine(self):
        status = self.ctx.model.status.get(self.item.id) if self.item else None
        return status.by(self.ctx.annotator) if status else None

    def _show_image(self, keep: bool = False) -> None:
        self.images.load_now = not self.prefetch_enabled
        self.images.show_images(self.item.images if self.item else (), keep=keep)

    def move_image(self, forward: bool) -> None:
        """The item's next (previous) image: ] / [ or Alt+→ / Alt+←."""
        images = self.images
        if len(images.shas) < 2:
            self._ignored("This item has one image" if images.shas else "This item has no image")
        elif not (images.next_image() if forward else images.previous_image()):
            self._ignored(f"This is the item's {'last' if forward else 'first'} image ({len(images.shas)} in all)")

    def _painted(self, sha: str) -> None:
        if self.ctx.prefs.zoom == "100" and self.image.has_image():
            self.image.actual_size()
        self.imageShown.emit(sha)

    def _prefetch(self) -> None:
        if not self.prefetch_enabled or self.row is None:
            return
        model = self.ctx.model
        ahead = [self.row + k for k in range(1, self.ctx.prefs.prefetch + 1)] + [self.row - 1]
        shas = [model.rows[r].image_sha256 for r in ahead if 0 <= r < len(model.rows)]
        self.ctx.loader.prefetch(shas)

    def next(self) -> None:
        if self.plan is not None and (slot := self._my_slot()) is not None:
            row = self._plan_row(team_plans.step(self.ctx.ws, self.plan.id, self.ctx.annotator, slot.position))
            if row is None:
                self._ignored("This is the last item of your plan (→ walks your plan; Browse reaches the others)")
            else:
                self.show_row(row)
            return
        if self.plan is not None:  # from an item outside my plan: back to my first item without my verdict
            row = self._plan_first()
            if row is not None:
                self.show_row(row)
                return
        if self.row is not None and self.ctx.model.ensure_row(self.row + 1):
            self.show_row(self.row + 1)

    def previous(self) -> None:
        if self.plan is not None and (slot := self._my_slot()) is not None:
            back = team_plans.step(self.ctx.ws, self.plan.id, self.ctx.annotator, slot.position, forward=False)
            row = self._plan_row(back, forward=False)
            if row is None:
                self._ignored("This is the first item of your plan")
            else:
                self.show_row(row)
            return
        if self.row:
            self.show_row(self.row - 1)

    def next_unreviewed(self) -> None:
        if self.plan is not None:
            ws, me, slot = self.ctx.ws, self.ctx.annotator, self._my_slot()
            found = team_plans.next_unjudged(ws, self.plan.id, me, slot.position if slot else -1)
            found = found or team_plans.next_unjudged(ws, self.plan.id, me, -1)
            row = self._plan_row(found)
            if row is None:
                self.ctx.info.emit("Every item of your plan has your verdict.")
            else:
                self.show_row(row)
            return
        model = self.ctx.model
        start = 0 if self.row is None else self.row + 1
        found = model.next_unreviewed_row(start)
        if found is None and start > 0:
            found = model.next_unreviewed_row(0)
        if found is None:
            self.ctx.info.emit("Every listed item has a verdict.")
        else:
            self.show_row(found)

    # -- verdicts
    def pick(self, n: int) -> None:
        if self.item is None:
            return
        if self.kind == "open":
            self._ignored("An open item has no options to pick: W types the right answer, R a missing one")
            return
        if self.armed_wrong and self.kind == "yesno" and n < 2:  # a yes/no item: 1 = yes, 2 = no
            self.verdict("wrong_answer", corrected=YES_NO[n])
            return
        if n >= len(self.item.options):
            self._ignored(
                f"This item has {len(self.item.options)} options: there is no option {LETTERS[n]}"
                if self.item.options
                else "A yes/no item has no options to pick"
            )
            return
        letter = LETTERS[n]
        if self.armed_wrong:
            self.verdict("wrong_answer", corrected=letter)
            return
        self.panel.set_picked(None if self.panel.picked == letter else letter)

    def _show_zoom(self, zoom: str) -> None:
        self.zoom_label.setText("" if zoom == "fit" else zoom)

    def verdict(self, verdict: reviews.Verdict, corrected: str | None = None) -> None:
        item = self.item
        if item is None:
            return
        self._close_answer()  # a button clicked while the answer field was open: that verdict instead
        if not fits(self.kind, verdict):
            self._ignored(
                f"“{verdict_label(verdict, self.kind)}” is a verdict on open items; this one is {kind_words(self.kind)}"
            )
            return
        if self.kind == "open":
            if verdict == WRONG and not self.has_references:
                self._ignored("This item has no reference answer to be wrong: R gives the answer it lacks")
                return
            if verdict in _ASKS and corrected is None:
                self._ask_answer(verdict)
                return
            self._commit(verdict, corrected)
            return
        key_shown = self.ctx.sight(item_ids=[item.id]).reveals(item.id)
        if verdict == "wrong_answer" and corrected is None:
            corrected = self.panel.picked
            if corrected is None:
                yes_no = self.kind == "yesno"
                if yes_no and key_shown:  # yes/no items: the other answer (never while the key is hidden)
                    corrected = {"yes": "no", "no": "yes"}.get((item.answer or "").lower())
                if corrected is None:
                    self.armed_wrong = True
                    self.hint_label.setText(
                        "Wrong key: press the right answer (1 yes, 2 no)"
                        if yes_no
                        else "Wrong key: press the right option (1–9 or Shift+letter)"
                    )
                    self.hint_label.show()
                    return
        if verdict == "wrong_answer" and (problem := wrong_key_problem(item.answer, corrected, key_shown=key_shown)):
            self.armed_wrong = False
            self.hint_label.hide()
            self._ignored(f"Not saved: {problem}")
            self.ctx.error.emit(f"Not saved: {problem}.", "")
            return
        self._commit(verdict, corrected if verdict == WRONG else None)

    # -- an open item's typed answer
    def _ask_answer(self, verdict: str) -> None:
        """W or R on an open item: the answer field takes the note's place, with the focus (keys off while typing)."""
        self.asking = verdict
        self.answer.clear()
        self.answer.setPlaceholderText(_ASKS[verdict])
        self.answer.setToolTip(_ASKS[verdict])
        self.note_slot.setCurrentWidget(self.answer)
        self.answer.setFocus()

    def _close_answer(self) -> None:
        if self.asking is None:
            return
        had_focus = self.answer.hasFocus()
        self.asking = None
        self.answer.clear()
        self.note_slot.setCurrentWidget(self.note)
        if had_focus:
            self.setFocus()  # the keys again, not the note that took the field's place

    def _answer_submitted(self) -> None:
        verdict, text = self.asking, self.answer.text().strip()
        if verdict is None:
            return
        if verdict == WRONG and not text:
            self._ignored("Type the right answer first (Esc cancels the wrong reference)")
            return
        self._close_answer()
        self._commit(cast(reviews.Verdict, verdict), text or None)

    def _answer_cancelled(self) -> None:
        self._close_answer()
        self._ignored("Nothing saved: the answer was cancelled")

    def _commit(self, verdict: reviews.Verdict, corrected: str | None) -> None:
        """Append the verdict (with its corrected or missing answer, where it takes one) and move on."""
        item = self.item
        if item is None:
            return
        try:
            review = reviews.add_review(
                self.ctx.ws,
                item.id,
                self.ctx.annotator,
                verdict,
                corrected_answer=corrected,
                note=self.note.text().strip() or None,
                seconds=round(time.monotonic() - self.shown_at, 2),
            )
        except InvalidInput as exc:
            self.ctx.error.emit(str(exc), "")
            return
        self.note.clear()
        self.armed_wrong = False
        self.hint_label.hide()
        self.ctx.model.refresh_item(item.id)
        label = verdict_label(verdict, self.kind) + (f" → {corrected}" if review.corrected_answer else "")
        self.saved.setText(f"✓ Saved #{item.index}: {label}  ({review.created_at[11:19]} UTC)")
        self.saved.setProperty("fresh", True)
        self._gold_feedback(item, review)
        self.verdictSaved.emit(review)
        self.ctx.reviewsChanged.emit(item.id)
        row = self.row if self.row is not None else -1
        # A verdict that the revealed key contradicts stays in sight, its correction one key away.
        contradicted = verdict == "wrong_answer" and names_the_key(item.answer, corrected)
        revealed = contradicted and self.ctx.sight(item_ids=[item.id]).reveals(item.id)
        slot = self._my_slot()
        if self.ctx.prefs.advance and not revealed and slot is not None and self.plan is not None:
            # Under a plan: my next item in plan order (gold items among them, unmarked).
            target = self._plan_row(team_plans.step(self.ctx.ws, self.plan.id, self.ctx.annotator, slot.position))
            if target is not None:
                self.show_row(target)
            else:
                self._show_text()
        elif self.ctx.prefs.advance and not revealed and self.ctx.model.ensure_row(row + 1):
            self.show_row(row + 1)
        else:
            self._show_text()

    def change_verdict(self) -> None:
        """Withdraw my standing verdict on this item (an undo row: the log keeps both) and stay to give another."""
        if self.item is None:
            return
        withdrawn = reviews.undo_last(self.ctx.ws, self.ctx.annotator, item_id=self.item.id)
        if withdrawn is None:
            self._ignored("You have no verdict on this item to change")
            return
        self.ctx.model.refresh_item(withdrawn.item_id)
        self.ctx.reviewsChanged.emit(withdrawn.item_id)
        self.saved.setText(f"↶ Withdrawn: {verdict_label(withdrawn.verdict, self.kind)} — give your verdict again")
        self.saved.setProperty("fresh", True)
        self.shown_at = time.monotonic()
        self._show_text()

    def refresh_item(self) -> None:
        """Show the current item again after another process wrote (verdicts, runs), keeping the pick."""
        if self.item is None:
            if self.ctx.model.rows:
                self.show_row(0)
            else:
                self._update_progress()
            return
        item = item_query.item_by_id(self.ctx.ws, self.item.id)
        if item is None:  # deleted elsewhere
            self.show_row(0 if self.ctx.model.rows else None)
            return
        picked = self.panel.picked
        self.item = item
        self.row = self.ctx.model.row_of(item.id) if self.ctx.model.row_of(item.id) is not None else self.row
        self.saved.setProperty("fresh", True)  # keep what the saved line says
        self._show_image(keep=True)  # the image looked at stays (its images may have changed: read again)
        self._show_text()
        if picked is not None and any(r.letter == picked for r in self.panel.rows):
            self.panel.set_picked(picked)

    def undo(self) -> None:
        bench = self.ctx.benchmark
        # Undo stays in the benchmark on screen: a verdict elsewhere is withdrawn there, where it can be seen.
        withdrawn = reviews.undo_last(self.ctx.ws, self.ctx.annotator, benchmark_id=bench.id if bench else None)
        if withdrawn is None:
            self._ignored("Nothing to undo: you have no standing verdict in this benchmark")
            return
        self.ctx.model.refresh_item(withdrawn.item_id)
        self.ctx.reviewsChanged.emit(withdrawn.item_id)
        row = self.ctx.model.row_of(withdrawn.item_id)
        index = item_query.item_by_id(self.ctx.ws, withdrawn.item_id)
        where = f" on #{index.index}" if index is not None else ""
        self.saved.setText(f"↶ Withdrawn: your {verdict_label(withdrawn.verdict, self.kind)}{where}")
        self.saved.setProperty("fresh", True)
        if row is not None:
            self.show_row(row)
        else:
            self._show_text()

    def _update_progress(self) -> None:
        bench = self.ctx.benchmark
        if bench is None:
            self.progress.setText("")
            return
        p = reviews.progress(self.ctx.ws, bench.id, self.ctx.annotator)
        if self.ctx.prefs.blind:  # everyone's count would tell, verdict by verdict, who else judged the item
            self.progress.setText(f"Mine {p['mine']}{_OF}{p['total']}")
        else:
            self.progress.setText(f"Reviewed {p['reviewed']}{_OF}{p['total']}  ·  mine {p['mine']}")

    def _apply_prefs(self) -> None:
        if self.ctx.benchmark is not None:
            self._load_plan()  # the annotator's name may have changed: their plan with it
        if self.item is not None:
            self._show_text()

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self.help.setGeometry(self.rect())
