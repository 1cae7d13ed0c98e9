"""Model backends behind one protocol (base.Backend), found through a registry.

A model spec is ``<scheme>:<rest>``; the scheme names a registry entry (base.BackendEntry) declared as
``BACKENDS = (BackendEntry(…),)`` by a module of this package (`hf:`, `openai:`, `baseline:`) or by a module
named in VLMDESK_PLUGINS. Adding a backend is adding such a module (docs/architecture.md).
"""

from __future__ import annotations

from pathlib import Path
from typing import TypeGuard

from evaluator.backends.base import (
    Backend,
    BackendEntry,
    BackendError,
    BuildContext,
    Chat,
    Generation,
    Query,
    ScoringBackend,
)
from evaluator.registry import Registry

REGISTRY: Registry[BackendEntry] = Registry("backend", "BACKENDS", package="evaluator.backends")


def spec_help() -> str:
    """The spec syntax of every registered backend, for --help texts and messages."""
    return ", ".join(entry.syntax for entry in REGISTRY.help_entries())


def _entry(spec: str) -> tuple[BackendEntry, str]:
    from evaluator.backends.secrets import check_no_secret

    check_no_secret(spec)  # before the spec can reach a run row, a log line or an error message
    scheme, sep, rest = spec.partition(":")
    if not sep or not rest:
        raise BackendError(f"bad model spec {spec[:200]!r}; expected one of {spec_help()}")
    entry = REGISTRY.get(scheme)
    if entry is None:
        raise BackendError(f"unknown model spec scheme {scheme[:40]!r}; expected one of {spec_help()}")
    return entry, rest


def check_spec(spec: str) -> str:
    """The spec, stripped, when a backend can read it; BackendError otherwise. Nothing is loaded or sent (an
    openai: spec builds a client object only). Keys are refused."""
    spec = (spec or "").strip()
    entry, rest = _entry(spec)
    entry.check(rest)
    return spec


def run_identity(spec: str) -> str:
    """What of a model spec names its run (runner.config_key): the spec itself, unless its backend says less
    (an openai spec naming several replicas leaves them out). A spec no backend reads is its own identity."""
    from evaluator.registry import resolve

    try:
        entry, rest = _entry(spec)
    except BackendError:
        return spec
    if entry.identity is None:
        return spec
    try:
        return f"{entry.name}:{resolve(entry.identity)(rest)}"
    except BackendError:
        return spec


def load_backend(
    spec: str,
    *,
    seed: int = 0,
    frequent_answer: str | None = None,
    batch_size: int | None = None,
    log_dir: Path | None = None,
) -> Backend:
    """Build the backend a model spec names. `frequent_answer` feeds `baseline:frequent`; `batch_size` is the
    run's, which a local model uses unless its spec sets its own. The backend comes behind the door (door.py):
    what it says back is redacted of keys before anything else sees it."""
    from evaluator.backends.door import Door

    entry, rest = _entry(spec)
    context = BuildContext(seed=seed, frequent_answer=frequent_answer, batch_size=batch_size, log_dir=log_dir)
    return Door(entry.make(rest, context))


def can_score(backend: Backend) -> TypeGuard[ScoringBackend]:
    return callable(getattr(backend, "score", None))


def __getattr__(name: str) -> str:
    # SPEC_HELP reads the registry, so it is computed when asked for, not when this package is imported.
    if name == "SPEC_HELP":
        return spec_help()
    raise AttributeError(name)


__all__ = [
    "Backend",
    "BackendEntry",
    "BackendError",
    "BuildContext",
    "Chat",
    "Generation",
    "Query",
    "REGISTRY",
    "ScoringBackend",
    "can_score",
    "check_spec",
    "load_backend",
    "run_identity",
    "spec_help",
]
