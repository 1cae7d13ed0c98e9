"""Test-only managed server kind, registered through VLMDESK_PLUGINS: ``tserve:<model dir>`` starts
`transformers serve <dir> --device cpu` on a free port through the same start / wait / log / stop code as vllm: and
sglang: (evaluator/backends/managed.py), so the lifecycle is tested end to end without a GPU. The `tserve` fixture
(import it into the test module) names this module in VLMDESK_PLUGINS for the test."""

from __future__ import annotations

import pytest

from evaluator.backends.managed import Recipe, ServerSpec, entry, python_version_of
from evaluator.registry import PLUGINS_ENV
from tests.servers import OFFLINE_ENV, serve_command


def _command(spec: ServerSpec, program: str, port: int) -> list[str]:
    return [*serve_command(program, spec.model, port), *spec.flag("max_model_len", "--max-model-len")]


TSERVE = Recipe(
    name="tserve",
    title="transformers serve (tests)",
    install='pip install "transformers[serving]"',
    command=_command,
    version=python_version_of("transformers"),
    options=("max_model_len",),
    program=None,  # this Python
    env=OFFLINE_ENV,
)

BACKENDS = (entry(TSERVE),)


@pytest.fixture
def tserve(monkeypatch):
    """`tserve:` is a backend for the test (and for every process it starts)."""
    monkeypatch.setenv(PLUGINS_ENV, __name__)
    return TSERVE
