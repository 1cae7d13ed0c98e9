"""Verify items one by one, keyboard first. Each verdict is committed to SQLite the moment it is given."""
from __future__ import annotations

import time

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QAbstractSpinBox, QComboBox, QFrame, QGridLayout, QHBoxLayout, QLabel, QLineEdit, QPlainTextEdit, QPushButton,
    QScrollArea, QSplitter, QTabWidget, QTextEdit, QVBoxLayout, QWidget, QApplication,
)

from annotation import reviews
from annotation.browse import VERDICT_LABELS
from db import item_query
from gui.help_overlay import HelpOverlay
from gui.image_view import ImageView
from gui.item_panel import LETTERS, HistoryView, ItemPanel, PredictionsView, show_item_details
from gui.shortcuts import VERDICT_KEYS, review_shortcuts

VERDICT_BUTTONS = {"ok": "OK", "wrong_answer": "Wrong key", "ambiguous": "Ambiguous",
                   "text_answerable": "Text-answerable", "bad_image": "Bad image", "skip": "Skip"}


def typing_in(widget) -> bool:
    """True when keyboard focus is in a text field: the review keys must then type, not act."""
    if isinstance(widget, (QLineEdit, QTextEdit, QPlainTextEdit, QAbstractSpinBox)):
        return True
    return isinstance(widget, QComboBox) and widget.isEditable()


class NoteEdit(QLineEdit):
    done = Signal()

    def keyPressEvent(self, event) -> None:
        if event.key() in (Qt.Key_Escape, Qt.Key_Return, Qt.Key_Enter):
            self.done.emit()
            return
        super().keyPressEvent(event)


class ReviewView(QWidget):
    itemShown = Signal(int)  # item id
    imageShown = Signal(str)  # sha256 now painted
    verdictSaved = Signal(object)  # reviews.Review

    def __init__(self, ctx, parent=None):
        super().__init__(parent)
        self.ctx = ctx
        self.setFocusPolicy(Qt.StrongFocus)
        self.row: int | None = None
        self.item = None
        self.shown_at = time.monotonic()
        self.armed_wrong = False  # W pressed without a pick: the next option pick commits "wrong key"
        self.prefetch_enabled = True
        self.shortcuts: dict[str, list[QShortcut]] = {}

        self.image = ImageView()
        self.image.zoomChanged.connect(lambda z: self.zoom_label.setText("" if z == "fit" else z))
        image_box = QWidget()
        il = QVBoxLayout(image_box)
        il.setContentsMargins(0, 0, 0, 0)
        il.setSpacing(0)
        bar_widget = QWidget()
        bar_widget.setObjectName("imageBar")
        bar = QHBoxLayout(bar_widget)
        bar.setContentsMargins(10, 4, 10, 4)
        self.position_label = QLabel()
        self.position_label.setObjectName("imageBarText")
        fit = QPushButton("Fit")
        actual = QPushButton("100 %")
        for b in (fit, actual):
            b.setObjectName("flat")
            b.setFocusPolicy(Qt.NoFocus)
        fit.clicked.connect(lambda: self.image.set_fit(True))
        actual.clicked.connect(self.image.actual_size)
        self.zoom_label = QLabel("")
        self.zoom_label.setObjectName("imageBarText")
        bar.addWidget(self.position_label)
        bar.addStretch(1)
        bar.addWidget(self.zoom_label)
        bar.addWidget(fit)
        bar.addWidget(actual)
        il.addWidget(bar_widget)
        il.addWidget(self.image, 1)

        side = QWidget()
        side.setObjectName("reviewSide")
        sl = QVBoxLayout(side)
        sl.setContentsMargins(16, 12, 16, 12)
        sl.setSpacing(10)
        self.panel = ItemPanel(show_key_hints=True)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.NoFrame)
        scroll.setWidget(self.panel)
        sl.addWidget(scroll, 3)

        verdicts = QGridLayout()
        verdicts.setSpacing(6)
        self.verdict_buttons: dict[str, QPushButton] = {}
        for n, (verdict, key, text) in enumerate(VERDICT_KEYS):
            b = QPushButton(f"{VERDICT_BUTTONS[verdict]}   {key}")
            b.setObjectName("verdict_ok" if verdict == "ok" else "verdict")
            b.setToolTip(f"{text}  [{key}]")
            b.setFocusPolicy(Qt.NoFocus)
            b.clicked.connect(lambda _=False, v=verdict: self.verdict(v))
            verdicts.addWidget(b, n // 3, n % 3)
            self.verdict_buttons[verdict] = b
        sl.addLayout(verdicts)
        self.hint_label = QLabel()
        self.hint_label.setObjectName("armed")
        self.hint_label.hide()
        sl.addWidget(self.hint_label)
        self.note = NoteEdit()
        self.note.setPlaceholderText("Note for the next verdict (E to write, Enter/Esc to leave)")
        self.note.done.connect(self.setFocus)
        sl.addWidget(self.note)

        status = QHBoxLayout()
        self.saved = QLabel()
        self.saved.setObjectName("saved")
        self.progress = QLabel()
        self.progress.setObjectName("muted")
        status.addWidget(self.saved, 1)
        status.addWidget(self.progress)
        sl.addLayout(status)

        nav = QHBoxLayout()
        for text, slot in (("◀  Previous", self.previous), ("Next  ▶", self.next),
                           ("Next unreviewed  N", self.next_unreviewed), ("Undo  Ctrl+Z", self.undo)):
            b = QPushButton(text)
            b.setFocusPolicy(Qt.NoFocus)
            b.clicked.connect(slot)
            nav.addWidget(b)
        sl.addLayout(nav)

        self.tabs = QTabWidget()
        self.predictions = PredictionsView()
        self.history = HistoryView()
        self.tabs.addTab(self.predictions, "Predictions")
        self.tabs.addTab(self.history, "Review history")
        self.tabs.setFocusPolicy(Qt.NoFocus)
        sl.addWidget(self.tabs, 2)

        split = QSplitter(Qt.Horizontal)
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
        ctx.loader.loaded.connect(self._on_image)
        ctx.benchmarkChanged.connect(self._on_benchmark)
        ctx.model.modelReset.connect(self._on_model_reset)
        ctx.prefsChanged.connect(self._apply_prefs)

    # -- keyboard
    def _make_shortcuts(self) -> None:
        for s in review_shortcuts():
            for key in s.keys:
                sc = QShortcut(QKeySequence(key), self)
                sc.setContext(Qt.WidgetWithChildrenShortcut)
                sc.activated.connect(lambda a=s.action: self.on_action(a))
                self.shortcuts.setdefault(s.action, []).append(sc)

    def on_action(self, action: str) -> None:
        if typing_in(QApplication.focusWidget()):
            return
        if self.help.isVisible() and action != "help":
            return
        if action.startswith("verdict:"):
            self.verdict(action.split(":", 1)[1])
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
        elif action == "blind":
            self.ctx.update_prefs(blind=not self.ctx.prefs.blind)
        elif action == "help":
            self.help.toggle()
        else:
            getattr(self, action)()

    # -- moving
    def _on_benchmark(self) -> None:
        self.show_row(0)

    def _on_model_reset(self) -> None:
        if self.item is not None and (r := self.ctx.model.row_of(self.item.id)) is not None:
            self.row = r
        elif self.ctx.model.rows:
            self.show_row(0)
        else:
            self.show_row(None)

    def show_row(self, row: int | None) -> None:
        model = self.ctx.model
        if row is None or not model.ensure_row(row):
            self.row, self.item = None, None
            self.panel.show_item(None)
            self.image.set_image(None, placeholder="No items match the filters" if model.benchmark else "No benchmark")
            self.predictions.show_predictions(None, [])
            self.history.show_history([])
            self.position_label.setText("")
            self._update_progress()
            self._enable_verdicts(False)
            return
        self._enable_verdicts(True)
        self.row = row
        self.item = item_query.item_by_id(self.ctx.ws, model.rows[row].id)
        self.shown_at = time.monotonic()
        self.armed_wrong = False
        self.hint_label.hide()
        self._show_image()
        self._show_text()
        self.position_label.setText(f"{row + 1} of {model.total}")
        self._prefetch()
        self.itemShown.emit(self.item.id)

    def _enable_verdicts(self, on: bool) -> None:
        """No item, nothing to judge: the buttons say so instead of doing nothing."""
        for button in self.verdict_buttons.values():
            button.setEnabled(on)

    def show_item_id(self, item_id: int) -> None:
        row = self.ctx.model.row_of(item_id)
        if row is not None:
            self.show_row(row)

    def _show_text(self) -> None:
        item, ctx = self.item, self.ctx
        mine = self._mine()
        show_item_details(ctx, item, panel=self.panel, predictions=self.predictions, history=self.history,
                          tabs=self.tabs)
        self._update_progress()
        if mine is not None and not self.saved.property("fresh"):
            verdict, corrected = mine
            self.saved.setText(f"Your verdict: {VERDICT_LABELS[verdict]}" + (f" → {corrected}" if corrected else ""))
        elif not self.saved.property("fresh"):
            self.saved.setText("")
        self.saved.setProperty("fresh", False)

    def _mine(self):
        status = self.ctx.model.status.get(self.item.id) if self.item else None
        return status.by(self.ctx.annotator) if status else None

    def _show_image(self) -> None:
        sha = self.item.image_sha256
        if not sha:
            self.image.set_image(None, placeholder="This item has no image")
            return
        loader = self.ctx.loader
        image = loader.cached(sha)
        if image is None and not self.prefetch_enabled:
            image = loader.load_now(sha)
        if image is not None:
            self._paint(sha, image)
        else:
            self.image.set_image(None, placeholder="Loading image…")
            loader.request(sha)

    def _on_image(self, sha: str, image) -> None:
        if self.item is not None and self.item.image_sha256 == sha and self.image.image_key != sha:
            self._paint(sha, image)

    def _paint(self, sha: str, image) -> None:
        if image.isNull():
            self.image.set_image(None, placeholder="The image could not be decoded")
        else:
            self.image.set_image(image, key=sha)
            if self.ctx.prefs.zoom == "100":
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
        if self.row is not None and self.ctx.model.ensure_row(self.row + 1):
            self.show_row(self.row + 1)

    def previous(self) -> None:
        if self.row:
            self.show_row(self.row - 1)

    def next_unreviewed(self) -> None:
        model = self.ctx.model
        start = 0 if self.row is None else self.row + 1
        found = model.find_row(start, 1, lambda r: not model.reviewed(r.id))
        if found is None:
            found = model.find_row(0, 1, lambda r: not model.reviewed(r.id))
        if found is None:
            self.ctx.info.emit("Every listed item has a verdict.")
        else:
            self.show_row(found)

    # -- verdicts
    def pick(self, n: int) -> None:
        if self.item is None or n >= len(self.item.options):
            return
        letter = LETTERS[n]
        if self.armed_wrong:
            self.verdict("wrong_answer", corrected=letter)
            return
        self.panel.set_picked(None if self.panel.picked == letter else letter)

    def verdict(self, verdict: str, corrected: str | None = None) -> None:
        item = self.item
        if item is None:
            return
        if verdict == "wrong_answer" and corrected is None:
            corrected = self.panel.picked
            if corrected is None:
                if not item.options:  # yes/no items: the other answer
                    corrected = {"yes": "no", "no": "yes"}.get((item.answer or "").lower())
                if corrected is None:
                    self.armed_wrong = True
                    self.hint_label.setText("Wrong key: press the right option (1–9 or Shift+letter)")
                    self.hint_label.show()
                    return
        if verdict == "wrong_answer" and corrected == item.answer and not self.ctx.prefs.blind:
            self.ctx.error.emit(f"{corrected} is already the answer key: use OK (O), or pick another option.", "")
            return
        try:
            review = reviews.add_review(self.ctx.ws, item.id, self.ctx.annotator, verdict,
                                        corrected_answer=corrected if verdict == "wrong_answer" else None,
                                        note=self.note.text().strip() or None,
                                        seconds=round(time.monotonic() - self.shown_at, 2))
        except ValueError as exc:
            self.ctx.error.emit(str(exc), "")
            return
        self.note.clear()
        self.armed_wrong = False
        self.hint_label.hide()
        self.ctx.model.refresh_item(item.id)
        label = VERDICT_LABELS[verdict] + (f" → {corrected}" if review.corrected_answer else "")
        self.saved.setText(f"✓ Saved #{item.index}: {label}  ({review.created_at[11:19]} UTC)")
        self.saved.setProperty("fresh", True)
        self.verdictSaved.emit(review)
        self.ctx.reviewsChanged.emit(item.id)
        if self.ctx.prefs.advance and self.ctx.model.ensure_row(self.row + 1):
            self.show_row(self.row + 1)
        else:
            self._show_text()

    def undo(self) -> None:
        withdrawn = reviews.undo_last(self.ctx.ws, self.ctx.annotator)
        if withdrawn is None:
            self.ctx.info.emit("Nothing to undo: you have no standing verdict.")
            return
        self.ctx.model.refresh_item(withdrawn.item_id)
        self.ctx.reviewsChanged.emit(withdrawn.item_id)
        row = self.ctx.model.row_of(withdrawn.item_id)
        self.saved.setText(f"↶ Withdrawn: {VERDICT_LABELS[withdrawn.verdict]} (review {withdrawn.id})")
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
        self.progress.setText(f"Reviewed {p['reviewed']} / {p['total']}  ·  mine {p['mine']}")

    def _apply_prefs(self) -> None:
        if self.item is not None:
            self._show_text()

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self.help.setGeometry(self.rect())
