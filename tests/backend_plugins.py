"""Test-only model backends, registered through the backend registry's plugin variable (VLMDESK_PLUGINS).

`slow:<first|random|frequent>[?delay_ms=N&seed=N&chunk_items=N]` answers like `baseline:<kind>` but waits
`delay_ms` before each batch (and asks the engine to walk its waves in chunks of `chunk_items` items), so that a
test can interrupt, cancel, kill or contest a run while it is executing. It is not part of vlmdesk's spec syntax:
a test asks for it with the `slow_backend` fixture (import it into the test module), which names this module in
VLMDESK_PLUGINS for the test and for every `vlmdesk` child process it starts.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from evaluator.backends.base import BackendEntry, BackendError, BuildContext, Query
from evaluator.backends.baseline import KINDS, BaselineBackend, parse_baseline_spec
from evaluator.registry import PLUGINS_ENV, Field

ROOT = Path(__file__).resolve().parents[1]
MAX_DELAY_MS = 60_000


class SlowBaseline(BaselineBackend):
    def __init__(self, kind: str, *, seed: int, frequent: str | None, delay_ms: float, chunk_items: int | None = None):
        super().__init__(kind, seed=seed, frequent=frequent)
        self.delay_ms, self.chunk_items = delay_ms, chunk_items
        self.spec = f"slow:{kind}"

    def describe(self) -> dict:
        return {**super().describe(), "backend": "slow", "delay_ms": self.delay_ms, "chunk_items": self.chunk_items}

    def generate(self, queries: Sequence[Query], max_new_tokens: int) -> list[str]:
        time.sleep(self.delay_ms / 1000)
        return super().generate(queries, max_new_tokens)


def _options(rest: str, context: BuildContext) -> SlowBaseline:
    kind, seed, opts = parse_baseline_spec(rest, context, options=("seed", "delay_ms", "chunk_items"))
    try:
        delay_ms = float(opts.get("delay_ms", "0")[:40])
    except ValueError:
        delay_ms = math.nan
    if not 0 <= delay_ms <= MAX_DELAY_MS:  # also refuses nan and inf
        raise BackendError(f"slow: delay_ms must be a number in 0..{MAX_DELAY_MS}")
    chunk = opts.get("chunk_items")
    if chunk is not None and not (chunk.isdigit() and 1 <= int(chunk[:9]) <= 10**6):
        raise BackendError("slow: chunk_items must be a whole number in 1..1000000")
    return SlowBaseline(
        kind, seed=seed, frequent=context.frequent_answer, delay_ms=delay_ms, chunk_items=int(chunk) if chunk else None
    )


BACKENDS = (
    BackendEntry(
        name="slow",
        syntax="slow:random|first|frequent[?delay_ms=N&seed=N&chunk_items=N]",
        help="tests only: a baseline that waits delay_ms before each batch",
        build=_options,
        fields=(
            Field("", "Kind", "choice", choices=KINDS, required=True),
            Field("delay_ms", "Delay per batch (ms)", "int"),
        ),
        examples=("slow:random?delay_ms=20",),
    ),
)


def plugin_env(env: dict | None = None) -> dict:
    """`env` (default: this process's) with this module registered, importable from any working directory."""
    env = dict(os.environ if env is None else env)
    env[PLUGINS_ENV] = ",".join(filter(None, [env.get(PLUGINS_ENV), __name__]))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return env


@pytest.fixture
def slow_backend(monkeypatch):
    """`slow:` specs work in this test and in the `vlmdesk` processes it starts (their environment is inherited)."""
    for name, value in plugin_env().items():
        if os.environ.get(name) != value:
            monkeypatch.setenv(name, value)
    return "slow"
