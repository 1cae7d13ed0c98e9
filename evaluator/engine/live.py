"""One model's answer to one question about one image, asked now: the live arena's call (docs/adr/0037).

Nothing here writes to the workspace: `vlmdesk arena answer` runs this in a worker process and prints the answer
(and, for a backend that streams, the text so far as it grows) as JSON lines; annotation/live_arena.py stores a
battle only once both answers are in. The query is the one an open run's engine asks for an item with this question
and image (the open template, `{hint}{question}`, no hint), so the stored pass is what a `vlmdesk run` would store.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from evaluator.backends import load_backend
from evaluator.backends.base import Query, close_backend, texts_of
from evaluator.engine.prompts import default_template
from evaluator.engine.runner import OPEN_MAX_NEW_TOKENS

MAX_QUESTION_CHARS = 2000  # a live question is typed by a person; longer is a paste gone wrong


@dataclass(frozen=True)
class LiveAnswer:
    """What one model said: its spec, the text, the wall time of the call, what its backend describes (stored with
    the run, no secrets), and whether the text arrived streamed."""

    model: str
    text: str
    latency_ms: float
    backend: dict[str, Any]
    streamed: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "event": "answer",
            "model": self.model,
            "text": self.text,
            "latency_ms": self.latency_ms,
            "backend": self.backend,
            "streamed": self.streamed,
        }


def live_prompt(question: str) -> str:
    return default_template("open").render(question=question, hint=None, options=(), language="en")


def streams(backend: object) -> bool:
    """Whether the backend (behind its door) can hand over an answer's text as it grows (`stream_text`)."""
    return callable(getattr(getattr(backend, "backend", backend), "stream_text", None))


def ask(
    spec: str,
    image: bytes,
    question: str,
    *,
    max_new_tokens: int = OPEN_MAX_NEW_TOKENS,
    on_text: Callable[[str], None] | None = None,
    on_loaded: Callable[[bool], None] | None = None,
) -> LiveAnswer:
    """Load the model a spec names and ask it (greedy; BackendError when it cannot be loaded or fails). `on_text`
    hears the text so far, each time it grows, when the backend streams; otherwise the answer comes whole.
    `on_loaded` hears, once the model is loaded, whether the answer will stream."""
    backend = load_backend(spec, seed=0, batch_size=1)
    query = Query(live_prompt(question), (image,), ())
    streamed = on_text is not None and streams(backend)
    if on_loaded is not None:
        on_loaded(streamed)
    t0 = time.perf_counter()
    try:
        if streamed:
            text = ""
            for text in backend.stream_text(query, max_new_tokens):  # type: ignore[attr-defined]  # streams()
                assert on_text is not None
                on_text(text)
        else:
            text = texts_of(backend.generate([query], max_new_tokens))[0]
    finally:
        close_backend(backend)  # a server it started (vllm:, sglang:) is stopped with the answer
    latency = round((time.perf_counter() - t0) * 1000, 3)
    return LiveAnswer(spec, text, latency, backend.describe(), streamed)
