"""Matchmaking for the live arena: which two models answer the next question.

The rule (docs/adr/0037): for every model m, n_m is its number of battles (standing votes, every benchmark) and r_m
its Bradley–Terry rating from them (evaluator/analysis/ratings.py; 1000 for a model without battles). Its uncertainty is
u_m = 1 / √(1 + n_m) — a rating's standard error shrinks like 1/√n, so the battle count stands for it. An unordered
pair {a, b} of distinct models is drawn with probability proportional to

    w(a, b) = (u_a + u_b) · exp(−|r_a − r_b| / SCALE),   SCALE = 400 rating points (10:1 odds),

so pairs of models with few battles, and pairs of models rated alike (whose order a vote can still change), come
first; then a fair coin decides which of the two is shown left. Seeded: the same models, battles and seed draw the
same match. A model is never paired with itself (models are told apart by their spec).
"""

from __future__ import annotations

import itertools
import math
import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from evaluator.analysis.ratings import INITIAL, SCALE, Battle, bradley_terry

MATCH_SCALE = SCALE  # rating points at which a gap divides a pair's weight by e


@dataclass(frozen=True)
class Standing:
    """What matchmaking knows of one model: its battles and its rating."""

    model: str
    battles: int
    rating: float

    @property
    def uncertainty(self) -> float:
        return 1.0 / math.sqrt(1.0 + self.battles)


def standings(models: Sequence[str], battles: Sequence[Battle]) -> list[Standing]:
    """Each of `models` (distinct, in order) with its battle count and Bradley–Terry rating over `battles`."""
    ratings = bradley_terry(battles)
    count = Counter(m for b in battles for m in (b.model_a, b.model_b))
    return [Standing(m, count[m], ratings.get(m, INITIAL)) for m in dict.fromkeys(models)]


def pair_weight(a: Standing, b: Standing, scale: float = MATCH_SCALE) -> float:
    """The rule's weight of the pair {a, b}."""
    return (a.uncertainty + b.uncertainty) * math.exp(-abs(a.rating - b.rating) / scale)


def weights(models: Sequence[str], battles: Sequence[Battle]) -> dict[tuple[str, str], float]:
    """Every unordered pair of distinct models (in the order given) -> its weight; the draw's probabilities are
    these over their sum."""
    found = standings(models, battles)
    return {(a.model, b.model): pair_weight(a, b) for a, b in itertools.combinations(found, 2)}


def draw_match(models: Sequence[str], battles: Sequence[Battle], seed: int) -> tuple[str, str]:
    """(left, right): a pair drawn by the rule's weights, then its sides by a coin; ValueError with fewer than two
    distinct models."""
    return draw_from(weights(models, battles), random.Random(seed))


def draw_from(table: dict[tuple[str, str], float], rng: random.Random) -> tuple[str, str]:
    """One draw from a weights() table: a pair with probability weight / total, then a coin for the sides."""
    if not table:
        raise ValueError("matchmaking needs at least two different models")
    pairs = list(table)
    a, b = rng.choices(pairs, weights=[table[p] for p in pairs])[0]
    return (a, b) if rng.random() < 0.5 else (b, a)
