"""Evaluation runs launched from the app: one `vlmdesk run … --json-progress` process at a time (one GPU), the
others queued behind it. The queue holds no evaluation logic: it starts commands and reads their JSON progress."""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QObject, QTimer, Signal

from gui.processes import CommandProcess

KILL_AFTER_MS = 15000  # a run that ignores SIGTERM this long (stuck in a CUDA call) is killed


@dataclass(frozen=True)
class RunRequest:
    """The arguments of one `vlmdesk run` (without --workspace and --json-progress) and a title to show."""

    args: tuple[str, ...]
    title: str


def run_args(
    *,
    bench: str,
    model: str,
    strategy: str = "circular",
    likelihood: bool | str = False,
    extractor: str = "rules",
    batch_size: int = 8,
    max_new_tokens: int = 32,
    limit: int | None = None,
    text_only: bool = False,
    multi_turn: str | None = None,
    rounds: int = 4,
    seed: int = 0,
    prompt: str = "vlmdesk",
    new: bool = False,
    system: str | None = None,
    reasoning: str = "auto",
    chat_template_kwargs: str | None = None,
    thinking_budget: int | None = None,
    samples: int = 1,
) -> tuple[str, ...]:
    """The command line of the launch form's choices (the form's only translation: widget values → options)."""
    args = [
        "run",
        "--bench",
        bench,
        "--model",
        model,
        "--strategy",
        strategy,
        "--extractor",
        extractor,
        "--batch-size",
        str(batch_size),
        "--max-new-tokens",
        str(max_new_tokens),
    ]
    if limit:
        args += ["--limit", str(limit)]
    if likelihood in ("prefix", "chef"):  # LVLM-eHub's prefix score, ChEF's calibration score (imply --likelihood)
        args += ["--likelihood-score", str(likelihood)]
    elif likelihood:
        args.append("--likelihood")
    if text_only:
        args.append("--text-only")
    if multi_turn:
        args += ["--multi-turn", multi_turn, "--rounds", str(rounds)]
    if seed:  # 0 is the command's default: left out, so the shown command stays the short one
        args += ["--seed", str(seed)]
    if prompt != "vlmdesk":  # vlmdesk's templates are the default: left out likewise
        args += ["--prompt", prompt]
    # Thinking models and the chat (RunSettings.reasoning, system, chat_template_kwargs, thinking_budget): each only
    # when set, so a plain run's command stays the short one.
    if reasoning != "auto":
        args += ["--reasoning", reasoning]
    if system:
        args += ["--system", system]
    if chat_template_kwargs:
        args += ["--chat-template-kwargs", chat_template_kwargs]
    if thinking_budget:
        args += ["--thinking-budget", str(thinking_budget)]
    if samples > 1:  # K sample runs, one after another in the one process (its events name each run in turn)
        args += ["--samples", str(samples)]
    if new:
        args.append("--new")
    return tuple(args)


class RunJob(QObject):
    """One queued or running command and what it has said so far."""

    changed = Signal()

    QUEUED, RUNNING, FINISHED, CANCELLED, FAILED = "queued", "running", "finished", "cancelled", "failed"

    def __init__(self, number: int, request: RunRequest, parent=None):
        super().__init__(parent)
        self.number, self.request = number, request
        self.state = self.QUEUED
        self.run_id: int | None = None
        self.run_ids: list[int] = []  # every run its process started, in turn (several for `run --samples K`)
        self.progress: dict = {}
        self.start_event: dict = {}
        self.process: CommandProcess | None = None
        self.cancel_requested = False
        self.message = ""

    @property
    def stderr(self) -> str:
        return self.process.stderr if self.process else ""

    @property
    def name(self) -> str:
        """The entry's name, "Queue #3": never "Job 3" next to "Run 5", since a queue number is no run id."""
        return f"Queue #{self.number}"

    def summary(self) -> str:
        shown = self.run_ids if len(self.run_ids) > 1 else [self.run_id] if self.run_id else []
        run = f" → run{'s' if len(shown) > 1 else ''} {', '.join(map(str, shown))}" if shown else ""
        return f"{self.name}{run} · {self.request.title} — {self.state}" + (f": {self.message}" if self.message else "")


class RunQueue(QObject):
    jobAdded = Signal(object)
    jobChanged = Signal(object)  # state, progress or stderr of a job changed
    jobFinished = Signal(object)

    def __init__(self, workspace: str, parent=None):
        super().__init__(parent)
        self.workspace = str(workspace)
        self.jobs: list[RunJob] = []
        self._numbers = 0

    @property
    def current(self) -> RunJob | None:
        return next((j for j in self.jobs if j.state == RunJob.RUNNING), None)

    def pending(self) -> list[RunJob]:
        return [j for j in self.jobs if j.state == RunJob.QUEUED]

    def submit(self, request: RunRequest, *, run_id: int | None = None) -> RunJob:
        self._numbers += 1
        job = RunJob(self._numbers, request, self)
        job.run_id = run_id
        self.jobs.append(job)
        self.jobAdded.emit(job)
        self._next()
        return job

    def resume(self, run_id: int, title: str) -> RunJob:
        return self.submit(RunRequest(("run", "--resume", str(run_id)), title), run_id=run_id)

    def cancel(self, job: RunJob) -> None:
        """A queued job leaves the queue; a running one gets SIGTERM (its run is marked interrupted)."""
        if job.state == RunJob.QUEUED:
            job.state = RunJob.CANCELLED
            self._changed(job)
        elif job.state == RunJob.RUNNING and job.process is not None:
            job.cancel_requested = True
            job.message = "stopping…"
            self._changed(job)
            job.process.terminate()
            QTimer.singleShot(KILL_AFTER_MS, job.process.kill)

    def shutdown(self) -> None:
        """The window closes: queued jobs are dropped and a running one is stopped (resume it later)."""
        for job in self.jobs:
            if job.state == RunJob.QUEUED:
                job.state = RunJob.CANCELLED
        current = self.current
        if current is not None and current.process is not None:
            current.cancel_requested = True
            current.process.terminate()
            if not current.process.process.waitForFinished(5000):
                current.process.kill()
                current.process.process.waitForFinished(2000)

    # -- internals
    def _next(self) -> None:
        if self.current is not None:
            return
        job = next(iter(self.pending()), None)
        if job is None:
            return
        job.state = RunJob.RUNNING
        job.process = CommandProcess(self.workspace, [*job.request.args, "--json-progress"], job)
        job.process.event.connect(lambda event, j=job: self._event(j, event))
        job.process.stderrChanged.connect(lambda j=job: self._changed(j))
        job.process.done.connect(lambda j=job: self._done(j))
        self._changed(job)
        job.process.start()

    def _event(self, job: RunJob, event: dict) -> None:
        kind = event.get("event")
        if "run_id" in event:
            job.run_id = event["run_id"]
            if job.run_id not in job.run_ids:
                job.run_ids.append(job.run_id)
        if kind == "start":
            job.start_event = event
            job.progress = {
                "passes_done": event.get("passes_done", 0),
                "items_total": event.get("items_total"),
                "items_done": 0,
            }
        elif kind == "progress":
            job.progress = event
            if not job.cancel_requested:
                job.message = ""  # a retry wait (below) is over once a batch is stored
        elif kind == "wait" and not job.cancel_requested and isinstance(event.get("message"), str):
            job.message = event["message"][:200]  # "server asked to retry after 999999 s; waiting 60 s (try 2 of 5)"
        self._changed(job)

    def _done(self, job: RunJob) -> None:
        p = job.process
        assert p is not None  # done is the signal of the job's process
        if p.exit_code == 0 and not p.crashed:
            job.state, job.message = RunJob.FINISHED, ""
            if job.run_id is None and "already finished" in p.stderr:
                job.message = p.stderr.strip().splitlines()[-1]
                job.run_id = _run_id_in(job.message)
        elif job.cancel_requested:
            job.state, job.message = RunJob.CANCELLED, "interrupted — resume it from the runs list"
        else:
            job.state = RunJob.FAILED
            last = _last_error_line(p.stderr)
            if p.error:
                job.message = p.error
            elif p.crashed:  # killed by a signal: SIGKILL from the kernel's out-of-memory killer, a segfault…
                job.message = "the process crashed" + (f" — {last}" if last else " (killed by a signal)")
            else:
                job.message = last or f"exit code {p.exit_code}"
        self._changed(job)
        self.jobFinished.emit(job)
        self._next()

    def _changed(self, job: RunJob) -> None:
        job.changed.emit()
        self.jobChanged.emit(job)


def _last_error_line(stderr: str) -> str:
    lines = [line.strip() for line in stderr.strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""


def _run_id_in(text: str) -> int | None:
    import re

    m = re.search(r"\brun (\d+)\b", text)
    return int(m.group(1)) if m else None
