"""The benchmark's annotation guidelines beside Review and the Queues (annotation/guidelines.py): the latest version
rendered from Markdown, which version it is, and an editor that stores a new version."""

from __future__ import annotations

from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from annotation import guidelines
from db.errors import InvalidInput

EMPTY = (
    "No guidelines for this benchmark yet. Whoever sets up the study writes them here (Edit…): what each verdict "
    "means, borderline cases, examples. Every verdict records the version it was given under."
)


class GuidelinesPanel(QWidget):
    def __init__(self, ctx, parent=None):
        super().__init__(parent)
        self.ctx = ctx
        self.setObjectName("guidelines")
        self.title = QLabel()
        self.title.setObjectName("muted")
        self.title.setWordWrap(True)
        self.edit_button = QPushButton("Edit…")
        self.edit_button.setToolTip("Write a new version of this benchmark's guidelines")
        self.edit_button.clicked.connect(self.edit_dialog)
        self.text = QTextBrowser()
        self.text.setOpenExternalLinks(True)
        head = QHBoxLayout()
        head.setContentsMargins(0, 0, 0, 0)
        head.addWidget(self.title, 1)
        head.addWidget(self.edit_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addLayout(head)
        layout.addWidget(self.text, 1)
        ctx.benchmarkChanged.connect(self.reload)
        ctx.workspaceChanged.connect(self.reload)
        self.reload()

    def current(self) -> guidelines.Guideline | None:
        bench = self.ctx.benchmark
        return guidelines.current(self.ctx.ws, bench.id) if bench is not None else None

    def reload(self) -> None:
        bench = self.ctx.benchmark
        g = self.current()
        read_only = self.ctx.ws.read_only
        self.edit_button.setEnabled(bench is not None and not read_only)
        self.edit_button.setToolTip(
            "No benchmark chosen"
            if bench is None
            else "The workspace is read-only"
            if read_only
            else "Write a new version of this benchmark's guidelines"
        )
        if g is None:
            self.title.setText(f"{bench.name}: no guidelines" if bench else "No benchmark")
            self.text.setPlainText(EMPTY if bench else "")
            return
        self.title.setText(f"{bench.name} · version {g.version} · {g.author} · {g.created_at[:10]}")
        self.text.setMarkdown(g.markdown)

    def save(self, markdown: str) -> guidelines.Guideline | None:
        """Store `markdown` as the next version (signed by the session's annotator); errors go to the message bar."""
        bench = self.ctx.benchmark
        if bench is None:
            return None
        try:
            g = guidelines.save(self.ctx.ws, bench.id, markdown, self.ctx.annotator)
        except InvalidInput as exc:
            self.ctx.error.emit(f"Guidelines not saved: {exc}", "")
            return None
        self.ctx.info.emit(f"Saved guidelines version {g.version} of {bench.name}")
        self.ctx.workspaceChanged.emit()  # every panel (Review's, the Queues') shows the new version
        return g

    def edit_dialog(self) -> None:
        g = self.current()
        dialog = QDialog(self)
        dialog.setWindowTitle(f"Guidelines · {self.ctx.benchmark.name if self.ctx.benchmark else ''}")
        editor = QPlainTextEdit(g.markdown if g else "# Guidelines\n\n- **ok** — \n- **wrong key** — \n")
        editor.setObjectName("guidelinesEditor")
        note = QLabel("Markdown. Saving stores a new version; earlier versions and the verdicts given under them stay.")
        note.setObjectName("muted")
        note.setWordWrap(True)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(dialog.accept)
        buttons.rejected.connect(dialog.reject)
        layout = QVBoxLayout(dialog)
        layout.addWidget(note)
        layout.addWidget(editor, 1)
        layout.addWidget(buttons)
        dialog.resize(640, 520)
        if dialog.exec() == QDialog.DialogCode.Accepted:
            self.save(editor.toPlainText())
