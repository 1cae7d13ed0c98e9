"""Reference points that cost nothing: `baseline:first`, `baseline:random`, `baseline:frequent`.

They answer from the letters a query offers, so they run through the same engine as any model and show why
CircularEval matters (a constant answer scores the base rate on VanillaEval and 0 on CircularEval).
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from typing import Any
from urllib.parse import parse_qsl

from evaluator.backends.base import BackendEntry, BackendError, BuildContext, Query
from evaluator.registry import Field

KINDS = ("first", "random", "frequent")
MAX_SEED = 2**32 - 1


def parse_baseline_spec(
    rest: str, context: BuildContext = BuildContext(), options: tuple[str, ...] = ("seed",)
) -> tuple[str, int, dict[str, str]]:
    """(kind, seed, the other options) of ``<kind>[?seed=N…]``; ``options`` are the option names allowed (a
    variant may read more). The spec's seed wins over the run's. BackendError when something is off."""
    kind, _, query = rest.partition("?")
    if kind not in KINDS:
        raise BackendError(f"baseline: unknown kind {kind[:40]!r} (first, random, frequent)")
    opts = dict(parse_qsl(query[:1000]))
    unknown = set(opts) - set(options)
    if unknown:
        raise BackendError(f"baseline: unknown option(s) {', '.join(sorted(unknown))[:200]} ({', '.join(options)})")
    seed = context.seed
    if "seed" in opts:
        text = opts.pop("seed")
        if not (text.isdigit() and len(text) <= 12 and int(text) <= MAX_SEED):
            raise BackendError(f"baseline: seed must be a whole number in 0..{MAX_SEED}")
        seed = int(text)
    return kind, seed, opts


def build(rest: str, context: BuildContext) -> BaselineBackend:
    kind, seed, _ = parse_baseline_spec(rest, context)
    return BaselineBackend(kind, seed=seed, frequent=context.frequent_answer)


BACKENDS = (
    BackendEntry(
        name="baseline",
        title="Baseline",
        reference=True,
        syntax="baseline:random|first|frequent[?seed=N]",
        help="reference points that cost nothing: the first option, a seeded random one, the most frequent answer",
        build=build,
        validate=lambda rest: parse_baseline_spec(rest) and None,
        fields=(
            Field("", "Kind", "choice", choices=KINDS, default="random", required=True),
            Field("seed", "Seed", "int", help="overrides the run's --seed"),
        ),
        examples=("baseline:random", "baseline:first", "baseline:frequent"),
    ),
)


class BaselineBackend:
    def __init__(self, kind: str, *, seed: int = 0, frequent: str | None = None):
        if kind not in KINDS:
            raise BackendError(f"baseline: unknown kind {kind!r} (first, random, frequent)")
        self.kind, self.seed, self.frequent = kind, seed, frequent
        self.spec = f"baseline:{kind}"

    def describe(self) -> dict[str, Any]:
        return {"backend": "baseline", "kind": self.kind, "seed": self.seed, "frequent": self.frequent}

    def generate(self, queries: Sequence[Query], max_new_tokens: int) -> list[str]:
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
