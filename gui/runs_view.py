"""The Runs tab: the launch form, the queue with the running job's progress and stderr, and the runs list with
resume. Every launch is a `vlmdesk run … --json-progress` child process (gui.run_queue); the form only turns its
widgets into that command line, shown under it."""

from __future__ import annotations

import json
import shlex

from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFormLayout,
    QFrame,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPlainTextEdit,
    QProgressBar,
    QPushButton,
    QScrollArea,
    QSpinBox,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from db import catalog, models
from db.runs import ROUNDS_MAX, SAMPLES_MAX
from evaluator.backends import REGISTRY as BACKENDS
from evaluator.backends.reasoning import AUTO, DEFAULT_TAGS, OFF, check_rule
from evaluator.engine.runner import (
    MAX_NEW_TOKENS,
    OPEN_MAX_NEW_TOKENS,
    RunSettings,
    default_max_new_tokens,
    sampling_refusal,
)
from evaluator.engine.variants import COT_MAX_NEW_TOKENS
from evaluator.scoring.choices import CHEF_COT_MAX_NEW_TOKENS
from gui import file_dialogs
from gui.fitting import ElidedLabel, compact_combo
from gui.run_queue import RunJob, RunQueue, RunRequest, run_args
from gui.runs_list import RunsList
from gui.tables import export_table
from gui.variant_group import VariantGroup

# (label, --strategy, --likelihood: False, True, or "prefix"/"chef" for that --likelihood-score) per benchmark kind;
# POPE is what a yes/no benchmark always gets.
STRATEGIES = {
    "mcq": (
        ("CircularEval", "circular", False),
        ("VanillaEval", "vanilla", False),
        ("Likelihood · CircularEval", "circular", True),
        ("Likelihood · VanillaEval", "vanilla", True),
        ("Prefix score · CircularEval", "circular", "prefix"),
        ("Prefix score · VanillaEval", "vanilla", "prefix"),
        ('ChEF calibration score (CoT, then "(A") · VanillaEval', "vanilla", "chef"),
    ),
    "yesno": (
        ("POPE (yes/no)", "circular", False),
        ("POPE · likelihood", "circular", True),
        ("POPE · prefix score", "circular", "prefix"),
    ),
    "open": (("Open answers (for the arena)", "circular", False),),
}
# The launcher's prompt choices (label, `--prompt` value); a template file chosen is added before the last entry.
PROMPTS = (
    ("vlmdesk (default)", "vlmdesk"),
    ("VLMEvalKit (the model's family)", "vlmevalkit"),
)
PROMPT_FILE = "file"  # the data of the "Template file…" entry, which opens a file dialog
STATE_MARKS = {"queued": "○", "running": "▶", "finished": "✓", "cancelled": "■", "failed": "✗"}
# The launcher's reasoning choices (--reasoning, shown as it is: the field is editable, custom tags are typed as
# "OPEN,CLOSE") and what each does, in its tooltip.
REASONING = (
    (AUTO, "the thought a server gives apart, else split from <think>…</think> (or a lone </think>)"),
    (OFF, "the whole output is the answer"),
    (",".join(DEFAULT_TAGS), "these tags only: edit them for your model's"),
)


def chat_kwargs_problem(text: str) -> str | None:
    """What is wrong with the launcher's chat template kwargs (empty: none), or None."""
    if not text.strip():
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        return f"chat template kwargs: not JSON ({exc.msg}, column {exc.colno})"
    return None if isinstance(value, dict) else 'chat template kwargs: a JSON object, e.g. {"enable_thinking": true}'


def reasoning_value(combo: QComboBox) -> str:
    """The reasoning rule the combo says: a listed choice's value, or the tags typed in it."""
    text = combo.currentText().strip()
    at = combo.findText(text)
    return combo.itemData(at) if at >= 0 else text


def eta(seconds) -> str:
    if seconds is None:
        return "–"
    seconds = int(seconds)
    return (
        f"{seconds // 60}:{seconds % 60:02d}" if seconds < 3600 else f"{seconds // 3600} h {seconds % 3600 // 60} min"
    )


class LaunchForm(QGroupBox):
    submitted = Signal(object)  # RunRequest

    def __init__(self, ctx, parent=None):
        super().__init__("New run", parent)
        self.ctx = ctx
        self.bench = compact_combo(QComboBox())
        self.model = compact_combo(QComboBox())
        self.model.setEditable(True)
        editor = self.model.lineEdit()
        assert editor is not None  # an editable combo box has one
        # Every registered scheme (hf:, openai:, vllm:, sglang:, baseline:…): a started server is a spec like any.
        schemes = ", ".join(f"{entry.name}:…" for entry in BACKENDS.help_entries())
        editor.setPlaceholderText(f"a saved model or a spec: {schemes}")
        self.model.setToolTip("A saved model, or a spec of any backend: " + "; ".join(
            entry.syntax for entry in BACKENDS.help_entries()
        ))  # fmt: skip
        self.strategy = compact_combo(QComboBox())
        self.extractor = compact_combo(QComboBox())
        self.extractor.setEditable(True)
        self.batch = QSpinBox(minimum=1, maximum=1024, value=8)
        self.max_tokens = QSpinBox(minimum=1, maximum=MAX_NEW_TOKENS, value=32)
        self.max_tokens.setToolTip(
            f"--max-new-tokens: thought and answer together (at most {MAX_NEW_TOKENS:,}; a thinking model wants "
            "thousands). A pass the budget cuts off is counted truncated, never retried."
        )
        # Thinking models and the chat (docs/guide/runs.md): each part of the run's identity when set.
        self.system = QPlainTextEdit()
        self.system.setPlaceholderText("none — a system prompt sent before every question")
        self.system.setFixedHeight(self.system.fontMetrics().lineSpacing() * 3 + 12)
        self.system.setTabChangesFocus(True)
        self.system.setToolTip("--system: sent before every question; part of the run's identity")
        self.reasoning = compact_combo(QComboBox())
        self.reasoning.setEditable(True)
        for value, words in REASONING:
            self.reasoning.addItem(value, value)
            self.reasoning.setItemData(self.reasoning.count() - 1, words, Qt.ItemDataRole.ToolTipRole)
        self.reasoning.setToolTip(
            "--reasoning: how a pass's thought is told from its answer. auto takes a server's reasoning_content "
            "and splits <think>…</think> (or a lone </think>); off keeps the whole output as the answer; or type "
            "your model's tags as OPEN,CLOSE"
        )
        self.chat_kwargs = QLineEdit()
        self.chat_kwargs.setPlaceholderText('none — e.g. {"enable_thinking": true}')
        self.chat_kwargs.setToolTip("--chat-template-kwargs: a JSON object for the model's chat template")
        self.thinking_budget = QSpinBox(minimum=0, maximum=MAX_NEW_TOKENS, value=0)
        self.thinking_budget.setSpecialValueText("none")
        self.thinking_budget.setToolTip(
            "--thinking-budget: the most tokens the thought may take, below Max new tokens (servers that bound "
            "it apart, e.g. vLLM's thinking_token_budget)"
        )
        self.problem = ElidedLabel("")  # what keeps the form from starting, one line (never lifts the fields)
        self.problem.setObjectName("muted")
        self.limit = QSpinBox(minimum=0, maximum=10_000_000, value=0)
        self.limit.setSpecialValueText("all items")
        self.text_only = QCheckBox("Text only (withhold the image)")
        self.variant = VariantGroup()
        self.multi_turn = compact_combo(QComboBox())  # the asking LLM of multi-turn reasoning; empty: off
        self.multi_turn.setEditable(True)
        self.multi_turn.setToolTip(
            "Multi-turn reasoning (LVLM-eHub): this LLM asks the model sub-questions about the image, then answers. "
            "Empty: off."
        )
        asker_editor = self.multi_turn.lineEdit()
        assert asker_editor is not None  # an editable combo box has one
        asker_editor.setPlaceholderText("off — or an LLM that asks sub-questions: openai:…, hf:…")
        self.rounds = QSpinBox(minimum=1, maximum=ROUNDS_MAX, value=4)
        self.rounds.setToolTip("Multi-turn: at most this many rounds of sub-questions; the last forces an answer")
        self.prompt = compact_combo(QComboBox())
        for label, value in PROMPTS:
            self.prompt.addItem(label, value)
        self.prompt.addItem("Template file…", PROMPT_FILE)
        self.prompt.setToolTip(
            "--prompt: vlmdesk's templates; the prompt VLMEvalKit builds for the model's family (read from an hf: "
            "model's config.json; the dataset's own for servers), to compare with its leaderboard; or a template "
            "file. Part of the run's identity."
        )
        self._prompt_index = 0
        self.seed = QSpinBox(minimum=0, maximum=2**31 - 1, value=0)  # the command takes 0..2**32-1; a spin box, int32
        self.seed.setToolTip("--seed: the seed of baseline:random (0, the default, is left out of the command)")
        self.samples = QSpinBox(minimum=1, maximum=SAMPLES_MAX, value=1)
        self.samples.setToolTip(
            "--samples: K samples per item and rotation, K runs one after another (sample s samples with the seed + "
            "s); the report gives mean@K and pass@k. Needs the spec's temperature > 0 (e.g. ?temperature=0.7)"
        )
        self.again = QCheckBox("Run again even if finished (--new)")
        self.again.setToolTip(
            "A run with the same settings that finished already is shown, not repeated, unless this is on"
        )
        self.command = QPlainTextEdit()
        self.command.setReadOnly(True)
        self.command.setObjectName("command")
        self.command.setFixedHeight(64)
        self.command.setToolTip("The command this form runs (copy it to run it in a terminal)")
        self.start = QPushButton("Start run")
        self.start.setObjectName("primary")
        self.start.clicked.connect(self._submit)
        fields = QWidget()
        form = QFormLayout(fields)
        form.setContentsMargins(0, 0, 0, 0)
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        form.addRow("Benchmark", self.bench)
        form.addRow("Model", self.model)
        form.addRow("Strategy", self.strategy)
        form.addRow("Extractor", self.extractor)
        form.addRow("Prompt", self.prompt)
        form.addRow("Batch size", self.batch)
        form.addRow("Max new tokens", self.max_tokens)
        form.addRow("Thinking budget", self.thinking_budget)
        form.addRow("Reasoning", self.reasoning)
        form.addRow("Chat template", self.chat_kwargs)
        form.addRow("System prompt", self.system)
        form.addRow("Limit", self.limit)
        form.addRow("Seed", self.seed)
        form.addRow("Samples", self.samples)
        form.addRow(self.text_only)  # across both columns: beside the labels, its words widened the form
        form.addRow(self.variant)
        form.addRow("Multi-turn asker", self.multi_turn)
        form.addRow("Rounds", self.rounds)
        form.addRow(self.again)
        cmd_label = QLabel("Command")
        cmd_label.setObjectName("muted")
        form.addRow(cmd_label)
        form.addRow(self.command)
        # The fields scroll; the action stays under them, in sight at any text size: at 1024x700 the form ended
        # at "Variant" and "Start run" was below the fold even at 1280x800.
        self.fields_scroll = QScrollArea()
        self.fields_scroll.setWidget(fields)
        self.fields_scroll.setWidgetResizable(True)
        self.fields_scroll.setFrameShape(QFrame.Shape.NoFrame)
        self.fields_scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.fields_scroll.setMinimumHeight(60)
        outer = QVBoxLayout(self)
        outer.addWidget(self.fields_scroll, 1)
        outer.addWidget(self.problem)
        # A suite is launched beside a single run (the runs list's head has no room for a fourth button at text x1.75).
        self.plan = QPushButton("Suite plan…")
        self.plan.setToolTip("Open, edit and run a plan of models × benchmarks, and see its suite table")
        actions = QHBoxLayout()
        actions.addWidget(self.start, 1)
        actions.addWidget(self.plan)
        outer.addLayout(actions)
        self.variant.toggled.connect(lambda _: self._fit_width())
        self._fit_width()
        self.bench.currentIndexChanged.connect(self._bench_changed)
        for combo in (self.model, self.extractor, self.multi_turn):
            combo.currentTextChanged.connect(self._update_command)
        for combo in (self.strategy, self.bench):
            combo.currentIndexChanged.connect(self._update_command)
        self.prompt.activated.connect(self._prompt_activated)
        self.prompt.currentIndexChanged.connect(self._prompt_changed)
        for spin in (self.batch, self.max_tokens, self.limit, self.rounds, self.seed, self.thinking_budget):
            spin.valueChanged.connect(self._update_command)
        self.samples.valueChanged.connect(self._update_command)
        self.reasoning.currentTextChanged.connect(self._update_command)
        self.chat_kwargs.textChanged.connect(self._update_command)
        self.system.textChanged.connect(self._update_command)
        for box in (self.text_only, self.again):
            box.toggled.connect(self._update_command)
        self.variant.changed.connect(self._update_command)
        self.variant.cot.toggled.connect(self._cot_tokens)
        self.strategy.currentIndexChanged.connect(self._strategy_tokens)
        self.reload()

    WIDTH = 414  # the form's width at the normal text size; a larger text widens it to what its fields need

    def _fit_width(self) -> None:
        """As wide as its fields need (never clipped on the right), at least WIDTH: its scroll area shows them whole."""
        fields = self.fields_scroll.widget()
        assert fields is not None  # set in __init__
        layout = self.layout()
        assert layout is not None  # set in __init__
        frame, inner = self.contentsMargins(), layout.contentsMargins()
        extra = frame.left() + frame.right() + inner.left() + inner.right()
        extra += self.fields_scroll.verticalScrollBar().sizeHint().width()
        self.setFixedWidth(max(self.WIDTH, fields.minimumSizeHint().width() + extra))

    def changeEvent(self, event) -> None:  # noqa: N802 — Qt's name
        super().changeEvent(event)
        if event.type() == QEvent.Type.FontChange:
            self._fit_width()

    def reload(self) -> None:
        bench_name = self.bench.currentData()
        model_text = self.model.currentText()
        self.bench.blockSignals(True)
        self.bench.clear()
        for b in catalog.list_benchmarks(self.ctx.ws):
            kind = {"yesno": "yes/no", "open": "open"}.get(b.kind, "MCQ")
            self.bench.addItem(f"{b.name}  ({b.questions:,} · {kind})", b.name)
            self.bench.setItemData(self.bench.count() - 1, b.kind, Qt.ItemDataRole.UserRole + 1)
        wanted = bench_name or (self.ctx.benchmark.name if self.ctx.benchmark else None)
        if wanted and (i := self.bench.findData(wanted)) >= 0:
            self.bench.setCurrentIndex(i)
        self.bench.blockSignals(False)
        saved = models.list_models(self.ctx.ws)
        self.model.blockSignals(True)
        self.model.clear()
        for m in saved:
            self.model.addItem(m.name, m.spec)
            self.model.setItemData(self.model.count() - 1, m.spec, Qt.ItemDataRole.ToolTipRole)
        backends = {entry.name: entry for entry in BACKENDS.help_entries()}
        for spec in (s for entry in backends.values() if entry.reference for s in entry.examples):
            if not any(m.spec == spec for m in saved):
                self.model.addItem(spec, spec)
        self.model.setCurrentText(model_text or self.model.itemText(0))
        self.model.blockSignals(False)
        extractor = self.extractor.currentText() or "rules"
        self.extractor.blockSignals(True)
        self.extractor.clear()
        self.extractor.addItem("rules")
        for m in saved:
            if m.kind in backends and not backends[m.kind].reference:  # a model that can read responses
                self.extractor.addItem(f"rules+llm:{m.spec}")
        self.extractor.setCurrentText(extractor)
        self.extractor.blockSignals(False)
        asker = self.multi_turn.currentText()
        self.multi_turn.blockSignals(True)
        self.multi_turn.clear()
        self.multi_turn.addItem("")
        for m in saved:
            if m.kind in backends and not backends[m.kind].reference:  # a model that can ask
                self.multi_turn.addItem(m.spec)
        self.multi_turn.setCurrentText(asker)
        self.multi_turn.blockSignals(False)
        self._bench_changed()

    def _bench_changed(self) -> None:
        kind = self.bench.currentData(Qt.ItemDataRole.UserRole + 1) or "mcq"
        previous = self.strategy.currentIndex()
        self.strategy.blockSignals(True)
        self.strategy.clear()
        for label, strategy, likelihood in STRATEGIES[kind]:
            self.strategy.addItem(label, (strategy, likelihood))
        self.strategy.setCurrentIndex(max(0, min(previous, self.strategy.count() - 1)))
        self.strategy.blockSignals(False)
        self.extractor.setEnabled(kind == "mcq")
        self.variant.set_kind(kind)
        self.multi_turn.setEnabled(kind == "mcq")
        if self.max_tokens.value() in (RunSettings.max_new_tokens, OPEN_MAX_NEW_TOKENS):  # not one the user chose
            self.max_tokens.setValue(default_max_new_tokens(kind))
        self._update_command()

    def _prompt_activated(self, index: int) -> None:
        """ "Template file…" chosen: a file dialog (gui/file_dialogs.py); cancelled, the previous choice stays."""
        if self.prompt.itemData(index) != PROMPT_FILE:
            return
        path = file_dialogs.open_file(self, "Prompt template", "", "Templates (*.txt *.json);;All files (*)")
        if path:
            self.choose_prompt_file(path)
        else:
            self.prompt.setCurrentIndex(self._prompt_index)

    def _prompt_changed(self, index: int) -> None:
        if self.prompt.itemData(index) != PROMPT_FILE:
            self._prompt_index = index
            self._update_command()

    def choose_prompt_file(self, path: str) -> None:
        """A template file as the prompt: listed (by its name, the path in its tip) before "Template file…"."""
        at = self.prompt.findData(path)
        if at < 0:
            at = self.prompt.count() - 1
            self.prompt.insertItem(at, f"File: {path.rsplit('/', 1)[-1]}", path)
            self.prompt.setItemData(at, path, Qt.ItemDataRole.ToolTipRole)
        self.prompt.setCurrentIndex(at)

    def prompt_choice(self) -> str:
        value = self.prompt.itemData(self._prompt_index)
        return value if isinstance(value, str) and value != PROMPT_FILE else "vlmdesk"

    def model_spec(self) -> str:
        text = self.model.currentText().strip()
        i = self.model.findText(text)
        return self.model.itemData(i) if i >= 0 else text

    def set_choice(
        self, *, bench: str | None = None, model: str | None = None, strategy: str | None = None, **values
    ) -> None:
        """Fill the form (tests, presets): strategy by its label; values: batch, max_tokens, limit, seed, text_only,
        again, extractor, multi_turn, rounds, prompt (vlmdesk, vlmevalkit or a template file's path), thinking_budget,
        reasoning (a rule: auto, off or OPEN,CLOSE), chat_kwargs (JSON text), system (text), samples."""
        if (rule := values.pop("reasoning", None)) is not None:
            at = self.reasoning.findData(rule)
            self.reasoning.setCurrentIndex(at) if at >= 0 else self.reasoning.setCurrentText(rule)
        if (prompt := values.pop("prompt", None)) is not None:
            found = self.prompt.findData(prompt)
            if found >= 0:
                self.prompt.setCurrentIndex(found)
            else:
                self.choose_prompt_file(prompt)
        if bench is not None:
            self.bench.setCurrentIndex(self.bench.findData(bench))
        if model is not None:
            self.model.setCurrentText(model)
        if strategy is not None:
            self.strategy.setCurrentIndex(self.strategy.findText(strategy))
        for name, value in values.items():
            widget = getattr(self, name)
            if isinstance(widget, QSpinBox):
                widget.setValue(value)
            elif isinstance(widget, QCheckBox):
                widget.setChecked(value)
            elif isinstance(widget, (QLineEdit, QPlainTextEdit)):
                widget.setPlainText(value) if isinstance(widget, QPlainTextEdit) else widget.setText(value)
            else:
                widget.setCurrentText(value)
        self._update_command()

    def problems(self) -> list[str]:
        """What in the thinking settings cannot be run, in words (the form says the first and does not start)."""
        found = [check_rule(reasoning_value(self.reasoning)), chat_kwargs_problem(self.chat_kwargs.text())]
        budget = self.thinking_budget.value()
        if budget and budget >= self.max_tokens.value():
            found.append(f"thinking budget {budget:,} must be below max new tokens ({self.max_tokens.value():,})")
        if (k := self.samples.value()) > 1:  # the command's own refusal, said before it is started
            likelihood = bool((self.strategy.currentData() or ("circular", False))[1])
            found.append(sampling_refusal(self.model_spec(), RunSettings(likelihood=likelihood), k))
            if self.again.isChecked():
                found.append("--new with --samples: each sample run is found and continued; choose another seed")
        return [p for p in found if p]

    def request(self) -> RunRequest | None:
        bench, spec = self.bench.currentData(), self.model_spec()
        if not bench or not spec or self.problems():
            return None
        strategy, likelihood = self.strategy.currentData() or ("circular", False)
        asker = self.multi_turn.currentText().strip() if self.multi_turn.isEnabled() and not likelihood else ""
        self.rounds.setEnabled(bool(asker))
        args = run_args(
            bench=bench,
            model=spec,
            strategy=strategy,
            likelihood=likelihood,
            extractor=self.extractor.currentText().strip() or "rules",
            batch_size=self.batch.value(),
            max_new_tokens=self.max_tokens.value(),
            limit=self.limit.value() or None,
            text_only=self.text_only.isChecked(),
            multi_turn=asker or None,
            rounds=self.rounds.value(),
            seed=self.seed.value(),
            prompt=self.prompt_choice(),
            new=self.again.isChecked(),
            system=self.system.toPlainText().strip() or None,
            reasoning=reasoning_value(self.reasoning),
            chat_template_kwargs=(
                json.dumps(json.loads(kwargs), sort_keys=True) if (kwargs := self.chat_kwargs.text().strip()) else None
            ),
            thinking_budget=self.thinking_budget.value() or None,
            samples=self.samples.value(),
        ) + tuple(self.variant.args())
        return RunRequest(args, f"{spec} on {bench}")

    def _cot_tokens(self, on: bool) -> None:
        """A chain of thought needs room: the CLI's --cot default, unless the length was changed by hand."""
        if on and self.max_tokens.value() == 32:
            self.max_tokens.setValue(COT_MAX_NEW_TOKENS)
        elif not on and self.max_tokens.value() == COT_MAX_NEW_TOKENS:
            self.max_tokens.setValue(32)

    def _strategy_tokens(self) -> None:
        """ChEF's calibration score thinks first: its recipe's length, unless the length was changed by hand."""
        chef = (self.strategy.currentData() or ("", False))[1] == "chef"
        if chef and self.max_tokens.value() == RunSettings.max_new_tokens:
            self.max_tokens.setValue(CHEF_COT_MAX_NEW_TOKENS)
        elif not chef and self.max_tokens.value() == CHEF_COT_MAX_NEW_TOKENS:
            self.max_tokens.setValue(RunSettings.max_new_tokens)

    def _update_command(self) -> None:
        req = self.request()
        problems = self.problems()
        self.command.setPlainText(shlex.join(["vlmdesk", *req.args]) if req else "")
        self.problem.setText(problems[0] if problems else "")
        self.start.setEnabled(req is not None)
        self.start.setToolTip(
            ""
            if req is not None
            else problems[0]
            if problems
            else "Import a benchmark first (File › Import benchmark…, or the demo)"
            if not self.bench.count()
            else "Choose a model: a saved one or a spec (hf:…, openai:…, vllm:…, baseline:…)"
        )

    def _submit(self) -> None:
        req = self.request()
        if req is not None:
            self.submitted.emit(req)


class JobCard(QFrame):
    """The running (or last) job: title, progress bar, items/passes/rate/ETA, cancel."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("jobCard")
        self.job: RunJob | None = None
        # One line beside Cancel, elided (whole in its tooltip; the queue below names the job too): wrapped, its
        # height changed with each job and moved the bar and the queue below it.
        self.title = ElidedLabel("No run in progress")
        self.title.setObjectName("pageTitle")
        self.bar = QProgressBar()
        self.bar.setTextVisible(True)
        self.stats = QLabel("Start a run with the form; runs queue one after another.")
        self.stats.setObjectName("muted")
        self.stats.setWordWrap(True)
        self.cancel = QPushButton("Cancel run")
        self.cancel.setEnabled(False)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(12, 10, 12, 10)
        head = QHBoxLayout()
        head.addWidget(self.title, 1)
        head.addWidget(self.cancel, 0, Qt.AlignmentFlag.AlignTop)
        layout.addLayout(head)
        layout.addWidget(self.bar)
        layout.addWidget(self.stats)

    def show_job(self, job: RunJob | None) -> None:
        self.job = job
        if job is None:
            return
        p = job.progress
        total, items = p.get("items_total"), p.get("items_done", 0)
        run = f" → Run {job.run_id}" if job.run_id else ""
        self.title.setText(f"{STATE_MARKS[job.state]} {job.name}{run} · {job.request.title}")
        # Unknown total while the model loads: a busy bar (range 0..0); afterwards items done of items total.
        self.bar.setRange(0, total if total else (0 if job.state == RunJob.RUNNING else 1))
        if total:
            self.bar.setValue(items)
            self.bar.setFormat(f"{items} / {total} items  (%p%)")
        elif job.state != RunJob.RUNNING:
            self.bar.setValue(1 if job.state == RunJob.FINISHED else 0)
            self.bar.setFormat(job.state)
        else:
            self.bar.setFormat("loading the model…")
        parts = []
        if job.start_event.get("resumed"):  # not a fresh start at 0: say what was there already
            parts.append(f"resumed ({job.start_event.get('passes_done', 0)} passes stored before)")
        if p:
            parts.append(
                f"items {items}/{total or '?'} · passes {p.get('passes_done', 0)}"
                + (f" · wave {p['wave'] + 1}" if "wave" in p else "")
            )
        if "calls_per_s" in p:  # a stopped job has no ETA: it would say the cancelled run goes on
            eta_text = f" · ETA ≤ {eta(p.get('eta_s'))}" if job.state == RunJob.RUNNING else ""
            parts.append(f"{p['calls_per_s']:.1f} calls/s{eta_text}")
        if job.state != RunJob.RUNNING:
            parts.append(job.state + (f": {job.message}" if job.message else ""))
        elif job.message:
            parts.append(job.message)
        self.stats.setText("   ·   ".join(parts) or "starting…")
        self.cancel.setEnabled(job.state == RunJob.RUNNING and not job.cancel_requested)


class RunsView(QWidget):
    openResults = Signal(list)  # run ids

    def __init__(self, ctx, parent=None):
        super().__init__(parent)
        self.ctx = ctx
        self.queue = RunQueue(str(ctx.ws.path), self)
        self._started: set[int] = set()  # queue numbers whose start event has been seen
        self._announced: set[int] = set()  # run ids of jobs whose run was listed and announced (runsChanged)
        self.form = LaunchForm(ctx)
        self.form.submitted.connect(self.queue.submit)
        self.card = JobCard()
        self.card.cancel.clicked.connect(self._cancel_shown)
        self.jobs = QListWidget()
        self.jobs.setObjectName("jobList")
        self.jobs.setWordWrap(True)
        self.jobs.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.jobs.currentRowChanged.connect(self._job_selected)
        self.remove_queued = QPushButton("Remove from queue")
        self.remove_queued.clicked.connect(self._remove_selected)
        self.log = QPlainTextEdit()
        self.log.setReadOnly(True)
        self.log.setObjectName("log")
        self.log.setPlaceholderText("The selected run's messages (stderr): errors, tracebacks, out-of-memory…")
        self.log_title = ElidedLabel("Messages")  # "Messages · Queue #12" never widens the window
        self.log_title.setObjectName("sectionTitle")

        self.runs = RunsList(ctx)
        self.resume = QPushButton("Resume")
        self.resume.setToolTip("Continue an interrupted or failed run (vlmdesk run --resume ID)")
        self.resume.clicked.connect(self._resume)
        self.results = QPushButton("Show results")
        self.results.clicked.connect(self._open_results)
        export = QPushButton("Export CSV…")
        export.clicked.connect(lambda: export_table(self, self.runs.model, "runs.csv"))
        self.form.plan.clicked.connect(self.open_plan)
        self.runs.selectionChanged.connect(self._run_selected)
        self.runs.activated.connect(lambda run_id: self.openResults.emit([run_id]))

        queue_box = QWidget()
        ql = QVBoxLayout(queue_box)
        ql.setContentsMargins(0, 0, 0, 0)
        ql.addWidget(self.card)
        row = QHBoxLayout()
        jobs_col = QVBoxLayout()
        t = QLabel("Queue")
        t.setObjectName("sectionTitle")
        jobs_col.addWidget(t)
        jobs_col.addWidget(self.jobs, 1)
        jobs_col.addWidget(self.remove_queued, 0, Qt.AlignmentFlag.AlignLeft)
        log_col = QVBoxLayout()
        log_col.addWidget(self.log_title)
        log_col.addWidget(self.log, 1)
        row.addLayout(jobs_col, 2)
        row.addLayout(log_col, 3)
        ql.addLayout(row, 1)
        top = QWidget()
        tl = QHBoxLayout(top)
        tl.setContentsMargins(0, 0, 0, 0)
        tl.setSpacing(12)
        # The form's fields scroll inside it rather than set the window's minimum height: with the variant and
        # multi-turn rows they are taller than the Runs tab has room for at 1024x700.
        tl.addWidget(self.form, 0)
        tl.addWidget(queue_box, 1)

        runs_box = QWidget()
        rl = QVBoxLayout(runs_box)
        rl.setContentsMargins(0, 0, 0, 0)
        head = QHBoxLayout()
        t = QLabel("Runs in this workspace")
        t.setObjectName("sectionTitle")
        head.addWidget(t)
        head.addStretch(1)
        for b in (self.resume, self.results, export):
            head.addWidget(b)
        rl.addLayout(head)
        rl.addWidget(self.runs, 1)

        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(top)
        split.addWidget(runs_box)
        split.setSizes([420, 280])
        split.setChildrenCollapsible(False)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(10, 10, 10, 10)
        layout.addWidget(split, 1)

        self.queue.jobAdded.connect(self._job_added)
        self.queue.jobChanged.connect(self._job_changed)
        self.queue.jobFinished.connect(self._job_finished)
        ctx.benchmarkChanged.connect(self._benchmark_changed)
        self.runs.reload()
        self._run_selected()

    # -- queue
    def _job_added(self, job: RunJob) -> None:
        item = QListWidgetItem()
        item.setData(Qt.ItemDataRole.UserRole, job.number)
        self.jobs.addItem(item)
        self._job_changed(job)

    def _job_changed(self, job: RunJob) -> None:
        fresh_start = job.start_event and job.number not in self._started
        if fresh_start:
            self._started.add(job.number)
        # The run row now exists, or a resumed run is running again (its row said "interrupted"): list it anew.
        if job.run_id is not None and (job.run_id not in self._announced or fresh_start):
            self._announced.add(job.run_id)
            self.runs.reload()
            self.ctx.runsChanged.emit()
        for row in range(self.jobs.count()):
            item = self.jobs.item(row)
            if item.data(Qt.ItemDataRole.UserRole) == job.number:
                item.setText(f"{STATE_MARKS[job.state]} {job.summary()}")
                item.setToolTip(item.text())
        if job.state == RunJob.RUNNING or self.card.job in (None, job) or self.queue.current is None:
            # The card and the Messages pane name the same job: when the card moves on (a start, a cancel, a
            # failure), so does the selection, else the pane kept showing an older job's messages.
            if self.card.job is not job or job.state != RunJob.RUNNING:
                self.jobs.setCurrentRow(self.queue.jobs.index(job))
            self.card.show_job(job)
        if self._selected_job() is job:
            self._show_log(job)
        selected = self._selected_job()
        self.remove_queued.setEnabled(selected is not None and selected.state == RunJob.QUEUED)

    def _job_finished(self, job: RunJob) -> None:
        self.runs.reload()
        self.form.reload()
        self.ctx.runsChanged.emit()
        if job.state == RunJob.FAILED:
            self.ctx.error.emit(f"Run failed: {job.message}", job.stderr)

    def _selected_job(self) -> RunJob | None:
        row = self.jobs.currentRow()
        return self.queue.jobs[row] if 0 <= row < len(self.queue.jobs) else None

    def _job_selected(self, _row: int) -> None:
        job = self._selected_job()
        if job is not None:
            self._show_log(job)
            self.remove_queued.setEnabled(job.state == RunJob.QUEUED)

    def _show_log(self, job: RunJob) -> None:
        command = job.process.command_line() if job.process else shlex.join(["vlmdesk", *job.request.args])
        text = f"$ {command}\n{job.stderr}"
        if job.message and job.state != RunJob.RUNNING:
            text += f"\n[{job.state}] {job.message}\n"
        if self.log.toPlainText() != text:
            self.log.setPlainText(text)
            self.log.verticalScrollBar().setValue(self.log.verticalScrollBar().maximum())
        self.log_title.setText(f"Messages · {job.name}")

    def _remove_selected(self) -> None:
        job = self._selected_job()
        if job is not None:
            self.queue.cancel(job)

    # -- runs
    def _run_selected(self) -> None:
        ids = self.runs.selected_run_ids()
        run = self.runs.run(ids[0]) if len(ids) == 1 else None
        self.resume.setEnabled(
            bool(run and run.status in ("interrupted", "failed", "running") and not self._queued_or_running(run.id))
        )
        self.results.setEnabled(bool(ids))

    def _queued_or_running(self, run_id: int) -> bool:
        return any(j.run_id == run_id and j.state in (RunJob.QUEUED, RunJob.RUNNING) for j in self.queue.jobs)

    def _cancel_shown(self) -> None:
        if self.card.job is not None:
            self.jobs.setCurrentRow(self.queue.jobs.index(self.card.job))
            self.queue.cancel(self.card.job)

    def _open_results(self) -> None:
        ids = self.runs.selected_run_ids()
        if ids:
            self.openResults.emit(ids)

    def _resume(self) -> None:
        ids = self.runs.selected_run_ids()
        run = self.runs.run(ids[0]) if ids else None
        if ids and run is not None:
            self.queue.resume(ids[0], f"resume {run.model_spec} on {run.benchmark}")
            self._run_selected()

    def _benchmark_changed(self) -> None:
        if self.ctx.benchmark is not None and self.form.bench.findData(self.ctx.benchmark.name) < 0:
            self.form.reload()  # imported since the form was filled (the demo, from an empty workspace)
        if self.ctx.benchmark is not None and self.queue.current is None:
            i = self.form.bench.findData(self.ctx.benchmark.name)
            if i >= 0:
                self.form.bench.setCurrentIndex(i)

    def open_plan(self):
        """The suite plan dialog (gui/plan_view.py), one per tab, kept while the tab lives."""
        from gui.plan_view import PlanDialog

        if getattr(self, "plan_dialog", None) is None:
            self.plan_dialog = PlanDialog(self.ctx, self.queue, self)
        self.plan_dialog.show()
        self.plan_dialog.raise_()
        return self.plan_dialog

    def shutdown(self) -> None:
        self.queue.shutdown()
