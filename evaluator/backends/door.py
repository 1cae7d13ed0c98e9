"""The door: where what a backend says enters vlmdesk. Every backend is loaded through it (load_backend), so the
run's model, an LLM extractor, a multi-turn asker and a language judge all are.

What comes in through the door — answers, error messages, retry notices — is redacted of the keys the backend's
spec may read (secrets.redact): a server that echoes its API key inside a normal answer cannot get it into a
prediction, a turn, an extraction, a judgement, an exported file or a log line, whatever path the text takes
afterwards (docs/adr/0024). An answer is also bounded there (MAX_ANSWER_CHARS, docs/adr/0048). Retry notices go
to whoever listens in this context (`telling_waits_to`), else to the log.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterator, Sequence
from contextvars import ContextVar
from typing import Any

from evaluator.backends import reasoning
from evaluator.backends.base import (
    Answer,
    Backend,
    BackendError,
    Generation,
    Query,
    RetryWait,
    Stream,
    as_generation,
    log_wait,
    open_stream,
)
from evaluator.backends.secrets import redact

# The longest answer vlmdesk keeps (docs/adr/0048): 64 K characters, some 16,000 tokens, far above what any run asks
# for (max_new_tokens 32, 256 for open items, 512 with --cot). A longer one is cut there and ends with CUT_MARK, so a
# 10 MB answer of a broken or hostile server never reaches a pass, a turn, a judgement or the live arena whole.
MAX_ANSWER_CHARS = 64 * 2**10
CUT_MARK = f" [… cut by vlmdesk: the answer was longer than {MAX_ANSWER_CHARS:,} characters]"


# A thought is kept to four times that (a 32k-token budget of thinking is some 130,000 characters).
MAX_THOUGHT_CHARS = 4 * MAX_ANSWER_CHARS


def bounded(text: str, bound: int = MAX_ANSWER_CHARS) -> str:
    """text, or its first `bound` characters and CUT_MARK."""
    return text if len(text) <= bound else text[:bound] + CUT_MARK


# Who hears of retry waits in this context (a run's engine); a context variable, so nested or parallel runs in one
# process never hear each other's.
_LISTENER: ContextVar[Callable[[RetryWait], None] | None] = ContextVar("vlmdesk_wait_listener", default=None)


@contextlib.contextmanager
def telling_waits_to(listener: Callable[[RetryWait], None]) -> Iterator[None]:
    """Within the block, every backend's retry waits (redacted) go to `listener`, in the thread that asked."""
    token = _LISTENER.set(listener)
    try:
        yield
    finally:
        _LISTENER.reset(token)


class Door:
    """A backend as the rest of vlmdesk sees it: the same answers, redacted and bounded. Anything else the backend
    has (score, call_size, chunk_items, its own attributes) is the backend's."""

    def __init__(self, backend: Backend):
        self.backend = backend
        self.spec = backend.spec
        if hasattr(backend, "on_wait"):  # a backend that retries tells its waits (openai)
            backend.on_wait = self._relay

    def clean(self, text: str) -> str:
        """`text` without any key this backend's spec may read (or any key-shaped string)."""
        return redact(text, self.backend.spec)

    def said(self, said: Generation, rule: str = reasoning.AUTO) -> Generation:
        """A generation as vlmdesk keeps it: its thought split off by the run's reasoning rule (before any bound,
        so a long thought cannot push the answer out), then each part redacted and bounded."""
        said = reasoning.split(said, rule)  # a key never holds a thought's tags: each part is redacted once, after
        thought = None if said.thought is None else bounded(self.clean(said.thought), MAX_THOUGHT_CHARS)
        return dataclasses.replace(said, text=bounded(self.clean(said.text)), thought=thought)

    def generations(
        self, queries: Sequence[Query], max_new_tokens: int, rule: str = reasoning.AUTO
    ) -> list[Generation]:
        """The backend's answers, each split by `rule`, redacted and bounded (`said`)."""
        try:
            answers = self.backend.generate(queries, max_new_tokens)
        except BackendError as exc:  # what the server said about a failure (its error body) is said on
            exc.args = (self.clean(str(exc)),)
            raise
        return [self.said(as_generation(a), rule) for a in answers]

    def generate(self, queries: Sequence[Query], max_new_tokens: int) -> list[str]:
        """The answers' texts, a thought split off by the default rule: what an extractor, a judge or an asking LLM
        reads (a thinking judge's thought is never its verdict)."""
        return [said.text for said in self.generations(queries, max_new_tokens)]

    def open_stream(self, max_new_tokens: int, rule: str = reasoning.AUTO) -> Stream | None:
        """The backend's stream, its answers split, redacted and bounded like generations()'; None when it has none."""
        stream = open_stream(self.backend, max_new_tokens)
        return None if stream is None else _CleanStream(stream, self.clean, lambda s: self.said(s, rule))

    def stream_text(self, query: Query, max_new_tokens: int) -> Iterator[str]:
        """The backend's answer as it grows (its `stream_text`), redacted: each text so far is cut at its last
        blank, so a key (never holding a blank) shows whole and redacted or not at all; the whole answer last, its
        thought split off by the default rule and bounded (reading stops once it is past the thought's bound)."""
        method = getattr(self.backend, "stream_text", None)
        if not callable(method):
            raise BackendError(f"{self.spec}: this backend does not stream")
        text = ""
        try:
            for text in method(query, max_new_tokens):
                if len(text) > MAX_ANSWER_CHARS + MAX_THOUGHT_CHARS:
                    break  # closes the backend's stream: nothing more of it is kept
                cut = max(text.rfind(c) for c in " \t\n")
                if 0 < cut <= MAX_ANSWER_CHARS:  # what is shown stays within an answer's bound
                    yield self.clean(text[:cut])
        except BackendError as exc:
            exc.args = (self.clean(str(exc)),)
            raise
        yield self.said(Generation(text)).text  # the whole answer last: a thinking model's thought split off

    def describe(self) -> dict[str, Any]:
        return self.backend.describe()

    def _relay(self, wait: RetryWait) -> None:
        wait = dataclasses.replace(wait, error=self.clean(wait.error))
        (_LISTENER.get() or log_wait)(wait)

    def __getattr__(self, name: str) -> Any:  # only for names the door has not: never "backend" itself
        if name == "backend":
            raise AttributeError(name)
        return getattr(self.backend, name)


class _CleanStream:
    """A stream seen through the door: answers split, redacted and bounded (Door.said), error messages redacted."""

    def __init__(self, stream: Stream, clean: Callable[[str], str], said: Callable[[Generation], Generation]):
        self.stream, self.clean, self.said, self.capacity = stream, clean, said, stream.capacity

    def send(self, key: int, query: Query) -> None:
        self.stream.send(key, query)

    def load(self) -> int:
        return self.stream.load()

    def answers(self, timeout: float) -> list[Answer]:
        try:
            got = self.stream.answers(timeout)
        except BackendError as exc:
            exc.args = (self.clean(str(exc)),)
            raise
        return [Answer.of(a.key, self.said(a.generation()), a.latency_ms) for a in got]

    def close(self) -> None:
        self.stream.close()
