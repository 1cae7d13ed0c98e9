"""Starting, resuming and finishing runs: what `vlmdesk run` and `vlmdesk qc text-only` share.

A run's identity is its config key (benchmark, model, settings, template): asking again for the same run finds the
stored one and continues it from its predictions, so an interrupted command is resumed by running it again.
The process executing a run owns it (db/runs.py): it claims it, beats a heartbeat from a thread while it runs, and
stores a batch only while it still holds the run; another process asking for the same run meanwhile gets RunBusy.
"""
from __future__ import annotations

import sqlite3
import threading
from typing import Callable

from db import catalog, runs
from db.catalog import Benchmark
from db.workspace import BUSY_TIMEOUT_MS, Workspace
from evaluator.backends import Backend, load_backend
from evaluator.backends.secrets import redact
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
              backend: Backend, *, batch_size: int, owner: runs.Owner | None = None, reuse: bool = False) -> runs.Run:
    """A new run owned by this process (`reuse`: the stored run with these settings when there is one, claimed
    in the same transaction — runs.RunBusy when another live process is executing it)."""
    return new_run(ws, bench, model_spec, settings, template, batch_size=batch_size, backend_info=backend.describe(),
                   owner=owner, reuse=reuse)


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


def execute_run(ws: Workspace, run: runs.Run, backend: Backend, *, batch_size: int,
                on_progress: Callable[[Progress], None] | None = None,
                on_start: Callable[[Engine], None] | None = None, owner: runs.Owner | None = None,
                fresh: bool = False) -> Engine:
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
    except Exception as exc:
        # A no-op when the run was removed above (release needs the row).
        runs.release(ws, run.id, owner, "failed",
                     error=redact(f"{type(exc).__name__}: {exc}", run.model_spec, run.extractor))
        raise
    finally:
        beat.stop()
    runs.release(ws, run.id, owner, "finished")
    return engine
