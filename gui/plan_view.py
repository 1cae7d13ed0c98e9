"""The suite plan dialog (Runs › Suite plan…): open, edit and save a plan file, run what it lacks, see its suite table
(docs/guide/suites.md).

The dialog holds no plan logic. As you type, the text's shape is checked here by the plan reader below the app
(evaluator/formats/plan_file.py: syntax, keys, kinds of values, bounds). Whether its settings are `vlmdesk run` options,
its benchmarks and models exist, and which of its runs are stored is the command line's to say (vlmdesk/cmd_plan.py,
above the app): after each save, and when a queued run ends, `vlmdesk report --plan PLAN --json` runs in a child
process (off the GUI thread, like every run) and its table — or its one-line error — is shown. "Run plan" submits each
run not finished to the run queue as its own `vlmdesk run …` command line, the one that table gives.
"""

from __future__ import annotations

import json
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QFontDatabase, QKeySequence
from PySide6.QtWidgets import (
    QDialog,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from db.errors import UserError
from evaluator.formats import plan_file
from evaluator.formats.outfiles import AtomicOutput
from gui import file_dialogs
from gui.fitting import ElidedLabel
from gui.processes import CommandProcess
from gui.run_queue import RunJob, RunQueue, RunRequest
from gui.tables import RowsModel, table_view

FILTERS = "Plans (*.toml *.yaml *.yml)"
EXAMPLE = """\
# A suite: each model on each benchmark (docs/guide/suites.md)
[settings]                  # any `vlmdesk run` option, by its long name
max_new_tokens = 32

[[model]]
spec = "baseline:random"    # a model spec or a saved model's name
name = "Random"

[[benchmark]]
name = "demo"
"""


class PlanDialog(QDialog):
    def __init__(self, ctx, queue: RunQueue, parent=None):
        super().__init__(parent)
        self.setObjectName("planDialog")
        self.setWindowTitle("Suite plan")
        self.ctx, self.queue = ctx, queue
        self.path: Path | None = None
        self.dirty = False
        self.cells: list[dict] = []  # the last table's cells, with their run commands
        self._run_after_check = False
        self._check: CommandProcess | None = None

        self.file = ElidedLabel("New plan (not saved)", mode=Qt.TextElideMode.ElideMiddle)
        self.file.setObjectName("sectionTitle")
        self.open_button = QPushButton("Open…")
        self.save_button = QPushButton("Save")
        self.save_as_button = QPushButton("Save As…")
        self.run_button = QPushButton("Run plan")
        self.run_button.setObjectName("primary")
        self.run_button.setToolTip(
            "Save, then queue each run of the plan that is not finished (vlmdesk run --plan) · Ctrl+Enter"
        )
        # Keyboard-first: the editor keeps its own keys; these are the dialog's, as in any editor.
        self.open_button.setShortcut(QKeySequence(QKeySequence.StandardKey.Open))
        self.save_button.setShortcut(QKeySequence(QKeySequence.StandardKey.Save))
        self.run_button.setShortcut(QKeySequence("Ctrl+Return"))
        self.editor = QPlainTextEdit()
        self.editor.setObjectName("planText")
        self.editor.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.editor.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.editor.setPlainText(EXAMPLE)
        # One line, always there (empty when the plan reads): an error never moves the editor or the table.
        self.problem = ElidedLabel("")
        self.problem.setObjectName("planProblem")
        self.problem.setFixedHeight(self.problem.fontMetrics().height() + 6)
        self.table_model = RowsModel(("Model", "Average"))
        self.table = table_view(self.table_model)
        self.status = ElidedLabel("Save the plan to see its suite table.")
        self.status.setObjectName("muted")

        head = QHBoxLayout()
        head.addWidget(self.file, 1)
        for b in (self.open_button, self.save_button, self.save_as_button, self.run_button):
            head.addWidget(b)
        table_box = QWidget()
        tl = QVBoxLayout(table_box)
        tl.setContentsMargins(0, 0, 0, 0)
        title = QLabel("Suite table")
        title.setObjectName("sectionTitle")
        tl.addWidget(title)
        tl.addWidget(self.table, 1)
        tl.addWidget(self.status)
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(self.editor)
        split.addWidget(table_box)
        split.setChildrenCollapsible(False)
        split.setSizes([300, 260])
        layout = QVBoxLayout(self)
        layout.addLayout(head)
        layout.addWidget(split, 1)
        layout.addWidget(self.problem)

        self.open_button.clicked.connect(self.choose_file)
        self.save_button.clicked.connect(self.save)
        self.save_as_button.clicked.connect(self.save_as)
        self.run_button.clicked.connect(self.run_plan)
        self.editor.textChanged.connect(self._edited)
        queue.jobFinished.connect(self._job_finished)
        self.resize(900, 620)

    # -- the file
    def choose_file(self) -> None:
        start = str(self.path.parent if self.path else self.ctx.ws.path.parent)  # beside the workspace, at first
        path = file_dialogs.open_file(self, "Open a suite plan", start, FILTERS)
        if path:
            self.open_path(path)

    def open_path(self, path: str | Path) -> bool:
        """Read a plan file (through the bounded door) into the editor, and check it."""
        try:
            text = plan_file.read_plan_text(path)
        except (UserError, OSError) as exc:
            self._show_problem(str(exc))
            return False
        self.path = Path(path)
        self.editor.blockSignals(True)
        self.editor.setPlainText(text)
        self.editor.blockSignals(False)
        self._set_dirty(False)
        self._edited()
        self.refresh()
        return True

    def save(self) -> bool:
        if self.path is None or plan_file.plan_format(self.path) is None:
            return self.save_as()
        return self._write(self.path)

    def save_as(self) -> bool:
        start = str(self.path) if self.path else str(self.ctx.ws.path.parent / "suite.toml")
        path = file_dialogs.save_file(self, "Save the suite plan", start, FILTERS)
        if not path:
            return False
        if plan_file.plan_format(path) is None:
            self._show_problem(f"{path}: a plan file is .toml, .yaml or .yml")
            return False
        return self._write(Path(path))

    def _write(self, path: Path) -> bool:
        text = self.editor.toPlainText()
        if len(text.encode("utf-8")) > plan_file.MAX_BYTES:
            self._show_problem(f"{path}: over the limit for a plan file of 1 MB; not saved")
            return False
        try:
            with AtomicOutput(path) as f:  # evaluator/formats/outfiles.py: never over a workspace or a device
                f.write(text)
        except (UserError, OSError) as exc:
            self._show_problem(f"{path}: not saved: {exc}")
            return False
        self.path = path
        self._set_dirty(False)
        self._edited()
        self.refresh()
        return True

    # -- checking
    def _edited(self) -> None:
        if self.editor.signalsBlocked():
            return
        name = str(self.path) if self.path else "plan.toml"
        try:
            plan_file.parse_plan(self.editor.toPlainText(), name)
        except UserError as exc:
            self._show_problem(str(exc))
        else:
            self._show_problem("")
        if self.sender() is self.editor:
            self._set_dirty(True)

    def _set_dirty(self, dirty: bool) -> None:
        self.dirty = dirty
        name = str(self.path) if self.path else "New plan (not saved)"
        self.file.setText(name + (" •" if dirty else ""))
        self.save_button.setEnabled(dirty or self.path is None)

    def _show_problem(self, text: str) -> None:
        self.problem.setText(text.removeprefix("error: "))
        self.problem.setProperty("error", bool(text))

    def refresh(self) -> None:
        """The saved plan's suite table (and its check), from `vlmdesk report --plan PLAN --json` in a child process."""
        if self.path is None or self.dirty:
            return
        if self._check is not None and self._check.running():
            self._check.done.disconnect()
            self._check.kill()
        self.status.setText("Reading the plan's runs…")
        self._check = CommandProcess(str(self.ctx.ws.path), ["report", "--plan", str(self.path), "--json"], self)
        self._check.done.connect(lambda p=self._check: self._checked(p))
        self._check.start()

    def _checked(self, process: CommandProcess) -> None:
        found = None
        if process.exit_code == 0:
            try:
                found = json.loads(process.stdout)
            except ValueError:
                found = None
        if not isinstance(found, dict):
            lines = [x for x in process.stderr.strip().splitlines() if x.strip()]
            self._show_problem(lines[-1] if lines else (process.error or "the plan could not be read"))
            self.status.setText("The plan was not read: see the line below.")
            self._run_after_check = False
            return
        self._show_problem("")
        self._fill(found)
        if self._run_after_check:
            self._run_after_check = False
            self._queue_missing()

    def _fill(self, table: dict) -> None:
        benches = [str(b) for b in table.get("benchmarks", [])]
        model = RowsModel(("Model", *benches, "Average"))
        model.align_right = set(range(1, len(benches) + 2))
        rows, tips, self.cells = [], {}, []
        for r, row in enumerate(table.get("rows", [])):
            cells = row.get("cells", [])
            average = row.get("average")
            rows.append(
                (row.get("model"), *(c.get("text") for c in cells), "-" if average is None else f"{average:.1f}")
            )
            for c, cell in enumerate(cells, 1):
                run = f"run {cell['run_id']}" if cell.get("run_id") else "no run stored"
                tips[(r, c)] = f"{cell.get('label') or 'no figure yet'} · {run} · {cell.get('status')}"
                self.cells.append({**cell, "model": row.get("model")})
        model.set_rows(rows, tooltips=tips)
        self.table_model = model
        self.table.setModel(model)
        to_run = sum(1 for c in self.cells if c.get("status") != "finished")
        self.status.setText(f"{len(self.cells)} runs, {to_run} not finished · Average: {table.get('average_rule', '')}")

    # -- running
    def run_plan(self) -> None:
        """Save, read the plan's runs again, then queue each one that is not finished."""
        if (self.dirty or self.path is None) and not self.save():
            return
        self._run_after_check = True
        self.refresh()

    def _queue_missing(self) -> list[RunJob]:
        busy = {j.request.args for j in self.queue.jobs if j.state in (RunJob.QUEUED, RunJob.RUNNING)}
        submitted = []
        for cell in self.cells:
            args = tuple(str(a) for a in cell.get("command", []))
            if cell.get("status") == "finished" or not args or args in busy:
                continue
            title = f"{cell.get('model')} on {cell.get('benchmark')}"
            submitted.append(self.queue.submit(RunRequest(args, title), run_id=cell.get("run_id")))
        self.status.setText(f"{len(submitted)} run(s) queued; the table follows them as each ends.")
        return submitted

    def _job_finished(self, _job: RunJob) -> None:
        if self.isVisible():
            self.refresh()
