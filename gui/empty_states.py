"""Empty states that lead somewhere: a view with nothing to show says why and offers the action that fills it
(import a benchmark, load the demo, start a run, build an adjudication set…), over the view's own widgets.

An action is what `MainWindow.trigger` takes: a menu action's title, or "tab:NAME"; the buttons ask for it through
`Context.actionRequested`, so a view needs no reference to the window."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtWidgets import QFrame, QLabel, QPushButton, QVBoxLayout, QWidget

IMPORT = ("Import a benchmark…", "Import benchmark…")
DEMO = ("Load the demo benchmarks", "Import the demo benchmarks")
START_RUN = ("Start a run", "tab:runs")
ADD_MODEL = ("Add a model", "tab:models")
BUILD_SET = ("Build an adjudication set…", "Build an adjudication set…")
TEXT_ONLY = ("Run the text-only QC stage…", "Run the text-only QC stage…")
CONSENSUS = ("Compute the consensus QC stage…", "Compute the consensus QC stage…")
DRAW_PAIRS = ("Draw arena pairs…", "Draw arena pairs…")
NO_BENCHMARK = (
    "No benchmark yet",
    "This workspace holds no benchmark. Import a VLMEvalKit TSV, a POPE file or JSON Lines, or load the bundled "
    "demo (30 multiple-choice, 48 yes/no and 8 open questions over real photographs).",
    (IMPORT, DEMO),
)


class EmptyState(QFrame):
    """A card over its parent widget (following its size) with a title, why, and a button per action."""

    def __init__(self, parent: QWidget, ctx, name: str):
        super().__init__(parent)
        self.ctx = ctx
        self.setObjectName("emptyState")
        self.setProperty("view", name)
        self.setAutoFillBackground(True)
        outer = QVBoxLayout(self)
        outer.setAlignment(Qt.AlignmentFlag.AlignCenter)
        card = QFrame(self)
        card.setObjectName("emptyCard")
        card.setMaximumWidth(560)
        layout = QVBoxLayout(card)
        layout.setContentsMargins(24, 20, 24, 20)
        self.title = QLabel()
        self.title.setObjectName("pageTitle")
        self.text = QLabel()
        self.text.setWordWrap(True)
        self.text.setObjectName("muted")
        # The actions one under the other: side by side they were squeezed (cut) at a large text size.
        self.buttons_row = QVBoxLayout()
        self.buttons_row.setAlignment(Qt.AlignmentFlag.AlignLeft)
        layout.addWidget(self.title)
        layout.addWidget(self.text)
        layout.addLayout(self.buttons_row)
        outer.addWidget(card)
        self.buttons: list[QPushButton] = []
        parent.installEventFilter(self)
        self.hide()

    def show_state(self, title: str, text: str, actions: tuple[tuple[str, str], ...] = ()) -> None:
        self.title.setText(title)
        self.text.setText(text)
        for button in self.buttons:
            self.buttons_row.removeWidget(button)
            button.deleteLater()
        self.buttons = []
        for n, (label, what) in enumerate(actions):
            button = QPushButton(label)
            if n == 0:
                button.setObjectName("primary")
            button.clicked.connect(lambda _=False, w=what: self.ctx.actionRequested.emit(w))
            self.buttons_row.addWidget(button)
            self.buttons.append(button)
        parent = self.parentWidget()
        if parent is not None:
            self.setGeometry(parent.rect())
        self.raise_()
        self.show()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Resize and isinstance(watched, QWidget):
            self.setGeometry(watched.rect())
        return False
