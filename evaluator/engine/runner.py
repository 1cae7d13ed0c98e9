"""The evaluation engine: CircularEval in waves, VanillaEval, POPE; resumable, one transaction per batch.

Pass k of a multiple-choice item shows its options rotated by k (option i displayed is original (i + k) mod N).
Waves: pass k of every item still alive is asked before any pass k + 1, batched, so early termination (a wrong pass
ends the item) and batching coexist. Everything is derived from the stored predictions, so a run killed at any
moment continues exactly where its last committed batch ended.
"""

from __future__ import annotations

import contextlib
import hashlib
import inspect
import itertools
import json
import platform
import subprocess
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from db import run_items, runs
from db.catalog import Benchmark, Item
from db.errors import InvalidInput
from db.workspace import Workspace
from evaluator.backends import Backend, BackendError, can_score, check_spec, reasoning, run_identity
from evaluator.backends.base import Chat, Generation, Query, RetryWait, Stream, call_size, chunk_items
from evaluator.backends.door import Door, telling_waits_to
from evaluator.engine import variants
from evaluator.engine.multiturn import MultiTurn, Question, load_multi_turn
from evaluator.engine.progress import Progress, WaitEvent
from evaluator.engine.prompt_presets import vlmevalkit_preset
from evaluator.engine.prompts import PromptTemplate
from evaluator.engine.variants import Variants
from evaluator.scoring.choices import (
    CHEF_ANSWER_LEAD,
    LIKELIHOOD_SCORES,
    chef_candidates,
    displayed_answer,
    pass_correct,
    passes_needed,
    prefix_candidates,
    prefix_scores,
    read_yes_no,
    rotation,
    shown_options,
    still_alive,
)
from evaluator.scoring.extraction import TRUNCATED, Extraction
from evaluator.scoring.llm_extraction import Extractor, load_extractor
from evaluator.types import MCQ_STRATEGIES, McqStrategy, Strategy


@dataclass(frozen=True)
class RunSettings:
    """Everything that decides a run's answers (batch size does not, so it is not part of the run's identity)."""

    strategy: McqStrategy = "circular"  # yes/no benchmarks always take one pass (strategy "pope")
    full_passes: bool = False
    limit: int | None = None
    max_new_tokens: int = 32
    text_only: bool = False
    likelihood: bool = False
    seed: int = 0
    extractor: str = "rules"
    # Likelihood mode's score (evaluator.scoring.choices.LIKELIHOOD_SCORES): "sum" of the letter's token log-probs,
    # LVLM-eHub's
    # "prefix" score over the option texts, or "chef" (ChEF's calibration: CoT, then the mean log-prob of "(A"…).
    likelihood_score: str = "sum"
    # Run variants (evaluator/engine/variants.py): ChEF's label maps, corruptions, k-shot prompts, chain of thought.
    label_map: str | None = None
    corrupt: tuple[str, ...] = ()
    corrupt_options: bool = False
    shots: int = 0
    shot_selection: str = "random"
    cot: bool = False
    multi_turn: str | None = None  # the asking LLM's backend spec: LVLM-eHub's multi-turn reasoning (multiturn.py)
    rounds: int = 4  # at most this many rounds of sub-questions per multi-turn pass
    # The prompt preset the run asks with (evaluator/engine/prompt_presets.py), e.g. "vlmevalkit:qwen2_vl"; None for
    # vlmdesk's own templates and template files (their runs keep the identity they always had).
    prompt_preset: str | None = None
    # Thinking models (issue 36, docs/adr/0051): how a pass's thought is split from its answer
    # (evaluator/backends/reasoning.py: "auto", "off" or "OPEN,CLOSE"); a system prompt sent before each question;
    # keyword arguments for the model's chat template (a JSON object's text, keys sorted, e.g. '{"enable_thinking":
    # true}'); the most tokens the thought may take where the backend can bound it apart (None: only max_new_tokens).
    reasoning: str = "auto"
    system: str | None = None
    chat_template_kwargs: str | None = None
    thinking_budget: int | None = None
    # K samples per item (issue 38, docs/adr/0057): sample s of a sample group is the same run asked again with the
    # backend's sampling seed + s. Sample 0 is the plain run (the default, left out of the identity).
    sample: int = 0

    def identity(self) -> dict[str, Any]:
        """The settings as stored and hashed into the run's config key. A setting added after the first release is
        left out while it has its default value, so runs stored before it existed keep their key (re-running them
        still finds them) and their stored config reads the same."""
        values = asdict(self)
        return {
            k: v for k, v in values.items() if k in _FIRST_RELEASE or v != RunSettings.__dataclass_fields__[k].default
        }

    def config(self, batch_size: int, sample_of: str | None = None) -> dict[str, Any]:
        """The stored config: the identity, the batch size and, for sample s >= 1, `sample_of` (its group's key: the
        config key of sample 0, which finds the group's runs; like the batch size, not part of the identity)."""
        found = {**self.identity(), "batch_size": batch_size}
        return found | ({"sample_of": sample_of} if sample_of is not None else {})

    def check(self) -> None:
        """ValueError naming every setting out of range (before a run is stored with them)."""
        problems = runs.config_problems(self.config(1))
        if self.strategy not in MCQ_STRATEGIES:
            problems.append(f"strategy: {self.strategy!r} is not circular or vanilla")
        if self.likelihood_score not in LIKELIHOOD_SCORES:
            problems.append(
                f"likelihood_score: {str(self.likelihood_score)[:40]!r} is not one of {', '.join(LIKELIHOOD_SCORES)}"
            )
        elif self.likelihood_score != "sum" and not self.likelihood:
            problems.append(f"likelihood_score: the {self.likelihood_score} score needs likelihood mode")
        problems += variants.problems(self)
        problems += multi_turn_problems(self)
        problems += prompt_preset_problems(self.prompt_preset)
        problems += chat_problems(self)
        if self.sample and self.likelihood:
            problems.append("sample: likelihood mode scores the options, it does not sample; no samples with it")
        if problems:
            raise InvalidInput("; ".join(problems))


def sampling_refusal(spec: str, settings: RunSettings, samples: int) -> str | None:
    """Why `--samples K` (K > 1) cannot give K different samples of this run (one line naming what to change), or
    None. Read from the spec's text and the settings; nothing is loaded."""
    from urllib.parse import parse_qsl

    if samples <= 1:
        return None
    if settings.likelihood:
        return (
            f"--samples {samples}: likelihood mode scores the options, it does not sample (the same scores "
            f"{samples} times); drop --likelihood or --samples"
        )
    options = dict(parse_qsl(spec.partition("?")[2][:4096], keep_blank_values=True))
    try:
        temperature = float(options.get("temperature", "0"))
    except ValueError:
        temperature = 0.0
    if not temperature > 0:
        return (
            f"--samples {samples} needs sampling: add ?temperature=0.7 to the model spec (greedy decoding gives the "
            f"same answer {samples} times)"
        )
    if "seed" in options:
        return (
            f"--samples {samples}: the spec's seed={options['seed'][:20]} makes every sample the same; drop seed= "
            "from the spec (sample s samples with the run's --seed + s)"
        )
    return None


def multi_turn_problems(settings: RunSettings) -> list[str]:
    """What is wrong with a run's multi-turn settings (the asker's spec is read, nothing is loaded)."""
    if settings.multi_turn is None:
        return ["rounds: only with multi_turn (an asking LLM)"] if settings.rounds != RunSettings.rounds else []
    problems = []
    try:
        check_spec(settings.multi_turn)
    except BackendError as exc:
        problems.append(f"multi_turn: {exc}")
    if settings.likelihood:
        problems.append("multi_turn: the asking LLM answers in words; not with likelihood")
    return problems


MAX_NEW_TOKENS = 32_768  # a thinking model's budget (VLMEvalKit's SPLIT_THINK default): the most a new run asks
MAX_SYSTEM_CHARS = 64 * 2**10


def chat_problems(settings: RunSettings) -> list[str]:
    """What is wrong with a run's thinking and chat settings (issue 36)."""
    problems = []
    if (wrong := reasoning.check_rule(settings.reasoning)) is not None:
        problems.append(wrong)
    if settings.system is not None and not (
        isinstance(settings.system, str) and 0 < len(settings.system) <= MAX_SYSTEM_CHARS
    ):
        problems.append(f"system: a system prompt is 1..{MAX_SYSTEM_CHARS:,} characters of text")
    if settings.chat_template_kwargs is not None:
        try:
            canonical = canonical_template_kwargs(settings.chat_template_kwargs)
        except ValueError as exc:
            problems.append(f"chat_template_kwargs: {exc}")
        else:
            if canonical != settings.chat_template_kwargs:
                problems.append("chat_template_kwargs: not in canonical form (canonical_template_kwargs)")
    budget = settings.thinking_budget
    if budget is not None and not (isinstance(budget, int) and 1 <= budget < settings.max_new_tokens):
        problems.append(
            f"thinking_budget: {str(budget)[:20]} must be at least 1 and below max_new_tokens "
            f"({settings.max_new_tokens}): the answer needs room after the thought"
        )
    return problems


def canonical_template_kwargs(text: str) -> str:
    """Chat template keyword arguments as a run stores them: a JSON object of at most 4 KiB, keys sorted, compact —
    the same arguments are the same run whatever spacing or order they were typed in. ValueError for anything else."""
    if len(text) > 4096:
        raise ValueError("at most 4 KiB of JSON")
    try:
        value = json.loads(text)
    except ValueError:
        raise ValueError(f"not JSON: {text[:60]!r}") from None
    if not isinstance(value, dict) or not value:
        raise ValueError('a JSON object of keyword arguments, e.g. {"enable_thinking": true}')
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def prompt_preset_problems(preset: object) -> list[str]:
    if preset is None:
        return []
    try:
        vlmevalkit_preset(preset if isinstance(preset, str) else "")
    except InvalidInput as exc:
        return [f"prompt_preset: {exc}"]
    return []


# The settings of the first release: always stored and hashed, whatever their value (RunSettings.identity).
_FIRST_RELEASE = frozenset(
    ("strategy", "full_passes", "limit", "max_new_tokens", "text_only", "likelihood", "seed", "extractor")
)


def scores_first_tokens(backend: Backend) -> bool:
    """Whether a backend's score() reads first tokens only when asked (``first_token=True``: the prefix score)."""
    score = getattr(backend, "score", None)
    return callable(score) and "first_token" in inspect.signature(score).parameters


def scores_after_text(backend: Backend) -> bool:
    """Whether a backend's score() scores candidates after text of the model's own turn and gives per-token means
    (``lead=…, mean=True``: ChEF's calibration score)."""
    score = getattr(backend, "score", None)
    return callable(score) and {"lead", "mean"} <= set(inspect.signature(score).parameters)


def likelihood_refusal(backend: Backend, settings: RunSettings) -> str | None:
    """Why this backend cannot run a run of these likelihood settings (a line naming the option to drop), or None."""
    if settings.likelihood and not can_score(backend):
        return f"{backend.spec} cannot score likelihoods; drop --likelihood"
    if settings.likelihood_score == "prefix" and not scores_first_tokens(backend):
        return f"{backend.spec} cannot score first tokens; drop --likelihood-score prefix"
    if settings.likelihood_score == "chef" and not scores_after_text(backend):
        return f"{backend.spec} cannot score candidates after a chain of thought; drop --likelihood-score chef"
    return None


def settings_of(run: runs.Run) -> RunSettings:
    """The settings a stored run was started with; ValueError when its stored config is unreadable (such a run
    is shown, never executed)."""
    problems = [p for p in run.problems if p.startswith("config")]
    if problems:
        raise InvalidInput(f"run {run.id}: stored settings are unreadable: {'; '.join(problems)}")
    known = {f for f in RunSettings.__dataclass_fields__}
    stored = {k: v for k, v in run.config.items() if k in known}
    if isinstance(stored.get("corrupt"), list):  # JSON stores the tuple as a list
        stored["corrupt"] = tuple(stored["corrupt"])
    settings = RunSettings(**stored)
    settings.check()
    return settings


def strategy_for(bench: Benchmark, settings: RunSettings) -> Strategy:
    return "pope" if bench.kind == "yesno" else "open" if bench.kind == "open" else settings.strategy


def config_key(bench: Benchmark, model_spec: str, settings: RunSettings, template: PromptTemplate) -> str:
    identity = {
        "benchmark": bench.source_sha256,
        "model": run_identity(model_spec),  # an openai spec's replicas do not name the run
        "settings": settings.identity(),
        "template": template.to_json(),
    }
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()


def versions() -> dict[str, Any]:
    from importlib.metadata import PackageNotFoundError, version

    found = {"python": platform.python_version()}
    for package in ("vlmdesk", "torch", "transformers", "httpx2", "pillow"):
        try:
            found[package] = version(package)
        except PackageNotFoundError:
            pass
    return found


def git_revision() -> str | None:
    """The source revision of this vlmdesk checkout, when it runs from one."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=Path(__file__).resolve().parent, capture_output=True, text=True, timeout=5
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def n_passes(item: Item, strategy: str) -> int:
    return passes_needed(strategy, len(item.options))


def prompt_length(item: Item) -> int:
    """What a wave sorts its items by, so that similar prompt lengths batch together (less padding)."""
    return len(item.question) + sum(map(len, item.options)) + len(item.hint or "")


@dataclass
class Slot:
    """An item being asked (its page of items is read): the passes it needs, its stored passes (pass -> right),
    whether it is still alive, and the first pass not stored."""

    item: Item
    needed: int
    marks: dict[int, bool | None] = field(default_factory=dict)
    alive: bool = True
    asked: int = 0


@dataclass(frozen=True)
class Posed:
    """One pass as the engine asks it (Engine._pose)."""

    item: Item
    k: int
    order: tuple[int, ...]
    query: Query


class Engine:
    """Runs (or continues) one stored run against a backend."""

    def __init__(
        self,
        ws: Workspace,
        run: runs.Run,
        backend: Backend,
        *,
        batch_size: int,
        on_progress: Callable[[Progress | WaitEvent], None] | None = None,
        extractor: Extractor | None = None,
        owner: runs.Owner | None = None,
        multi_turn: MultiTurn | None = None,
    ):
        # Every answer enters through the door (redacted, bounded, its thought split by the run's rule): a backend
        # loaded by load_backend is behind it already; one handed in bare (a test, a bench) is put behind it here.
        door = backend if isinstance(backend, Door) else Door(backend)
        self.ws, self.run, self.backend, self.batch_size = ws, run, door, max(1, batch_size)
        self.owner = owner  # when set, each batch is stored only while this owner holds the run
        self.settings = settings_of(run)
        # Generated multiple-choice responses are read by the run's extractor (rules, llm:SPEC or rules+llm:SPEC);
        # POPE and likelihood runs never need it, so an LLM extractor is not even loaded for them.
        reads_text = run.strategy not in ("pope", "open") and not self.settings.likelihood
        self.extractor = extractor or (load_extractor(run.extractor, ws) if reads_text else None)
        self.template = PromptTemplate.from_json(run.prompt_template)
        self.variants = Variants(ws, self.settings, self.template, self.kind_of(run), run.benchmark_id, run.seed)
        self.on_progress = on_progress or (lambda p: None)
        self.kind = {"pope": "yesno", "open": "open"}.get(run.strategy, "mcq")
        # The run is read a page of items at a time (docs/adr/0016): only the items being asked have a Slot, so a
        # run's memory does not grow with its size. Its counters are kept as passes are stored (_record), O(1) per
        # pass: items, passes stored, items decided, passes left (an upper bound: early stop shortens it); they
        # start from one streamed tally of the stored passes, by the rule `_mark` applies to each new one.
        self.asking: dict[int, Slot] = {}
        self.items_total = self.passes_stored = self.decided = self.passes_left = 0
        for options, stored, wrong in run_items.run_tally(ws, run.id, run.benchmark_id, limit=run.limit):
            alive = still_alive((False,) if wrong else (), full_passes=self.settings.full_passes)
            left = passes_needed(run.strategy, options) - stored if alive else 0
            self.items_total += 1
            self.passes_stored += stored
            self.passes_left += left
            self.decided += left == 0
        self.calls = 0
        if self.settings.likelihood and self.kind == "open":
            raise InvalidInput("an open question has no candidates to score; drop --likelihood")
        if self.settings.likelihood_score == "chef" and self.kind != "mcq":
            raise InvalidInput("ChEF's calibration score asks multiple-choice questions; drop --likelihood-score chef")
        if (refused := likelihood_refusal(backend, self.settings)) is not None:
            raise BackendError(refused)
        if self.settings.thinking_budget is not None and not getattr(door, "takes_thinking_budget", False):
            raise BackendError(
                f"{door.spec[:200]}: this backend cannot bound the thought apart; drop --thinking-budget "
                "(--max-new-tokens bounds thought and answer together)"
            )
        s = self.settings
        self.chat = Chat(s.system, s.chat_template_kwargs, s.thinking_budget)
        self.multi_turn = multi_turn or (load_multi_turn_for(run, self.settings) if self.settings.multi_turn else None)

    @staticmethod
    def kind_of(run: runs.Run) -> str:
        return "yesno" if run.strategy == "pope" else "mcq"

    # -- scheduling ---------------------------------------------------------------------------------------------
    def alive(self, item: Item, k: int) -> bool:
        """Whether pass k of an item being asked is to be asked now: it is not stored, every earlier pass is (passes
        0..k-1 are stored and k is not), and the item is still alive."""
        slot = self.asking[item.id]
        return k < slot.needed and slot.asked == k and slot.alive

    def remaining_upper_bound(self) -> int:
        return self.passes_left

    def items_decided(self) -> int:
        return self.decided

    def _pages(self) -> Iterator[list[Slot]]:
        """The run's items in file order, a chunk at a time (the backend's `chunk_items`, else enough for CHUNK_CALLS
        calls of a chunk's first wave, so the short call that ends each wave costs little), with their stored passes.
        A page's Slots are in `asking` from when it is read until the caller drops them."""
        size = call_size(self.backend, self.batch_size)
        chunk = chunk_items(self.backend) or max(CHUNK_ITEMS, CHUNK_CALLS * size)
        for items in run_items.item_pages(self.ws, self.run.benchmark_id, limit=self.run.limit, page=chunk):
            slots = [Slot(item, n_passes(item, self.run.strategy)) for item in items]
            self.asking.update((slot.item.id, slot) for slot in slots)
            for item_id, k, correct in run_items.stored_marks(self.ws, self.run.id, [i.id for i in items]):
                self._mark(self.asking[item_id], k, correct)
            yield slots

    def _mark(self, slot: Slot, k: int, correct: bool | None) -> None:
        slot.marks[k] = correct
        slot.alive = slot.alive and still_alive((correct,), full_passes=self.settings.full_passes)
        while slot.asked in slot.marks:
            slot.asked += 1

    def _record(self, p: runs.Prediction) -> None:
        """Take one newly stored pass into its item's Slot and the counters, in O(1) (amortised)."""
        slot = self.asking[p.item_id]
        before = _remaining(slot)
        self.passes_stored += p.pass_ not in slot.marks
        self._mark(slot, p.pass_, p.correct)
        after = _remaining(slot)
        self.passes_left += after - before
        self.decided += (after == 0) - (before == 0)

    def execute(self) -> None:
        """Every pass still to ask. A backend with a stream (a server) is kept full: `_stream`. Else in waves
        within each chunk of items (`_pages`): every wave of items[0:C] before items[C:2C], so a prefix cache keeps
        an item's prompt while the item is alive and only a chunk is held; each call hands the backend
        `call_size(batch_size)` queries. No schedule changes any answer (docs/adr/0016, 0032).
        A request waiting to be retried (its model's, an LLM extractor's, a multi-turn asker's) is a WaitEvent."""
        with telling_waits_to(self._waiting):
            stream = None
            if not self.settings.likelihood and self.multi_turn is None:  # both ask in calls of their own
                stream = self.backend.open_stream(self.settings.max_new_tokens, self.settings.reasoning)
            if stream is None:
                self._execute()
                return
            try:
                self._stream(stream)
            finally:
                stream.close()

    def _waiting(self, wait: RetryWait) -> None:
        self.on_progress(WaitEvent.of(self.run.id, wait))

    def _execute(self) -> None:
        started = time.monotonic()
        size = call_size(self.backend, self.batch_size)
        for slots in self._pages():
            for k in range(max((slot.needed for slot in slots), default=0)):
                todo = [slot.item for slot in slots if self.alive(slot.item, k)]
                # Similar prompt lengths batch together (less padding); order does not change any answer.
                todo.sort(key=prompt_length)
                for start in range(0, len(todo), size):
                    self._ask(todo[start : start + size], k)
                    self._progress(k, started)
            self.asking.clear()  # the chunk is done with

    def _progress(self, wave: int, started: float) -> None:
        """After each stored batch; `wave` is the lowest pass in flight when streaming."""
        elapsed = max(time.monotonic() - started, 1e-9)
        rate = self.calls / elapsed
        self.on_progress(
            Progress(
                self.run.id,
                wave,
                self.passes_stored,
                self.decided,
                self.items_total,
                self.calls,
                round(rate, 3),
                round(self.passes_left / rate, 1) if rate > 0 else None,
            )
        )

    # -- the stream ---------------------------------------------------------------------------------------------
    def _stream(self, stream: Stream) -> None:
        """Keep the stream full: whenever an answer comes back, the next query goes at once — the next pass of an
        item still alive first (its prompt is still in the server's prefix cache), else the first pass due of the
        next item in file order. Each answer is read and scored as it comes, so pass k + 1 of an item is sent only
        once pass k was scored right (`alive`), and never while pass k is in flight. The passes are committed in
        short transactions (every COMMIT_EVERY_S, and at the end), in the order they came: a kill
        loses at most the passes in flight or not yet committed, and a resume asks exactly those again."""
        started = last_commit = time.monotonic()
        following: deque[tuple[Item, int]] = deque()  # passes made due by a right answer
        fresh = (slot for slots in self._pages() for slot in slots)
        flight: dict[int, Posed] = {}
        keys = itertools.count()
        pending: list[runs.Prediction] = []

        def due() -> tuple[Item, int] | None:
            if following:
                return following.popleft()
            for slot in fresh:
                if self.alive(slot.item, slot.asked):
                    return slot.item, slot.asked
                del self.asking[slot.item.id]  # nothing due: its page was read, it is done with
            return None

        try:
            while True:
                while stream.load() < stream.capacity and (nxt := due()) is not None:
                    key, posed = next(keys), self._pose(*nxt)
                    stream.send(key, posed.query)
                    flight[key] = posed
                if not flight:
                    break
                got = stream.answers(COMMIT_EVERY_S)
                if got:
                    asked = [flight.pop(a.key) for a in got]
                    self.calls += len(got)
                    preds = self._predictions(
                        asked, [a.generation() for a in got], None, [None] * len(got), [a.latency_ms for a in got]
                    )
                    for posed, p in zip(asked, preds):
                        self._record(p)
                        if self.alive(posed.item, posed.k + 1):
                            following.append((posed.item, posed.k + 1))
                        else:  # nothing of it in flight or due: done with
                            del self.asking[posed.item.id]
                    pending += preds
                if pending and time.monotonic() - last_commit >= COMMIT_EVERY_S:
                    runs.add_predictions(self.ws, pending, owner=self.owner)
                    pending, last_commit = [], time.monotonic()
                    self._progress(min((p.k for p in flight.values()), default=0), started)
            if pending:
                runs.add_predictions(self.ws, pending, owner=self.owner)
                pending = []
                self._progress(0, started)
        except BaseException:
            # Answers read and scored are kept whatever stops the run (not when it was taken over: they are not ours).
            if pending:
                with contextlib.suppress(runs.RunLost):
                    runs.add_predictions(self.ws, pending, owner=self.owner)
            raise

    # -- one batch ----------------------------------------------------------------------------------------------
    def _pose(self, item: Item, k: int) -> Posed:
        """Pass k of an item as it is asked: its option order and its query (variants applied)."""
        order = rotation(len(item.options), k) if self.kind == "mcq" else ()
        return Posed(item, k, order, replace(self.variants.query(item, k, order), chat=self.chat))

    def _ask(self, batch: list[Item], k: int) -> None:
        asked = [self._pose(item, k) for item in batch]
        queries = [p.query for p in asked]
        t0 = time.perf_counter()
        said: list[Generation] | None = None
        responses: list[str] = []
        turns: list[tuple[runs.Turn, ...] | None] = [None] * len(batch)
        scores: list[list[float]] | None = None
        if self.settings.likelihood_score == "chef":  # likelihood mode with ChEF's score
            scores, responses = self._chef(queries)
        elif self.settings.likelihood:
            backend = self.backend
            assert can_score(backend)  # checked when the engine was built
            if self.settings.likelihood_score == "prefix":
                # What the prefix score appends: the option texts as shown, or Yes/No.
                texts = [
                    prefix_candidates(
                        self.variants.shown_texts(p.item, k, p.order) if self.kind == "mcq" else p.query.letters
                    )
                    for p in asked
                ]
                # An hf-style scorer (checked when the engine was built): each text's first-token log-prob.
                firsts = backend.score(queries, texts, first_token=True)  # type: ignore[call-arg]
                scores = [prefix_scores(s) for s in firsts]
            else:
                scores = backend.score(queries, [q.letters for q in queries])
            responses = [q.letters[max(range(len(s)), key=s.__getitem__)] for q, s in zip(queries, scores)]
        elif self.multi_turn is not None:  # each pass a dialogue between the asking LLM and the model
            dialogues = self.multi_turn.converse(
                self.backend,
                [
                    Question(  # as the pass shows them: corrupted when the run corrupts text (variants.py)
                        self.variants.question(p.item, k),
                        p.item.hint,
                        shown_options(self.variants.shown_texts(p.item, k, p.order), range(len(p.order))),
                        p.query.images,
                    )
                    for p in asked
                ],
                self.settings.max_new_tokens,
            )
            responses = [d.response for d in dialogues]
            turns = [d.turns for d in dialogues]
        else:
            said = self.backend.generations(queries, self.settings.max_new_tokens, self.settings.reasoning)
        latency = round((time.perf_counter() - t0) * 1000 / len(batch), 3)
        self.calls += len(batch)
        if said is None:
            said = [Generation(r) for r in responses]
        preds = self._predictions(asked, said, scores, turns, [latency] * len(batch))
        runs.add_predictions(self.ws, preds, owner=self.owner)
        for p in preds:
            self._record(p)

    def _chef(self, queries: list[Query]) -> tuple[list[list[float]], list[str]]:
        """ChEF's calibration recipe for a batch: each pass's chain of thought generated first (its own query), then
        each candidate "(A"… scored by its mean token log-prob after the thought, a newline and ChEF's answer sentence.
        The response stored is what the model's turn then reads, ending with the best candidate."""
        backend = self.backend
        assert can_score(backend)  # checked when the engine was built
        thoughts = backend.generate(
            [replace(q, prompt=self.variants.chef_cot_prompt(q.prompt)) for q in queries], self.settings.max_new_tokens
        )
        leads = [f"{thought}\n{CHEF_ANSWER_LEAD}" for thought in thoughts]
        candidates = [chef_candidates(q.letters) for q in queries]
        scores = backend.score(queries, candidates, lead=leads, mean=True)  # type: ignore[call-arg]
        best = [max(range(len(s)), key=s.__getitem__) for s in scores]
        return scores, [lead + cands[b] for lead, cands, b in zip(leads, candidates, best)]

    def _predictions(
        self,
        asked: list[Posed],
        said: list[Generation],
        scores: list[list[float]] | None,
        turns: list[tuple[runs.Turn, ...] | None],
        latencies: list[float],
    ) -> list[runs.Prediction]:
        """The stored passes of asked passes' answers (split from their thoughts already), each read and scored (its
        pass k may differ from another's). A pass the token budget ended inside its thought has no answer to read:
        its outcome is "truncated" (nothing chosen; wrong where the item has a key), counted apart in reports."""
        items, orders = [p.item for p in asked], [p.order for p in asked]
        responses = [s.text for s in said]
        read = self._read_texts(items, orders, responses) if self.kind == "mcq" and scores is None else None
        preds = []
        for n, (posed, response) in enumerate(zip(asked, responses)):
            answer = displayed_answer(posed.item.answer, posed.order)
            extraction = (
                TRUNCATED
                if reasoning.cut_in_thought(said[n])
                else read[n]
                if read is not None
                else self._extract(
                    posed.item, posed.order, response, scores[n] if scores else None, posed.query.letters
                )
            )
            usage = said[n].usage
            preds.append(
                runs.Prediction(
                    self.run.id,
                    posed.item.id,
                    posed.k,
                    posed.order,
                    posed.query.prompt,
                    response,
                    answer,
                    extraction.choice,
                    extraction.stage,
                    extraction.reason,
                    pass_correct(extraction.choice, answer),
                    latencies[n],
                    scores=tuple(scores[n]) if scores else None,  # calibration reads them (evaluator/desiderata)
                    turns=turns[n],
                    prompt_tokens=usage.prompt_tokens if usage else None,
                    completion_tokens=usage.completion_tokens if usage else None,
                    thought=said[n].thought,
                    finish_reason=said[n].finish_reason,
                    reasoning_tokens=usage.reasoning_tokens if usage else None,
                )
            )
        return preds

    def _extract(
        self, item: Item, order: tuple[int, ...], response: str, scores: list[float] | None, letters: Sequence[str]
    ) -> Extraction:
        if self.kind == "open":
            return OPEN_ANSWER
        if scores is not None:
            shown = ", ".join(f"{c}={s:.3f}" for c, s in zip(letters, scores))
            if self.settings.likelihood_score == "chef":  # the response is the model's turn: the best candidate's
                best = letters[max(range(len(scores)), key=scores.__getitem__)]
                return Extraction(best, "likelihood", f"ChEF mean log-probs {shown}")
            choice = response.lower() if self.kind == "yesno" else self.variants.letter_of(response, letters)
            what = "prefix scores" if self.settings.likelihood_score == "prefix" else "log-likelihoods"
            return Extraction(choice, "likelihood", f"{what} {shown}")
        if self.kind == "yesno":
            reading = read_yes_no(self.variants.final_text(response))  # a CoT answer: its last answer line
            if reading is None:
                return Extraction(None, "none", "strict parser: neither yes nor no")
            return Extraction(reading, "rules", f"strict parser: {reading}")
        raise AssertionError("multiple-choice texts are read by _read_texts")

    def _read_texts(self, batch: list[Item], orders: list[tuple[int, ...]], responses: list[str]) -> list[Extraction]:
        """The extractor over one batch at once, so an LLM extractor sends its prompts concurrently."""
        assert self.extractor is not None  # loaded whenever a run reads texts
        if self.variants.reads:  # mapped labels, a final answer line, corrupted option texts
            return self.variants.read_many(self.extractor, batch, orders, responses)
        return self.extractor.extract_many(
            [
                (item.question, shown_options(item.options, order), response)
                for item, order, response in zip(batch, orders, responses)
            ]
        )


CHUNK_ITEMS = 4096  # the fewest items read at once when the backend declares no chunk (CHUNK_CALLS may ask more)
CHUNK_CALLS = 64

COMMIT_EVERY_S = 0.25  # streamed passes are committed at most this long after their answer: a few transactions a second

OPEN_ANSWER = Extraction(None, "none", "open question: the answer is not extracted")
"""What an open run stores as a pass's reading: nothing chosen, nothing scored (correct is NULL: no answer key)."""
OPEN_MAX_NEW_TOKENS = 256  # a free answer needs room; the command line and the launcher default to it for open runs


def _remaining(slot: Slot) -> int:
    """Passes of an item still to ask (0 once a wrong pass ended it)."""
    return slot.needed - len(slot.marks) if slot.alive else 0


def default_max_new_tokens(kind: str) -> int:
    """The generation length a run of a benchmark of this kind gets unless one is chosen (RunSettings' default
    stays 32, so the stored identity of multiple-choice and POPE runs is unchanged)."""
    return OPEN_MAX_NEW_TOKENS if kind == "open" else RunSettings.max_new_tokens


def load_multi_turn_for(run: runs.Run, settings: RunSettings) -> MultiTurn:
    """The asking LLM of a multi-turn run, loaded (multi-turn passes ask multiple-choice questions only)."""
    if run.strategy not in MCQ_STRATEGIES:
        raise InvalidInput(f"multi-turn reasoning asks multiple-choice questions; run {run.id} is {run.strategy}")
    assert settings.multi_turn is not None  # asked for by the caller
    return load_multi_turn(settings.multi_turn, settings.rounds)


def new_run(
    ws: Workspace,
    bench: Benchmark,
    model_spec: str,
    settings: RunSettings,
    template: PromptTemplate,
    *,
    batch_size: int,
    backend_info: dict[str, Any],
    owner: runs.Owner | None = None,
    reuse: bool = False,
) -> runs.Run:
    """A new run owned by `owner` (default: this process); with `reuse`, the stored run with these settings
    instead when there is one (claimed, or as is when finished; runs.RunBusy when another process runs it).
    A run named after a prompt preset stores that preset's template (InvalidInput for another). Sample s >= 1 of a
    sample group stores its group's key, sample 0's config key (`sample_of`)."""
    settings.check()
    sample_of = config_key(bench, model_spec, replace(settings, sample=0), template) if settings.sample else None
    if settings.prompt_preset is not None:
        if vlmevalkit_preset(settings.prompt_preset).template(bench.kind) != template:
            raise InvalidInput(f"the prompt template is not the one of preset {settings.prompt_preset}")
    return runs.create_or_claim(
        ws,
        reuse=reuse,
        owner=owner or runs.Owner.here(),
        benchmark_id=bench.id,
        model_spec=model_spec,
        strategy=strategy_for(bench, settings),
        prompt_template=template.to_json(),
        extractor=settings.extractor,
        config=settings.config(batch_size, sample_of),
        config_key=config_key(bench, model_spec, settings, template),
        versions={**versions(), "backend": backend_info},
        git_revision=git_revision(),
        seed=settings.seed,
    )
