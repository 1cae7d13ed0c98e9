"""Asking a judge until its reply can be read: the loop every LLM judgement shares (open answers, arena pairs, the
language desideratum). One batch; then only the replies that could not be read are asked again, with the prompt's
reminder, up to `attempts` times in all. What is never read stays unread (stored undecided, never guessed)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from evaluator.backends import Backend, BackendError, Query
from evaluator.backends.base import texts_of

T = TypeVar("T")


@dataclass(frozen=True)
class Replies(Generic[T]):
    """Per question: what was read (None: nothing readable), the tries it took, the last reply; and the calls made."""

    read: list[T | None]
    tries: list[int]
    last: list[str]
    calls: int


def ask_until_read(
    backend: Backend,
    count: int,
    query: Callable[[int, bool], Query],
    read: Callable[[str], T | None],
    *,
    attempts: int,
    max_new_tokens: int,
) -> Replies[T]:
    """Ask questions 0..count-1 (`query(i, reminder)`: question i's query, with the reminder on a second try) and read
    each reply with `read`; BackendError when the backend answers another number of prompts than it was given."""
    last = ["" for _ in range(count)]
    found: dict[int, T] = {}
    tries = [0] * count
    open_ = list(range(count))
    calls = 0
    for attempt in range(attempts):
        if not open_:
            break
        queries = [query(i, attempt > 0) for i in open_]
        texts = texts_of(backend.generate(queries, max_new_tokens))
        if len(texts) != len(queries):
            raise BackendError(f"{backend.spec}: {len(texts)} replies to {len(queries)} prompts")
        calls += len(queries)
        still = []
        for i, text in zip(open_, texts):
            last[i], tries[i] = text or "", tries[i] + 1
            value = read(last[i])
            if value is None:
                still.append(i)
            else:
                found[i] = value
        open_ = still
    return Replies([found.get(i) for i in range(count)], tries, last, calls)
