"""The app's way to every `vlmdesk` command that changes or exports workspace content: each runs the command itself
in a child process (gui.processes), with a strip in the status bar — what it is doing, its last message, Cancel —
and reports its last line or its one-line error. No logic of the commands is repeated here: the dialogs only turn
their fields into a command line.

`COMMANDS` says, for every command of the CLI, where the app offers it: a menu action of the **Workspace** menu or
the File menu (by its title), a tab, or why it has none (tests/gui/test_command_parity.py checks it)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QObject, Qt
from PySide6.QtGui import QAction
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QWidget,
)

from annotation import arena
from db import catalog, models, runs
from evaluator.analysis.labels import short_model
from gui import file_dialogs
from gui.processes import CommandProcess

# Where each CLI command is in the app. "menu:TITLE" is a menu action with that title (its place: the window's
# menus); "tab:NAME" a tab; "none:WHY" a command left out on purpose. New commands of other branches are added here.
COMMANDS: dict[str, str] = {
    "import": "menu:Import benchmark…",
    "demo": "menu:Import the demo benchmarks",
    "fetch": "menu:Import a benchmark by name…",  # `vlmdesk import NAME`: fetched, then imported
    "benchmarks": "tab:browse",  # the Benchmarks dock beside every tab
    "benchmarks tag": "menu:Capability groups of the benchmark…",  # also the Benchmarks list's context menu
    "items": "tab:browse",
    "show": "tab:review",
    "run": "tab:runs",
    "runs": "tab:runs",
    "report": "tab:results",
    "compare": "tab:results",  # Results › Compare
    "run-items": "tab:results",  # click a bar
    "export-predictions": "tab:results",  # "Export predictions…"
    "rescore": "menu:Re-score a run…",
    "pope score": "none:scores an answers file from elsewhere against a question file; writes nothing to the "
    "workspace (a run of the app is scored by Results)",
    "pope build": "menu:Build a POPE set…",
    "qc text-only": "menu:Run the text-only QC stage…",
    "qc consensus": "menu:Compute the consensus QC stage…",
    "qc list": "tab:queues",
    "qc decide": "tab:queues",
    "qc export": "menu:Export the curated benchmark…",
    "qc summary": "tab:queues",
    "qc export-decisions": "menu:Export QC decisions…",
    "qc import-decisions": "menu:Import QC decisions…",
    "extract": "none:reads a file of responses from elsewhere and prints choices (a batch tool for scripts); runs "
    "and re-scorings made in the app extract through the same code",
    "align sample": "menu:Build an adjudication set…",
    "align label": "tab:queues",
    "align adjudicate": "tab:queues",
    "align report": "tab:alignment",
    "align export-labels": "menu:Export labels…",
    "align import-labels": "menu:Import labels…",
    "align open": "tab:alignment",  # its Open metrics page
    "align pairs": "tab:alignment",  # its Pairs page
    "align open-verdict": "tab:queues",  # Queues › Open answers (keys 1-3, Ctrl+Z)
    "align export-open": "menu:Export open verdicts…",
    "align import-open": "menu:Import open verdicts…",
    "models add": "tab:models",
    "models list": "tab:models",
    "models remove": "tab:models",
    "models test": "tab:models",
    "models families": "tab:models",
    "gui": "none:it opens the app itself (and renders its screenshots)",
    "reviews add": "tab:review",  # a verdict key on the item shown (Ctrl+Z undoes)
    "reviews export": "menu:Export reviews…",
    "reviews import": "menu:Import reviews…",
    "team plan": "menu:Plan the team's work…",
    "team progress": "tab:annotators",  # its Plan table: planned, done, left, gold accuracy per person
    "team export-plans": "menu:Export assignment plans…",
    "team import-plans": "menu:Import assignment plans…",
    "team sync": "menu:Sync with a team folder…",  # then every minute while the window is open (gui/team_sync.py)
    "check": "menu:Check and repair the workspace…",
    "guidelines show": "tab:review",  # the Guidelines tab beside the item (and the Queues' Guidelines panel)
    "guidelines set": "tab:review",  # its Edit… button
    "annotators": "tab:annotators",
    "import-predictions": "menu:Import predictions made elsewhere…",
    # The report and its figures: Results › Desiderata; `desiderata language` (judgements stored in the workspace):
    # Workspace › Judge the language of a run…; `desiderata ece --input` reads a file and writes nothing.
    "desiderata": "tab:results",
    "judge": "menu:Judge open answers…",
    "judge-pairs": "menu:Judge arena pairs…",
    "official": "menu:Score by the official judge…",
    "arena pairs": "menu:Draw arena pairs…",
    "arena ratings": "tab:arena",  # its Leaderboard page (a file of battles from elsewhere: the command only)
    "arena export-votes": "menu:Export arena votes…",
    "arena import-votes": "menu:Import arena votes…",
    "arena ask": "tab:arena",  # its Live page: an image, a question, two models drawn by matchmaking, a vote
    "arena answer": "none:the Live page's worker: one model's answer as JSON lines, run by the app in a child "
    "process so the window never waits",
}


@dataclass(frozen=True)
class Field:
    """One field of a command's dialog: `kind` text | int | choice | choices (several) | model (a saved model's name
    offered, any spec typed) | open | save | folder | flag."""

    name: str
    label: str
    kind: str = "text"
    choices: tuple[tuple[str, object], ...] = ()  # (shown, value)
    default: object = None
    tip: str = ""
    minimum: int = 1
    maximum: int = 1_000_000_000
    # `choices` offered only while the field named `follows` has the value of each choice's group (parallel to
    # `choices`): the runs of the benchmark chosen above them, say.
    follows: str = ""
    groups: tuple[object, ...] = ()

    def offered(self, value: object) -> tuple[tuple[str, object], ...]:
        """The choices offered while the followed field has `value` (all of them without `follows`)."""
        if not self.follows:
            return self.choices
        return tuple(c for c, group in zip(self.choices, self.groups) if group == value)


def _run_label(run: runs.Run, *, bench: bool = True, status: bool = False) -> str:
    """A run as the dialogs list it: its number and its model shortened by the runs lists' rule (the model's name
    kept, evaluator/analysis/labels.py), then what else tells it apart."""
    parts = [f"run {run.id}", short_model(run.model_spec, 40) + (" [text-only]" if run.config.get("text_only") else "")]
    return " · ".join(parts + ([run.benchmark] if bench else []) + ([run.status] if status else []))


class CommandDialog(QDialog):
    """A form of fields; `values()` gives what was entered (a list for `choices`, a bool for `flag`)."""

    def __init__(self, title: str, fields: list[Field], parent=None, *, intro: str = ""):
        super().__init__(parent)
        self.setWindowTitle(title)
        self.setObjectName("commandDialog")
        self.fields = fields
        self.widgets: dict[str, QWidget] = {}
        form = QFormLayout(self)
        if intro:
            text = QLabel(intro)
            text.setWordWrap(True)
            text.setObjectName("muted")
            form.addRow(text)
        for f in fields:
            widget = self._widget(f)
            widget.setToolTip(f.tip)
            self.widgets[f.name] = widget
            form.addRow(f.label, widget)
        for f in fields:
            followed = self.widgets.get(f.follows)
            if isinstance(followed, QComboBox):  # the choices follow it: offered now, and again when it changes
                followed.currentIndexChanged.connect(lambda _=0, f=f, c=followed: self._follow(f, c.currentData()))
                self._follow(f, followed.currentData())
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        form.addRow(buttons)
        self.setMinimumWidth(max(460, 64 * self.fontMetrics().averageCharWidth()))  # wider with a larger text

    def _follow(self, f: Field, value: object) -> None:
        """Offer only the choices of `f` that go with `value`: the others hidden and unticked (never sent)."""
        box = self.widgets[f.name]
        assert isinstance(box, QListWidget)  # `follows` is for a list of choices
        offered = {v for _, v in f.offered(value)}
        for i in range(box.count()):
            item = box.item(i)
            shown = item.data(Qt.ItemDataRole.UserRole) in offered
            item.setHidden(not shown)
            if not shown:
                item.setCheckState(Qt.CheckState.Unchecked)

    def offered(self, name: str) -> list[object]:
        """The values a field of choices offers now (its items not hidden)."""
        box = self.widgets[name]
        assert isinstance(box, QListWidget)
        return [box.item(i).data(Qt.ItemDataRole.UserRole) for i in range(box.count()) if not box.item(i).isHidden()]

    def _widget(self, f: Field) -> QWidget:
        if f.kind == "model":
            # The saved models by name (choices: name, spec; the spec in the tooltip), and any spec typed.
            model = QComboBox()
            model.setEditable(True)
            model.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)
            for shown, value in f.choices:
                model.addItem(shown, value)
                model.setItemData(model.count() - 1, str(value), Qt.ItemDataRole.ToolTipRole)
            model.setCurrentText(str(f.default or ""))
            line = model.lineEdit()
            assert line is not None  # an editable combo box has one
            line.setPlaceholderText("a saved model, or a spec: openai:…@…, hf:…")
            return model
        if f.kind == "int":
            spin = QSpinBox(minimum=f.minimum, maximum=min(f.maximum, 2**31 - 1))
            spin.setValue(int(f.default) if f.default is not None else f.minimum)  # type: ignore[call-overload]
            return spin
        if f.kind == "flag":
            check = QCheckBox()
            check.setChecked(bool(f.default))
            return check
        if f.kind == "choice":
            combo = QComboBox()
            for shown, value in f.choices:
                combo.addItem(shown, value)
            if f.default is not None and (i := combo.findData(f.default)) >= 0:
                combo.setCurrentIndex(i)
            return combo
        if f.kind == "choices":
            box = QListWidget()
            box.setMaximumHeight(140)
            # Each choice on one line, elided in the middle (whole in its tooltip) rather than scrolled sideways.
            box.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
            box.setTextElideMode(Qt.TextElideMode.ElideMiddle)
            for shown, value in f.choices:
                item = QListWidgetItem(shown)
                item.setToolTip(shown)
                item.setData(Qt.ItemDataRole.UserRole, value)
                item.setCheckState(
                    Qt.CheckState.Checked
                    if isinstance(f.default, (list, tuple)) and value in f.default
                    else Qt.CheckState.Unchecked
                )
                box.addItem(item)
            return box
        edit = QLineEdit(str(f.default or ""))
        if f.kind in ("open", "save", "folder"):
            row = QWidget()
            layout = QHBoxLayout(row)
            layout.setContentsMargins(0, 0, 0, 0)
            browse = QPushButton("Browse…")
            browse.clicked.connect(lambda _=False, e=edit, k=f.kind, t=f.label: self._browse(e, k, t))
            layout.addWidget(edit, 1)
            layout.addWidget(browse)
            row.setProperty("edit", edit)
            self._edits = {**getattr(self, "_edits", {}), f.name: edit}
            return row
        return edit

    def _browse(self, edit: QLineEdit, kind: str, title: str) -> None:
        start = edit.text() or str(Path.home())
        if kind == "open":
            path = file_dialogs.open_file(self, title, start)
        elif kind == "save":
            path = file_dialogs.save_file(self, title, start)
        else:
            path = file_dialogs.folder(self, title, start)
        if path:
            edit.setText(path)

    def values(self) -> dict[str, object]:
        out: dict[str, object] = {}
        for f in self.fields:
            w = self.widgets[f.name]
            if isinstance(w, QSpinBox):
                out[f.name] = w.value()
            elif isinstance(w, QCheckBox):
                out[f.name] = w.isChecked()
            elif isinstance(w, QComboBox) and w.isEditable():
                out[f.name] = w.currentText().strip()  # a saved model's name (the command reads it) or a spec
            elif isinstance(w, QComboBox):
                out[f.name] = w.currentData()
            elif isinstance(w, QListWidget):
                out[f.name] = [  # ticked and offered (a choice that does not go with the field it follows is not)
                    w.item(i).data(Qt.ItemDataRole.UserRole)
                    for i in range(w.count())
                    if w.item(i).checkState() == Qt.CheckState.Checked and not w.item(i).isHidden()
                ]
            elif isinstance(w, QLineEdit):
                out[f.name] = w.text().strip()
            else:
                out[f.name] = self._edits[f.name].text().strip()
        return out


class WorkspaceCommands(QObject):
    """The Workspace menu's commands on the window's open workspace, each a child process with a strip."""

    def __init__(self, window):
        super().__init__(window)
        self.window = window
        self.running: list[CommandProcess] = []
        # Tests answer the dialogs: name → values (None: cancelled) instead of showing one.
        self.answer: Callable[[str, list[Field]], dict | None] | None = None

    # -- the menu
    def fill_menu(self, menu) -> dict[str, QAction]:
        entries: list[tuple[str, Callable[[], object], str] | None] = [
            (
                "Run the text-only QC stage…",
                self.qc_text_only_dialog,
                "vlmdesk qc text-only: language models "
                "answer without the image; items most of them get right are flagged text-answerable",
            ),
            (
                "Compute the consensus QC stage…",
                self.qc_consensus_dialog,
                "vlmdesk qc consensus: items no chosen VLM run answers right are flagged possibly flawed",
            ),
            (
                "Export the curated benchmark…",
                self.qc_export_dialog,
                "vlmdesk qc export: the benchmark without "
                "the confirmed-removed items, with corrected keys, and its change log",
            ),
            None,
            (
                "Build an adjudication set…",
                self.align_sample_dialog,
                "vlmdesk align sample: responses for blind human labelling (undecided, disagreeing, a seeded sample)",
            ),
            (
                "Plan the team's work…",
                self.team_plan_dialog,
                "vlmdesk team plan: each item to OVERLAP annotators, balanced and seeded, with gold items whose key "
                "the lead confirmed mixed into every queue; Review's next item then walks each person's own",
            ),
            (
                "Sync with a team folder…",
                lambda: self.window.team_folder.choose(),
                "vlmdesk team sync: this workspace's records go to its journal in a folder a sync tool or a share "
                "carries (Syncthing, Dropbox, SMB/NFS, git), the others' come in; again every minute",
            ),
            (
                "Re-score a run…",
                self.rescore_dialog,
                "vlmdesk rescore: read a run's stored responses again with another extractor or the human labels",
            ),
            (
                "Judge the language of a run…",
                self.judge_language_dialog,
                "vlmdesk desiderata language: a judge model scores the fluency and coherence of a chain-of-thought "
                "run's answers (ChEF's language performance); judgements are stored, never asked twice",
            ),
            (
                "Score by the official judge…",
                self.official_dialog,
                "vlmdesk official: a run of MathVista or MMVet scored by its benchmark's LLM-graded rule (VLMEvalKit's "
                "judge extraction, MMVet's grader); what the judge says is stored, never asked twice",
            ),
            (
                "Judge open answers…",
                self.judge_open_dialog,
                "vlmdesk judge: a judge model gives each answer of an open run a verdict (right / partly / wrong) "
                "against the reference answers, under a rubric; verdicts are stored, never asked twice",
            ),
            (
                "Judge arena pairs…",
                self.judge_pairs_dialog,
                "vlmdesk judge-pairs: a judge model says which answer of each arena pair is better (both orders, "
                "with or without the image); held against people's votes in Alignment › Pairs",
            ),
            (
                "Draw arena pairs…",
                self.arena_pairs_dialog,
                "vlmdesk arena pairs: pairs of runs' free answers to each open item, for blind votes in the Arena tab",
            ),
            None,
            (
                "Build a POPE set…",
                self.pope_build_dialog,
                "vlmdesk pope build: POPE questions from object annotations, imported into the workspace",
            ),
            None,
            (
                "Check and repair the workspace…",
                self.check_dialog,
                "vlmdesk check: integrity, references, the search index; --repair rebuilds what can be rebuilt",
            ),
        ]
        actions = {}
        for entry in entries:
            if entry is None:
                menu.addSeparator()
                continue
            title, slot, tip = entry
            action = QAction(title, self.window)
            action.setToolTip(tip)
            action.setStatusTip(tip)
            action.triggered.connect(lambda _=False, s=slot: s())
            menu.addAction(action)
            actions[title] = action
        menu.setToolTipsVisible(True)
        return actions

    # -- dialogs (what they ask; the work is the command)
    def _ask(self, name: str, title: str, fields: list[Field], intro: str = "") -> dict | None:
        if self.answer is not None:
            return self.answer(name, fields)
        dialog = CommandDialog(title, fields, self.window, intro=intro)
        return dialog.values() if dialog.exec() == QDialog.DialogCode.Accepted else None

    def _bench_field(self, kind: str | None = None) -> Field:
        ws = self.window.ws
        benches = [b for b in catalog.list_benchmarks(ws) if kind is None or b.kind == kind]
        current = self.window.ctx.benchmark.name if self.window.ctx and self.window.ctx.benchmark else None
        return Field("bench", "Benchmark", "choice", tuple((b.name, b.name) for b in benches), current)

    def _runs_field(self, name: str, label: str, *, only=None, follows: str = "") -> Field:
        """The runs to tick; with `follows` (a benchmark field's name), only those of the benchmark chosen there."""
        found = [r for r in runs.list_runs(self.window.ws) if only is None or only(r)]
        return Field(
            name,
            label,
            "choices",
            tuple((_run_label(r, bench=not follows, status=True), str(r.id)) for r in found),
            follows=follows,
            groups=tuple(r.benchmark for r in found) if follows else (),
        )

    def _model_field(self, name: str, label: str, tip: str) -> Field:
        """A model to name: the saved models offered by name (db/models.py), any spec typed."""
        saved = models.list_models(self.window.ws)
        return Field(name, label, "model", tuple((m.name, m.spec) for m in saved), tip=tip)

    def _check_ready(self) -> bool:
        if not catalog.list_benchmarks(self.window.ws):
            self.window.show_error("No benchmark in this workspace yet: File › Import benchmark…, or the demo")
            return False
        return True

    def qc_text_only_dialog(self) -> None:
        if not self._check_ready():
            return
        saved = models.list_models(self.window.ws)
        choices = tuple((f"{m.name} ({m.spec})", m.spec) for m in saved) + tuple(
            (spec, spec) for spec in ("baseline:random", "baseline:first", "baseline:frequent")
        )
        v = self._ask(
            "qc text-only",
            "Text-only QC stage",
            [
                self._bench_field("mcq"),
                Field(
                    "models",
                    "Text-only models",
                    "choices",
                    choices,
                    tip="Language models that answer without the image (saved models, or baselines)",
                ),
                Field("extra", "Other model spec", tip="hf:…, openai:…@… (optional)"),
                Field("limit", "Limit (0: every item)", "int", default=0, minimum=0),
            ],
            intro="Each model answers every item under CircularEval without the image; an item more than half of "
            "them get right is flagged text-answerable for people to confirm or reject in Queues.",
        )
        if v:
            specs = [*v["models"], *([v["extra"]] if v["extra"] else [])]
            self.qc_text_only(str(v["bench"]), specs, limit=int(v["limit"]) or None)

    def qc_consensus_dialog(self) -> None:
        if not self._check_ready():
            return
        v = self._ask(
            "qc consensus",
            "Consensus QC stage",
            [
                self._bench_field("mcq"),
                self._runs_field(
                    "runs",
                    "VLM runs",
                    only=lambda r: r.status == "finished" and not r.config.get("text_only"),
                    follows="bench",
                ),
            ],
            intro="Finished CircularEval runs that saw the images: every item none of them answers right is "
            "flagged possibly flawed.",
        )
        if v:
            self.qc_consensus(str(v["bench"]), [int(x) for x in v["runs"]])

    def qc_export_dialog(self) -> None:
        if not self._check_ready():
            return
        v = self._ask(
            "qc export",
            "Export the curated benchmark",
            [
                self._bench_field(),
                Field("out", "File", "save", default=str(self._folder() / "curated.tsv")),
                Field("with_reviews", "Apply standing wrong-key verdicts too", "flag"),
            ],
        )
        if v:
            self.qc_export(str(v["bench"]), str(v["out"]), with_reviews=bool(v["with_reviews"]))

    def align_sample_dialog(self) -> None:
        if not self._check_ready():
            return
        v = self._ask(
            "align sample",
            "Build an adjudication set",
            [
                self._runs_field("runs", "Runs", only=lambda r: r.status == "finished"),
                Field("extractor", "Extractor to compare", default="rules"),
                Field("size", "Sample size", "int", default=50),
                Field("seed", "Seed", "int", default=0, minimum=0, maximum=2**31 - 1),
                Field("name", "Set name", default="study"),
            ],
        )
        if v:
            self.align_sample(
                [int(x) for x in v["runs"]],
                str(v["name"]),
                size=int(v["size"]),
                seed=int(v["seed"]),
                extractor=str(v["extractor"]) or None,
            )

    def team_plan_dialog(self) -> None:
        if not self._check_ready():
            return
        v = self._ask(
            "team plan",
            "Plan the team's work",
            [
                self._bench_field(),
                Field("annotators", "Annotators", tip="names, comma-separated, in order: ana,ben,cara"),
                Field("overlap", "Annotators per item", "int", default=2, maximum=50),
                Field(
                    "gold",
                    "Gold items (0: none)",
                    "int",
                    default=0,
                    minimum=0,
                    tip="drawn by the seed from the items whose key quality control confirmed",
                ),
                Field("seed", "Seed", "int", default=0, minimum=0, maximum=2**31 - 1),
            ],
            intro="Each item goes to that many annotators, loads balanced; gold items go to everyone, spread through "
            "each queue, unmarked. The same inputs give the same plan; a new plan supersedes the old one.",
        )
        if v:
            self.team_plan(str(v["bench"]), str(v["annotators"]), int(v["overlap"]), int(v["gold"]), int(v["seed"]))

    def team_plan(self, bench: str, annotators: str, overlap: int, gold: int, seed: int) -> CommandProcess | None:
        args = ["team", "plan", "--bench", bench, "--annotators", annotators, "--overlap", str(overlap)]
        args += [*(["--gold", str(gold)] if gold else []), "--seed", str(seed)]
        if self.window.ctx is not None and self.window.ctx.annotator:
            args += ["--author", self.window.ctx.annotator]
        return self.start(args, f"Planning the team's work on {bench}")

    def rescore_dialog(self) -> None:
        if not self._check_ready():
            return
        found = [r for r in runs.list_runs(self.window.ws) if r.strategy != "pope"]
        v = self._ask(
            "rescore",
            "Re-score a run",
            [
                Field("run", "Run", "choice", tuple((_run_label(r), r.id) for r in found)),
                Field("extractor", "Extractor", default="human", tip="rules | rules+llm:SPEC | llm:SPEC | human"),
            ],
        )
        if v and v["run"] is not None:
            self.rescore(int(v["run"]), str(v["extractor"]))

    def arena_pairs_dialog(self) -> None:
        if not self._check_ready():
            return
        bench = self._bench_field("open")
        eligible = {r.id for r in arena.arena_runs(self.window.ws)}  # made here or imported: the command's rule
        if not bench.choices:
            self.window.show_error("No open benchmark (questions without options) in this workspace: import one first")
            return
        v = self._ask(
            "arena pairs",
            "Draw arena pairs",
            [
                bench,
                # Only the chosen benchmark's runs: pairs are drawn between answers to the same items.
                self._runs_field("runs", "Runs (one per model)", only=lambda r: r.id in eligible, follows="bench"),
                Field("per_item", "Pairs per item", "int", default=1, maximum=1000),
                Field("seed", "Seed", "int", default=0, minimum=0, maximum=2**31 - 1),
            ],
            intro="For each item, pairs of models drawn uniformly, each with a random side; annotators then vote "
            "between the two anonymous answers in the Arena tab.",
        )
        if v and len(v["runs"]) >= 2:
            self.arena_pairs(str(v["bench"]), [int(x) for x in v["runs"]], int(v["per_item"]), int(v["seed"]))
        elif v:
            self.window.show_error("Choose at least two runs (one per model) to draw pairs from")

    def judge_language_dialog(self) -> None:
        if not self._check_ready():
            return
        found = [r for r in runs.list_runs(self.window.ws) if r.strategy != "pope"]
        v = self._ask(
            "desiderata language",
            "Judge the language of a run",
            [
                Field("run", "Run", "choice", tuple((_run_label(r), r.id) for r in found)),
                self._model_field("judge", "Judge model", "a saved model's name, or openai:…@…, hf:… (a text model)"),
            ],
            intro="The judge scores each answer's fluency and coherence 0-10 with a stated rubric; an answer it "
            "cannot judge after retries counts as missing. Best on a chain-of-thought (--cot) run.",
        )
        if v and v["run"] is not None and v["judge"]:
            self.judge_language(int(v["run"]), str(v["judge"]))

    def official_dialog(self) -> None:
        if not self._check_ready():
            return
        found = [r for r in runs.list_runs(self.window.ws) if r.strategy == "open"]
        if not found:
            self.window.show_error("No open run in this workspace: run a model on MathVista or MMVet first")
            return
        v = self._ask(
            "official",
            "Score by the official judge",
            [
                Field("run", "Run", "choice", tuple((_run_label(r), r.id) for r in found)),
                self._model_field("judge", "Judge model", "a saved model's name, or openai:…@…, hf:… (a text model)"),
            ],
            intro="MathVista's and MMVet's official figures ask an LLM, as VLMEvalKit does: the judge extracts "
            "MathVista's answers the rule cannot read, and grades each MMVet answer 0-1. The figure shows first in "
            "the run's report.",
        )
        if v and v["run"] is not None and v["judge"]:
            self.official(int(v["run"]), str(v["judge"]))

    def official(self, run_id: int, judge: str) -> CommandProcess | None:
        return self.start(["official", str(run_id), "--judge", judge], f"Scoring run {run_id} by its official judge")

    def judge_open_dialog(self) -> None:
        if not self._check_ready():
            return
        found = [r for r in runs.list_runs(self.window.ws) if r.strategy == "open"]
        if not found:
            self.window.show_error("No open run in this workspace: run a model on an open benchmark first")
            return
        v = self._ask(
            "judge",
            "Judge open answers",
            [
                Field("run", "Run", "choice", tuple((_run_label(r), r.id) for r in found)),
                self._model_field("judge", "Judge model", "a saved model's name, or openai:…@…, hf:… (a text model)"),
                Field(
                    "rubric",
                    "Rubric file",
                    "open",
                    tip="optional: the judge's instructions (vlmdesk judge --print-rubric shows the built-in one)",
                ),
                Field("with_image", "Show the judge the image (a vision judge)", "flag"),
            ],
            intro="The judge reads each answer with the question and its reference answers and says right, partly "
            "or wrong with a reason; a reply it cannot be held to is stored as undecided. Results show the score "
            "(right 1, partly 0.5, wrong 0) as metric judge.",
        )
        if v and v["run"] is not None and v["judge"]:
            rubric = str(v.get("rubric") or "") or None
            self.judge_open(int(v["run"]), str(v["judge"]), rubric, with_image=bool(v.get("with_image")))

    def judge_pairs_dialog(self) -> None:
        if not self._check_ready():
            return
        ws = self.window.ws
        offered = [b.name for b in catalog.list_benchmarks(ws) if b.kind == "open" and arena.pair_count(ws, b.id)]
        current = self.window.ctx.benchmark.name if self.window.ctx and self.window.ctx.benchmark else None
        bench = Field("bench", "Benchmark", "choice", tuple((n, n) for n in offered), current)
        if not offered:
            self.window.show_error("No arena pairs in this workspace: Workspace › Draw arena pairs… first")
            return
        v = self._ask(
            "judge-pairs",
            "Judge arena pairs",
            [
                bench,
                self._model_field("judge", "Judge model", "a saved model's name, or openai:…@…, hf:…"),
                Field("with_image", "Show the judge the image (a vision judge)", "flag"),
                Field("both_orders", "Ask both orders (exposes position bias)", "flag", default=True),
            ],
            intro="The judge reads each pair's question and its two answers and says which is better, a tie, or "
            "both bad. Its verdicts are stored; Alignment › Pairs holds them against people's votes.",
        )
        if v and v["bench"] and v["judge"]:
            self.judge_pairs(str(v["bench"]), str(v["judge"]), bool(v["with_image"]), bool(v["both_orders"]))

    def judge_pairs(self, bench: str, judge: str, with_image: bool, both_orders: bool) -> CommandProcess | None:
        flags = [*(["--with-image"] if with_image else []), *(["--both-orders"] if both_orders else [])]
        return self.start(["judge-pairs", "--bench", bench, "--judge", judge, *flags], f"Judging the pairs of {bench}")

    def pope_build_dialog(self) -> None:
        v = self._ask(
            "pope build",
            "Build a POPE set",
            [
                Field("annotations", "Annotations", "open", tip="COCO instances_*.json or objects JSON Lines"),
                Field("images", "Images folder", "folder"),
                Field(
                    "setting",
                    "Setting",
                    "choice",
                    (("random", "random"), ("popular", "popular"), ("adversarial", "adversarial")),
                    "random",
                ),
                Field("images_count", "Images", "int", default=500),
                Field("per_image", "Objects per image", "int", default=3),
                Field("seed", "Seed", "int", default=0, minimum=0, maximum=2**31 - 1),
                Field("out", "Question file", "save", default=str(self._folder() / "pope.jsonl")),
                Field("name", "Benchmark name (optional)"),
            ],
            intro="Writes POPE questions from object annotations and imports them as a yes/no benchmark.",
        )
        if v:
            self.pope_build(
                str(v["annotations"]),
                str(v["images"]),
                str(v["setting"]),
                str(v["out"]),
                images_count=int(v["images_count"]),
                per_image=int(v["per_image"]),
                seed=int(v["seed"]),
                name=str(v["name"]) or None,
            )

    def check_dialog(self) -> None:
        v = self._ask(
            "check",
            "Check the workspace",
            [
                Field(
                    "repair",
                    "Repair what can be repaired",
                    "flag",
                    default=False,
                    tip="Rebuild the search index, upgrade the schema, delete orphan images",
                )
            ],
        )
        if v is not None:
            self.check(repair=bool(v["repair"]))

    def _folder(self) -> Path:
        return Path(self.window.ws.path).parent

    # -- the commands (public: tests and other views call these)
    def qc_text_only(self, bench: str, specs: list[str], *, limit: int | None = None) -> CommandProcess | None:
        if not specs:
            self.window.show_error("Text-only QC stage: choose at least one model")
            return None
        args = ["qc", "text-only", "--bench", bench, *[a for s in specs for a in ("--model", s)]]
        return self.start([*args, *(["--limit", str(limit)] if limit else [])], "Text-only QC stage")

    def qc_consensus(self, bench: str, run_ids: list[int]) -> CommandProcess | None:
        if not run_ids:
            self.window.show_error("Consensus QC stage: choose at least one finished run that saw the images")
            return None
        return self.start(
            ["qc", "consensus", "--bench", bench, *[a for r in run_ids for a in ("--run", str(r))]],
            "Consensus QC stage",
        )

    def qc_export(self, bench: str, out: str, *, with_reviews: bool = False) -> CommandProcess | None:
        return self.start(
            ["qc", "export", bench, "--out", out, *(["--with-reviews"] if with_reviews else [])],
            f"Exporting {bench}",
            refresh=False,
        )

    def align_sample(
        self, run_ids: list[int], name: str, *, size: int, seed: int = 0, extractor: str | None = None
    ) -> CommandProcess | None:
        if not run_ids:
            self.window.show_error("Adjudication set: choose at least one finished run")
            return None
        args = [
            "align",
            "sample",
            *[a for r in run_ids for a in ("--run", str(r))],
            "--size",
            str(size),
            "--seed",
            str(seed),
            "--name",
            name,
            *(["--extractor", extractor] if extractor else []),
        ]
        return self.start(args, f"Building the adjudication set {name!r}")

    def rescore(self, run_id: int, extractor: str) -> CommandProcess | None:
        return self.start(["rescore", str(run_id), "--extractor", extractor], f"Re-scoring run {run_id}")

    def arena_pairs(self, bench: str, run_ids: list[int], per_item: int, seed: int) -> CommandProcess | None:
        args = ["arena", "pairs", "--bench", bench, "--runs", *map(str, run_ids)]
        return self.start([*args, "--per-item", str(per_item), "--seed", str(seed)], f"Drawing arena pairs on {bench}")

    def judge_language(self, run_id: int, judge: str) -> CommandProcess | None:
        return self.start(
            ["desiderata", "language", str(run_id), "--judge", judge], f"Judging the language of run {run_id}"
        )

    def judge_open(
        self, run_id: int, judge: str, rubric: str | None = None, *, with_image: bool = False
    ) -> CommandProcess | None:
        args = ["judge", str(run_id), "--judge", judge, *(["--rubric", rubric] if rubric else [])]
        args += ["--with-image"] if with_image else []
        return self.start(args, f"Judging the open answers of run {run_id}")

    def pope_build(
        self,
        annotations: str,
        images: str,
        setting: str,
        out: str,
        *,
        images_count: int = 500,
        per_image: int = 3,
        seed: int = 0,
        name: str | None = None,
    ) -> CommandProcess | None:
        args = [
            "pope",
            "build",
            "--annotations",
            annotations,
            "--images",
            images,
            "--setting",
            setting,
            "--images-count",
            str(images_count),
            "--per-image",
            str(per_image),
            "--seed",
            str(seed),
            "--out",
            out,
            "--import",
            *(["--name", name] if name else []),
        ]
        return self.start(args, "Building a POPE set")

    def check(self, *, repair: bool = False) -> CommandProcess | None:
        return self.start(
            ["check", *(["--repair"] if repair else [])], "Checking the workspace", refresh=repair, ok_codes=(0, 1)
        )

    # -- a child process with a strip in the status bar
    def start(
        self, args: list[str], busy: str, *, refresh: bool = True, ok_codes: tuple[int, ...] = (0,)
    ) -> CommandProcess | None:
        window = self.window
        if window.ws is None:
            return None
        process = CommandProcess(window.ws.path, args, self)
        strip = QWidget()
        strip.setObjectName("commandProgress")
        layout = QHBoxLayout(strip)
        layout.setContentsMargins(0, 0, 0, 0)
        label = QLabel(f"{busy}…")
        label.setObjectName("commandProgressLabel")
        label.setMaximumWidth(420)
        bar = QProgressBar()
        bar.setMaximumWidth(120)
        bar.setTextVisible(False)
        bar.setRange(0, 0)  # busy: the commands tell their progress in words (on stderr)
        cancel = QPushButton("Cancel")
        cancel.setObjectName("commandCancel")
        cancel.setToolTip(f"Stop: {process.command_line()}")
        for widget in (label, bar, cancel):
            layout.addWidget(widget)
        window.statusBar().addPermanentWidget(strip)
        cancelled: list[bool] = []

        def progress() -> None:  # the command's own progress line (stderr), shortened
            lines = [ln.strip() for ln in process.stderr.replace("\r", "\n").splitlines() if ln.strip()]
            if lines and not cancelled:
                label.setText(f"{busy}: {lines[-1][:90]}")

        def on_cancel() -> None:
            cancelled.append(True)
            cancel.setEnabled(False)
            label.setText(f"{busy}: cancelling…")
            process.terminate()

        def finished() -> None:
            window.statusBar().removeWidget(strip)
            strip.deleteLater()
            self.running.remove(process)
            if cancelled:
                window.message_bar.show_message(f"{busy}: cancelled", "info")
            elif process.exit_code in ok_codes and not process.crashed:
                lines = [
                    ln.strip()
                    for ln in process.stdout.splitlines()
                    if ln.strip() and not ln.lstrip().startswith(("{", "["))
                ]
                window.message_bar.show_message(f"{busy}: {lines[-1] if lines else 'done'}", "info")
            else:
                errors = [ln for ln in process.stderr.splitlines() if ln.startswith("error:")]
                window.show_error(
                    errors[-1] if errors else f"{busy} failed: {process.error or process.stderr[-300:]}",
                    process.stderr,
                )
            if refresh and not cancelled:
                window.refresh()

        process.stderrChanged.connect(progress)
        cancel.clicked.connect(on_cancel)
        process.done.connect(finished)
        self.running.append(process)
        process.start()
        return process

    def shutdown(self) -> None:
        for process in list(self.running):
            process.terminate()
            if not process.process.waitForFinished(5000):
                process.kill()
