"""The Arena tab: blind votes between two runs' answers to an open question, live battles (gui/live_arena_view.py),
and the leaderboard they make.

Voting (annotation/arena.py does the work): the image, the question and the two answers side by side as plain text
(long answers scroll); the models stay hidden until this annotator's vote on the pair is committed, then the status
line names them. Keys: 1 left better, 2 right better, 3 tie, 4 both bad, S skip (nothing stored; the pair comes
back next session), Ctrl+Z undo (withdraws my latest vote and shows that pair again: a new vote is the correction),
E note. Keys are off while the note has the focus. Nobody else's votes show here (the blind rule); the Leaderboard
mixes everyone's votes, so blind mode hides it like every score.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QApplication,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QSizePolicy,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from annotation import arena
from db import catalog
from gui.charts import BlindCover, ChartView, message_figure
from gui.empty_states import DEMO, DRAW_PAIRS, START_RUN, EmptyState
from gui.image_view import ImageView
from gui.review_view import NoteEdit, typing_in
from gui.tables import one_line_header

VOTE_KEYS = (
    ("left", "1", "1  Left is better"),
    ("right", "2", "2  Right is better"),
    ("tie", "3", "3  Tie"),
    ("bothbad", "4", "4  Both bad"),
)
VOTE_WORDS = {"left": "left better", "right": "right better", "tie": "tie", "bothbad": "both bad"}
HIDDEN_MODEL = "model hidden until you vote"
LEADERBOARD_ROUNDS = 200  # bootstrap rounds in the app (the command line's --bootstrap goes further)


def battle_body(top: QWidget, left: QWidget, right: QWidget) -> QSplitter:
    """An arena page's body: what was asked above, the two answers side by side below."""
    answers = QSplitter(Qt.Orientation.Horizontal)
    answers.addWidget(left)
    answers.addWidget(right)
    body = QSplitter(Qt.Orientation.Vertical)
    body.addWidget(top)
    body.addWidget(answers)
    body.setStretchFactor(0, 2)
    body.setStretchFactor(1, 3)
    return body


def vote_buttons(vote: Callable[[str], object]) -> tuple[dict[str, QPushButton], QHBoxLayout]:
    """The four vote buttons in a row, each calling vote(its vote); they never take the focus (the keys are the
    page's)."""
    buttons: dict[str, QPushButton] = {}
    row = QHBoxLayout()
    for name, _, caption in VOTE_KEYS:
        button = QPushButton(caption)
        button.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        button.clicked.connect(lambda _=False, v=name: vote(v))
        buttons[name] = button
        row.addWidget(button)
    return buttons, row


class AnswerPane(QWidget):
    def __init__(self, side: str, parent=None):
        super().__init__(parent)
        self.side = side
        self.title = QLabel()
        self.title.setObjectName("sectionTitle")
        # A long model name or the live page's state wraps and never widens the window (a path is one long word).
        self.title.setWordWrap(True)
        self.title.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.text = QPlainTextEdit()  # plain: Markdown-ish answers are shown as written, never rendered
        self.text.setReadOnly(True)
        self.text.setFocusPolicy(Qt.FocusPolicy.NoFocus)  # scrolls with the wheel; the keys stay the arena's
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.title)
        layout.addWidget(self.text, 1)
        self.show_answer("", None)

    def show_answer(self, text: str, model: str | None) -> None:
        self.title.setText(f"{self.side} — {model or HIDDEN_MODEL}")
        self.text.setPlainText(text)


class VotePanel(QWidget):
    voteSaved = Signal(object)  # arena.ArenaVote
    keyIgnored = Signal(str)

    def __init__(self, ctx, parent=None):
        super().__init__(parent)
        self.ctx = ctx
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.pair: arena.Pair | None = None
        self.sha: str | None = None  # the image of the pair shown
        self.skipped: list[int] = []  # pair ids skipped this session: asked again after the others
        self.shown_at = time.monotonic()
        self.empty = EmptyState(self, ctx, "arena")
        self.progress = QLabel()
        self.progress.setObjectName("muted")
        self.saved = QLabel()
        self.saved.setWordWrap(True)
        self.image = ImageView()
        self.question = QPlainTextEdit()
        self.question.setReadOnly(True)
        self.question.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.question.setMaximumHeight(110)
        self.left = AnswerPane("Left")
        self.right = AnswerPane("Right")
        top = QWidget()
        top_layout = QVBoxLayout(top)
        top_layout.setContentsMargins(0, 0, 0, 0)
        top_layout.addWidget(self.image, 1)
        top_layout.addWidget(self.question)
        body = battle_body(top, self.left, self.right)
        self.buttons, row = vote_buttons(self.vote)
        for caption, slot in (("S  Skip", self.skip), ("Ctrl+Z  Undo", self.undo)):
            button = QPushButton(caption)
            button.setFocusPolicy(Qt.FocusPolicy.NoFocus)
            button.clicked.connect(slot)
            row.addWidget(button)
        self.note = NoteEdit()
        self.note.setPlaceholderText("Note for the next vote (E to write, Enter/Esc to leave)")
        self.note.done.connect(self.setFocus)
        layout = QVBoxLayout(self)
        layout.addWidget(self.progress)
        layout.addWidget(body, 1)
        layout.addLayout(row)
        layout.addWidget(self.note)
        layout.addWidget(self.saved)
        self.shortcuts: list[QShortcut] = []
        keys = [(key, vote) for vote, key, _ in VOTE_KEYS] + [("S", "skip"), ("Ctrl+Z", "undo"), ("E", "note")]
        for key, action in keys:
            sc = QShortcut(QKeySequence(key), self)
            sc.setContext(Qt.ShortcutContext.WindowShortcut)  # enabled only while the panel is shown
            sc.setEnabled(False)
            sc.activated.connect(lambda a=action: self.on_key(a))
            self.shortcuts.append(sc)
        ctx.loader.loaded.connect(self._image_loaded)

    # -- showing
    def showEvent(self, event) -> None:
        super().showEvent(event)
        for sc in self.shortcuts:
            sc.setEnabled(True)

    def hideEvent(self, event) -> None:
        super().hideEvent(event)
        for sc in self.shortcuts:
            sc.setEnabled(False)

    def _bench(self):
        bench = self.ctx.benchmark
        return bench if bench is not None and bench.kind == "open" else None

    def reload(self, pair_id: int | None = None) -> None:
        """Show `pair_id`, or the next pair left for this annotator (skipped ones last)."""
        bench = self._bench()
        if bench is None:
            self._empty(
                "Choose an open benchmark",
                "The arena compares two runs' answers to open questions (no options). Choose an open benchmark in "
                "Benchmarks — the demo's is demo-open —, run two or more models on it, then draw pairs.",
                # The demo only where the workspace has no open benchmark yet (else choosing one is the step).
                ((DEMO,) if not any(b.kind == "open" for b in catalog.list_benchmarks(self.ctx.ws)) else ())
                + (START_RUN, DRAW_PAIRS),
            )
            return
        who = self.ctx.annotator
        done = arena.progress(self.ctx.ws, bench.id, who)
        self.progress.setText(
            f"{bench.name} · {done['pairs']} pairs · {done['voted']} voted by you · {done['left']} left for you"
        )
        if pair_id is None:
            pair = arena.next_left(self.ctx.ws, bench.id, who, after=self.pair, later=self.skipped)
        else:
            pair = arena.get_pair(self.ctx.ws, pair_id)
        if pair is None:
            if done["pairs"]:
                self._empty("Nothing left for you", f"You have voted on every pair of {bench.name}'s arena.")
            else:
                self._empty(
                    "No pairs drawn yet",
                    f"Run two or more models on {bench.name}, then draw pairs of their answers to vote on "
                    f"(vlmdesk arena pairs --bench {bench.name} --runs ID ID …).",
                    (START_RUN, DRAW_PAIRS),
                )
            return
        self.empty.hide()
        self._show(pair)

    def _empty(self, title: str, text: str, actions: tuple[tuple[str, str], ...] = ()) -> None:
        """Nothing to vote on: a card that says why and offers what fills the queue (no empty image and answers)."""
        self.empty.show_state(title, text, actions)
        self.pair = None
        self.question.setPlainText("")
        self.left.show_answer("", None)
        self.right.show_answer("", None)
        self.image.set_image(None, placeholder="")
        for button in self.buttons.values():
            button.setEnabled(False)
        if self._bench() is None:
            self.progress.setText("")

    def _show(self, pair: arena.Pair) -> None:
        self.pair = pair
        shown = arena.shown(self.ctx.ws, pair)
        self.question.setPlainText(
            shown.item.question if not shown.item.hint else f"{shown.item.hint}\n\n{shown.item.question}"
        )
        # Names only once this annotator's votes stand on every pair of the item (annotation/arena.py).
        named = arena.models_revealed(self.ctx.ws, pair, self.ctx.annotator)
        self.left.show_answer(shown.left_answer, shown.left_model if named else None)
        self.right.show_answer(shown.right_answer, shown.right_model if named else None)
        for button in self.buttons.values():
            button.setEnabled(True)
        sha = self.sha = shown.item.image_sha256
        cached = self.ctx.loader.cached(sha) if sha else None
        self.image.set_image(cached, sha, placeholder="Loading image…" if sha else "No image")
        if sha and cached is None:
            self.ctx.loader.request(sha)
        self.shown_at = time.monotonic()

    def _image_loaded(self, sha: str, image) -> None:
        if self.pair is not None and sha == self.sha and not self.image.has_image():
            self.image.set_image(image, sha)

    # -- acting
    def on_key(self, action: str) -> None:
        if typing_in(QApplication.focusWidget()):
            self.keyIgnored.emit("Keys are off while the note has the focus (Enter or Esc leaves it)")
            return
        if action == "skip":
            self.skip()
        elif action == "undo":
            self.undo()
        elif action == "note":
            self.note.setFocus()
        else:
            self.vote(action)

    def vote(self, vote: str) -> None:
        if self.pair is None:
            self.keyIgnored.emit("No pair to vote on here")
            return
        who = self.ctx.annotator
        if not who:
            self.keyIgnored.emit("Set your annotator name first (File › Annotator…)")
            return
        pair = self.pair
        saved = arena.add_vote(
            self.ctx.ws,
            pair.id,
            who,
            vote,  # type: ignore[arg-type]  # VOTE_KEYS names votes only
            note=self.note.text().strip() or None,
            seconds=round(time.monotonic() - self.shown_at, 1),
        )
        self.note.clear()
        self.saved.setText(f"Saved: {VOTE_WORDS[vote]} — {self._reveal(pair)} Ctrl+Z withdraws it.")
        if pair.id in self.skipped:
            self.skipped.remove(pair.id)
        self.voteSaved.emit(saved)
        self.reload()

    def _reveal(self, pair: arena.Pair) -> str:
        """Who wrote what, for every pair of the item once all of them have this annotator's vote; until then the
        same run's answer waits in another pair of the item, so nobody is named."""
        who = self.ctx.annotator
        if not arena.models_revealed(self.ctx.ws, pair, who):
            return "the models are named once you have voted on every pair of this question."
        siblings = arena.item_pairs(self.ctx.ws, pair.item_id)
        named = [(arena.shown(self.ctx.ws, p), p.id == pair.id) for p in [pair, *(p for p in siblings if p != pair)]]
        parts = [
            f"{'' if this else 'in its other pair, '}left was {s.left_model}, right was {s.right_model}"
            for s, this in named
        ]
        return "; ".join(parts) + "."

    def forget_annotator(self) -> None:
        """Another name signs now: the previous annotator's saved line (it names models) and skips go."""
        self.saved.setText("")
        self.skipped = []
        self.pair = None

    def skip(self) -> None:
        if self.pair is not None:
            self.skipped = [p for p in self.skipped if p != self.pair.id] + [self.pair.id]
            self.saved.setText("Skipped (nothing stored); it comes again after the others.")
            self.reload()

    def undo(self) -> None:
        bench = self._bench()
        who = self.ctx.annotator
        withdrawn = arena.undo_last(self.ctx.ws, who, benchmark_id=bench.id) if bench is not None and who else None
        if withdrawn is None:
            self.keyIgnored.emit("No vote of yours to undo here")
            return
        self.saved.setText(f"Withdrew your vote ({VOTE_WORDS.get(withdrawn.vote, withdrawn.vote)}); vote again.")
        self.reload(withdrawn.pair_id)


class LeaderboardPanel(QWidget):
    COLUMNS = ("Rank", "Model", "Rating", "95 % interval", "Votes", "Wins", "Ties", "Losses", "Elo")

    def __init__(self, ctx, parent=None):
        super().__init__(parent)
        self.ctx = ctx
        self.summary = QLabel()
        self.summary.setObjectName("muted")
        self.table = QTableWidget(0, len(self.COLUMNS))
        self.table.setHorizontalHeaderLabels(self.COLUMNS)
        self.table.verticalHeader().hide()
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        one_line_header(self.table).setStretchLastSection(True)
        self.chart = ChartView()
        content = QSplitter(Qt.Orientation.Vertical)
        content.addWidget(self.table)
        content.addWidget(self.chart)
        content.setStretchFactor(1, 2)
        inner = QWidget()
        layout = QVBoxLayout(inner)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.summary)
        layout.addWidget(content, 1)
        self.cover = BlindCover(inner, "Arena ratings")
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.addWidget(self.cover)

    def reload(self) -> None:
        from evaluator.analysis.plots import leaderboard_figure
        from evaluator.analysis.ratings import leaderboard

        self.cover.set_hidden(self.ctx.prefs.blind)
        if self.ctx.prefs.blind:
            return
        bench = self.ctx.benchmark
        battles = arena.battles(self.ctx.ws, bench.id if bench is not None and bench.kind == "open" else None)
        if not battles:
            self.summary.setText("No votes yet: vote in the Vote tab, or import votes (vlmdesk arena import-votes).")
            self.table.setRowCount(0)
            self.table.resizeColumnsToContents()  # the titles whole (a default width cut "95 % interval")
            self.chart.set_figure(message_figure("No arena votes yet"), clickable=False)
            return
        board = leaderboard(battles, LEADERBOARD_ROUNDS, 0)
        where = bench.name if bench is not None and bench.kind == "open" else "every benchmark"
        self.summary.setText(
            f"{board.battles} votes on {where}: Bradley–Terry ratings with bootstrap 95 % intervals "
            f"({board.rounds} rounds), online Elo beside them"
        )
        self.table.setRowCount(len(board.models))
        for r, m in enumerate(board.models):
            cells = (
                str(m.rank),
                m.model,
                f"{m.rating:.1f}",
                f"{m.lower:.1f} – {m.upper:.1f}",
                str(m.votes),
                str(m.wins),
                str(m.ties),
                str(m.losses),
                f"{m.elo:.1f}",
            )
            for c, text in enumerate(cells):
                cell = QTableWidgetItem(text)
                if c != 1:
                    cell.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                self.table.setItem(r, c, cell)
        self.table.resizeColumnsToContents()
        self.chart.set_figure(leaderboard_figure(board), "Leaderboard", clickable=False)


class ArenaView(QWidget):
    """The Arena tab: Vote and Leaderboard."""

    keyIgnored = Signal(str)

    def __init__(self, ctx, parent=None):
        super().__init__(parent)
        self.ctx = ctx
        from gui.live_arena_view import LivePanel  # it builds on this module's panes

        self.vote = VotePanel(ctx)
        self.live = LivePanel(ctx)
        self.board = LeaderboardPanel(ctx)
        self.vote.keyIgnored.connect(self.keyIgnored)
        self.live.keyIgnored.connect(self.keyIgnored)
        self.live.battleStored.connect(lambda _: ctx.runsChanged.emit())  # its runs may be new
        self.inner = QTabWidget()
        self.inner.addTab(self.vote, "Vote")
        self.inner.addTab(self.live, "Live")
        self.inner.addTab(self.board, "Leaderboard")
        self.inner.currentChanged.connect(lambda _: self.refresh())
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.inner)
        ctx.benchmarkChanged.connect(self._benchmark_changed)
        ctx.prefsChanged.connect(self.refresh)
        ctx.sightChanged.connect(self._sight_changed)
        self.refresh()

    def _sight_changed(self, new_annotator: bool) -> None:
        if new_annotator:  # the window then reloads the visible tab (this one when next shown)
            self.vote.forget_annotator()
            self.live.forget_annotator()

    def _benchmark_changed(self) -> None:
        self.vote.skipped = []
        if self.isVisible():
            self.refresh()

    def refresh(self) -> None:
        if self.inner.currentWidget() is self.live:
            return  # a live battle is what the person is doing: nothing on it comes from elsewhere
        if self.inner.currentWidget() is self.board:
            self.board.reload()
        elif self.vote.pair is None or self.vote.pair.benchmark_id != getattr(self.ctx.benchmark, "id", None):
            self.vote.reload()
        else:
            pair = self.vote.pair
            self.vote.reload(pair.id if arena.is_left(self.ctx.ws, pair.id, self.ctx.annotator) else None)

    def showEvent(self, event) -> None:
        super().showEvent(event)
        self.refresh()

    def shutdown(self) -> None:
        self.live.shutdown()
