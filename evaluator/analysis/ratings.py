"""Ratings from pairwise votes: Bradley–Terry as Chatbot Arena computes it, bootstrap intervals, online Elo.

A battle is one vote between two models in Chatbot Arena's shape (`model_a`, `model_b`, `winner` ∈ model_a |
model_b | tie | tie (bothbad)). Bradley–Terry (lm-sys/FastChat, fastchat/serve/monitor/rating_systems.py): each
battle is an outcome y for model_a (1 win, 0.5 tie or both bad, 0 loss); the strengths r maximise
Σ [y·log σ(ln 10·(r_a − r_b)) + (1 − y)·log σ(ln 10·(r_b − r_a))], found by L-BFGS from 0, and are reported as
400·r + 1000. Identical (a, b, y) battles are fitted once with their count as weight, which also makes a bootstrap
round a reweighting (multinomial counts over the distinct rows = resampling the battles with replacement).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, get_args

# numpy is imported by the functions that compute: the arena's commands and views import this module for its names.
if TYPE_CHECKING:
    import numpy as np

Winner = Literal["model_a", "model_b", "tie", "tie (bothbad)"]
WINNERS: tuple[Winner, ...] = get_args(Winner)
OUTCOME: dict[str, float] = {"model_a": 1.0, "model_b": 0.0, "tie": 0.5, "tie (bothbad)": 0.5}

SCALE, BASE, INITIAL = 400.0, 10.0, 1000.0
ELO_K = 4.0
DEFAULT_ROUNDS = 1000
MIN_ROUNDS, MAX_ROUNDS = 100, 100_000
_MAX_ITER, _GTOL = 100, 1e-6  # FastChat's fit: the iteration cap also stops a model that won every battle


@dataclass(frozen=True)
class Battle:
    model_a: str
    model_b: str
    winner: Winner

    def __post_init__(self) -> None:
        if self.winner not in WINNERS:
            raise ValueError(f"winner {self.winner!r} is not one of {', '.join(WINNERS)}")
        if self.model_a == self.model_b:
            raise ValueError(f"a battle needs two models, got {self.model_a!r} twice")


def models_of(battles: Sequence[Battle]) -> list[str]:
    """The models in order of first appearance."""
    return list(dict.fromkeys(m for b in battles for m in (b.model_a, b.model_b)))


def _schedule(battles: Sequence[Battle], models: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Unique (a, b, 2·outcome) rows and how often each occurs. One integer key per battle, so a million battles
    sort in a blink (np.unique over rows of three columns took seconds)."""
    import numpy as np

    index = {m: i for i, m in enumerate(models)}
    n = len(models)
    keys = np.fromiter(
        ((index[b.model_a] * n + index[b.model_b]) * 3 + int(2 * OUTCOME[b.winner]) for b in battles),
        dtype=np.int64,
        count=len(battles),
    )
    unique, counts = np.unique(keys, return_counts=True)
    rows = np.stack([unique // 3 // n, unique // 3 % n, unique % 3], axis=1)
    return rows, counts.astype(float)


def _fit(unique: np.ndarray, weights: np.ndarray, n_models: int) -> np.ndarray:
    """Bradley–Terry strengths r (in units of log10 odds) maximising the weighted likelihood, from 0."""
    # Imported here: scipy.optimize costs ~0.7 s, and the app imports this module while building its window.
    import numpy as np
    from scipy.optimize import minimize
    from scipy.special import expit, log_expit

    a, b, y = unique[:, 0], unique[:, 1], unique[:, 2] / 2.0
    alpha = math.log(BASE)
    total = weights.sum()

    def loss_and_grad(r: np.ndarray) -> tuple[float, np.ndarray]:
        d = alpha * (r[a] - r[b])
        loss = -(weights * (y * log_expit(d) + (1 - y) * log_expit(-d))).sum() / total
        g = weights * (expit(d) - y) * alpha / total  # d loss / d r_a; the opposite for r_b
        grad = np.bincount(a, g, n_models) - np.bincount(b, g, n_models)
        return float(loss), grad

    found = minimize(
        loss_and_grad,
        np.zeros(n_models),
        jac=True,
        method="L-BFGS-B",
        options={"maxiter": _MAX_ITER, "gtol": _GTOL},
    )
    r = np.asarray(found.x, dtype=float)
    centred: np.ndarray = r - r.mean()
    return centred  # the likelihood only sees differences


def _one_thread() -> Any:
    """Fits of a few models gain nothing from BLAS threads, which only fight over the cores: a bootstrap ran 30
    times slower with them on a busy machine (scipy's L-BFGS-B calls BLAS every iteration)."""
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1, user_api="blas")


def bradley_terry(battles: Sequence[Battle]) -> dict[str, float]:
    """model -> rating (400·r + 1000); the ratings average 1000."""
    models = models_of(battles)
    if not models:
        return {}
    unique, counts = _schedule(battles, models)
    with _one_thread():
        r = _fit(unique, counts, len(models))
    return {m: float(SCALE * r[i] + INITIAL) for i, m in enumerate(models)}


def bootstrap(battles: Sequence[Battle], rounds: int = DEFAULT_ROUNDS, seed: int = 0) -> dict[str, tuple[float, float]]:
    """model -> (2.5th, 97.5th percentile) of its rating over `rounds` fits on the battles resampled with
    replacement (seeded: the same battles, rounds and seed give the same interval)."""
    models = models_of(battles)
    if not models:
        return {}
    import numpy as np

    unique, counts = _schedule(battles, models)
    rng = np.random.default_rng(seed)
    n = len(battles)
    fits = np.empty((rounds, len(models)))
    with _one_thread():
        for k in range(rounds):
            # Drawing n battles with replacement only matters through how often each distinct row is drawn: a
            # multinomial over the distinct rows (probability count / n) is the same distribution, in time that does
            # not grow with the number of battles (a million battles: 0.7 s a round the other way).
            weights = rng.multinomial(n, counts / n).astype(float)
            keep = weights > 0
            fits[k] = _fit(unique[keep], weights[keep], len(models))
    ratings = SCALE * fits + INITIAL
    low, high = np.percentile(ratings, [2.5, 97.5], axis=0)
    return {m: (float(low[i]), float(high[i])) for i, m in enumerate(models)}


def online_elo(battles: Sequence[Battle], k: float = ELO_K) -> dict[str, float]:
    """Elo updated battle by battle in the order given (so it depends on the order, unlike Bradley–Terry)."""
    rating: dict[str, float] = {}
    for b in battles:
        ra, rb = rating.setdefault(b.model_a, INITIAL), rating.setdefault(b.model_b, INITIAL)
        expected_a = 1 / (1 + BASE ** ((rb - ra) / SCALE))
        score_a = OUTCOME[b.winner]
        rating[b.model_a] = ra + k * (score_a - expected_a)
        rating[b.model_b] = rb + k * ((1 - score_a) - (1 - expected_a))
    return rating


@dataclass(frozen=True)
class ModelRating:
    model: str
    rating: float
    lower: float
    upper: float
    rank: int
    votes: int
    wins: int
    ties: int
    losses: int
    elo: float

    def to_json(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "rating": round(self.rating, 3),
            "lower": round(self.lower, 3),
            "upper": round(self.upper, 3),
            "rank": self.rank,
            "votes": self.votes,
            "wins": self.wins,
            "ties": self.ties,
            "losses": self.losses,
            "elo": round(self.elo, 3),
        }


@dataclass(frozen=True)
class Leaderboard:
    """Every model's rating, best first (`vlmdesk arena ratings --json`)."""

    battles: int
    rounds: int
    seed: int
    models: tuple[ModelRating, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "battles": self.battles,
            "bootstrap_rounds": self.rounds,
            "seed": self.seed,
            "models": [m.to_json() for m in self.models],
        }


def leaderboard(battles: Sequence[Battle], rounds: int = DEFAULT_ROUNDS, seed: int = 0) -> Leaderboard:
    """Bradley–Terry ratings with bootstrap intervals, ranks, tallies and online Elo. A model's rank is 1 + the
    number of models whose lower bound is above its upper bound (Chatbot Arena's rank: ties share a rank)."""
    ratings = bradley_terry(battles)
    intervals = bootstrap(battles, rounds, seed)
    elo = online_elo(battles)
    tally = {m: [0, 0, 0] for m in ratings}  # wins, ties, losses
    for b in battles:
        y = OUTCOME[b.winner]
        for model, score in ((b.model_a, y), (b.model_b, 1 - y)):
            tally[model][0 if score == 1 else 1 if score == 0.5 else 2] += 1
    rows = [
        ModelRating(
            m,
            r,
            intervals[m][0],
            intervals[m][1],
            1 + sum(1 for o in ratings if intervals[o][0] > intervals[m][1]),
            sum(tally[m]),
            tally[m][0],
            tally[m][1],
            tally[m][2],
            elo[m],
        )
        for m, r in ratings.items()
    ]
    rows.sort(key=lambda row: (-row.rating, row.model))
    return Leaderboard(len(battles), rounds, seed, tuple(rows))


def win_rates(
    battles: Sequence[Battle], models: Sequence[str] | None = None
) -> tuple[list[str], list[list[float | None]]]:
    """The pairwise win-rate matrix: [i][j] = the share of i's non-tied battles against j that i won (None when
    they never met without a tie), as Chatbot Arena draws it."""
    order = list(models) if models is not None else models_of(battles)
    import numpy as np

    index = {m: i for i, m in enumerate(order)}
    wins = np.zeros((len(order), len(order)))
    for b in battles:
        if b.winner in ("model_a", "model_b") and b.model_a in index and b.model_b in index:
            winner, loser = (b.model_a, b.model_b) if b.winner == "model_a" else (b.model_b, b.model_a)
            wins[index[winner], index[loser]] += 1
    played = wins + wins.T
    return order, [
        [float(wins[i, j] / played[i, j]) if played[i, j] else None for j in range(len(order))]
        for i in range(len(order))
    ]
