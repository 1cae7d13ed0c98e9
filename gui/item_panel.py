"""What an annotator reads about one item, by its kind (annotation/item_kinds.py): header, hint, question, then a
multiple-choice item's option cards, a yes/no item's Yes and No cards (the key highlighted) or an open item's
reference answers — its key, hidden alike in blind mode; every run's passes for the item (an open run's with the
item's scores), and the review history."""

from __future__ import annotations

import html
import re
from collections import Counter

from PySide6.QtCore import QEvent, QSize, Qt, QTimer
from PySide6.QtGui import QFont
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QScrollArea,
    QSizePolicy,
    QToolButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from annotation.item_kinds import ItemKind, kind_of, verdict_label
from evaluator.scoring import open_item
from evaluator.scoring.choices import LETTERS, YES_NO, item_result, original_option
from evaluator.scoring.extraction import TRUNCATED as CUT_INSIDE  # its stage: a pass cut inside its thought
from gui.appearance import (
    ACCENT,
    KEY_BACKGROUND,
    KEY_BADGE,
    KEY_BORDER,
    MUTED,
    PENDING,
    RIGHT,
    WRONG,
    set_foreground,
    set_style,
)

RESULT_MARKS = {"right": "✓", "wrong": "✗", "pending": "…", "unscored": "–", "none": ""}
ADJUDICATION_HIDDEN = "hidden until your label (blind adjudication)"
PREDICTIONS_HIDDEN = "Predictions (hidden)"


ZWSP = "\u200b"
_LONG_WORD = re.compile(r"\S{25,}")


def breakable(text: str) -> str:
    """Text a word-wrapping label can break anywhere in a long unbroken word (a zero-width space every 16
    characters of it): otherwise one such word sets the label's minimum width and scrolls the panel sideways."""
    return _LONG_WORD.sub(lambda m: ZWSP.join(m.group(0)[i : i + 16] for i in range(0, len(m.group(0)), 16)), text)


def _text_label(name: str = "") -> QLabel:
    label = QLabel()
    if name:
        label.setObjectName(name)
    label.setTextFormat(Qt.TextFormat.PlainText)  # benchmark text is text, never markup
    label.setWordWrap(True)
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    return label


def _row_style(key: bool, picked: bool) -> str:
    if not key and not picked:
        return ""
    border = ACCENT if picked else KEY_BORDER
    badge = ACCENT if picked and not key else KEY_BADGE
    return (
        f"#optionRow {{ background: {KEY_BACKGROUND if key else '#ffffff'}; border: 2px solid {border}; }}"
        f"#optionBadge {{ background: {badge}; color: white; }}"
        f"#optionTag {{ color: {RIGHT if key else ACCENT}; }}"
    )


class OptionRow(QFrame):
    def __init__(self, letter: str, text: str, key_hint: str, parent=None):
        super().__init__(parent)
        self.letter = letter
        self.setObjectName("optionRow")
        layout = QHBoxLayout(self)
        layout.setContentsMargins(8, 6, 10, 6)
        layout.setSpacing(10)
        self.badge = QLabel(letter)
        self.badge.setObjectName("optionBadge")
        self.badge.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.badge.setFixedSize(28, 28)
        self.text = _text_label()
        self.text.setText(breakable(text))
        self.text.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        self.tag = QLabel("")
        self.tag.setObjectName("optionTag")
        self.hint = QLabel(key_hint)
        self.hint.setObjectName("keyHint")
        layout.addWidget(self.badge, 0, Qt.AlignmentFlag.AlignTop)
        layout.addWidget(self.text, 1)
        layout.addWidget(self.tag, 0, Qt.AlignmentFlag.AlignVCenter)
        layout.addWidget(self.hint, 0, Qt.AlignmentFlag.AlignVCenter)
        self.set_state(key=False, picked=False)

    def set_text(self, text: str, key_hint: str) -> None:
        self.text.setText(breakable(text))
        self.hint.setText(key_hint)

    def set_state(self, *, key: bool, picked: bool) -> None:
        if (key, picked) == (getattr(self, "is_key", None), getattr(self, "is_picked", None)):
            return  # re-polishing is the costly part of showing an item: only on a change
        self.is_key, self.is_picked = key, picked
        self.setProperty("key", key)
        self.setProperty("picked", picked)
        tags = (["answer key"] if key else []) + (["your pick"] if picked else [])
        self.tag.setText(" · ".join(tags))
        self.tag.setVisible(bool(tags))
        # A widget style sheet per state, not dynamic properties + style().polish(): in PySide6 6.12 on Python
        # 3.11, QStyle.polish/unpolish(QWidget) drop a reference to None on every call, which crashes the
        # interpreter after a few thousand items (found by bench/gui_bench.py).
        set_style(self, _row_style(key, picked))


SHORT_REFERENCE = 30  # characters: VQA's answers are a word or two, grouped on one line
REFERENCES_HIDDEN = "Reference answers hidden (blind mode)"
NO_REFERENCE = "No reference answer"
LIVE_NO_REFERENCE = "No reference answer (live arena: people vote on pairs of answers in the Arena tab)"


def reference_text(references: tuple[str, ...]) -> tuple[str, str]:
    """(title, text) of an open item's reference answers: one as it is; repeats grouped with their counts, most
    first (VQA's ten: "2 ×7 · two ×3"), on one line when they are short; several distinct ones a list (five
    captions), in the file's order."""
    if len(references) == 1:
        return "Reference answer", references[0]
    counts = Counter(references)  # first occurrence order: ties keep the file's order
    groups = sorted(counts.items(), key=lambda group: -group[1])
    title = f"{len(references)} reference answers" + (
        f" · {len(counts)} distinct" if len(counts) < len(references) else ""
    )
    shown = [text + (f" ×{n}" if n > 1 else "") for text, n in groups]
    if len(counts) < len(references) and all(len(text) <= SHORT_REFERENCE for text in counts):
        return title, " · ".join(shown)
    return title, "\n".join(f"• {text}" for text in shown)


class ReferencesCard(QFrame):
    """An open item's reference answers, where a multiple-choice item's options are, coloured as an answer key."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("optionRow")  # the option cards' frame and the key's colours (_row_style)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(10, 6, 10, 8)
        layout.setSpacing(4)
        self.title = QLabel()
        self.title.setObjectName("optionTag")
        self.title.setWordWrap(True)  # a narrow Browse pane wraps it rather than scroll sideways
        self.text = _text_label("references")
        layout.addWidget(self.title)
        layout.addWidget(self.text)
        set_style(self, _row_style(key=True, picked=False))

    def set_references(self, references: tuple[str, ...]) -> None:
        title, text = reference_text(references)
        self.title.setText(f"{title} · the answer key")
        self.text.setText(breakable(text))


class _ScrollBox(QScrollArea):
    """A column of widgets scrolling up and down inside the item panel, never sideways, on the panel's background."""

    def __init__(self, spacing: int, parent=None):
        super().__init__(parent)
        self.setWidgetResizable(True)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        inner = QWidget()
        inner.setObjectName("optionsInner")
        self.box = QVBoxLayout(inner)
        self.box.setContentsMargins(0, 0, 0, 0)
        self.box.setSpacing(spacing)
        self.setWidget(inner)

    def _content_height(self) -> int:
        inner = self.widget()
        if inner is None:
            return 0
        width = self.viewport().width() or self.width()
        height = inner.heightForWidth(width) if inner.hasHeightForWidth() else -1
        return height if height > 0 else inner.sizeHint().height()


class OptionsArea(_ScrollBox):
    """The option rows, scrolling inside the panel when there are many (11, 25): never taller than its rows, at
    least two rows tall, and at most about ten rows in its size hint, so the key note under it stays in sight.
    Flat (ItemPanel.fit_in): as tall as its rows, scrolling with the panel instead of inside it."""

    MIN_HEIGHT, HINT_HEIGHT = 84, 420

    def __init__(self, parent=None):
        super().__init__(4, parent)
        self.flat = False
        self.setMinimumHeight(self.MIN_HEIGHT)
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Preferred)
        self.box.addStretch(1)  # a box taller than its rows (its least height) leaves the room below them

    def add(self, widget: QWidget) -> None:
        self.box.insertWidget(self.box.count() - 1, widget)  # above the stretch

    def set_flat(self, flat: bool) -> None:
        self.flat = flat
        self.setVerticalScrollBarPolicy(
            Qt.ScrollBarPolicy.ScrollBarAlwaysOff if flat else Qt.ScrollBarPolicy.ScrollBarAsNeeded
        )
        self.verticalScrollBar().setValue(0)
        self.fit()

    def fit(self) -> None:
        inner = self.widget()
        if inner is not None:
            inner.adjustSize()
        self._fit_height()
        self.updateGeometry()
        if self.flat:  # new texts wrap once laid out, after this: measured again then, the rows' height exactly
            QTimer.singleShot(0, self._fit_height)

    def _fit_height(self) -> None:
        tall = max(self.MIN_HEIGHT, self._content_height())
        self.setMaximumHeight(tall)
        self.setMinimumHeight(tall if self.flat else self.MIN_HEIGHT)

    def sizeHint(self) -> QSize:
        return QSize(super().sizeHint().width(), min(self._content_height(), self.HINT_HEIGHT))

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        if event.oldSize().width() != event.size().width():  # rows re-wrap: the content height changes
            self._fit_height()


class _SqueezableLayout(QVBoxLayout):
    """Tells the scroll area around the panel that it has no height-for-width: a scroll area would then give the
    panel its full preferred height (every option row) and scroll the whole panel; without it the panel takes the
    height in view and the options scroll inside it, the question and the key note staying in sight."""

    def hasHeightForWidth(self) -> bool:
        return False


class _TextArea(_ScrollBox):
    """The question and the hint, scrolling inside the panel when they are long (a question of many lines at
    1024×700 was cut off with no way to read its end): as tall as the text, at most a part of the panel. The question
    comes first: a long hint above it put the question itself below the fold of this box."""

    def __init__(self, widgets: tuple[QWidget, ...], parent=None):
        super().__init__(8, parent)
        for widget in widgets:
            self.box.addWidget(widget)
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Maximum)

    def fit(self, cap: int | None) -> None:
        """As tall as the text, at most `cap` (None: the whole text, where the panel scrolls as one)."""
        self.setFixedHeight(self.height_for(cap))

    def height_for(self, cap: int | None) -> int:
        whole = self._content_height() + 2
        return max(24, whole if cap is None else min(whole, cap))


class ItemPanel(QWidget):
    """Header, hint, question, and the options, Yes/No cards or reference answers of one item, by its kind."""

    def __init__(self, *, show_key_hints: bool = False, parent=None):
        super().__init__(parent)
        self.show_key_hints = show_key_hints
        layout = _SqueezableLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(8)
        self.header = QLabel()
        self.header.setObjectName("itemHeader")
        self.header.setWordWrap(True)
        self.hint = _text_label("hint")
        self.question = _text_label("question")
        # The hint folds away under its toggle (it stays folded from item to item until opened again).
        self.hint_toggle = QToolButton()
        self.hint_toggle.setObjectName("hintToggle")
        self.hint_toggle.setCheckable(True)
        self.hint_toggle.setChecked(True)
        self.hint_toggle.setAutoRaise(True)
        self.hint_toggle.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.hint_toggle.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.hint_toggle.toggled.connect(self._show_hint)
        self.options_area = OptionsArea(self)
        self.options_box = self.options_area.box
        self.references = ReferencesCard(self.options_area.widget())  # an open item's, in the options' place
        self.options_area.add(self.references)
        self.key_note = QLabel()
        self.key_note.setObjectName("keyNote")
        self.key_note.setWordWrap(True)
        self.text_area = _TextArea((self.question, self.hint_toggle, self.hint), self)
        layout.addWidget(self.header)
        layout.addWidget(self.text_area)
        layout.addWidget(self.options_area)
        layout.addWidget(self.key_note)  # under the options, outside their scroll: always in sight
        layout.addStretch(1)
        self.rows: list[OptionRow] = []
        self._pool: list[OptionRow] = []  # rows are reused from item to item: creating widgets is slow
        self._yes_no: list[OptionRow] = []  # the Yes and No cards of yes/no items, made once
        self.item = None
        self.kind: ItemKind = "mcq"
        self.live_arena = False
        self.blind = False
        self.picked: str | None = None
        self.reveal = False
        self._scroll: QScrollArea | None = None  # the scroll area the panel is in (fit_in)

    def fit_in(self, scroll: QScrollArea) -> None:
        """The panel is in `scroll` (found when first shown if not said). Its options scroll inside it while the
        viewport holds the question, two rows and the key note; a shorter one (large text, a dragged splitter,
        two-line messages under it) would scroll the panel too, a scroll box inside a scrolling one hiding options
        from both: the options then lie flat and the one outer scroll reaches every one."""
        self._scroll = scroll
        scroll.viewport().installEventFilter(self)

    def showEvent(self, event) -> None:
        super().showEvent(event)
        if self._scroll is None:
            parent = self.parentWidget()
            while parent is not None and not isinstance(parent, QScrollArea):
                parent = parent.parentWidget()
            if parent is not None:
                self.fit_in(parent)
                self._fit_room()

    def _room(self) -> int | None:
        """The height the scroll area's viewport has for the panel (less what is around it there), None outside one."""
        if self._scroll is None:
            return None
        around = 0
        content = self._scroll.widget()
        if content is not None and content is not self:
            around = content.minimumSizeHint().height() - self.minimumSizeHint().height()
        return self._scroll.viewport().height() - max(0, around)

    def eventFilter(self, watched, event) -> bool:
        if self._scroll is not None and watched is self._scroll.viewport() and event.type() == QEvent.Type.Resize:
            # The room is a height: a width change (the outer scroll bar shown or gone) refitting the panel would
            # show or hide that bar again, without end.
            if event.size().height() != event.oldSize().height():
                self._fit_room()
        return False

    def _fit_room(self) -> None:
        room = self._room()
        if room is None:
            return
        area = self.options_area
        if not area.isVisibleTo(self):
            flat = False
        else:
            # The panel's least height with its text and its options scrolling inside it (the text at its cap, the
            # options two rows tall), flat or not now.
            text = self.text_area
            need = (
                self.minimumSizeHint().height()
                - (area.minimumHeight() - area.MIN_HEIGHT)
                - (text.height() - text.height_for(self._text_cap()))
            )
            flat = need > room
        if flat != area.flat:
            area.set_flat(flat)
        self._fit_text()

    def _show_hint(self, shown: bool) -> None:
        has_hint = self.item is not None and bool(self.item.hint)
        self.hint_toggle.setArrowType(Qt.ArrowType.DownArrow if shown else Qt.ArrowType.RightArrow)
        self.hint_toggle.setText("Hint" if shown else "Hint (folded: click to read it)")
        self.hint.setVisible(has_hint and shown)
        self._fit_text()
        self._fit_room()

    def _fit_text(self) -> None:
        # A flat panel scrolls as one: its text whole, no scroll box of its own.
        self.text_area.fit(None if self.options_area.flat else self._text_cap())

    def _text_cap(self) -> int:
        # Two fifths of the room in view (of the panel where it is not in a scroll area), not of the panel: a panel
        # taller than its room would grow the text box with it, and scroll itself around the options' box.
        room = self._room()
        return max(80, room * 2 // 5 if room is not None else self.height() // 3)

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._fit_text()
        if event.oldSize().width() != event.size().width():
            self._fit_note()

    def _fit_note(self) -> None:
        # The panel's layout reads no height-for-width (_SqueezableLayout): a note wrapping to more lines than its
        # size hint's (a narrow Browse pane) would lose its last ones.
        note = self.key_note
        note.setMinimumHeight(note.heightForWidth(self.width()) if note.text() and self.width() > 0 else 0)

    def show_item(
        self,
        item,
        *,
        bench_name: str = "",
        blind: bool = False,
        reveal: bool = False,
        kind: str | None = None,
        live_arena: bool = False,
    ) -> None:
        """`kind`: the benchmark's (annotation/item_kinds.py, `item_kind`), required with an item; `live_arena`: the
        item is a live-arena question, which has no references by design."""
        self.item, self.blind, self.reveal, self.picked = item, blind, reveal, None
        self.live_arena = live_arena
        if item is None:
            self.header.setText("No item")
            for w in (self.hint, self.hint_toggle, self.question, self.key_note):
                w.hide()
            self._set_options([])
            return
        parts = (
            [f"<b>{html.escape(bench_name)}</b> #{html.escape(str(item.index))}"]
            if bench_name
            else [f"#{html.escape(str(item.index))}"]
        )
        parts += [html.escape(p) for p in (item.category, item.l2_category, item.split) if p]
        self.header.setText("  ·  ".join(parts))
        self.hint.setText(breakable(item.hint or ""))
        self.hint_toggle.setVisible(bool(item.hint))
        self._show_hint(self.hint_toggle.isChecked())
        self.question.setText(breakable(item.question))
        self.question.show()
        self._fit_text()
        if kind is None:
            raise ValueError("an item is shown with its benchmark's kind (item_kind)")
        self.kind = kind_of(kind)
        self._set_options(item.options if self.kind == "mcq" else (), yes_no=self.kind == "yesno")
        self._refresh()
        self._fit_room()
        if self._scroll is not None:  # and again once the new texts are laid out (their wrapped heights)
            QTimer.singleShot(0, self._fit_room)

    def set_blind(self, blind: bool, reveal: bool = False) -> None:
        self.blind, self.reveal = blind, reveal
        self._refresh()
        self._fit_room()

    def set_picked(self, letter: str | None) -> None:
        self.picked = letter
        self._refresh()

    def key_visible(self) -> bool:
        """Does the panel show the item's key (a green card, the references, or that it has none)?"""
        shown = self.key_note.isVisible() and "hidden" not in self.key_note.text()
        return any(r.is_key for r in self.rows) or not self.references.isHidden() or shown

    def _set_options(self, options, *, yes_no: bool = False) -> None:
        """The option cards; a yes/no item (no options) gets a Yes and a No card, so its key shows as an option's
        does (green, hidden in blind mode) instead of a line of grey text."""
        if not self._yes_no and yes_no:
            for n, answer in enumerate(YES_NO):
                row = OptionRow(
                    answer, answer.capitalize(), f"W {n + 1}" if self.show_key_hints else "", self.options_area.widget()
                )
                row.badge.setText(answer[0].upper())
                self.options_area.add(row)
                self._yes_no.append(row)
        for row in self._yes_no:
            row.setVisible(yes_no)
        self.references.hide()  # _refresh shows an open item's, as the blind rule lets it
        if yes_no:
            for row in self._pool:
                row.hide()
            self.rows = list(self._yes_no)
            self.options_area.setVisible(True)
            self.options_area.fit()
            return
        while len(self._pool) < len(options):
            row = OptionRow(LETTERS[len(self._pool)], "", "", self.options_area.widget())
            self.options_area.add(row)
            self._pool.append(row)
        for i, row in enumerate(self._pool):
            if i < len(options):
                row.set_text(options[i], f"{i + 1}" if self.show_key_hints and i < 9 else "")
                row.show()
            else:
                row.hide()
        self.rows = self._pool[: len(options)]
        self.options_area.setVisible(bool(options))
        self.options_area.fit()

    def _refresh(self) -> None:
        item = self.item
        if item is None:
            return
        hidden = self.blind and not self.reveal
        if self.kind == "open":
            self._refresh_references(item.references, hidden)
            return
        for row in self.rows:
            row.set_state(key=not hidden and row.letter == item.answer, picked=row.letter == self.picked)
        if hidden:
            self.key_note.setText("Answer key hidden (blind mode)")
        elif item.answer is None:
            self.key_note.setText("No answer key")
        else:  # the key card is green
            self.key_note.setText("")
        self.key_note.setVisible(bool(self.key_note.text()))
        self._fit_note()

    def _refresh_references(self, references: tuple[str, ...], hidden: bool) -> None:
        """An open item's references are its key: hidden in blind mode until the annotator's verdict stands, as a
        multiple-choice key is. A live-arena question has none by design, which tells nothing: said even then."""
        shown = bool(references) and not hidden
        if self.live_arena and not references:
            note = LIVE_NO_REFERENCE
        else:
            note = REFERENCES_HIDDEN if hidden else "" if references else NO_REFERENCE
        if shown:
            self.references.set_references(references)
        self.references.setVisible(shown)
        self.options_area.setVisible(shown)
        self.options_area.fit()
        self.key_note.setText(note)
        self.key_note.setVisible(bool(note))
        self._fit_note()


def _order_letters(order, n_options: int) -> str:
    # option_order[k] is the original index of the option shown in position k: show it as original letters.
    return " ".join(LETTERS[i] for i in order) if order else "—"


def score_colour(value: float | None) -> str:
    """An open score's colour: right at 1, wrong at 0, muted between (as the Results tab's item list)."""
    return MUTED if value is None else RIGHT if value >= 1 else WRONG if value <= 0 else MUTED


class PredictionsView(QTreeWidget):
    """Every run's passes for one item: a run per top-level row, a pass per child. A multiple-choice or yes/no run's
    pass shows its option order, choice and correctness; an open run's its answer and the item's scores."""

    HEADERS = ["Pass", "Order", "Response", "Choice", "✓"]

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setHeaderLabels(self.HEADERS)
        self.setRootIsDecorated(True)
        self.setUniformRowHeights(True)
        self.setAlternatingRowColors(True)
        header = self.header()
        header.setStretchLastSection(False)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(2, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(3, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(4, QHeaderView.ResizeMode.ResizeToContents)
        self.itemExpanded.connect(self._unfolded)

    def show_predictions(self, item, runs_passes, *, sight=None, kind: str | None = None, benchmark=None) -> None:
        """Every run's passes of the item, less what the blind rule (annotation/blind.py `Sight`) hides: nothing
        before the annotator's verdict in blind mode; a response awaiting their blind label, and its reading and
        run result (an open answer's scores), always. `kind`: the item's (its benchmark's); `benchmark`: the shown
        benchmark, whose rule an open answer's VQA score follows when it is the item's (open_metrics.vqa_rule)."""
        self.clear()
        self._benchmark = (
            benchmark if benchmark is not None and item is not None and benchmark.id == item.benchmark_id else None
        )
        is_open = kind == "open" or any(run.strategy == "open" for run, _ in runs_passes)
        # An open answer has no option order, choice or correctness: its scores in the choice's column.
        self.headerItem().setText(3, "Score" if is_open else self.HEADERS[3])
        self.setColumnHidden(1, is_open)
        self.setColumnHidden(4, is_open)
        if item is None or (sight is not None and not sight.reveals(item.id)):
            return
        for run, passes in runs_passes:
            shows = [sight is None or sight.shows_pass(run.id, item.id, p.pass_) for p in passes]
            if run.strategy == "open":
                self._show_open(item, run, passes, shows, sight)
                continue
            result = item_result(run.strategy, len(item.options), {p.pass_: p.correct for p in passes})
            result_shown = sight is None or sight.shows_run_result(run.id, item.id)
            mark = f"   {RESULT_MARKS[result]} {result}" if result_shown else ""
            asker = run.config.get("multi_turn")
            how = f"{run.strategy} · multi-turn, asked by {asker}" if isinstance(asker, str) else run.strategy
            top = QTreeWidgetItem([f"run {run.id} · {run.model_spec} · {how}{mark}", "", "", "", ""])
            font = top.font(0)
            font.setBold(True)
            top.setFont(0, font)
            if result_shown and result in ("right", "wrong"):
                set_foreground(top, 0, RIGHT if result == "right" else WRONG)
            for p, shown in zip(passes, shows):
                order = _order_letters(p.option_order, len(item.options))
                if not shown:
                    child = QTreeWidgetItem([f"pass {p.pass_}", order, ADJUDICATION_HIDDEN, "", ""])
                    set_foreground(child, 2, MUTED)
                    top.addChild(child)
                    continue
                response = " ".join(p.response.split())
                correct = "" if p.correct is None else ("✓" if p.correct else "✗")
                index = original_option(p.choice, p.option_order)
                original = None if index is None else LETTERS[index]
                choice = (p.choice or "undecided") + (f" (= {original})" if original and original != p.choice else "")
                if p.stage == CUT_INSIDE.stage:  # no answer at all: not a wrong answer, though it counts as one
                    response, choice, correct = CUT_IN_THOUGHT, "no answer", CUT_MARK
                child = QTreeWidgetItem([f"pass {p.pass_}", order, response, choice, correct])
                child.setToolTip(2, p.response)
                child.setToolTip(3, f"{p.stage}: {p.reason or ''}")
                if p.correct is not None:
                    set_foreground(child, 4, RIGHT if p.correct else WRONG)
                _mark_cut(child, p)
                _add_turns(child, p.turns)
                _add_thought(child, p)
                top.addChild(child)
            self.addTopLevelItem(top)
            top.setFirstColumnSpanned(True)
            top.setExpanded(True)
            _unfold_passes(top)
        if not runs_passes:
            empty = QTreeWidgetItem(["No run has answered this item yet", "", "", "", ""])
            set_foreground(empty, 0, MUTED)
            self.addTopLevelItem(empty)
            empty.setFirstColumnSpanned(True)

    def _show_open(self, item, run, passes, shows, sight) -> None:
        """An open run's passes: each answer with its primary score, and every per-item metric's score on the line
        under it (evaluator/scoring/open_item.py); the run's row carries pass 0's primary score, the one its figures
        count, when the blind rule shows the run's result."""
        references = item.references
        top = QTreeWidgetItem([f"run {run.id} · {run.model_spec} · {run.strategy}", "", "", "", ""])
        font = top.font(0)
        font.setBold(True)
        top.setFont(0, font)
        expand = []
        for p, shown in zip(passes, shows):
            if not shown:
                child = QTreeWidgetItem([f"pass {p.pass_}", "", ADJUDICATION_HIDDEN, "", ""])
                set_foreground(child, 2, MUTED)
                top.addChild(child)
                continue
            bench = getattr(self, "_benchmark", None)
            scores = open_item.item_scores(
                p.response, references, bench.name if bench else None, bench.meta if bench else None
            )
            first = open_item.primary(scores, references)
            score = open_item.score_text(first, scores[first]) if first else "answered"
            answer = CUT_IN_THOUGHT if p.stage == CUT_INSIDE.stage else " ".join(p.response.split())
            child = QTreeWidgetItem([f"pass {p.pass_}", "", answer, score, ""])
            child.setToolTip(2, p.response)
            set_foreground(child, 3, score_colour(scores[first] if first else None))
            _mark_cut(child, p)
            if scores:
                every = f"Scores: {open_item.scores_text(scores, references)}   ({open_item.RUN_ONLY_NOTE})"
            elif references:
                every = "No per-item metric applies to this item (" + open_item.RUN_ONLY_NOTE + ")"
            else:
                every = "No reference answer: no metric scores this answer (people judge it: Arena, open verdicts)"
            child.setToolTip(3, every)
            line = QTreeWidgetItem([every, "", "", "", ""])
            set_foreground(line, 0, MUTED)
            child.addChild(line)
            expand.append((child, line))
            _add_turns(child, p.turns)
            _add_thought(child, p)
            top.addChild(child)
            if p.pass_ == 0 and (sight is None or sight.shows_run_result(run.id, item.id)):
                # First after the run's number: a long model spec elides the end of the row, never the score.
                top.setText(0, f"run {run.id} · {score} · {run.model_spec} · {run.strategy}")
                if first:
                    set_foreground(top, 0, score_colour(scores[first]))
        self.addTopLevelItem(top)
        top.setFirstColumnSpanned(True)
        top.setExpanded(True)
        for child, line in expand:
            line.setFirstColumnSpanned(True)
            child.setExpanded(True)
        _unfold_passes(top)

    def keyPressEvent(self, event) -> None:  # noqa: N802 — Qt's name
        """Space or Enter folds and unfolds the current row (a thought, a dialogue): in Review, Right and Left are
        the window's keys for the next and previous item, and + and - zoom the image."""
        row = self.currentItem()
        if (
            row is not None
            and (row.childCount() or row.data(0, THOUGHT_ROLE) is not None)
            and event.key() in (Qt.Key.Key_Space, Qt.Key.Key_Return, Qt.Key.Key_Enter)
        ):
            row.setExpanded(not row.isExpanded())
            return
        super().keyPressEvent(event)

    def _unfolded(self, row: QTreeWidgetItem) -> None:
        """A thought row opened: its lines written now, to the tree's width (a folded thought costs one row)."""
        if row.data(0, THOUGHT_ROLE) is not None:
            self._write_thought(row)

    def _write_thought(self, row: QTreeWidgetItem) -> None:
        # A line sits four steps in (the run's row is decorated too) and keeps a margin each side.
        width = self.viewport().width() - self.indentation() * 4 - 2 * self.fontMetrics().averageCharWidth()
        lines = wrap_to(row.data(0, THOUGHT_ROLE), lambda text: self.fontMetrics().horizontalAdvance(text), width)
        if [line.text(0) for line in _children(row)] == lines:
            return
        row.takeChildren()
        for text in lines:
            line = QTreeWidgetItem([text, "", "", "", ""])
            row.addChild(line)
            line.setFirstColumnSpanned(True)

    def resizeEvent(self, event) -> None:  # noqa: N802 — Qt's name
        super().resizeEvent(event)
        if event.size().width() != event.oldSize().width():  # the open thoughts' lines follow the width
            for row in self.thought_rows():
                if row.isExpanded():
                    self._write_thought(row)

    def thought_rows(self) -> list[QTreeWidgetItem]:
        """The "Thought (N words)" rows of the passes shown (tests, keyboard checks)."""
        found = []
        tops = (self.topLevelItem(i) for i in range(self.topLevelItemCount()))
        for top in (t for t in tops if t is not None):
            for pass_row in _children(top):
                found += [r for r in _children(pass_row) if r.data(0, THOUGHT_ROLE) is not None]
        return found


# A thinking model's pass (issue 36): its thought folded under it, shown exactly when its response is (the same
# branch of the blind rule); a pass the token budget cut off says so rather than pass for a plain wrong answer.
CUT_MARK = "✂"
CUT_IN_THOUGHT = "(cut off in the thought)"
CUT_TIPS = {
    True: "Cut off by the token budget inside the thought: the model gave no answer. Counted wrong; never retried.",
    False: "Cut off by the token budget after the thought: the answer was read as usual.",
}
THOUGHT_ROLE = Qt.ItemDataRole.UserRole + 7  # a thought row's data: the whole thought


def _children(row: QTreeWidgetItem) -> list[QTreeWidgetItem]:
    return [child for i in range(row.childCount()) if (child := row.child(i)) is not None]


def _mark_cut(row: QTreeWidgetItem, p) -> None:
    """A pass the token budget ended: marked in its Pass column, why in the tooltip, in the pending colour."""
    if not p.truncated:
        return
    inside = p.stage == CUT_INSIDE.stage
    row.setText(0, f"{row.text(0)} {CUT_MARK}")  # short: the Pass column is as wide as its longest label
    for column in (0, 4) if inside else (0,):
        row.setToolTip(column, CUT_TIPS[inside])
    if not inside:  # the answer read as usual: said where the reading is
        row.setToolTip(3, f"{row.toolTip(3)}\n{CUT_TIPS[False]}")
        set_foreground(row, column, PENDING)
    if inside:
        set_foreground(row, 2, MUTED)


def _add_thought(pass_row: QTreeWidgetItem, p) -> None:
    """The pass's thought under its row, folded: a "Thought (1,234 words)" row whose lines are written to the tree's
    width when it is opened (click its arrow, or Space / Enter on it, PredictionsView.keyPressEvent); the start of
    the thought in its tooltip."""
    if not p.thought:
        return
    words = len(p.thought.split())
    row = QTreeWidgetItem([f"Thought ({words:,} word{'' if words == 1 else 's'})", "", "", "", ""])
    row.setData(0, THOUGHT_ROLE, p.thought)
    row.setChildIndicatorPolicy(QTreeWidgetItem.ChildIndicatorPolicy.ShowIndicator)
    row.setToolTip(0, p.thought[:2000] + ("…" if len(p.thought) > 2000 else ""))
    set_foreground(row, 0, MUTED)
    pass_row.addChild(row)


def wrap_to(text: str, advance, width: int) -> list[str]:
    """`text` in lines no wider than `width` by `advance` (a font's horizontalAdvance), words kept whole (a word
    wider than the line has a line of its own), its own line breaks kept."""
    lines = []
    for paragraph in text.splitlines() or [""]:
        line = ""
        for word in paragraph.split():
            longer = f"{line} {word}" if line else word
            if line and advance(longer) > width:
                lines.append(line)
                line = word
            else:
                line = longer
        lines.append(line)
    return lines


def _unfold_passes(top: QTreeWidgetItem) -> None:
    """A pass with a thought is shown open, its thought row folded: the thought is one step (a click or Right) away.
    Spanning is set once the rows are in the tree (Qt ignores it before)."""
    for pass_row in _children(top):
        thoughts = [r for r in _children(pass_row) if r.data(0, THOUGHT_ROLE) is not None]
        for row in thoughts:
            row.setFirstColumnSpanned(True)
        if thoughts:
            pass_row.setExpanded(True)


def _add_turns(pass_row: QTreeWidgetItem, turns) -> None:
    """A multi-turn pass's dialogue under its row, one turn per line (expand the pass to read it): the asking LLM's
    sub-questions and reasoning, the model's answers. Shown exactly when the pass's response is."""
    if not turns:
        return
    pass_row.setText(0, f"{pass_row.text(0)} · {len(turns)} turns")
    for n, turn in enumerate(turns, 1):
        row = QTreeWidgetItem([f"{n}. {turn.role}", "", " ".join(turn.text.split()), "", ""])
        row.setToolTip(2, turn.text)
        if turn.role == "asker":
            set_foreground(row, 0, MUTED)
        pass_row.addChild(row)


class HistoryView(QTreeWidget):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.setHeaderLabels(["When (UTC)", "Annotator", "Verdict", "Note"])
        self.setRootIsDecorated(False)
        self.setAlternatingRowColors(True)
        header = self.header()
        for i in range(3):
            header.setSectionResizeMode(i, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(3, QHeaderView.ResizeMode.Stretch)

    def show_history(self, history, *, hidden_others: bool = False, kind: ItemKind | None = None) -> None:
        """The review log, newest first; `hidden_others`: other annotators' rows were left out (blind mode);
        `kind`: the item's, which words the verdicts (an open item's wrong key is a wrong reference)."""
        self.clear()
        if hidden_others:
            note = QTreeWidgetItem(["Other annotators' verdicts are hidden until yours (blind mode)", "", "", ""])
            set_foreground(note, 0, MUTED)
            self.addTopLevelItem(note)
            note.setFirstColumnSpanned(True)
        by_uuid = {r.uuid: r for r in history if r.uuid}
        for r in reversed(history):
            verdict = "undo" if r.verdict == "undo" else verdict_label(r.verdict, kind)
            if r.corrected_answer:
                verdict += f" → {r.corrected_answer}"
            text = r.note or ""
            target = by_uuid.get(r.withdraws or "")
            if r.verdict == "undo" and target is not None:  # what was undone, not the stored "withdraws review 10"
                what = verdict_label(target.verdict, kind)
                text = f"withdraws {what} of {target.created_at[:19].replace('T', ' ')}"
            row = QTreeWidgetItem([r.created_at[:19].replace("T", " "), r.annotator, verdict, text])
            whole = f"{r.annotator}: {verdict}" + (f" — {text}" if text else "")
            for column in range(4):  # a narrow pane elides the note: the whole entry is every cell's tooltip
                row.setToolTip(column, whole)
            if r.verdict == "undo":
                font = QFont(row.font(2))
                font.setItalic(True)
                row.setFont(2, font)
                set_foreground(row, 2, MUTED)
            self.addTopLevelItem(row)
        if not history and not hidden_others:
            empty = QTreeWidgetItem(["Not reviewed yet", "", "", ""])
            set_foreground(empty, 0, MUTED)
            self.addTopLevelItem(empty)


def item_kind(ws, bench, item) -> ItemKind:
    """The item's kind: its benchmark's, the one shown when it is the item's, else read (reviews.item_kind)."""
    from annotation import reviews

    if bench is not None and bench.id == item.benchmark_id:
        return kind_of(bench.kind)
    return reviews.item_kind(ws, item.id)[0]


def show_item_details(ctx, item, *, panel: ItemPanel, predictions: PredictionsView, history: HistoryView, tabs=None):
    """One item in a panel, its predictions and its review history, as the blind rule lets the session's annotator
    see them (Browse and Review both show items through here). Returns the Sight used."""
    from annotation import reviews
    from db import item_query

    if item is None:
        panel.show_item(None)
        predictions.show_predictions(None, [])
        history.show_history([])
        return None
    sight = ctx.sight(item_ids=[item.id])
    revealed = sight.reveals(item.id)
    bench = ctx.benchmark
    kind = item_kind(ctx.ws, bench, item)
    panel.show_item(
        item,
        bench_name=bench.name if bench else "",
        blind=sight.blind,
        reveal=revealed,
        kind=kind,
        live_arena=bool(bench and bench.meta.get("live_arena")),
    )
    predictions.show_predictions(
        item,
        item_query.item_predictions(ctx.ws, item.id, ctx.runs) if revealed else [],
        sight=sight,
        kind=kind,
        benchmark=bench,
    )
    log = reviews.history(ctx.ws, item.id)
    shown = sight.visible_history(item.id, log)
    history.show_history(shown, hidden_others=not revealed, kind=kind)  # said whether or not others judged it
    if tabs is not None and (i := tabs.indexOf(predictions)) >= 0:
        tabs.setTabText(i, "Predictions" if revealed else PREDICTIONS_HIDDEN)
        tabs.setTabToolTip(i, "" if revealed else "Blind mode: the runs' answers show once your verdict stands")
    return sight
