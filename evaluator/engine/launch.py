"""Starting, resuming and finishing runs: the one launch path of `vlmdesk run`, `vlmdesk qc text-only` and the app
(whose launcher starts `vlmdesk run` processes).

`prepare_run` (or `prepare_resume`) turns what was asked — a saved model's name or a spec, settings, a template —
into a Launch: the stored run with these settings when there is one (finished: nothing to do), else a new one,
with its backend loaded; `run_or_resume` executes it. Every refusal is a LaunchRefused (a UserError): a bad spec
or setting, a backend that cannot do what the settings ask, a run another process is executing.

A run's identity is its config key (benchmark, model, settings, template): asking again for the same run finds the
stored one and continues it from its predictions, so an interrupted command is resumed by running it again.
The process executing a run owns it (db/runs.py): it claims it, beats a heartbeat from a thread while it runs, and
stores a batch only while it still holds the run; another process asking for the same run meanwhile gets RunBusy.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from db import models, run_items, runs
from db.catalog import Benchmark
from db.errors import InvalidInput, UserError
from db.workspace import BUSY_TIMEOUT_MS, Workspace
from evaluator.backends import Backend, BackendError, check_spec, load_backend
from evaluator.backends.base import ServersDown, close_backend, reseed
from evaluator.backends.openai_backend import with_servers
from evaluator.backends.secrets import redact
from evaluator.engine.progress import Progress, WaitEvent
from evaluator.engine.prompts import PromptTemplate
from evaluator.engine.runner import (
    Engine,
    RunSettings,
    config_key,
    likelihood_refusal,
    new_run,
    settings_of,
)
from evaluator.scoring.llm_extraction import parse_extractor_spec

DEFAULT_BATCH_SIZE = 8  # queries per call when the user gives no --batch-size


class LaunchRefused(UserError):
    """A run cannot be started or continued as asked; nothing was stored."""


@dataclass(frozen=True)
class Launch:
    """A run ready to execute (`backend` loaded), or found finished already (`backend` None)."""

    run: runs.Run
    backend: Backend | None
    batch_size: int
    resumed: bool  # the run existed: its stored passes are kept and not asked again
    fresh: bool  # created by this launch: a failure before anything is asked removes it
    owns_backend: bool = True  # False: a SharedBackend's, closed by whoever made it, not after the run

    @property
    def finished(self) -> bool:
        return self.backend is None


def resolve_model(ws: Workspace, name_or_spec: str) -> str:
    """The spec a saved model's name stands for, or the spec given — checked by the backend registry (nothing is
    loaded). LaunchRefused when neither a saved model nor a spec a backend reads."""
    spec = models.resolve_spec(ws, (name_or_spec or "").strip())
    try:
        return check_spec(spec)
    except BackendError as exc:
        if ":" not in spec:
            raise LaunchRefused(
                f"no saved model named {spec[:80]!r} (vlmdesk models list), and not a model spec: {exc}"
            ) from None
        raise LaunchRefused(redact(str(exc), spec)) from None


class SharedBackend:
    """One backend for the runs of a sample group (`run --samples K`, docs/adr/0057): loaded once — a local model, a
    server vlmdesk starts (minutes for vLLM) — and given each sample's seed in turn; `close()` when the group ends."""

    def __init__(self) -> None:
        self.backend: Backend | None = None

    def close(self) -> None:
        if self.backend is not None:
            close_backend(self.backend)
            self.backend = None


def prepare_run(
    ws: Workspace,
    bench: Benchmark,
    model: str,
    settings: RunSettings,
    template: PromptTemplate,
    *,
    batch_size: int | None,
    new: bool = False,
    shared: SharedBackend | None = None,
) -> Launch:
    """The run these settings name: the stored one (continued where it stopped) unless `new`, else a new one
    owned by this process. `model` is a saved model's name or a spec. `batch_size` None: not given — the engine
    asks DEFAULT_BATCH_SIZE queries at a time and a local model chooses its own (automatic on a GPU). `shared`: the
    backend is the one it holds (opened into it the first time), not closed when the run ends."""
    spec = resolve_model(ws, model)
    asked, batch_size = batch_size, batch_size or DEFAULT_BATCH_SIZE
    try:
        settings.check()
        parse_extractor_spec(settings.extractor)
    except InvalidInput as exc:
        raise LaunchRefused(str(exc)) from None
    found = None if new else stored_run(ws, bench, spec, settings, template)
    if found is not None and found.status == "finished":
        return Launch(found, None, batch_size, resumed=True, fresh=False)
    if found is not None:
        _check_free(found)  # before loading a model for nothing; execute_run claims it for real
    # Sample s of a sample group samples with the run's seed + s (its prompts, shots and corruptions keep run.seed).
    seed = settings.seed + settings.sample
    if shared is not None and shared.backend is not None:
        backend = shared.backend
        reseed(backend, seed)
    else:
        backend = _open(ws, bench.id, spec, settings, seed=seed, batch_size=asked)
        if shared is not None:
            shared.backend = backend

    def drop() -> None:
        if shared is None:
            close_backend(backend)

    try:
        # Found or created and claimed in one transaction: the same command started twice at once runs once.
        run = start_run(ws, bench, spec, settings, template, backend, batch_size=batch_size, reuse=not new)
    except runs.RunBusy as exc:
        drop()
        raise LaunchRefused(str(exc)) from None
    except BaseException:
        drop()
        raise
    if run.status == "finished":  # finished by another process since we looked
        drop()
        return Launch(run, None, batch_size, resumed=True, fresh=False)
    return Launch(
        *(run, backend, batch_size),
        resumed=found is not None or run.predictions > 0,
        fresh=run.predictions == 0,
        owns_backend=shared is None,
    )


def prepare_resume(ws: Workspace, run_id: int, *, batch_size: int | None, servers: str | None = None) -> Launch:
    """A stored run, to be continued with its stored settings (and batch size, when it stored one); `servers`: a
    servers file naming the replicas that serve its openai: model now (the run is the same run)."""
    run = runs.get_run(ws, run_id)
    if run is None:
        raise LaunchRefused(f"no run {run_id} in {ws.path}")
    batch_size = batch_size or DEFAULT_BATCH_SIZE
    if run.status == "finished":
        return Launch(run, None, batch_size, resumed=True, fresh=False)
    try:  # a damaged stored run is shown, never executed
        settings = settings_of(run)
        PromptTemplate.from_json(run.prompt_template)
    except InvalidInput as exc:
        raise LaunchRefused(f"{exc}; it cannot be resumed (start it again with --new)") from None
    _check_free(run)
    batch_size = run.config.get("batch_size", batch_size)
    spec = run.model_spec
    if servers is not None:
        try:
            spec = with_servers(spec, servers)
        except BackendError as exc:
            raise LaunchRefused(str(exc)) from None
    backend = _open(ws, run.benchmark_id, spec, settings, seed=run.seed + settings.sample, batch_size=batch_size)
    return Launch(run, backend, batch_size, resumed=True, fresh=False)


def run_or_resume(
    ws: Workspace,
    launch: Launch,
    *,
    on_progress: Callable[[Progress | WaitEvent], None] | None = None,
    on_start: Callable[[Engine], None] | None = None,
) -> Engine | None:
    """Execute a prepared launch (see execute_run); None when the run was finished already. The backend is closed
    afterwards, however the run ends (a server vlmdesk started for it is stopped: managed.py)."""
    if launch.backend is None:
        return None
    try:
        return execute_run(
            ws,
            launch.run,
            launch.backend,
            batch_size=launch.batch_size,
            on_progress=on_progress,
            on_start=on_start,
            fresh=launch.fresh,
        )
    except runs.RunBusy as exc:  # another process claimed it meanwhile: left alone
        raise LaunchRefused(str(exc)) from None
    finally:
        if launch.owns_backend:
            close_backend(launch.backend)


def server_logs(ws: Workspace) -> Path:
    """Where the servers vlmdesk starts for this workspace's runs keep their logs: ``<name>.servers/`` beside it."""
    return ws.path.with_name(ws.path.stem + ".servers")


def _check_free(run: runs.Run) -> None:
    try:
        runs.check_free(run)
    except runs.RunBusy as exc:
        raise LaunchRefused(str(exc)) from None


def _open(
    ws: Workspace, benchmark_id: int, spec: str, settings: RunSettings, *, seed: int, batch_size: int | None
) -> Backend:
    try:
        backend = open_backend(ws, benchmark_id, spec, seed=seed, batch_size=batch_size)
    except BackendError as exc:
        raise LaunchRefused(redact(str(exc), spec, settings.extractor, settings.multi_turn)) from None
    if (refused := likelihood_refusal(backend, settings)) is not None:
        close_backend(backend)
        raise LaunchRefused(refused)
    return backend


def stored_run(
    ws: Workspace, bench: Benchmark, model_spec: str, settings: RunSettings, template: PromptTemplate
) -> runs.Run | None:
    """The latest run with exactly these settings (finished or not), if any."""
    return runs.latest_run_with_key(ws, config_key(bench, model_spec, settings, template))


def open_backend(
    ws: Workspace, benchmark_id: int, model_spec: str, *, seed: int, batch_size: int | None = None
) -> Backend:
    """The backend a spec names; `baseline:frequent` learns the benchmark's most frequent answer, a local model
    batches by the run's batch size unless its spec sets one, a server vlmdesk starts logs beside the workspace
    (server_logs). Raises BackendError; the caller closes it (close_backend)."""
    return load_backend(
        model_spec,
        seed=seed,
        frequent_answer=run_items.frequent_answer(ws, benchmark_id),
        batch_size=batch_size,
        log_dir=server_logs(ws),
    )


def start_run(
    ws: Workspace,
    bench: Benchmark,
    model_spec: str,
    settings: RunSettings,
    template: PromptTemplate,
    backend: Backend,
    *,
    batch_size: int,
    owner: runs.Owner | None = None,
    reuse: bool = False,
) -> runs.Run:
    """A new run owned by this process (`reuse`: the stored run with these settings when there is one, claimed
    in the same transaction — runs.RunBusy when another live process is executing it)."""
    return new_run(
        ws,
        bench,
        model_spec,
        settings,
        template,
        batch_size=batch_size,
        backend_info=backend.describe(),
        owner=owner,
        reuse=reuse,
    )


class _Heartbeat(threading.Thread):
    """Beats the run's heartbeat every runs.HEARTBEAT_S from its own connection, so a long batch (a big model, a
    slow server) never makes a live run look abandoned."""

    def __init__(self, ws: Workspace, run_id: int, owner: runs.Owner):
        super().__init__(name=f"run-{run_id}-heartbeat", daemon=True)
        self.path, self.run_id, self.owner = str(ws.path), run_id, owner
        self.stopped = threading.Event()

    def run(self) -> None:
        conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_MS / 1000)
        try:
            while not self.stopped.wait(runs.HEARTBEAT_S):
                try:
                    if not runs.heartbeat(conn, self.run_id, self.owner):
                        return  # taken over: the engine finds out at its next batch (runs.RunLost)
                except sqlite3.Error:
                    pass  # a busy workspace: the next beat (or the next batch) will do
        finally:
            conn.close()

    def stop(self) -> None:
        self.stopped.set()


def execute_run(
    ws: Workspace,
    run: runs.Run,
    backend: Backend,
    *,
    batch_size: int,
    on_progress: Callable[[Progress | WaitEvent], None] | None = None,
    on_start: Callable[[Engine], None] | None = None,
    owner: runs.Owner | None = None,
    fresh: bool = False,
) -> Engine:
    """Claim the run, ask every pass still missing and mark it finished.

    runs.RunBusy when another live process executes it (the run is left alone). An interruption
    (KeyboardInterrupt) marks it interrupted, any other exception failed — with the message redacted of keys —
    and both are re-raised; rerunning continues where it stopped. A `fresh` run (just created by the caller)
    that fails before anything was asked is removed instead: a refused start leaves no run behind.
    runs.RunLost when another process took the run over meanwhile (it is then left to that process)."""
    owner = owner or runs.Owner.here()
    run = runs.claim_run(ws, run.id, owner)
    beat = _Heartbeat(ws, run.id, owner)
    beat.start()
    try:
        try:
            engine = Engine(ws, run, backend, batch_size=batch_size, on_progress=on_progress, owner=owner)
        except Exception:
            if fresh:
                runs.delete_unstarted(ws, run.id, owner)  # nothing was asked: leave no run behind
            raise
        if on_start is not None:
            on_start(engine)
        engine.execute()
    except runs.RunLost:
        raise
    except (KeyboardInterrupt, BrokenPipeError):  # cancelled, or the reader of its progress went away
        runs.release(ws, run.id, owner, "interrupted", error="interrupted")
        raise
    except ServersDown as exc:  # nothing is wrong with the run: it continues when a server answers again
        runs.release(ws, run.id, owner, "interrupted", error=redact(str(exc), run.model_spec))
        raise
    except Exception as exc:
        # A no-op when the run was removed above (release needs the row).
        runs.release(
            ws,
            run.id,
            owner,
            "failed",
            error=redact(f"{type(exc).__name__}: {exc}", run.model_spec, run.extractor, run.config.get("multi_turn")),
        )
        raise
    finally:
        beat.stop()
    runs.release(ws, run.id, owner, "finished")
    return engine
