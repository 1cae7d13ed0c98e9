"""Starting, resuming and finishing runs: what `vlmdesk run` and `vlmdesk qc text-only` share.

A run's identity is its config key (benchmark, model, settings, template): asking again for the same run finds the
stored one and continues it from its predictions, so an interrupted command is resumed by running it again.
"""
from __future__ import annotations

from typing import Callable

from db import catalog, runs
from db.catalog import Benchmark
from db.workspace import Workspace
from evaluator.backends import Backend, load_backend
from evaluator.prompts import PromptTemplate
from evaluator.runner import Engine, Progress, RunSettings, config_key, frequent_answer, new_run


def stored_run(ws: Workspace, bench: Benchmark, model_spec: str, settings: RunSettings,
               template: PromptTemplate) -> runs.Run | None:
    """The latest run with exactly these settings (finished or not), if any."""
    return runs.latest_run_with_key(ws, config_key(bench, model_spec, settings, template))


def open_backend(ws: Workspace, benchmark_id: int, model_spec: str, *, seed: int,
                 batch_size: int | None = None) -> Backend:
    """The backend a spec names; `baseline:frequent` learns the benchmark's most frequent answer, a local model
    batches by the run's batch size unless its spec sets one. Raises BackendError."""
    return load_backend(model_spec, seed=seed, frequent_answer=frequent_answer(catalog.list_items(ws, benchmark_id)),
                        batch_size=batch_size)


def start_run(ws: Workspace, bench: Benchmark, model_spec: str, settings: RunSettings, template: PromptTemplate,
              backend: Backend, *, batch_size: int) -> runs.Run:
    return new_run(ws, bench, model_spec, settings, template, batch_size=batch_size, backend_info=backend.describe())


def execute_run(ws: Workspace, run: runs.Run, backend: Backend, *, batch_size: int,
                on_progress: Callable[[Progress], None] | None = None,
                on_start: Callable[[Engine], None] | None = None) -> Engine:
    """Ask every pass still missing and mark the run finished. An interruption (KeyboardInterrupt) marks it
    interrupted, any other exception failed; both are re-raised, and rerunning continues where it stopped."""
    try:
        # Inside the try: a backend that cannot serve the run (e.g. no likelihoods), or an interruption that lands
        # while the caller announces the start, still marks the run.
        engine = Engine(ws, run, backend, batch_size=batch_size, on_progress=on_progress)
        if on_start is not None:
            on_start(engine)
        runs.set_status(ws, run.id, "running")
        engine.execute()
    except (KeyboardInterrupt, BrokenPipeError):  # cancelled, or the reader of its progress went away
        runs.set_status(ws, run.id, "interrupted", error="interrupted")
        raise
    except Exception as exc:
        runs.set_status(ws, run.id, "failed", error=f"{type(exc).__name__}: {exc}")
        raise
    runs.set_status(ws, run.id, "finished")
    return engine
