"""The Arena tab's Live page: ask anything about an image; two saved models drawn by matchmaking answer side by side,
anonymous; vote 1-4 (annotation/live_arena.py does the work, docs/adr/0037).

Each model answers in a worker process (`vlmdesk arena answer`, gui/processes.py), so the window never waits for a
model and a crash cannot take it down; local models one after the other (one GPU), servers side by side. A backend
that streams shows its text as it grows, any other its answer when done, and the pane says which. The battle is
stored only when both answers are in (one transaction); a failure says so in one line and stores nothing. The models
are named once the vote is committed (a live battle is its item's only pair).
"""

from __future__ import annotations

import time
from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QImage, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QApplication,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from annotation import arena, live_arena
from db import catalog, models
from db.errors import UserError
from evaluator.engine.live import LiveAnswer
from evaluator.formats.importers.common import sha256_bytes
from gui.arena_view import VOTE_KEYS, VOTE_WORDS, AnswerPane, battle_body, vote_buttons
from gui.file_dialogs import open_file
from gui.image_view import ImageView
from gui.processes import CommandProcess
from gui.review_view import typing_in

IMAGE_FILTER = "Images (*.png *.jpg *.jpeg *.webp *.bmp *.gif *.tif *.tiff);;All files (*)"
SIDES = ("left", "right")


class DropImageView(ImageView):
    """The image view, taking a file dropped on it."""

    fileDropped = Signal(str)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setAcceptDrops(True)

    def _local_file(self, event) -> str | None:
        urls = event.mimeData().urls() if event.mimeData().hasUrls() else []
        return urls[0].toLocalFile() or None if len(urls) == 1 and urls[0].isLocalFile() else None

    def dragEnterEvent(self, event) -> None:
        if self._local_file(event):
            event.acceptProposedAction()
        else:
            event.ignore()

    def dragMoveEvent(self, event) -> None:
        self.dragEnterEvent(event)

    def dropEvent(self, event) -> None:
        path = self._local_file(event)
        if path:
            event.acceptProposedAction()
            self.fileDropped.emit(path)


class LivePanel(QWidget):
    battleStored = Signal(object)  # live_arena.Battle
    voteSaved = Signal(object)  # arena.ArenaVote
    keyIgnored = Signal(str)

    def __init__(self, ctx, parent=None):
        super().__init__(parent)
        self.ctx = ctx
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.image_path: str | None = None
        self.image_data: bytes | None = None
        self.asked: tuple[bytes, str, int] | None = None  # image, question and seed of the battle being answered
        self.specs: dict[str, str] = {}
        self.jobs: dict[str, CommandProcess] = {}
        self.answers: dict[str, LiveAnswer] = {}
        self.texts: dict[str, str] = {}
        self.streams: dict[str, bool | None] = {}
        self.problems: dict[str, str] = {}  # why a side's answer was not taken, when the worker did not say
        self.battle: live_arena.Battle | None = None
        self.voted = False
        self.shown_at = time.monotonic()

        self.image = DropImageView()
        self.image.set_image(None, placeholder="Drop an image")
        self.image.fileDropped.connect(self.set_image_file)
        self.question = QPlainTextEdit()
        self.question.setPlaceholderText("Ask anything about the image (Ctrl+Enter asks two models)")
        self.choose = QPushButton("Choose image…")
        self.choose.clicked.connect(self._choose)
        self.ask_button = QPushButton("Ask two models  Ctrl+Enter")
        self.ask_button.setObjectName("primary")
        self.ask_button.clicked.connect(self.ask)
        self.status = QLabel(
            "Two saved models (Models tab), drawn by matchmaking, answer anonymously; you vote, then see who."
        )
        self.status.setWordWrap(True)
        self.status.setObjectName("muted")
        actions = QHBoxLayout()
        actions.addWidget(self.choose)
        actions.addWidget(self.ask_button)
        actions.addStretch(1)
        ask_side = QWidget()
        ask_layout = QVBoxLayout(ask_side)
        ask_layout.setContentsMargins(0, 0, 0, 0)
        ask_layout.addWidget(self.question, 1)
        ask_layout.addLayout(actions)
        ask_layout.addWidget(self.status)
        top = QSplitter(Qt.Orientation.Horizontal)
        top.addWidget(self.image)
        top.addWidget(ask_side)
        top.setStretchFactor(0, 2)
        top.setStretchFactor(1, 3)
        self.left = AnswerPane("Left")
        self.right = AnswerPane("Right")
        self.panes = {"left": self.left, "right": self.right}
        body = battle_body(top, self.left, self.right)
        self.buttons, row = vote_buttons(self.vote)
        for button in self.buttons.values():
            button.setEnabled(False)  # until both answers are in
        self.saved = QLabel()
        self.saved.setWordWrap(True)
        layout = QVBoxLayout(self)
        layout.addWidget(body, 1)
        layout.addLayout(row)
        layout.addWidget(self.saved)
        self.shortcuts: list[QShortcut] = []
        keys = [(key, vote) for vote, key, _ in VOTE_KEYS] + [("Ctrl+Return", "ask"), ("Ctrl+Enter", "ask")]
        for key, action in keys:
            sc = QShortcut(QKeySequence(key), self)
            sc.setContext(Qt.ShortcutContext.WindowShortcut)  # enabled only while the page is shown
            sc.setEnabled(False)
            sc.activated.connect(lambda a=action: self.on_key(a))
            self.shortcuts.append(sc)

    def showEvent(self, event) -> None:
        super().showEvent(event)
        for sc in self.shortcuts:
            sc.setEnabled(True)
        if self.battle is None and not self.busy() and self.image_data is None:
            self._hint()

    def _hint(self) -> None:
        """What to do first: save models when fewer than two are saved, else choose an image."""
        saved = len({m.spec for m in models.list_models(self.ctx.ws)})
        self.status.setText(
            f"The live arena draws two saved models; {saved} saved so far: add models in the Models tab first."
            if saved < 2
            else f"Drop or choose an image and ask; two of the {saved} saved models, drawn by matchmaking, answer "
            "anonymously; you vote, then see who."
        )

    def hideEvent(self, event) -> None:
        super().hideEvent(event)
        for sc in self.shortcuts:
            sc.setEnabled(False)

    # -- the question
    def _choose(self) -> None:
        path = open_file(self, "Image to ask about", str(Path.home()), IMAGE_FILTER)
        if path:
            self.set_image_file(path)

    def set_image_file(self, path: str) -> bool:
        """Read (bounded, checked) and show an image file; False with the reason in the status line."""
        try:
            data = live_arena.read_image(path)
        except UserError as exc:
            self.status.setText(f"✗ {exc}")
            return False
        self.image_path, self.image_data = path, data
        self.image.set_image(QImage.fromData(data), sha256_bytes(data))
        self.status.setText(f"Image: {Path(path).name}. Type a question and ask (Ctrl+Enter).")
        return True

    def busy(self) -> bool:
        return any(job.running() for job in self.jobs.values())

    def ask(self) -> None:
        """Draw two models and start their answers (nothing is stored until both are in)."""
        if self.busy():
            self.keyIgnored.emit("The models are still answering")
            return
        if self.image_data is None or self.image_path is None:
            self.status.setText("✗ Choose or drop an image first.")
            return
        try:
            question = live_arena.check_question(self.question.toPlainText())
            seed = self._next_seed()
            pair = live_arena.match(self.ctx.ws, seed)
        except UserError as exc:
            self.status.setText(f"✗ {exc}")
            return
        self.asked = (self.image_data, question, seed)
        self.specs = dict(zip(SIDES, pair))
        self.answers, self.texts, self.streams, self.jobs, self.problems = {}, {}, {}, {}, {}
        self.battle, self.voted = None, False
        self.saved.setText("")
        for button in self.buttons.values():
            button.setEnabled(False)
        self.jobs = {side: self._job(side, question) for side in SIDES}
        # Local models one after the other (one GPU, one model in memory at a time); servers side by side.
        local = any(spec.startswith("hf:") for spec in self.specs.values())
        self.status.setText("Two models drawn by matchmaking are answering…")
        self.jobs["left"].start()
        if not local:
            self.jobs["right"].start()
        for side in SIDES:
            self._show_pane(side)

    def _next_seed(self) -> int:
        """The n-th live battle's matchmaking seed is n: the draw is reproducible from the workspace."""
        bench = live_arena.live_benchmark(self.ctx.ws)
        return arena.pair_count(self.ctx.ws, bench.id) if bench is not None else 0

    def _job(self, side: str, question: str) -> CommandProcess:
        assert self.image_path is not None
        args = ["arena", "answer", "--model", self.specs[side], "--image", self.image_path, "--question", question]
        job = CommandProcess(str(self.ctx.ws.path), args, self)
        job.event.connect(lambda event, s=side: self._event(s, event))
        job.done.connect(lambda s=side: self._done(s))
        return job

    def _event(self, side: str, event: dict) -> None:
        kind = event.get("event")
        if kind == "loaded":
            self.streams[side] = bool(event.get("streams"))
        elif kind == "text" and isinstance(event.get("text"), str):
            self.texts[side] = event["text"]
        elif kind == "answer":
            try:
                self.answers[side] = LiveAnswer(
                    self.specs[side],
                    str(event["text"]),
                    float(event["latency_ms"]),
                    dict(event["backend"]),
                    bool(event["streamed"]),
                )
            except (KeyError, TypeError, ValueError):
                return
            if self.asked is not None and event.get("image_sha256") != sha256_bytes(self.asked[0]):
                del self.answers[side]  # not the image this battle shows and stores
                self.problems[side] = "the image file changed while it answered"
            else:
                self.texts[side] = self.answers[side].text
        self._show_pane(side)

    def _show_pane(self, side: str) -> None:
        pane, job = self.panes[side], self.jobs.get(side)
        streams = self.streams.get(side)
        how = "" if streams is None else " · streamed" if streams else " · shown when done (no streaming)"
        if side in self.answers:
            state = "answered"
        elif job is not None and job.running():
            state = "answering" if streams is not None else "loading the model"
        elif job is not None and not job.finished and self.asked is not None:
            state = "waiting for the other model"
        else:
            state = ""
        model = self.specs.get(side) if self.voted else None
        pane.show_answer(self.texts.get(side, ""), model)
        if state:
            pane.title.setText(f"{pane.title.text()} · {state}{how}")

    def _done(self, side: str) -> None:
        job = self.jobs.get(side)
        if job is None:
            return
        if side not in self.answers:
            self._failed(side, job)
            return
        self._show_pane(side)
        other = "right" if side == "left" else "left"
        if other not in self.answers:
            if not self.jobs[other].running() and not self.jobs[other].finished:
                self.jobs[other].start()
                self._show_pane(other)
            return
        self._store()

    def _failed(self, side: str, job: CommandProcess) -> None:
        for other in self.jobs.values():
            other.kill()
        lines = [line for line in job.stderr.strip().splitlines() if line.strip()]
        said = lines[-1] if lines else "the process crashed" if job.crashed else f"exit code {job.exit_code}"
        why = self.problems.get(side) or job.error or said
        self.status.setText(f"✗ The {side} model failed: {why[:300]}. Nothing was stored; ask again.")
        self.asked = None
        for s in SIDES:
            self._show_pane(s)

    def _store(self) -> None:
        if self.asked is None:
            return
        image, question, seed = self.asked
        try:
            battle = live_arena.record_battle(
                self.ctx.ws, image, question, self.answers["left"], self.answers["right"], seed=seed
            )
        except UserError as exc:
            self.status.setText(f"✗ {exc}. Nothing was stored.")
            return
        self.battle, self.asked = battle, None
        for button in self.buttons.values():
            button.setEnabled(True)
        self.status.setText(f"Both answered (pair {battle.pair.id} of {live_arena.LIVE_BENCH}). Vote 1-4.")
        self.setFocus()  # out of the question box, so 1-4 vote at once
        self.shown_at = time.monotonic()
        self.battleStored.emit(battle)
        self.ctx.benchmarksChanged.emit()  # the live benchmark (made by the first battle) and its new item

    def show_last(self) -> bool:
        """Show the workspace's latest live battle (models named only after this annotator's vote); False when
        there is none. A new question needs an image chosen again."""
        ws = self.ctx.ws
        bench = live_arena.live_benchmark(ws)
        queue = arena.pairs(ws, bench.id) if bench is not None else []
        if not queue or self.busy():
            return False
        pair = queue[-1]
        shown = arena.shown(ws, pair)
        found = catalog.image_bytes(ws, shown.item.image_sha256) if shown.item.image_sha256 else None
        self.image_path, self.image_data = None, None
        self.image.set_image(QImage.fromData(found[0]) if found else None, shown.item.image_sha256)
        self.question.setPlainText(shown.item.question)
        self.specs = {"left": shown.left_model, "right": shown.right_model}
        self.answers = {
            "left": LiveAnswer(shown.left_model, shown.left_answer, 0.0, {}, False),
            "right": LiveAnswer(shown.right_model, shown.right_answer, 0.0, {}, False),
        }
        self.texts = {side: a.text for side, a in self.answers.items()}
        self.jobs, self.streams, self.asked = {}, {}, None
        self.battle = live_arena.Battle(pair, pair.item_id, self.answers["left"], self.answers["right"])
        self.voted = arena.models_revealed(ws, pair, self.ctx.annotator)
        for button in self.buttons.values():
            button.setEnabled(not self.voted)
        for side in SIDES:
            self._show_pane(side)
        self.status.setText(
            f"The latest live battle (pair {pair.id} of {live_arena.LIVE_BENCH}). Choose or drop an image to ask anew."
        )
        return True

    # -- the vote
    def on_key(self, action: str) -> None:
        if action == "ask":
            self.ask()
            return
        if typing_in(QApplication.focusWidget()):
            self.keyIgnored.emit("Keys are off while the question has the focus (Esc or click elsewhere)")
            return
        self.vote(action)

    def vote(self, vote: str) -> None:
        battle = self.battle
        if battle is None or self.voted:
            self.keyIgnored.emit("No battle to vote on: ask a question first")
            return
        who = self.ctx.annotator
        if not who:
            self.keyIgnored.emit("Set your annotator name first (File › Annotator…)")
            return
        saved = arena.add_vote(
            self.ctx.ws,
            battle.pair.id,
            who,
            vote,  # type: ignore[arg-type]  # VOTE_KEYS names votes only
            seconds=round(time.monotonic() - self.shown_at, 1),
        )
        self.voted = True
        for button in self.buttons.values():
            button.setEnabled(False)
        for side in SIDES:
            self._show_pane(side)
        self.saved.setText(
            f"Saved: {VOTE_WORDS[vote]} — left was {battle.left.model}, right was {battle.right.model}. "
            "Ask another question (the Vote page's Ctrl+Z on live-arena withdraws it)."
        )
        self.voteSaved.emit(saved)

    def forget_annotator(self) -> None:
        """Another name signs now: the previous annotator's saved line (it names models) goes."""
        self.saved.setText("")
        if self.voted:
            self.battle = None
            for side in SIDES:
                self.panes[side].show_answer("", None)

    def shutdown(self) -> None:
        for job in self.jobs.values():
            if job.running():
                job.kill()
                job.process.waitForFinished(2000)
