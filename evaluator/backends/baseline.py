"""Reference points that cost nothing: `baseline:first`, `baseline:random`, `baseline:frequent`.

They answer from the letters a query offers, so they run through the same engine as any model and show why
CircularEval matters (a constant answer scores the base rate on VanillaEval and 0 on CircularEval).
"""
from __future__ import annotations

import hashlib
import random
import time
from typing import Sequence

from evaluator.backends.base import BackendError, Query

KINDS = ("first", "random", "frequent")


class BaselineBackend:
    def __init__(self, kind: str, *, seed: int = 0, frequent: str | None = None, delay_ms: float = 0.0):
        if kind not in KINDS:
            raise BackendError(f"baseline: unknown kind {kind!r} (first, random, frequent)")
        self.kind, self.seed, self.frequent, self.delay_ms = kind, seed, frequent, delay_ms
        self.spec = f"baseline:{kind}"

    def describe(self) -> dict:
        return {"backend": "baseline", "kind": self.kind, "seed": self.seed, "frequent": self.frequent}

    def generate(self, queries: Sequence[Query], max_new_tokens: int) -> list[str]:
        if self.delay_ms:
            time.sleep(self.delay_ms / 1000)  # simulated model latency, for tests of interrupted runs
        return [self._answer(q) for q in queries]

    def score(self, queries: Sequence[Query], candidates: Sequence[Sequence[str]]) -> list[list[float]]:
        # The chosen candidate gets log-probability 0, the others -inf-like: the same decision as generate().
        return [[0.0 if c == self._answer(q) else -1e9 for c in cands] for q, cands in zip(queries, candidates)]

    def _answer(self, query: Query) -> str:
        letters = query.letters or ("A",)
        if self.kind == "first":
            return letters[0]
        if self.kind == "frequent":
            # Labels may be stored in another case than offered ("yes" vs "Yes" for POPE).
            wanted = (self.frequent or "").casefold()
            return next((letter for letter in letters if letter.casefold() == wanted), letters[0])
        # Seeded by the prompt text, not by call order: a resumed run answers exactly as an uninterrupted one.
        digest = hashlib.sha256(f"{self.seed}\0{query.prompt}".encode()).digest()
        return random.Random(digest).choice(letters)
